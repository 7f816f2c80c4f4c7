import FareSyncEvents
import FareSyncStore

/// Records that expire (phone codes, OAuth codes), indexed by expiry in a kind of their own, so
/// that a write adding one drops the first few expired ones without reading the others: its cost
/// does not grow with the records kept, and records never used do not stay.
///
/// ```swift
/// let codes = ExpiryIndex(records: "oauth.codes", expiries: "oauth.codeExpiries")
/// try codes.prune(now: now, in: tx)
/// try codes.set(key, record, expiresAt: now + 60_000, in: tx)
/// ```
struct ExpiryIndex: Sendable {
    /// The kind of the records themselves, by their own key.
    let records: String
    /// The kind of the index: `{expiresAt, 19 digits}.{key}` → the record's key.
    let expiries: String
    /// Expired records one prune drops at most: more than one, so that they never pile up.
    static let prunedPerWrite = 8

    /// The index entry of the record `key` expiring at `expiresAt` (ms).
    static func entry(_ key: String, expiresAt: Int64) -> String {
        let digits = String(max(0, expiresAt))
        return String(repeating: "0", count: max(0, 19 - digits.count)) + digits + "." + key
    }

    /// Adds the record `key` and its index entry.
    func set(_ key: String, _ record: JSONValue, expiresAt: Int64, in tx: any StoreTransaction) throws {
        try tx.setRecord(records, key, record)
        try tx.setRecord(expiries, Self.entry(key, expiresAt: expiresAt), .string(key))
    }

    /// Removes the record `key` and its index entry.
    func remove(_ key: String, expiresAt: Int64, in tx: any StoreTransaction) throws {
        try tx.setRecord(records, key, nil)
        try tx.setRecord(expiries, Self.entry(key, expiresAt: expiresAt), nil)
    }

    /// Drops up to `prunedPerWrite` records that expired by `now`, the oldest first.
    func prune(now: Int64, in tx: any StoreTransaction) throws {
        for (entry, value) in try tx.records(expiries, after: nil, limit: Self.prunedPerWrite) {
            guard let expiresAt = Int64(entry.prefix(19)), expiresAt <= now else { break }
            if let key = value.stringValue { try tx.setRecord(records, key, nil) }
            try tx.setRecord(expiries, entry, nil)
        }
    }
}
