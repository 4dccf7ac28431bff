//! The protocol's timings and the `Retry-After` hints, as servers and
//! clients are configured: part of a scenario's config, read by the steps.

use idemsim_model::RetryPolicy;
use serde::{Deserialize, Serialize};

/// Protocol timings, as the servers and clients are configured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProtocolSettings {
    /// Lease of a claim or takeover (default 1 s).
    pub lease_ms: u64,
    /// The documented retention window (default 24 h).
    pub expiry_window_ms: u64,
    /// The window the sweeper actually uses (default: the documented one).
    pub sweep_window_ms: u64,
    /// How often the sweeper runs (default 1 h).
    pub sweep_interval_ms: u64,
    /// How often the reconciler scans for stale records while it finds
    /// them (default 500 ms).
    pub reconcile_interval_ms: u64,
    /// While its scans find nothing, the reconciler waits twice as long
    /// after each, up to this (default 2 s); a scan that finds a stale
    /// record brings it back to `reconcile_interval_ms`.
    pub reconcile_idle_max_ms: u64,
    /// After faults heal, a stale record must be finished within its lease
    /// plus this (default 10 s).
    pub reconcile_bound_ms: u64,
    /// How often the outbox relay polls without a notification from the
    /// database (default 3 s); a notification wakes it at once.
    pub relay_interval_ms: u64,
    /// A server gives up on a store call after this (default 300 ms).
    pub store_timeout_ms: u64,
    /// A server gives up on the dependency after this (default 500 ms).
    pub downstream_timeout_ms: u64,
    /// Handler work before completing, drawn in `[min, max]` (default 5..50 ms).
    pub work_ms: [u64; 2],
    /// The clients' retry policy.
    pub retry: RetryPolicy,
    /// Sends per operation (percent) above which retries are amplified.
    pub amplification_max_percent: u32,
    /// The least share of a run's operations, in percent, that must be
    /// acknowledged with a success (property `progress`). The default is
    /// met with room by the correct protocol in every catalogue scenario.
    pub progress_min_percent: u32,
    /// The `Retry-After` hints servers give.
    pub retry_after: RetryAfter,
}

/// The `Retry-After` hints a server gives with a retryable answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryAfter {
    /// 409 in flight: the time left on the holder's lease, at least this
    /// (default 50 ms).
    pub in_flight_min_ms: u64,
    /// 409 after a takeover lost the race (default 100 ms).
    pub takeover_refused_ms: u64,
    /// 409 after the holder's write was fenced (default 200 ms).
    pub lease_lost_ms: u64,
    /// 503 when the store or the dependency did not answer (default 100 ms).
    pub unavailable_ms: u64,
}

impl Default for RetryAfter {
    fn default() -> RetryAfter {
        RetryAfter { in_flight_min_ms: 50, takeover_refused_ms: 100, lease_lost_ms: 200, unavailable_ms: 100 }
    }
}

/// The default of [`ProtocolSettings::progress_min_percent`].
pub const PROGRESS_MIN_PERCENT: u32 = 50;

impl Default for ProtocolSettings {
    fn default() -> ProtocolSettings {
        ProtocolSettings {
            lease_ms: 1_000,
            expiry_window_ms: 86_400_000,
            sweep_window_ms: 86_400_000,
            sweep_interval_ms: 3_600_000,
            reconcile_interval_ms: 500,
            reconcile_idle_max_ms: 2_000,
            reconcile_bound_ms: 10_000,
            relay_interval_ms: 3_000,
            store_timeout_ms: 300,
            downstream_timeout_ms: 500,
            work_ms: [5, 50],
            retry: RetryPolicy::default(),
            amplification_max_percent: 600,
            progress_min_percent: PROGRESS_MIN_PERCENT,
            retry_after: RetryAfter::default(),
        }
    }
}
