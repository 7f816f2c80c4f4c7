import FareSyncEvents
import FareSyncIdentity
import FareSyncStore
import Foundation
import Hummingbird

/// A user as the console shows it: its `authUsers/{uid}` document (which every store has, also a
/// replay's or a worker's) and, where this store's identity service made it, its account record.
struct ConsoleUser: Sendable {
    let uid: String
    let document: JSONValue?
    let account: IdentityUser?

    var email: String? { account?.email ?? document?["email"]?.stringValue }
    var phone: String? { account?.phoneNumber ?? document?["phoneNumber"]?.stringValue }
    var disabled: Bool { account?.disabled ?? document?["disabled"]?.boolValue ?? false }

    /// The creation time as `<time>`: the account's, else the document's `createdAt`.
    var created: String {
        if let account { return ValueView.time(milliseconds: account.createdAt) }
        return document?["createdAt"]?.stringValue.map(ValueView.time) ?? "unknown"
    }

    var lastSignIn: String { account.map { ValueView.time(milliseconds: $0.lastLoginAt) } ?? "unknown" }

    /// The custom claims: the document's, else those set before the trigger wrote it.
    var claims: JSONObject { document?["customClaims"]?.objectValue ?? account?.pendingClaims ?? JSONObject() }

    /// The users with these uids that exist in the store (a document or an account), in order.
    static func load(_ uids: [String], store: any DocumentStore, identity: IdentityService?) async throws -> [ConsoleUser] {
        let documents = try await store.read { tx in try uids.map { try tx.document(Paths.authUser($0)) } }
        let accounts = try await identity?.users(uids: uids) ?? uids.map { _ in nil }
        return zip(uids, zip(documents, accounts)).compactMap { uid, found in
            found.0 == nil && found.1 == nil ? nil : ConsoleUser(uid: uid, document: found.0, account: found.1)
        }
    }

    /// The uids of the `authUsers` documents after `uid`, by uid, at most `limit`.
    static func page(after uid: String?, limit: Int, store: any DocumentStore) async throws -> [String] {
        let after = uid.map(Paths.authUser)
        let page = try await store.read { try $0.documents(inCollectionAt: "authUsers", after: after, limit: limit) }
        return page.map { String($0.path.dropFirst("authUsers/".count)) }
    }

    /// The uid in a route's `:uid`, percent-decoded: the router hands the segment as the URL has
    /// it, and the pages link a uid percent-encoded (`Layout.urlComponent`), so a uid with a space
    /// or a `%` reaches its page. What no uid can be (a `/`, a NUL, over 128 bytes, as
    /// `IdentityService` refuses) is a 400 before any read.
    static func uid(in context: some RequestContext) throws -> String {
        let raw = try context.parameters.require("uid")
        guard let uid = raw.removingPercentEncoding, !uid.isEmpty, uid.utf8.count <= 128, !uid.contains("/"), !uid.utf8.contains(0)
        else {
            throw HTTPError(.badRequest, message: "The address does not name a uid.")
        }
        return uid
    }
}
