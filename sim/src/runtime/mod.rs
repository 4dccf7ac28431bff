//! The simulator's runtime: the shared [`world::World`] of one run, the
//! agenda of timed actions and the timers that wake it, the network and the
//! messages it carries, each node's mailbox loop and the answers tasks wait
//! for, and the run's clock. Everything here is the machinery every node
//! shares; what a node *is* lives in `nodes/`.

pub(crate) mod agenda;
pub(crate) mod alarm;
pub(crate) mod answers;
pub(crate) mod draws;
pub(crate) mod ending;
pub(crate) mod mailbox;
pub(crate) mod msg;
pub(crate) mod net;
pub(crate) mod node;
pub(crate) mod node_table;
pub(crate) mod run_clock;
pub(crate) mod step_budget;
pub(crate) mod waits;
pub(crate) mod wakeups;
pub(crate) mod world;
