//! The scenario catalogue and the `idemsim` command line.
//!
//! A scenario is a value: a name, a lesson, a simulation config, and the
//! verdict each protocol variant must get. The command line sweeps seeds of
//! a scenario across threads, reports violations with the one command that
//! replays them, and replays single seeds as timelines or traces.
//!
//! **Invariant:** a report depends only on the scenario, variant, store and
//! seeds: never on `--jobs`, on which thread ran which seed, or on time.
//! The CLI never panics on bad input: every error is one line and exit 2.
//!
//! ```
//! use idemsim_scenarios::cli;
//!
//! let (mut out, mut err) = (Vec::new(), Vec::new());
//! let args = ["idemsim", "run", "--seeds", "0..3", "--jobs", "1"].map(String::from).to_vec();
//! assert_eq!(cli::run(args, &mut out, &mut err), cli::EXIT_CLEAN);
//! assert!(String::from_utf8(out).unwrap().contains("CLEAN"));
//! ```

pub mod allocator;
pub mod bench;
pub mod catalogue;
pub mod cli;
pub mod harness;
pub mod http;
pub mod instructions;
pub mod merge;
pub mod output;
pub mod report;
pub mod scenario;
pub mod serve;
pub mod shard;
pub mod shrink;
pub mod simulation;
pub mod stress;
pub mod sweep;
pub mod target;
pub mod tracing_setup;

pub use scenario::{Expect, Scenario};
pub use simulation::Simulation;
