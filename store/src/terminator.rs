//! Killing a store's connections from the server side, to see what a
//! store and its callers make of an operation cut off mid-flight.

use crate::StoreError;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Terminates one of a store's connections from the server side (the
/// argument picks which, as a seeded draw); answers whether it found one
/// to kill. The bundled server stores offer one (`terminate_a_connection`);
/// the stress mode and the concurrent kit call it while callers run.
pub type Terminator = Arc<dyn Fn(u64) -> Pin<Box<dyn Future<Output = Result<bool, StoreError>> + Send>> + Send + Sync>;
