import FareSyncEvents
import FareSyncStore

/// The reconciler (docs/reference.md#triggers): a user's reservation lives until the fare contract of its order is
/// stored, its payment is cancelled or credited, or it expires at a sweep. It runs inside the
/// triggers' transaction, so a contract and the removal of its reservation commit together.
extension Triggers {
    mutating func reservationCreated(_ event: CloudEvent, _ reservation: ReservationCreated) throws {
        let uid = reservation.customerId
        if try tx.hasContractOrder(uid: uid, orderId: reservation.orderId) {
            outcomes.reservationsSkipped += 1
            journal?.outcome(.ignored, reason: "order-has-contract")
            return
        }
        var document = event.data
        document["customerId"] = nil
        let path = Paths.reservation(uid: uid, orderId: reservation.orderId)
        try set(path, .object(document))
        try tx.trackReservation(path: path, created: reservation.createdMilliseconds, rejected: false)
        outcomes.reservationsWritten += 1
    }

    mutating func paymentUpdated(_ event: CloudEvent, _ payment: PaymentUpdated) throws {
        let path = Paths.reservation(uid: payment.customerId, orderId: payment.orderId)
        guard case .object(var document)? = try tx.document(path),
            let created = document["created"]?.stringValue.flatMap(RFC3339.milliseconds),
            event.time - created <= rules.reservationLifetime
        else {
            outcomes.paymentsIgnored += 1
            journal?.outcome(.ignored, reason: "no-open-reservation")
            return
        }
        switch payment.status {
        case .cancel, .credit:
            try delete(path)
            try tx.untrackReservation(path: path)
            outcomes.reservationsCancelled += 1
        case .authenticate, .capture, .create, .import, .initiate, .reject:
            document["paymentStatus"] = .string(payment.status.rawValue)
            try set(path, .object(document))
            try tx.trackReservation(path: path, created: created, rejected: payment.status == .reject)
            outcomes.paymentsApplied += 1
        }
    }

    /// A fare contract with `orderId` was stored for `uid`: that user's reservation of the order is done.
    mutating func reconcile(uid: String, orderId: String) throws {
        let reservation = Paths.reservation(uid: uid, orderId: orderId)
        if try tx.hasDocument(reservation) {
            try delete(reservation)
            try tx.untrackReservation(path: reservation)
            outcomes.reservationsReconciled += 1
        }
    }

    /// Removes the reservations the watermark has carried past their lifetime: 60 minutes after
    /// `created`, 24 hours for a rejected one.
    mutating func expireReservations(watermark: Int64) throws {
        for path in try tx.expiredReservations(
            before: watermark - rules.reservationLifetime,
            rejectedBefore: watermark - rules.rejectedReservationLifetime)
        {
            journal?.begin(subject: path, kind: "sweep", source: nil, eventTime: watermark, keys: [path] + Self.reservationKeys(path))
            journal?.outcome(.expired)
            try delete(path)
            try tx.untrackReservation(path: path)
            outcomes.reservationsExpired += 1
            journal?.finish()
        }
    }
}

extension Triggers {
    /// The uid and order id of a reservation's path (`customers/{uid}/reservations/{orderId}`).
    static func reservationKeys(_ path: String) -> [String] {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return [] }
        return [String(parts[1]), String(parts[3])]
    }
}
