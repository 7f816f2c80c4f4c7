import ServiceLifecycle

#if canImport(CMalloc) && os(Linux)
    import CMalloc
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
