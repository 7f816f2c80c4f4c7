/// Lowercase hexadecimal, as the ids SPEC derives from hashes are written; and random secrets in it.
public enum Hex {
    public static func string(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `bytes` bytes from the system's secure random source, in hex (refresh tokens, terminal URLs).
    public static func random(bytes: Int) -> String {
        var rng = SystemRandomNumberGenerator()
        return string((0..<bytes).map { _ in UInt8.random(in: .min ... .max, using: &rng) })
    }
}
