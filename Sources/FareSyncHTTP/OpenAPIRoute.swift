import Hummingbird

/// `GET /openapi.json`: the OpenAPI 3.1 document of both services (`openapi.json` beside this
/// file, compiled in).
public enum OpenAPIRoute {
    public static var document: [UInt8] { PackageResources.openapi_json }

    public static func add<Context: RequestContext>(to router: Router<Context>) {
        router.get("openapi.json") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: document)))
        }
    }
}
