//! The protocol core: the request handler, the client's retry loop and the
//! background jobs of the idempotency-key protocol, written once over an
//! environment.
//!
//! [`Protocol`] names the steps of docs/protocol.md as provided methods (the
//! correct protocol); a broken variant overrides one. [`Env`] and
//! [`ClientEnv`] are what a step may do: read the node's clock, run a
//! store operation, call the dependency, publish, sleep, record an
//! observation, pass a fault site. The simulator (`idemsim-sim`'s server,
//! client, database and job nodes), the stress mode and `idemsim serve`
//! are implementations of the environment; none has a protocol step of
//! its own. [`Steps`] is the serialisable description of a variant, and
//! [`Variant`] names the catalogue's.
//!
//! **Invariant:** this crate depends on neither madsim nor tokio (its
//! `Cargo.toml` has neither, and `.ci/run` checks `cargo tree`), so the
//! same steps run under the simulator's clock, over real connections and
//! under any other scheduler.
//!
//! ```
//! use idemsim_protocol::{Correct, Protocol, Variant};
//! // A broken variant is a protocol with one step overridden.
//! assert_eq!(Variant::UnfencedCompletion.protocol().name(), "unfenced-completion");
//! assert_eq!(Correct.lease_ms(1_000), 1_000);
//! ```

pub mod broken;
mod client;
mod env;
pub mod execution;
mod jobs;
mod ledger;
mod ops;
mod reply;
mod server;
mod settings;
mod steps;
pub mod variant;

pub use client::run_operation;
pub use env::{ChargeAnswer, ClientEnv, Env, FaultSite, KeyLock, Proceed};
pub use jobs::{reconciler, relay_pass, resume, sweeper, BATCH};
pub use ledger::{Decision, Ledger};
pub use ops::{StoreOp, StoreReply};
pub use reply::Reply;
pub use server::{respond, serve};
pub use settings::{ProtocolSettings, RetryAfter, PROGRESS_MIN_PERCENT};
pub use steps::{fingerprint, Claimed, Correct, Protocol};
pub use variant::{
    ClaimStep, CompletionStep, DependencyFailureStep, DownstreamKeyStep, FingerprintStep, LeaseStep, LocalEffectStep,
    PublishStep, ReadStep, RetryStep, ScopeStep, Steps, SweepStep, TakeoverStep, ValidationStep, Variant,
};
