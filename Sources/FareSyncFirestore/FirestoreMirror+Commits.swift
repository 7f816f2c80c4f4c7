import Crypto
import FareSyncEvents
import FareSyncStore
import Tracing

extension FirestoreMirror {
    /// A commit sent to the emulator and not answered yet.
    struct InFlight {
        var writes: ArraySlice<PendingWrite>
        var refusal: (change: DocumentChange, error: String)?
        /// The position document it writes (an index of `positionPaths`).
        var lane: Int
        /// The last feed position it covers.
        var end: Int64
        /// The position it records: every change up to here is in the emulator once it lands.
        var covered: Int64
        /// The store paths of the documents it writes.
        var paths: Set<String>
        var answer: Task<[String?], any Error>
    }

    /// Sends one commit: the writes, the refusal records they clear or add, and the position.
    ///
    /// It writes the position document the commit in flight, if any, does not write, with a
    /// precondition on the update time that document got from the commit before. Sent alone, it
    /// records its own end; sent behind another, the position both start from, because the other
    /// may still fail while this one lands.
    func launch(_ writes: ArraySlice<PendingWrite>, refusal: (change: DocumentChange, error: String)?) -> InFlight {
        let attached = attachment!
        let endpoint = client.endpoint
        let lane = 1 - (inFlight.last?.lane ?? lastLane)
        lastLane = lane
        let end = refusal?.change.position ?? writes.last?.change.position ?? attached.position
        var all = writes.map(\.write)
        for pending in writes where refused[pending.change.path] != nil {
            all.append(.delete(endpoint.name(Self.refusalPath(pending.change.path))))
        }
        if let refusal {
            let fields: [String: FirestoreValue] = [
                "path": .string(refusal.change.path), "error": .string(refusal.error),
                "position": .integer(refusal.change.position),
            ]
            all.append(.update(endpoint.name(Self.refusalPath(refusal.change.path)), fields: fields))
            all.append(.delete(endpoint.name(refusal.change.path)))
        }
        let covered = inFlight.isEmpty ? end : attached.position
        let precondition = attached.updateTimes[lane].map { ("updateTime", JSONValue.string($0)) } ?? ("exists", .bool(false))
        all.append(
            .update(
                endpoint.name(Self.positionPaths[lane]), fields: ["position": .integer(covered), "feed": .string(attached.identity)],
                precondition: JSONObject([precondition])))
        // An unstructured task, not a child task: the commit stays in flight after this call and
        // after `step()`, which lands it in a later call (oldest first), and a child task cannot
        // outlive the call that starts it. `answer(of:)` passes cancellation on to it.
        var paths = Set(writes.map(\.change.path))
        if let refusal { paths.insert(refusal.change.path) }
        let answer = Task { [client, all, paths, tracer] in
            try await tracer.withSpan("firestore commit", ofKind: .client) { span in
                if span.isRecording { span.attributes["faresync.documents"] = paths.sorted() }
                return try await client.commit(all)
            }
        }
        return InFlight(writes: writes, refusal: refusal, lane: lane, end: end, covered: covered, paths: paths, answer: answer)
    }

    /// Waits for the oldest commit in flight and records what it did; how many changes it applied.
    ///
    /// When it failed, the others in flight are waited for too (the update times of those that
    /// landed are kept) and the mirror goes on from the end of the last commit before it: a page
    /// the emulator refuses as invalid is split until the refused document stands alone, a
    /// position document that changed under the mirror makes it read its position again, and any
    /// other failure is thrown, to be retried.
    func landOldest() async throws(FirestoreError) -> Int {
        let oldest = inFlight.removeFirst()
        do {
            let times = try await answer(of: oldest)
            record(oldest, times: times)
            return oldest.writes.count
        } catch {
            for other in inFlight {
                if let times = try? await answer(of: other) { attachment?.updateTimes[other.lane] = times.last ?? nil }
            }
            inFlight = []
            readAhead?.page.cancel()
            readAhead = nil
            do throws(FirestoreError) {
                guard case .refused(_, "INVALID_ARGUMENT", _) = error, oldest.refusal == nil, !oldest.writes.isEmpty else { throw error }
                try await commitSplitting(oldest.writes)
                return oldest.writes.count
            } catch {
                guard error.failedAPrecondition else { throw error }
                // Someone else moved a position document (or the emulator restarted empty): the
                // mirror starts over from what the emulator says.
                logger.notice("mirror: the emulator's position changed (\(error)); reading it again")
                attachment = nil
                return 0
            }
        }
    }

