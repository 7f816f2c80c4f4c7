import FareSyncEvents
import FareSyncIdentity
import FareSyncStore

/// Finds users by what a support person has in hand: a uid, an email, a phone number, an ABT
/// account id (the store's accounts) or a customer number (the `customers` documents, read a page
/// at a time up to `scanLimit`).
struct UserSearch {
    let store: any DocumentStore
    let identity: IdentityService?

    static let scanLimit = 100_000

    /// The uids the query may name (the caller keeps those that exist).
    func find(_ query: String) async throws -> [String] {
        var found: [String] = []
        func add(_ uid: String?) {
            if let uid, !found.contains(uid) { found.append(uid) }
        }
        if !query.contains("/") { add(query) }
        if query.contains("@") { add(try await identity?.user(email: query)?.uid) }
        if query.hasPrefix("+") { add(try await identity?.user(phoneNumber: query)?.uid) }
        add(try await store.read { try $0.account(query)?.uid })
        if let number = Int64(query) { add(try await customer(number: number)) }
        return found
    }

    /// The uid of the customer with this customer number.
    func customer(number: Int64) async throws -> String? {
        try await store.read { tx in
            var after: String?
            var read = 0
            while read < Self.scanLimit {
                let page = try tx.documents(inCollectionAt: "customers", after: after, limit: 1000)
                if let hit = page.first(where: { $0.value["customerNumber"]?.int64Value == number }) {
                    return hit.value["id"]?.stringValue ?? String(hit.path.dropFirst("customers/".count))
                }
                read += page.count
                guard page.count == 1000 else { return nil }
                after = page.last?.path
            }
            return nil
        }
    }
}
