//! Shared helpers for the integration suite in `main.rs`: deliberately broken
//! stores that prove the conformance kit and the simulator can fail.

pub mod broken;
