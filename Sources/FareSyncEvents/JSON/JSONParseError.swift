/// Why a text is not the JSON FareSync accepts. `description` says what and where (a byte offset).
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public let offset: Int
    public var description: String { "\(message) at byte \(offset)" }
}
