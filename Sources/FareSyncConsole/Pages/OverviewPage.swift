import FareSyncStore
import Hummingbird
import Mustache

/// `/console/`: the counts, the rate of applied events, the partitions' lag and the mirror; its
/// live part (`?part=live`) is fetched again when the feed moves.
struct OverviewPage {
    let store: any DocumentStore
    let probes: ConsoleProbes
    let watcher: ConsoleWatcher
    let cache = OverviewCache()

    /// The process's probes, asked on every fetch: the mirror and the broker move while the feed
    /// stands still.
    func probe(into model: inout OverviewModel) async {
        if let status = await probes.mirror?() {
            model.mirror = OverviewModel.Mirror(
                position: status.position, lagPositions: status.lagPositions, lagSeconds: RateChart.format(status.lagSeconds))
        }
        if let partitions = await probes.partitions?() {
            model.partitions = partitions.map { p in
                OverviewModel.Partition(
                    topic: p.topic, partition: p.partition, position: p.position.map(String.init) ?? "none",
                    highWatermark: p.highWatermark.map(String.init) ?? "unknown", lag: p.lag.map(String.init) ?? "unknown")
            }
            model.hasPartitions = !model.partitions.isEmpty
        }
    }

    static let template = try! MustacheTemplate(string: OverviewTemplate.text)

    func add(to group: RouterGroup<some RequestContext>) {
        group.get { request, _ in try await answer(request) }
    }

    func answer(_ request: Request) async throws -> Response {
        let live = Self.template.render(try await model())
        if request.uri.queryParameters.get("part") == "live" { return ConsoleResponse.html(live) }
        return ConsoleResponse.html(Layout.page(title: "Overview", body: live, current: "/console/", stream: "/console/stream"))
    }

    func model() async throws -> OverviewModel {
        let (store, mirrorConsumer) = (store, probes.mirrorConsumer)
        var model = try await cache.model(head: watcher.head) {
            try await OverviewModel.read(store, mirrorConsumer: mirrorConsumer)
        }
        await probe(into: &model)
        let rate = watcher.rate
        model.rateTitle = rate.countsEvents ? "Events applied per second" : "Changes to the store per second"
        model.chart = RateChart.svg(rate.rates(now: .now), label: rate.countsEvents ? "events applied" : "document changes")
        return model
    }
}
