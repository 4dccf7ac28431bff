//! The operation alphabet the kit draws sequences from.

use idemsim_model::{
    Attempt, Bytes, Completion, DownstreamKey, Fingerprint, LocalEffect, MessageId, OutboxMessage, RecoveryPoint,
    Scope, StoredResponse,
};
use proptest::prelude::*;
use std::fmt;

/// Scopes the kit uses: two callers sharing a key string (isolation), and
/// keys with quotes, wildcards and non-ASCII (parameterisation).
pub(crate) fn scopes() -> [Scope; 4] {
    [Scope::new("alice", "k1"), Scope::new("alice", "k2"), Scope::new("bob", "k1"), Scope::new("bob", "ключ'\"%_;--")]
}

/// The lease every claim and takeover asks for.
pub(crate) const LEASE_MS: u64 = 1_000;

/// One store operation, with small indices that pick scopes and values, so
/// that shrinking stays meaningful.
/// Fields are named after the store-trait parameters they feed; `scope`
/// indexes the kit's four scopes.
#[allow(missing_docs)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `claim` with one of two request bodies.
    Claim { scope: usize, body: u8 },
    /// `take_over` conditional on `expected`.
    TakeOver { scope: usize, expected: u32 },
    /// `write_recovery_point`.
    WriteRecoveryPoint { scope: usize, attempt: u32, tag: u8 },
    /// `complete`, optionally with a local effect and outbox messages.
    Complete { scope: usize, attempt: u32, status: u16, local_effect: bool, messages: u8 },
    /// `release`.
    Release { scope: usize, attempt: u32 },
    /// `read`.
    Read { scope: usize },
    /// `effects`.
    Effects { scope: usize },
    /// `sweep` with a window.
    Sweep { window_ms: u64 },
    /// `stale_in_progress` with a limit.
    StaleInProgress { limit: usize },
    /// `outbox_pending` with a limit.
    OutboxPending { limit: usize },
    /// `outbox_mark_published` of the `pick`-th message id issued so far
    /// (or of an unknown id when none was issued).
    MarkPublished { pick: usize },
    /// Moves the injected clock forward.
    Advance { ms: u64 },
}

impl Op {
    /// A strategy for one operation, weighted towards the interesting ones.
    pub fn strategy() -> BoxedStrategy<Op> {
        // Half the operations on the first scope and half the attempts 1:
        // the long sequences on one key (claim, complete, sweep, claim
        // again, complete again) come up often enough to be checked.
        let scope = prop_oneof![1 => Just(0usize), 1 => 0..scopes().len()];
        let attempt = prop_oneof![1 => Just(1u32), 1 => 1u32..4];
        prop_oneof![
            4 => (scope.clone(), 0u8..2).prop_map(|(scope, body)| Op::Claim { scope, body }),
            3 => (scope.clone(), attempt.clone()).prop_map(|(scope, expected)| Op::TakeOver { scope, expected }),
            2 => (scope.clone(), attempt.clone(), 0u8..2).prop_map(|(scope, attempt, tag)| Op::WriteRecoveryPoint { scope, attempt, tag }),
            3 => (scope.clone(), attempt.clone(), prop::sample::select(vec![201u16, 500]), any::<bool>(), 0u8..3)
                .prop_map(|(scope, attempt, status, local_effect, messages)| Op::Complete { scope, attempt, status, local_effect, messages }),
            1 => (scope.clone(), attempt).prop_map(|(scope, attempt)| Op::Release { scope, attempt }),
            2 => scope.clone().prop_map(|scope| Op::Read { scope }),
            1 => scope.prop_map(|scope| Op::Effects { scope }),
            1 => prop::sample::select(vec![0u64, 500, 3_000]).prop_map(|window_ms| Op::Sweep { window_ms }),
            1 => (1usize..4).prop_map(|limit| Op::StaleInProgress { limit }),
            1 => (1usize..4).prop_map(|limit| Op::OutboxPending { limit }),
            1 => (0usize..8).prop_map(|pick| Op::MarkPublished { pick }),
            3 => prop::sample::select(vec![1u64, 400, 999, 1_000, 1_600]).prop_map(|ms| Op::Advance { ms }),
        ]
        .boxed()
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |i: &usize| scopes()[*i].to_string();
        match self {
            Op::Claim { scope, body } => write!(f, "claim {} body#{body}", s(scope)),
            Op::TakeOver { scope, expected } => write!(f, "take_over {} expected #{expected}", s(scope)),
            Op::WriteRecoveryPoint { scope, attempt, tag } => {
                write!(f, "write_recovery_point {} attempt #{attempt} tag {tag}", s(scope))
            }
            Op::Complete { scope, attempt, status, local_effect, messages } => write!(
                f,
                "complete {} attempt #{attempt} status {status} effect={local_effect} messages={messages}",
                s(scope)
            ),
            Op::Release { scope, attempt } => write!(f, "release {} attempt #{attempt}", s(scope)),
            Op::Read { scope } => write!(f, "read {}", s(scope)),
            Op::Effects { scope } => write!(f, "effects {}", s(scope)),
            Op::Sweep { window_ms } => write!(f, "sweep window {window_ms} ms"),
            Op::StaleInProgress { limit } => write!(f, "stale_in_progress limit {limit}"),
            Op::OutboxPending { limit } => write!(f, "outbox_pending limit {limit}"),
            Op::MarkPublished { pick } => write!(f, "outbox_mark_published pick {pick}"),
            Op::Advance { ms } => write!(f, "advance clock {ms} ms"),
        }
    }
}

pub(crate) fn fingerprint(body: u8) -> Fingerprint {
    Fingerprint::of("POST", "/orders", format!("{{\"amount\":{}}}", 100 + u32::from(body)).as_bytes())
}

pub(crate) fn recovery_point(tag: u8) -> RecoveryPoint {
    RecoveryPoint { downstream_key: DownstreamKey(format!("dk-{tag}").into()), data: Bytes(vec![tag, 0, 255]) }
}

/// The completion of op number `step`: message ids embed the step, so they
/// are unique in any sequence, shrunk or not.
pub(crate) fn completion(step: usize, scope: &Scope, status: u16, local_effect: bool, messages: u8) -> Completion {
    let body = format!("{{\"for\":\"{scope}\",\"step\":{step}}}");
    Completion {
        response: StoredResponse { status, body: Bytes(body.into_bytes()) },
        local_effect: local_effect
            .then(|| LocalEffect { id: format!("effect-{step}"), data: Bytes::text(&scope.to_string()) }),
        outbox: (0..messages)
            .map(|i| OutboxMessage {
                id: MessageId(format!("m{step}-{i}").into()),
                topic: "orders".into(),
                payload: Bytes(vec![i, 0xfe]),
            })
            .collect(),
    }
}

pub(crate) fn attempt(a: u32) -> Attempt {
    Attempt(a)
}
