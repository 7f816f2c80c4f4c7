import FareSyncEvents

/// The row that keeps a named key in a store whose steps lock their keys
/// (`StoreAccess.write(locking:_:)`): a 64-bit hash of the name, the same in every process. Smaller
/// and faster to lock than the name; two names that share a row only make their writes take turns,
/// and a change of one look like a change of the other.
///
/// ```swift
/// let row = KeyRow.of("d/customers/u1")
/// ```
public enum KeyRow {
    public static func of(_ key: String) -> Int64 { Int64(bitPattern: FNV1a.mixed(key.utf8)) }
}