    /// The emulator's answer to a commit: the update time of each of its writes.
    private func answer(of commit: InFlight) async throws(FirestoreError) -> [String?] {
        do {
            return try await withTaskCancellationHandler {
                try await commit.answer.value
            } onCancel: {
                commit.answer.cancel()
            }
        } catch let error as FirestoreError {
            throw error
        } catch {
            throw .unavailable("\(error)")
        }
    }

    /// Commits the changes alone, one commit after another; a page the emulator refuses as invalid
    /// is split in halves until the refused document is alone, then recorded as refused.
    func commitSplitting(_ writes: ArraySlice<PendingWrite>) async throws(FirestoreError) {
        do {
            try await commitAlone(writes, refusal: nil)
        } catch {
            guard case .refused(_, "INVALID_ARGUMENT", let message) = error else { throw error }
            if writes.count == 1 {
                try await commitAlone([], refusal: (writes.first!.change, message))
                return
            }
            let middle = writes.startIndex + writes.count / 2
            try await commitSplitting(writes[..<middle])
            try await commitSplitting(writes[middle...])
        }
    }

    private func commitAlone(_ writes: ArraySlice<PendingWrite>, refusal: (change: DocumentChange, error: String)?) async throws(FirestoreError) {
        let commit = launch(writes, refusal: refusal)
        record(commit, times: try await answer(of: commit))
    }

    /// What a commit that landed changes: the mirror's position, the update time of the position
    /// document it wrote, the refusal records, the status and the metrics.
    private func record(_ commit: InFlight, times: [String?]) {
        if var attached = attachment {
            attached.position = commit.end
            attached.recorded = max(attached.recorded, commit.covered)
            attached.updateTimes[commit.lane] = times.last ?? nil
            attachment = attached
        }
        for pending in commit.writes { refused[pending.change.path] = nil }
        if let refusal = commit.refusal {
            refused[refusal.change.path] = refusal.error
            logger.error("mirror: the emulator refused \(refusal.change.path): \(refusal.error)")
            MirrorMetrics.refused.increment()
        }
        let deletes = commit.writes.filter { $0.change.isDeletion }.count
        status.position = commit.end
        status.written += commit.writes.count - deletes
        status.deleted += deletes
        status.refused = refused.count
        MirrorMetrics.record(written: commit.writes.count - deletes, deleted: deletes, position: commit.end)
    }

    /// The Firestore write of one change: an update with the document's fields, or a delete.
    static func write(_ change: DocumentChange, endpoint: FirestoreEndpoint) -> FirestoreWrite {
        guard let text = change.text else { return .delete(endpoint.name(change.path)) }
        let document = (try? JSONParser.parse(text, maxDepth: .max)) ?? .object(JSONObject())
        return .update(endpoint.name(change.path), document: document, timestamps: FirestoreMapping.timestamps(at: change.path))
    }

    /// Where the refusal of the document at `path` is recorded (an id Firestore accepts for any path).
    static func refusalPath(_ path: String) -> String {
        refusedCollection + "/" + Hex.string(SHA256.hash(data: Array(path.utf8)).prefix(16))
    }
}

extension FirestoreError {
    /// Whether the emulator refused a commit for its precondition on a position document.
    var failedAPrecondition: Bool {
        guard case .refused(_, let status, _) = self else { return false }
        return ["FAILED_PRECONDITION", "NOT_FOUND", "ABORTED", "ALREADY_EXISTS"].contains(status)
    }
}
