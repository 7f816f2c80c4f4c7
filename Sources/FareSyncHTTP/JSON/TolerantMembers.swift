import FareSyncEvents

extension KeyedDecodingContainer {
    /// The member `key` as `T`, or nil when it is missing, null or of another type.
    ///
    /// The ticket service's request types read their members this way: a member of another type
    /// is then what it is to the routes' checks, absent, and the route answers it with the refusal
    /// it gives a missing member (a message naming the field) rather than with a decoding error's
    /// text. Members a type does not name are ignored. The identity requests read theirs with
    /// `member(_:)`, which refuses another type.
    func tolerant<T: Decodable>(_ key: Key, as type: T.Type = T.self) -> T? {
        (try? decodeIfPresent(type, forKey: key)) ?? nil
    }
}
