import FareSyncEvents

/// The memory store's journal: entries by sequence number, the sequence numbers in order, and the
/// sequence numbers of each key (a key without entries has no array).
struct MemoryJournal: Sendable {
    var entries: [Int64: JournalEntry] = [:]
    var order: [Int64] = []
    /// nil where nobody traces (a load's shards, whose journal is read out whole), which then scan.
    var byKey: [ByteKey: [Int64]]?
    var next: Int64 = 1
}

extension MemoryTransaction {
    package func appendJournal(_ entries: [JournalEntry]) throws {
        let first = state.journal.next
        for entry in entries {
            let sequence = state.journal.next
            state.journal.next += 1
            state.journal.entries[sequence] = entry
            state.journal.order.append(sequence)
            for key in entry.keys { state.journal.byKey?[ByteKey(key), default: []].append(sequence) }
        }
        onRollBack { state in
            for sequence in (first..<state.journal.next).reversed() {
                state.journal.order.removeLast()
                for key in state.journal.entries.removeValue(forKey: sequence)?.keys ?? [] {
                    state.journal.byKey?[ByteKey(key)]?.removeLast()
                    if state.journal.byKey?[ByteKey(key)]?.isEmpty == true { state.journal.byKey?[ByteKey(key)] = nil }
                }
            }
            state.journal.next = first
        }
    }

    package func journal(key: String, limit: Int) throws -> [JournalEntry] {
        let wanted = ByteKey(key)
        let sequences =
            state.journal.byKey.map { $0[wanted] ?? [] }
            ?? state.journal.order.filter { sequence in state.journal.entries[sequence]?.keys.contains { ByteKey($0) == wanted } == true }
        return sequences.suffix(limit).compactMap { state.journal.entries[$0] }
    }

    package func journalEntries(after: Int64, limit: Int) throws -> [(sequence: Int64, entry: JournalEntry)] {
        let order = state.journal.order
        var (low, high) = (0, order.count)
        while low < high {
            let middle = (low + high) / 2
            if order[middle] <= after { low = middle + 1 } else { high = middle }
        }
        return order[low..<min(order.count, low + max(0, limit))].compactMap { sequence in
            state.journal.entries[sequence].map { (sequence: sequence, entry: $0) }
        }
    }

    package func pruneJournal(before time: Int64, limit: Int) throws -> Int {
        let old = state.journal.entries.filter { $0.value.retentionTime < time }
        guard !old.isEmpty else { return 0 }
        let pruned = old.map { (sequence: $0.key, entry: $0.value) }
            .sorted { ($0.entry.retentionTime, $0.sequence) < ($1.entry.retentionTime, $1.sequence) }.prefix(max(0, limit))
        let gone = Set(pruned.map(\.sequence))
        state.journal.order.removeAll { gone.contains($0) }
        for (sequence, entry) in pruned {
            state.journal.entries[sequence] = nil
            for key in entry.keys {
                state.journal.byKey?[ByteKey(key)]?.removeAll { $0 == sequence }
                if state.journal.byKey?[ByteKey(key)]?.isEmpty == true { state.journal.byKey?[ByteKey(key)] = nil }
            }
        }
        onRollBack { state in
            for (sequence, entry) in pruned {
                state.journal.entries[sequence] = entry
                for key in entry.keys { state.journal.byKey?[ByteKey(key), default: []].append(sequence) }
            }
            for key in Set(pruned.flatMap { $0.entry.keys.map(ByteKey.init) }) { state.journal.byKey?[key]?.sort() }
            state.journal.order = (state.journal.order + gone).sorted()
        }
        return pruned.count
    }
}
