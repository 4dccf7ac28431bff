//! The integration suite: one binary, one module per concern.

mod conformance;
