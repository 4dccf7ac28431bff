//! The integration suite: one binary, one module per concern.

mod black_box;
mod browser;
mod catalogue;
mod cli;
mod conformance;
mod design;
mod determinism;
mod docs;
mod real_stores;
mod redis_store;
mod setup;
mod simulation;
mod stories;
mod workshop;
