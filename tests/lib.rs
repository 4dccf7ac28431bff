//! Shared helpers for the integration suite in `main.rs`: deliberately broken
//! stores that prove the conformance kit and the simulator can fail, and
//! finding the real database servers.

pub mod broken;
pub mod real;
