/// Which of a step's reads its write checks (`StepLog.readsToCheck`): what may have changed since
/// the step read it.
package enum StepCheck: Sendable, Equatable {
    /// None: what the step read holds.
    case none
    /// The reads of the keys that changed since the step read them, by row (`KeyRow`).
    case keys(Set<Int64>)
    /// Every read.
    case all
}
