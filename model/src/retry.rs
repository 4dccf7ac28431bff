//! The client retry policy of docs/protocol.md §7, as pure bounds.
//!
//! The model only states what a retry may do; drawing the random wait is the
//! simulator's job, and the retry checker holds both to these bounds.

use serde::{Deserialize, Serialize};

/// Capped exponential backoff with full jitter, an attempt cap, a total
/// deadline and a token-bucket retry budget.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryPolicy {
    /// Backoff base: the first retry waits at most this long.
    pub base_ms: u64,
    /// Backoff cap: no wait exceeds it.
    pub cap_ms: u64,
    /// Sends per operation, the first one included.
    pub attempts_max: u32,
    /// No send later than this after the operation's first send.
    pub deadline_ms: u64,
    /// Per-request timeout: an unanswered send is abandoned after it.
    pub timeout_ms: u64,
    /// The retry budget that keeps an outage from being amplified.
    pub budget: RetryBudget,
}

/// A token bucket shared by one client's operations: every first send
/// deposits `deposit_milli / 1000` tokens, every retry spends one, and the
/// bucket holds at most `tokens_max`. No token, no retry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryBudget {
    /// Bucket size in whole tokens; the bucket starts full.
    pub tokens_max: u32,
    /// Thousandths of a token deposited by each first send.
    pub deposit_milli: u32,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            base_ms: 50,
            cap_ms: 2_000,
            attempts_max: 6,
            deadline_ms: 30_000,
            timeout_ms: 1_000,
            budget: RetryBudget { tokens_max: 20, deposit_milli: 500 },
        }
    }
}

impl RetryPolicy {
    /// The full-jitter upper bound of the wait before send `next_try`
    /// (2 for the first retry): `min(cap, base * 2^(next_try - 2))`.
    pub fn backoff_max_ms(&self, next_try: u32) -> u64 {
        assert!(next_try >= 2, "the first send has no backoff");
        let exponent = (next_try - 2).min(62);
        self.base_ms.saturating_mul(1u64 << exponent).min(self.cap_ms)
    }
}

/// True for the failures a client may retry: 409 (in flight), 429, 502, 503
/// and 504. A timeout or reset (no status) is transient too; any other 4xx
/// never is.
pub fn is_transient_status(status: u16) -> bool {
    matches!(status, 409 | 429 | 502 | 503 | 504)
}

/// The token bucket of [`RetryBudget`], in thousandths of a token.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    milli: u64,
    max_milli: u64,
    deposit_milli: u64,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(budget: &RetryBudget) -> TokenBucket {
        let max_milli = u64::from(budget.tokens_max) * 1000;
        TokenBucket { milli: max_milli, max_milli, deposit_milli: u64::from(budget.deposit_milli) }
    }

    /// A first send deposits.
    pub fn on_first_send(&mut self) {
        self.milli = (self.milli + self.deposit_milli).min(self.max_milli);
    }

    /// A retry spends one token; false (and nothing spent) when empty.
    pub fn try_spend(&mut self) -> bool {
        if self.milli < 1000 {
            return false;
        }
        self.milli -= 1000;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_until_the_cap() {
        let p = RetryPolicy { base_ms: 100, cap_ms: 1000, ..RetryPolicy::default() };
        let bounds: Vec<u64> = (2..8).map(|t| p.backoff_max_ms(t)).collect();
        assert_eq!(bounds, vec![100, 200, 400, 800, 1000, 1000]);
        assert_eq!(p.backoff_max_ms(200), 1000);
    }

    #[test]
    fn only_listed_statuses_are_transient() {
        for s in [409, 429, 502, 503, 504] {
            assert!(is_transient_status(s), "{s}");
        }
        for s in [200, 201, 400, 401, 404, 422, 500] {
            assert!(!is_transient_status(s), "{s}");
        }
    }

    #[test]
    fn bucket_refills_by_deposits_and_caps() {
        let mut b = TokenBucket::new(&RetryBudget { tokens_max: 1, deposit_milli: 500 });
        assert!(b.try_spend());
        assert!(!b.try_spend());
        b.on_first_send();
        assert!(!b.try_spend());
        b.on_first_send();
        assert!(b.try_spend());
        for _ in 0..10 {
            b.on_first_send();
        }
        assert!(b.try_spend());
        assert!(!b.try_spend());
    }
}
