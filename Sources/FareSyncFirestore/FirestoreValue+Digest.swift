import Crypto
import FareSyncEvents

/// A digest of Firestore fields that equal values share, strings (keys too) compared by their UTF-8
/// bytes as Firestore compares them: `MirrorVerifier` compares each document of the store with the
/// emulator's by it.
///
/// The fields are written in one unambiguous form (a tag per type, lengths before contents, map
/// keys in UTF-8 order) into a buffer and hashed once, rather than written as their REST JSON:
/// `mirror --verify` digests every document on both sides.
///
/// ```swift
/// FirestoreValue.digest(["n": .integer(2)]) == FirestoreValue.digest(["n": .integer(2)])  // true
/// FirestoreValue.digest(["n": .integer(2)]) == FirestoreValue.digest(["n": .double(2)])   // false
/// ```
extension FirestoreValue {
    /// The first 16 bytes of the SHA-256 of the fields' form.
    public static func digest(_ fields: [String: FirestoreValue]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        appendFields(fields, to: &out)
        return Array(SHA256.hash(data: out).prefix(16))
    }

    private static func appendFields(_ fields: [String: FirestoreValue], to out: inout [UInt8]) {
        appendCount(fields.count, to: &out)
        for key in fields.keys.sorted(by: UTF8Order.less) {
            appendString(key, to: &out)
            fields[key]!.append(to: &out)
        }
    }

    private func append(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(0)
        case .boolean(let b): out.append(b ? 2 : 1)
        case .integer(let i):
            out.append(3)
            Self.appendWord(UInt64(bitPattern: i), to: &out)
        case .double(let d):
            out.append(4)
            Self.appendWord(d == 0 ? 0 : d.bitPattern, to: &out)  // 0.0 == -0.0
        case .timestamp(let us):
            out.append(5)
            Self.appendWord(UInt64(bitPattern: us), to: &out)
        case .string(let s):
            out.append(6)
            Self.appendString(s, to: &out)
        case .array(let values):
            out.append(7)
            Self.appendCount(values.count, to: &out)
            for value in values { value.append(to: &out) }
        case .map(let fields):
            out.append(8)
            Self.appendFields(fields, to: &out)
        case .other(let json):
            out.append(9)
            let bytes = JSONWriter.bytes(json)
            Self.appendCount(bytes.count, to: &out)
            out.append(contentsOf: bytes)
        }
    }

    private static func appendString(_ s: String, to out: inout [UInt8]) {
        appendCount(s.utf8.count, to: &out)
        out.append(contentsOf: s.utf8)
    }

    private static func appendCount(_ n: Int, to out: inout [UInt8]) { appendWord(UInt64(n), to: &out) }

    private static func appendWord(_ word: UInt64, to out: inout [UInt8]) {
        var w = word
        for _ in 0..<8 {
            out.append(UInt8(truncatingIfNeeded: w))
            w >>= 8
        }
    }
}
