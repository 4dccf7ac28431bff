//! One module per command: its arguments (`Args`) and what it does (`exec`).

pub mod bench;
pub mod check_store;
pub mod concurrent;
pub mod explain;
pub mod explore;
pub mod floor;
pub mod http;
pub mod list;
pub mod merge;
pub mod replay;
pub mod run;
pub mod serve;
pub mod shrink;
pub mod stress;
