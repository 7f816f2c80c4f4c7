import Hummingbird

/// Routes another target adds to `HTTPApplication`, such as the console: the application mounts
/// them without importing their target, which imports this one.
///
/// ```swift
/// struct Hello: HTTPMount {
///     func add(to router: Router<ServiceRequestContext>) { router.get("hello") { _, _ in "hello\n" } }
/// }
/// let app = HTTPApplication(readiness: { .init(ready: true, text: "ready") }, mounts: [Hello()])
/// ```
public protocol HTTPMount: Sendable {
    func add(to router: Router<ServiceRequestContext>)
}
