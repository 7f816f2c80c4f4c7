import FareSyncSQLite
import Metrics
import Prometheus

/// The `/metrics` text of a process that serves HTTP: the registry's series, with the gauges
/// that describe the process itself brought up to date first.
enum ProcessMetrics {
    static let sqliteMemory = Gauge(label: "faresync_sqlite_memory_bytes")
    static let heapInUse = Gauge(label: "faresync_heap_in_use_bytes")
    static let heapHeld = Gauge(label: "faresync_heap_held_bytes")
    static let sqlitePageSlotsUsed = Gauge(label: "faresync_sqlite_page_slots_used")
    static let sqlitePageOverflow = Gauge(label: "faresync_sqlite_page_overflow_bytes")

    /// The registry's Prometheus text, read after the process gauges are recorded.
    static func text(_ registry: PrometheusCollectorRegistry) -> String {
        sqliteMemory.record(SQLiteStore.memoryUsed)
        if let heap = ProcessMemory.heap {
            heapInUse.record(heap.inUse)
            heapHeld.record(heap.held)
        }
        let pages = SQLiteStore.pageBuffer
        sqlitePageSlotsUsed.record(pages.slotsUsed)
        sqlitePageOverflow.record(pages.overflowBytes)
        return registry.emitToString()
    }
}
