//! Faults: the profiles a seed draws (`swarm.rs`, swarm testing), the timed
//! plan drawn from a profile (`plan.rs`: each action with its bound and
//! its shrink step), and the verbs that apply them to the world
//! (`verbs.rs`: crash, restart, pause, partition, skew), and where a run
//! stands with them (`in_run.rs`).

pub(crate) mod in_run;
pub mod plan;
pub mod swarm;
pub(crate) mod verbs;
