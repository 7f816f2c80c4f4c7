import FareSyncConsole
import FareSyncEvents
import FareSyncHTTP
import FareSyncIdentity
import FareSyncPipeline
import FareSyncSimulation
import FareSyncStore
import FareSyncTestSupport
import FareSyncTicketing
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging

/// The console's side of the fixture: a router of the console alone, and users made through the
/// identity service.
extension ServeFixture {
    /// An application of the console alone, with the composition's services, whose requests take
    /// their `Host` from `X-Test-Host`: the test client always names localhost.
    func consoleWithHost() -> Application<RouterResponder<ServiceRequestContext>> {
        let router = Router(context: ServiceRequestContext.self)
        router.add(middleware: HostFromHeader())
        console.add(to: router)
        return Application(router: router, services: application.services)
    }

    struct HostFromHeader: RouterMiddleware {
        typealias Context = ServiceRequestContext
        func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
            guard let host = request.headers[HTTPField.Name("X-Test-Host")!] else { return try await next(request, context) }
            var head = request.head
            head.authority = host
            return try await next(Request(head: head, body: request.body), context)
        }
    }

    /// A user made through the identity service, its trigger applied.
    func user(email: String) async throws -> String {
        let session = try await identity.signUp(email: email, password: "secret-1")
        return session.user.uid
    }
}

/// The console as a browser uses it: the session cookie from the first page, and the CSRF token
/// from the forms.
struct Browser {
    let client: any TestClientProtocol
    var cookie = ""

    mutating func get(_ uri: String) async throws -> TestResponse {
        let response = try await client.execute(uri: uri, method: .get, headers: cookie.isEmpty ? [:] : [.cookie: cookie])
        if let set = response.headers[.setCookie] { cookie = String(set.prefix { $0 != ";" }) }
        return response
    }

    func post(_ uri: String, form: String, headers extra: HTTPFields = [:]) async throws -> TestResponse {
        var headers: HTTPFields = [.cookie: cookie, .contentType: "application/x-www-form-urlencoded"]
        headers.append(contentsOf: extra)
        return try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: form))
    }

    /// The CSRF token a page's forms carry.
    static func csrf(in page: TestResponse) -> String? {
        let text = String(buffer: page.body)
        guard let start = text.range(of: "name=\"csrf\" value=\"") else { return nil }
        return String(text[start.upperBound...].prefix { $0 != "\"" })
    }
}
