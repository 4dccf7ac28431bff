//! [`Error`]: what can go wrong asking idemsim for something. A property
//! breaking is not an error: it is a finding, in the report. An error is
//! a request idemsim could not carry out (an unknown name, a bad argument,
//! a file it cannot read, a store it cannot open), and its `Display` is one
//! line a person can act on; the CLI prints nothing else.

use idemsim_sim::explore::ExploreError;
use idemsim_sim::{ConfigError, RunError};
use idemsim_store::StoreError;
use std::path::PathBuf;

/// What can go wrong asking idemsim for something; match on the kind, show
/// it with `Display` (one line, no backtrace).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A name that is not in the list it was looked up in.
    #[error("unknown {what} '{name}'; {hint}")]
    Unknown {
        /// What kind of name: "scenario", "variant", "store".
        what: &'static str,
        /// The name asked for.
        name: String,
        /// Where the known names are, or the known names.
        hint: String,
    },
    /// An argument in the wrong form or out of its bounds, or arguments
    /// that do not fit together (a seed range, a shard, a URL, a flag).
    #[error("{0}")]
    Usage(String),
    /// A simulation configuration that cannot run.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A file that could not be read or written.
    #[error("cannot {action} {}: {}", .path.display(), crate::output::plain(.source))]
    Io {
        /// What was being done, in words: "read", "write the trace to".
        action: String,
        /// The file.
        path: PathBuf,
        /// The operating system's answer.
        #[source]
        source: std::io::Error,
    },
    /// A file that was read but does not hold what it should.
    #[error("{} is not {expected}: {message}", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What it should hold: "a valid scenario", "an HTTP config".
        expected: &'static str,
        /// What is wrong, in one line.
        message: String,
    },
    /// A scenario that does not hold together: no name, an unknown
    /// coverage counter, a variant of its own named like a built-in one.
    #[error("{0}")]
    Scenario(String),
    /// Inputs that belong to different runs: a scenario file saved from a
    /// run on another store or protocol, reports of different scenarios
    /// or builds.
    #[error("{0}")]
    Mismatch(String),
    /// A seed that cannot be shrunk: it passes, or it ends in a run error
    /// rather than a violation.
    #[error("seed {seed} {why}")]
    NotShrinkable {
        /// The seed.
        seed: u64,
        /// Why, as the rest of the sentence after the seed.
        why: String,
    },
    /// A run that could not be judged (a livelock, a panic, a store that
    /// broke).
    #[error(transparent)]
    Run(#[from] RunError),
    /// A store that could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The explorer could not explore.
    #[error(transparent)]
    Explore(#[from] ExploreError),
    /// A stress run could not run.
    #[error(transparent)]
    Stress(#[from] crate::stress::StressError),
    /// A service (the one under test, or the one `serve` starts) could not
    /// be reached, started or kept running.
    #[error("{0}")]
    Service(String),
    /// A regression harness found failing seeds: the message tells the
    /// first one's story and the command that reproduces it (several
    /// lines; the harness panics with it).
    #[error("{0}")]
    Found(String),
}

impl Error {
    /// An [`Error::Io`] for `path`.
    pub fn io(action: impl Into<String>, path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { action: action.into(), path: path.into(), source }
    }
}

/// A result whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
