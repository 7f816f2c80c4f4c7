import ServiceLifecycle

#if canImport(CMalloc) && os(Linux)
    import CMalloc
#endif
#if canImport(CSQLitePageCache)
    import CSQLitePageCache
#endif

/// How a long-running FareSync process keeps its resident set to what it uses (glibc's allocator).
///
/// - Buffers of 128 KiB and more (large messages, log lines, documents) come from mmap and go back
///   to the system when freed. glibc's default raises this threshold as large blocks are freed, after
///   which freed megabyte buffers pile up in per-thread arenas.
/// - Freed memory inside the arenas stays resident until it is trimmed, and every arena keeps the
///   pages of its busiest moment. By default each of the dozen threads (Swift's, NIO's,
///   librdkafka's) gets an arena of its own, up to eight per core, so the resident set is the sum of
///   a dozen peaks, each thread's at another moment. Two arenas (`M_ARENA_MAX`) hold what the
///   threads allocate together; each thread's cache of small blocks (tcache) takes most allocations
///   without the arena's lock. `Trimmer` gives the free pages back every few seconds
///   (`malloc_trim`), so that the resident set follows what is in use instead of the highest the
///   arenas ever held.
/// - Each SQLite connection takes a block for its first `sqlitePageBlock` cached pages at once
///   (`SQLITE_CONFIG_PAGECACHE` without a buffer), one mapping of its own, and keeps it until it
///   closes. A connection drops its whole cache whenever another connection or process has written
///   the file since its last transaction, and reads the pages again: with the worker and `serve` on
///   one file that is every transaction. Each page is a block of 4 KiB and a little more, and out
///   of the arenas thousands of them would come and go every second, leaving holes that small
///   blocks take and keep: the arenas would spread, and the allocator would touch more of their
///   trimmed pages again between two trims. In its block a page takes a line and gives it back;
///   only pages beyond it come from the heap (`SQLiteStore.pageOverflow`). A buffer shared by every
///   connection would not do: once it is nearly full SQLite stops growing every cache, and a
///   large transaction writes its pages out early.
///
/// ```swift
/// ProcessMemory.configure()                                   // first thing in main
/// services.append(.init(service: ProcessMemory.Trimmer()))    // in a long-running command
/// ```
enum ProcessMemory {
    static func configure() {
        #if canImport(CMalloc) && os(Linux)
            _ = mallopt(M_MMAP_THRESHOLD, 128 * 1024)
            _ = mallopt(M_ARENA_MAX, 2)
        #endif
        _ = sqlitePageBlockAccepted
    }

    /// Pages in each SQLite connection's block: about 1.1 MiB, enough for what one transaction
    /// reads; SQLite's default is 20.
    static let sqlitePageBlock = 256

    /// The pages SQLite accepted for each connection's block, 0 if it refused (it had started).
    /// Set on first use, which `configure()` makes before SQLite is used.
    static let sqlitePageBlockAccepted: Int = {
        #if canImport(CSQLitePageCache)
            faresync_sqlite_page_blocks(Int32(sqlitePageBlock)) == SQLITE_OK ? sqlitePageBlock : 0
        #else
            0
        #endif
    }()

    /// The heap's bytes in use (allocated and not freed) and held (taken from the system, in use or
    /// not), nil where the allocator does not say.
    static var heap: (inUse: Int, held: Int)? {
        #if canImport(CMalloc) && os(Linux)
            let info = mallinfo2()
            return (Int(info.uordblks + info.hblkhd), Int(info.arena + info.hblkhd))
        #else
            return nil
        #endif
    }

    /// Gives the free pages of every arena back to the system.
    static func trim() {
        #if canImport(CMalloc) && os(Linux)
            _ = malloc_trim(0)
        #endif
    }

    /// Trims the heap every `interval` while the process runs.
    struct Trimmer: Service {
        var interval: Duration = .seconds(5)

        func run() async throws {
            while !Task.isShuttingDownGracefully {
                do {
                    try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
                } catch {
                    return
                }
                ProcessMemory.trim()
            }
        }
    }
}
