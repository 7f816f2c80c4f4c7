import Testing

@Suite struct ReconcilerTests {
    @Test func aStoredContractRemovesItsReservation() async throws {
        let h = Harness()
        try await h.send(Make.user("u1"), Make.reservation("u1"))
        #expect(try await h.doc("customers/u1/reservations/O1") != nil)
        try await h.send(Make.contract("u1"))
        #expect(try await h.doc("customers/u1/reservations/O1") == nil)
        #expect(h.dispatcher.outcomes.reservationsReconciled == 1)
    }

    @Test func aReservationAfterItsContractIsNotWritten() async throws {
        let h = Harness()
        try await h.send(Make.user("u1"), Make.contract("u1"))
        try await h.send(Make.reservation("u1"))
        #expect(try await h.doc("customers/u1/reservations/O1") == nil)
        // Even after a newer version changed the contract's order id.
        try await h.send(Make.contract("u1", version: "2", orderId: "O2"), Make.reservation("u1", id: "again"))
        #expect(try await h.doc("customers/u1/reservations/O1") == nil)
    }

    @Test func cancelAndCreditRemoveRejectKeeps() async throws {
        let h = Harness()
        let created = Make.t0 + 30 * Make.minute
        try await h.send(Make.reservation("u1", orderId: "A"), Make.reservation("u1", orderId: "B"), Make.reservation("u1", orderId: "C"))
        try await h.send(
            Make.payment("u1", orderId: "A", status: .cancel, at: created + Make.minute),
            Make.payment("u1", orderId: "B", status: .credit, at: created + Make.minute),
            Make.payment("u1", orderId: "C", status: .reject, at: created + Make.minute))
        #expect(try await h.doc("customers/u1/reservations/A") == nil)
        #expect(try await h.doc("customers/u1/reservations/B") == nil)
        #expect(try await h.doc("customers/u1/reservations/C")?["paymentStatus"]?.stringValue == "REJECT")
    }

    @Test func paymentsForMissingOrExpiredReservationsChangeNothing() async throws {
        let h = Harness()
        let created = Make.t0 + 30 * Make.minute
        try await h.send(Make.payment("u1", orderId: "none", status: .capture, at: created))
        try await h.send(Make.reservation("u1"))
        try await h.send(Make.payment("u1", status: .cancel, at: created + 61 * Make.minute))
        #expect(try await h.doc("customers/u1/reservations/O1")?["paymentStatus"] == nil)
        try await h.send(Make.payment("u1", status: .capture, at: created + 60 * Make.minute))
        #expect(try await h.doc("customers/u1/reservations/O1")?["paymentStatus"]?.stringValue == "CAPTURE")
        #expect(try await h.paths().filter { $0.contains("none") }.isEmpty)
    }

    @Test func sweepExpiresAfter60MinutesOr24HoursWhenRejected() async throws {
        let h = Harness()
        let created = Make.t0
        try await h.send(Make.reservation("u1", orderId: "open", created: created), Make.reservation("u1", orderId: "rejected", created: created))
        try await h.send(Make.payment("u1", orderId: "rejected", status: .reject, at: created + Make.minute))
        try await h.dispatcher.sweep(watermark: created + 60 * Make.minute)
        #expect(try await h.doc("customers/u1/reservations/open") != nil)
        try await h.dispatcher.sweep(watermark: created + 60 * Make.minute + 1)
        #expect(try await h.doc("customers/u1/reservations/open") == nil)
        #expect(try await h.doc("customers/u1/reservations/rejected") != nil)
        try await h.dispatcher.sweep(watermark: created + 24 * Make.hour + 1)
        #expect(try await h.doc("customers/u1/reservations/rejected") == nil)
    }

    @Test func aRedeliveredEventChangesNothingEvenAfterOthers() async throws {
        let h = Harness()
        let r = Make.reservation("u1")
        try await h.send(r, Make.payment("u1", status: .reject, at: Make.t0 + 31 * Make.minute))
        try await h.send(r)
        #expect(try await h.doc("customers/u1/reservations/O1")?["paymentStatus"]?.stringValue == "REJECT")
        #expect(h.dispatcher.outcomes.duplicateEvents == 1)
    }
}
