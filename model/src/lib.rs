//! The idempotency-key protocol as a pure reference model.
//!
//! This crate states what correct means. It holds the types of the protocol
//! (scoped keys, fingerprints, records, fencing attempts), the replay rules
//! of docs/protocol.md §3 as one decision function, a sequential
//! reference store that every real store is compared to, the history type a
//! simulated run records, and one checker per property.
//!
//! **Invariant:** the model is pure. It does no I/O, spawns nothing, reads no
//! clock and draws no random numbers: times are values handed in, and every
//! function gives the same answer for the same arguments. That is what lets
//! a seed reproduce a run byte for byte.
//!
//! ```
//! use idemsim_model::{decide, Claim, Decision, Fingerprint, RefStore, Scope, SimTime};
//!
//! let mut store = RefStore::new();
//! let scope = Scope::new("acme", "8e03978e");
//! let fp = Fingerprint::of("POST", "/charges", br#"{"amount": 500}"#);
//! let first = store.claim(&scope, &fp, SimTime(0), 1_000);
//! assert_eq!(decide(&fp, Some(&first), SimTime(0)), Decision::Execute { attempt: idemsim_model::Attempt(1) });
//!
//! // The same request again while the lease is live: 409.
//! let again = store.claim(&scope, &fp, SimTime(10), 1_000);
//! assert_eq!(decide(&fp, Some(&again), SimTime(10)), Decision::InFlight);
//!
//! // The same key with another body: 422, whatever the state.
//! let other = Fingerprint::of("POST", "/charges", br#"{"amount": 900}"#);
//! assert_eq!(decide(&other, Some(&again), SimTime(10)), Decision::Mismatch);
//! # let _ = Claim::Owned(idemsim_model::Attempt::FIRST);
//! ```

mod bytes;
mod canonical;
pub mod checker;
pub mod coverage;
mod decision;
mod fingerprint;
pub mod history;
mod ids;
pub mod linearizability;
mod lookup;
mod named;
pub mod outside;
pub mod probe;
mod record;
mod reference;
mod request;
pub mod retry;
mod sometimes;
mod text;

pub use bytes::{hex, Bytes};
pub use checker::{check_all, judge, judge_with, Property, Violation};
pub use coverage::Coverage;
pub use decision::{decide, decide_existing, Decision};
pub use fingerprint::{Fingerprint, FingerprintMemo};
pub use history::{Answer, Entry, Event, History, Origin, RunMeta};
pub use ids::{
    Attempt, CallerId, DownstreamKey, IdempotencyKey, MessageId, NodeId, OpId, RequestId, Scope, SimTime, Try,
};
pub use record::{
    Claim, Completion, LocalEffect, OutboxEntry, OutboxMessage, Record, RecordState, RecoveryPoint, Takeover,
    WriteOutcome,
};
pub use reference::RefStore;
pub use request::{Effects, Request, StoredResponse};
pub use retry::RetryPolicy;
pub use sometimes::Sometimes;
pub use text::Text;
