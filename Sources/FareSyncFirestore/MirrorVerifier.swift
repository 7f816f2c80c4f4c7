import FareSyncEvents
import FareSyncStore

/// One way an emulator differs from the store it mirrors.
public struct MirrorDifference: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// In the store, not in the emulator.
        case missing
        /// In the emulator, not in the store.
        case extra
        /// In both, with other values: the first differing fields, each as "field: store …, firestore …".
        case different([String])
        /// In the store; the emulator refused it, with this error (see `FirestoreMirror`).
        case refused(String)
    }

    public var path: String
    public var kind: Kind

    public var description: String {
        switch kind {
        case .missing: return "missing  \(path)"
        case .extra: return "extra    \(path)"
        case .different(let fields): return "differs  \(path): \(fields.joined(separator: "; "))"
        case .refused(let error): return "refused  \(path): \(error)"
        }
    }
}

/// Compares an emulator with the store it mirrors, document by document, as a Firestore client
/// reads them: timestamps as instants, numbers by type and value (`FirestoreValue`'s equality).
///
/// Memory stays small for large stores: each side is reduced to a digest per path, and only the
/// documents whose digests differ are read again to say how. The emulator is listed by collection
/// group: every collection id that a store path uses, and every collection at the emulator's root
/// (`_faresync`, the mirror's own bookkeeping, aside).
public enum MirrorVerifier {
    /// Every difference, sorted by path; empty when the emulator holds exactly the store's documents.
    public static func differences(store: any DocumentStore, client: FirestoreClient) async throws -> [MirrorDifference] {
        let collected = try await storeDigests(store)
        var pending = collected.digests
        var differences: [MirrorDifference] = []
        var groups = collected.collectionIds
        for id in try await client.rootCollectionIds() where id != "_faresync" { groups.insert(id) }
        let refused = try await FirestoreMirror.refusals(in: client)
        for group in groups.sorted() {
            try await client.forEachDocument(inCollectionGroup: group) { page in
                for (path, fields) in page where !path.hasPrefix("_faresync/") {
                    guard let expected = pending.removeValue(forKey: ByteKey(path)) else {
                        differences.append(MirrorDifference(path: path, kind: .extra))
                        continue
                    }
                    if FirestoreValue.digest(fields) != expected {
                        let document = try await store.read { try $0.document(path) } ?? .null
                        let fieldsInStore = FirestoreMapping.fields(of: document, at: path)
                        differences.append(MirrorDifference(path: path, kind: .different(compare(fieldsInStore, fields, prefix: ""))))
                    }
                }
            }
        }
        for key in pending.keys {
            let path = key.string
            differences.append(MirrorDifference(path: path, kind: refused[path].map(MirrorDifference.Kind.refused) ?? .missing))
        }
        return differences.sorted { UTF8Order.less($0.path, $1.path) }
    }

    /// Each store document's digest, and the collection ids its paths use.
    static func storeDigests(_ store: any DocumentStore) async throws -> (digests: [ByteKey: [UInt8]], collectionIds: Set<String>) {
        let collected = DigestCollector()
        try await store.exportDocuments { path, document in
            collected.add(path, FirestoreValue.digest(FirestoreMapping.fields(of: document, at: path)))
        }
        return (collected.digests, collected.collectionIds)
    }

    /// The fields that differ, as "field: store …, firestore …", at most five.
    static func compare(_ store: [String: FirestoreValue], _ firestore: [String: FirestoreValue], prefix: String) -> [String] {
        var out: [String] = []
        for name in Set(store.keys).union(firestore.keys).sorted(by: UTF8Order.less) where out.count < 5 {
            let field = prefix + name
            switch (store[name], firestore[name]) {
            case (let a?, let b?) where a == b: continue
            case (.map(let a)?, .map(let b)?): out += compare(a, b, prefix: field + ".")
            case (let a, let b): out.append("\(field): store \(a?.summary ?? "absent"), firestore \(b?.summary ?? "absent")")
            }
        }
        return Array(out.prefix(5))
    }
}

/// Gathers digests from the store's export callback.
private final class DigestCollector: @unchecked Sendable {
    var digests: [ByteKey: [UInt8]] = [:]
    var collectionIds: Set<String> = []

    func add(_ path: String, _ digest: [UInt8]) {
        digests[ByteKey(path)] = digest
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        if segments.count >= 2 { collectionIds.insert(String(segments[segments.count - 2])) }
    }
}
