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
///   without the arena's lock. `Trimmer` gives the free pages back every second
///   (`malloc_trim`), so that the resident set follows what is in use instead of the highest the
///   arenas ever held.
/// - SQLite's cached pages live in a buffer of their own (`SQLITE_CONFIG_PAGECACHE`), not in the
///   arenas. A connection drops its whole cache whenever another connection or process has written
///   the file since its last transaction, and reads the pages again: with the worker and `serve` on
///   one file that is every transaction. Each page is a block of 4 KiB and a little more, and
///   thousands of them would come and go in the arenas every second, leaving holes that small
///   blocks take and keep: the arenas would spread, and the allocator would touch more of their
///   trimmed pages again between two trims. In the buffer a page takes a slot and gives it back;
///   only pages beyond its slots come from the heap (`SQLiteStore.pageBuffer` says how many of each).
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
        configureSQLitePages()
    }

    /// Slots of SQLite's page buffer, a page of 4 KiB each (the store's page size), shared by every
    /// connection of the process: room for what a worker's and its readers' transactions read at once.
    static let sqlitePageSlots = 1024

    /// Gives SQLite its page buffer; must run before SQLite is first used, and does nothing after.
    private static func configureSQLitePages() {
        #if canImport(CSQLitePageCache)
            let header = faresync_sqlite_page_header_size()
            guard header >= 0 else { return }
            let slotSize = (4096 + Int(header) + 7) & ~7
            // Never freed: SQLite holds it for the life of the process.
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: slotSize * sqlitePageSlots, alignment: 4096)
            if faresync_sqlite_page_cache(buffer, Int32(slotSize), Int32(sqlitePageSlots)) != SQLITE_OK { buffer.deallocate() }
        #endif
    }

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
        var interval: Duration = .seconds(1)

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
