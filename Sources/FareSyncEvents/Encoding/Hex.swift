/// Lowercase hexadecimal, as the ids the reference derives from hashes are written; and random secrets in it.
public enum Hex {
    public static func string(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        append(bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the hex of `bytes` to `out`, as UTF-8 (for ids built as bytes, without a string).
    @inlinable
    public static func append(_ bytes: some Sequence<UInt8>, to out: inout [UInt8]) {
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
    }

    @usableFromInline static let digits = Array("0123456789abcdef".utf8)

    /// `bytes` bytes from the system's secure random source, in hex (refresh tokens, terminal URLs).
    public static func random(bytes: Int) -> String {
        var rng = SystemRandomNumberGenerator()
        return string((0..<bytes).map { _ in UInt8.random(in: .min ... .max, using: &rng) })
    }
}
