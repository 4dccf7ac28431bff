//! Broken retries (section 7).

use crate::{ClientEnv, Protocol};
use idemsim_model::{IdempotencyKey, Request};

/// `retry: on-4xx`: any 4xx is retried too (a 400 or a 422 never heals).
#[derive(Clone, Copy, Debug, Default)]
pub struct RetryOn4xx;

impl Protocol for RetryOn4xx {
    fn name(&self) -> String {
        "retry-on-4xx".into()
    }
    fn retries(&self, status: u16) -> bool {
        idemsim_model::retry::is_transient_status(status) || (400..500).contains(&status)
    }
}

/// `retry: new-key`: every retry carries a new key, so it is a new
/// operation.
#[derive(Clone, Copy, Debug, Default)]
pub struct NewKeyPerRetry;

impl Protocol for NewKeyPerRetry {
    fn name(&self) -> String {
        "new-key-per-retry".into()
    }
    fn request_for_try(&self, request: &Request, try_no: u32) -> Request {
        match &request.key {
            Some(key) if try_no > 1 => {
                Request { key: Some(IdempotencyKey(format!("{}-retry-{try_no}", key.0).into())), ..request.clone() }
            }
            _ => request.clone(),
        }
    }
}

/// `retry: no-jitter`: the backoff is the bound itself, so clients that
/// failed together retry together.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoJitter;

impl Protocol for NoJitter {
    fn name(&self) -> String {
        "no-jitter".into()
    }
    fn backoff_ms(&self, _env: &dyn ClientEnv, bound_ms: u64) -> u64 {
        bound_ms
    }
}

/// `retry: three-layers`: an SDK, a service client and a job runner each
/// retry the layer below, so budgets multiply.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreeLayerRetries;

impl Protocol for ThreeLayerRetries {
    fn name(&self) -> String {
        "three-layer-retries".into()
    }
    fn retry_layers(&self) -> u32 {
        3
    }
}
