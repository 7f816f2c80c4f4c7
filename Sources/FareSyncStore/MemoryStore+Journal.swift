import FareSyncEvents

/// The memory store's journal: entries by sequence number, and the sequence numbers of each key.
struct MemoryJournal: Sendable {
    var entries: [Int64: JournalEntry] = [:]
    var byKey: [ByteKey: [Int64]] = [:]
    var next: Int64 = 1
}

extension MemoryTransaction {
    package func appendJournal(_ entries: [JournalEntry]) throws {
        let first = state.journal.next
        for entry in entries {
            let sequence = state.journal.next
            state.journal.next += 1
            state.journal.entries[sequence] = entry
            for key in entry.keys { state.journal.byKey[ByteKey(key), default: []].append(sequence) }
        }
        onRollBack { state in
            for sequence in (first..<state.journal.next).reversed() {
                for key in state.journal.entries.removeValue(forKey: sequence)?.keys ?? [] {
                    state.journal.byKey[ByteKey(key)]?.removeLast()
                }
            }
            state.journal.next = first
        }
    }

    package func journal(key: String, limit: Int) throws -> [JournalEntry] {
        (state.journal.byKey[ByteKey(key)] ?? []).prefix(limit).compactMap { state.journal.entries[$0] }
    }

    package func journalEntries(after: Int64, limit: Int) throws -> [(sequence: Int64, entry: JournalEntry)] {
        state.journal.entries.filter { $0.key > after }.sorted { $0.key < $1.key }.prefix(limit).map { (sequence: $0.key, entry: $0.value) }
    }

    package func pruneJournal(before time: Int64) throws -> Int {
        let pruned = state.journal.entries.filter { $0.value.retentionTime < time }
        guard !pruned.isEmpty else { return 0 }
        let old = state.journal
        onRollBack { $0.journal = old }
        for (sequence, entry) in pruned {
            state.journal.entries[sequence] = nil
            for key in entry.keys { state.journal.byKey[ByteKey(key)]?.removeAll { $0 == sequence } }
        }
        return pruned.count
    }
}
