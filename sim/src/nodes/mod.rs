//! The simulated machines: API servers, clients, the database (with its
//! durability and a second service's probes), the payment provider and
//! the consumer, and the background jobs; and `env.rs`, the simulator as
//! the protocol core's environment, which servers, clients and jobs run
//! the core through.

pub(crate) mod background;
pub(crate) mod client;
pub(crate) mod db;
pub(crate) mod disk;
pub(crate) mod downstream;
pub(crate) mod env;
pub(crate) mod probe;
pub(crate) mod server;
