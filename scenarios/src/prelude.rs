//! What a test of one's own store or protocol usually needs, in one `use`:
//! the store trait and the bundled in-memory store, the model's types, the
//! protocol trait, the simulator's entry point, the conformance kit, the
//! stress mode, and `async_trait` for implementing the two traits; for a
//! protocol step that acts, the environment it acts through (`Env`,
//! `StoreOp`, `ChargeAnswer`, `Reply`).
//!
//! ```
//! use idemsim::prelude::*;
//! let mine = Steps { claim: ClaimStep::CheckThenInsert, ..Steps::default() };
//! assert_eq!(mine.broken(), vec!["claim: check-then-insert"]);
//! ```

pub use crate::scenario::{Expect, Scenario};
pub use crate::simulation::Simulation;
pub use crate::store_check::{StoreCheck, StoreCheckReport};
pub use crate::stress::{stress_with, StressSpec};
pub use async_trait::async_trait;
pub use idemsim_model::{
    Attempt, Claim, Completion, DownstreamKey, Fingerprint, IdempotencyKey, OutboxEntry, OutboxMessage, Property,
    Record, RecordState, RefStore, Scope, SimTime, StoredResponse, Takeover, Violation, WriteOutcome,
};
pub use idemsim_protocol::{
    ChargeAnswer, ClaimStep, ClientEnv, Correct, Env, Protocol, Reply, Steps, StoreOp, StoreReply, Variant,
};
pub use idemsim_sim::explore::{ExploreConfig, ExploreReport, Explorer, Schedule};
pub use idemsim_sim::{SimConfig, Subject};
pub use idemsim_store::conformance::{Concurrent, Conformance};
pub use idemsim_store::{Delegate, IdempotencyStore, MemStore, StoreError};
