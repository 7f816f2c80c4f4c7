import FareSyncEvents

extension KeyedDecodingContainer {
    /// The member `key` as `T`, or nil when it is missing, null or of another type.
    ///
    /// The request types read their members this way: a member of another type is then what it
    /// is to the routes' checks, absent, and the route answers it with the refusal it gives a
    /// missing member (Firebase's `MISSING_PASSWORD`, the ticket service's message naming the
    /// field) rather than with a decoding error's text. Members a type does not name are ignored.
    func tolerant<T: Decodable>(_ key: Key, as type: T.Type = T.self) -> T? {
        (try? decodeIfPresent(type, forKey: key)) ?? nil
    }

    /// The member `key` as a list of strings: one string, or the strings of an array (its other
    /// elements left out), as Google's APIs take a repeated field; empty otherwise.
    func strings(_ key: Key) -> [String] {
        if let one = tolerant(key, as: String.self) { return [one] }
        return tolerant(key, as: [JSONValue].self)?.compactMap(\.stringValue) ?? []
    }
}
