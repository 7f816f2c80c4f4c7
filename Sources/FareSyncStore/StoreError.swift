/// A store that cannot do what was asked, with the reason.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
