//! Store errors: operating failures, as values.

/// Why a store operation failed. A fenced write is not an error: it is the
/// `WriteOutcome::Fenced` answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store could not be reached or refused the operation; it did not
    /// happen.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The operation may or may not have happened (timeout, connection lost
    /// mid-commit). The caller must read before assuming either.
    #[error("outcome unknown: {0}")]
    Indeterminate(String),
    /// A constraint or concurrent update refused the operation.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The store returned data that breaks the record's invariants.
    #[error("corrupt data: {0}")]
    Corrupt(String),
}
