//! Deterministic simulation of the idempotency-key protocol.
//!
//! A run builds a small deployment on madsim (API servers, clients, a
//! database node hosting any `IdempotencyStore`, a deduplicating payment
//! dependency, a reconciler, a sweeper, an outbox relay and its consumer),
//! drives a seeded workload through a seeded network (drops, duplicates,
//! delays, partitions), seeded clocks (skew, drift) and seeded process
//! faults (crashes, pauses, lost unsynced writes), then heals, and hands
//! the recorded history to the model's checkers.
//!
//! **Invariant:** one seed fully determines a run. Randomness comes only
//! from [`rng`]'s named child streams of the seed; time only from madsim's
//! simulated clock; iteration only over ordered maps. No wall clock, OS
//! randomness or thread scheduling reaches a run, and every run is bounded
//! by its phases (simulated time) and a step budget.
//!
//! ```
//! use idemsim_sim::{run_seed, trace_hash, SimConfig, StoreKind};
//!
//! let config = SimConfig::default();
//! let a = run_seed(&config, StoreKind::Mem, 42).unwrap();
//! let b = run_seed(&config, StoreKind::Mem, 42).unwrap();
//! assert_eq!(trace_hash(&a.history), trace_hash(&b.history));
//! assert!(a.violations.is_empty(), "the correct protocol passes");
//! ```

#[cfg(not(madsim))]
compile_error!(
    "idemsim-sim must be built with `--cfg madsim`. The workspace's .cargo/config.toml sets it; \
     an explicit RUSTFLAGS in your environment overrides that file, so add `--cfg madsim` to it."
);

pub mod bounds;
pub mod concurrent;
pub mod config;
pub mod explore;
mod faults;
pub mod floor;
mod occurrences;
pub use idemsim_protocol as protocol;
mod nodes;
mod render;
pub mod rng;
mod run;
mod runtime;
mod subject;
pub mod timing;
pub use idemsim_protocol::variant;
mod worker_memo;
pub mod workload;

pub use config::{ConfigError, Durability, FaultSettings, ProtocolSettings, RetryAfter, SimConfig};
pub use faults::{plan, swarm};
pub use protocol::{execution, Protocol};
pub use render::{history_html, html, story, timeline, trace};
pub use run::{
    draws, followed, run_seed, run_seed_here, ProtocolFactory, RunError, RunOutcome, StoreFactory, StoreKind, Subject,
};
pub use swarm::FaultProfile;
pub use trace::{from_jsonl, to_jsonl, trace_hash, TraceError, TraceHeader};
pub use variant::{
    ClaimStep, CompletionStep, DependencyFailureStep, DownstreamKeyStep, FingerprintStep, LeaseStep, LocalEffectStep,
    PublishStep, ReadStep, RetryStep, ScopeStep, Steps, SweepStep, TakeoverStep, ValidationStep, Variant,
};
