//! idemsim: deterministic simulation testing for the idempotency-key
//! protocol (claim / execute / complete, with fenced lease takeover and
//! safe retries). This is the one crate a user depends on.
//!
//! Bring a store (any [`store::IdempotencyStore`]) or a protocol (any
//! [`protocol::Protocol`], one step overridden), and get a verdict from
//! the simulator ([`Simulation`]: seeded sweeps over a catalogue scenario
//! or a scenario file, replays, shrinking, traces, HTML timelines), from
//! the conformance kit ([`store::conformance`]) and from real concurrency
//! ([`stress`]); every failure comes with the seed that replays it.
//! [`prelude`] has what a test usually needs.
//!
//! **Invariant:** a report depends only on the scenario, variant, store and
//! seeds: never on the number of workers, on which thread ran which seed,
//! or on time.
//!
//! Features: `pg`, `mysql` and `redis` (the real-store adapters) and `http`
//! (`serve` and the black-box attacker) are on by default. A crate that
//! only simulates its own store or protocol can turn them off
//! (`default-features = false`) and build none of their clients.
//!
//! ```
//! use idemsim::prelude::*;
//!
//! let report = Simulation::scenario("concurrent-duplicates")
//!     .unwrap()
//!     .store("my-mem", || Ok(MemStore::new()))
//!     .seeds(0..10)
//!     .jobs(1)
//!     .sweep()
//!     .unwrap();
//! assert_eq!(report.seeds_failed, 0);
//! ```

pub use idemsim_model as model;
pub use idemsim_protocol as protocol;
pub use idemsim_sim as sim;
pub use idemsim_store as store;

pub mod catalogue;
pub mod error;
pub mod harness;
#[cfg(feature = "http")]
pub mod http;
pub mod merge;
pub mod output;
pub mod prelude;
pub mod program;
pub mod report;
pub mod scenario;
#[cfg(feature = "http")]
pub mod serve;
pub mod shard;
pub mod shrink;
pub mod simulation;
pub mod store_check;
pub mod stress;
pub mod sweep;
pub mod target;

pub use error::Error;
pub use scenario::{Expect, Scenario};
pub use simulation::Simulation;
