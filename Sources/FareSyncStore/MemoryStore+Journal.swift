import FareSyncEvents

/// The memory store's journal: entries by sequence number, the sequence numbers in order, and the
/// sequence numbers of each key (a key without entries has no array); or, where it is only appended
/// to and then taken whole, the entries in an array (`appended`).
struct MemoryJournal: Sendable {
    var entries: [Int64: JournalEntry] = [:]
    var order: [Int64] = []
    var byKey: [ByteKey: [Int64]] = [:]
    var next: Int64 = 1
    /// Set where the journal is only appended to and then taken whole (a load's shard): the
    /// entries in order, numbered from 1, in place of `entries`, `order` and `byKey`, which stay
    /// empty (`next` stays 1). An append is then one array append, with nothing numbered in a map
    /// or indexed by key, and the loader takes the array without copying it.
    var appended: [JournalEntry]?
}

extension MemoryTransaction {
    package func appendJournal(_ entries: [JournalEntry]) throws {
        if state.journal.appended != nil {
            state.journal.appended!.append(contentsOf: entries)
            let count = entries.count
            onRollBack { state in state.journal.appended!.removeLast(count) }
            return
        }
        let first = state.journal.next
        for entry in entries {
            let sequence = state.journal.next
            state.journal.next += 1
            state.journal.entries[sequence] = entry
            state.journal.order.append(sequence)
            for key in entry.keys { state.journal.byKey[ByteKey(key), default: []].append(sequence) }
        }
        onRollBack { state in
            for sequence in (first..<state.journal.next).reversed() {
                state.journal.order.removeLast()
                for key in state.journal.entries.removeValue(forKey: sequence)?.keys ?? [] {
                    state.journal.byKey[ByteKey(key)]?.removeLast()
                    if state.journal.byKey[ByteKey(key)]?.isEmpty == true { state.journal.byKey[ByteKey(key)] = nil }
                }
            }
            state.journal.next = first
        }
    }

    package func journal(key: String, limit: Int) throws -> [JournalEntry] {
        let wanted = ByteKey(key)
        if let appended = state.journal.appended {
            return Array(appended.filter { $0.keys.contains { ByteKey($0) == wanted } }.suffix(limit))
        }
        return (state.journal.byKey[wanted] ?? []).suffix(limit).compactMap { state.journal.entries[$0] }
    }

    package func journalEntries(after: Int64, limit: Int) throws -> [(sequence: Int64, entry: JournalEntry)] {
        if let appended = state.journal.appended {
            let start = Int(min(max(0, after), Int64(appended.count)))
            let end = min(appended.count, start + max(0, limit))
            return (start..<end).map { (sequence: Int64($0 + 1), entry: appended[$0]) }
        }
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
        // An append-only journal is taken whole into a store, whose sweep prunes it there.
        if state.journal.appended != nil { return 0 }
        let old = state.journal.entries.filter { $0.value.retentionTime < time }
        guard !old.isEmpty else { return 0 }
        let pruned = old.map { (sequence: $0.key, entry: $0.value) }
            .sorted { ($0.entry.retentionTime, $0.sequence) < ($1.entry.retentionTime, $1.sequence) }.prefix(max(0, limit))
        let gone = Set(pruned.map(\.sequence))
        state.journal.order.removeAll { gone.contains($0) }
        for (sequence, entry) in pruned {
            state.journal.entries[sequence] = nil
            for key in entry.keys {
                state.journal.byKey[ByteKey(key)]?.removeAll { $0 == sequence }
                if state.journal.byKey[ByteKey(key)]?.isEmpty == true { state.journal.byKey[ByteKey(key)] = nil }
            }
        }
        onRollBack { state in
            for (sequence, entry) in pruned {
                state.journal.entries[sequence] = entry
                for key in entry.keys { state.journal.byKey[ByteKey(key), default: []].append(sequence) }
            }
            for key in Set(pruned.flatMap { $0.entry.keys.map(ByteKey.init) }) { state.journal.byKey[key]?.sort() }
            state.journal.order = (state.journal.order + gone).sorted()
        }
        return pruned.count
    }

    /// Makes a journal never appended to append-only (`MemoryJournal.appended`).
    package func appendJournalOnly() {
        precondition(state.journal.next == 1 && state.journal.appended == nil, "a journal appended to already")
        state.journal.appended = []
    }

    /// The append-only journal's entries, moved out: the journal is empty after, and numbers its
    /// next entries from 1 again. Taken once no write that appended to it can roll back, since a
    /// rollback would remove entries that are gone.
    package func takeAppendedJournal() -> [JournalEntry] {
        guard let entries = state.journal.appended else { preconditionFailure("not an append-only journal") }
        state.journal.appended = []
        return entries
    }
}
