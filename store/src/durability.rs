//! Crash semantics a store may opt in to: losing what it acknowledged
//! since its last sync, as a database with write-back caching does when
//! it crashes.
//!
//! The simulator's lost-unsynced-writes fault needs a store that can be
//! rolled back to its last sync. A store opts in by returning itself from
//! [`IdempotencyStore::durability`](crate::IdempotencyStore::durability);
//! a sweep on a store that does not says so in its report and runs without
//! that fault.

use crate::StoreError;

/// A store whose state can be made durable and rolled back to that point.
pub trait CrashDurability: Send + Sync {
    /// Makes the current state durable (an fsync).
    fn sync(&self) -> Result<(), StoreError>;

    /// A crash: the state goes back to the last [`sync`](Self::sync), or to
    /// empty if there was none.
    fn lose_unsynced(&self) -> Result<(), StoreError>;
}
