//! The protocol core: the request handler, the client's retry loop and the
//! background jobs, written once over an environment.
//!
//! [`Protocol`] names the steps of PROTOCOL.md as provided methods (the
//! correct protocol); a broken variant overrides one. [`Env`] and
//! [`ClientEnv`] are what a step may do: read the node's clock, run a
//! store operation, call the dependency, publish, sleep, record an
//! observation, pass a fault site. The simulator (`sim`'s server, client,
//! database and job nodes) and the stress mode (`idemsim_scenarios::stress`)
//! are two implementations of the environment; neither has a protocol step
//! of its own.
//!
//! **Invariant:** nothing in this module uses madsim or tokio, or any
//! module of this crate but `config`, `variant` and itself (a test reads
//! the sources to keep it so): the same steps run under the simulator's
//! clock and over real connections.
//!
//! ```
//! use idemsim_sim::protocol::{Correct, Protocol};
//! use idemsim_sim::Variant;
//! // A broken variant is a protocol with one step overridden.
//! assert_eq!(Variant::UnfencedCompletion.protocol().name(), "unfenced-completion");
//! assert_eq!(Correct.lease_ms(1_000), 1_000);
//! ```

pub mod broken;
mod client;
mod env;
pub mod execution;
mod jobs;
mod ops;
mod reply;
mod server;
mod steps;

pub use client::run_operation;
pub use env::{ClientEnv, Env, FaultSite, KeyLock, Proceed};
pub use jobs::{reconciler, relay_pass, resume, sweeper, BATCH};
pub use ops::{StoreOp, StoreReply};
pub use reply::Reply;
pub use server::{respond, serve};
pub use steps::{Claimed, Correct, Protocol};

#[cfg(test)]
mod tests {
    /// The core stays free of the simulator's runtime and of tokio, and
    /// reaches into no module of the crate that does.
    #[test]
    fn the_core_uses_neither_madsim_nor_tokio() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/protocol");
        let mut files = vec![dir.clone()];
        let mut checked = 0;
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            // The code, without comments and without its tests (this one names what it bans).
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            let code: String =
                code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
            for banned in ["madsim", "tokio", "crate::world", "crate::node", "crate::alarm", "crate::net", "crate::db"]
            {
                assert!(!code.contains(banned), "{} uses {banned}", path.display());
            }
            checked += 1;
        }
        assert!(checked >= 10, "read only {checked} files of the core");
    }
}
