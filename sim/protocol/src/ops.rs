//! Store operations as values: what a protocol step asks of the store,
//! how any [`IdempotencyStore`] runs it, and what the history records of
//! its result. Both environments go through these, so a store call means
//! and records the same thing in the simulator and in the stress mode.

use idemsim_model::history::{Origin, WriteKind};
use idemsim_model::{
    Attempt, Claim, Completion, Event, Fingerprint, LocalEffect, MessageId, OutboxEntry, OutboxMessage, Record,
    RecoveryPoint, Scope, SimTime, Takeover, WriteOutcome,
};
use idemsim_store::{IdempotencyStore, StoreError};

/// One store operation, executed atomically.
#[derive(Clone, Debug)]
pub enum StoreOp {
    /// [`IdempotencyStore::claim`].
    Claim {
        /// The record.
        scope: Scope,
        /// The request's fingerprint.
        fingerprint: Fingerprint,
        /// The claimer's clock.
        now: SimTime,
        /// The lease asked for.
        lease_ms: u64,
    },
    /// [`IdempotencyStore::take_over`].
    TakeOver {
        /// The record.
        scope: Scope,
        /// The attempt the stale holder has.
        expected: Attempt,
        /// The taker's clock.
        now: SimTime,
        /// The new lease.
        lease_ms: u64,
    },
    /// [`IdempotencyStore::write_recovery_point`].
    WriteRecoveryPoint {
        /// The record.
        scope: Scope,
        /// The writer's attempt.
        attempt: Attempt,
        /// The point.
        point: RecoveryPoint,
    },
    /// [`IdempotencyStore::complete`].
    Complete {
        /// The record.
        scope: Scope,
        /// The writer's attempt.
        attempt: Attempt,
        /// Response, local effect, outbox.
        completion: Completion,
    },
    /// [`IdempotencyStore::release`].
    Release {
        /// The record.
        scope: Scope,
        /// The writer's attempt.
        attempt: Attempt,
    },
    /// [`IdempotencyStore::read`].
    Read {
        /// The record.
        scope: Scope,
    },
    /// [`IdempotencyStore::sweep`].
    Sweep {
        /// The sweeper's clock.
        now: SimTime,
        /// Records older than this are deleted.
        window_ms: u64,
    },
    /// [`IdempotencyStore::stale_in_progress`].
    StaleInProgress {
        /// The scanner's clock.
        now: SimTime,
        /// At most this many.
        limit: usize,
    },
    /// [`IdempotencyStore::outbox_pending`].
    OutboxPending {
        /// At most this many.
        limit: usize,
    },
    /// [`IdempotencyStore::outbox_mark_published`].
    MarkPublished {
        /// The message.
        id: MessageId,
    },
    /// A row in the application's own table, committed in a transaction of
    /// its own (the broken local-effect step): no idempotency-store call.
    CommitEffect {
        /// The record it belongs to.
        scope: Scope,
        /// The writer's attempt.
        attempt: Attempt,
        /// The row.
        effect: LocalEffect,
    },
    /// [`IdempotencyStore::stage_outbox`]: outbox messages queued in a
    /// transaction of their own, after (or instead of) the completion's.
    /// The correct protocol never asks for it.
    StageOutbox {
        /// The record the messages belong to.
        scope: Scope,
        /// The writer's attempt (recorded, not checked).
        attempt: Attempt,
        /// The messages.
        messages: Vec<OutboxMessage>,
    },
    /// An `in_progress` record deleted by the sweeper (the broken sweep
    /// step), as a release, so the key reads as absent.
    DeleteInProgress {
        /// The record.
        scope: Scope,
        /// Its holder's attempt.
        attempt: Attempt,
    },
}

/// A store operation's result.
#[derive(Clone, Debug)]
pub enum StoreReply {
    /// Of a claim.
    Claim(Claim),
    /// Of a takeover.
    Takeover(Takeover),
    /// Of a fenced write.
    Write(WriteOutcome),
    /// Of a read.
    Record(Option<Record>),
    /// Of a sweep: the swept records, as the store deleted them.
    Swept(Vec<(Scope, Record)>),
    /// Of a deletion of an in-progress record: the record as read just
    /// before, and the release's outcome.
    Deleted(Option<Record>, WriteOutcome),
    /// Of a scan for stale records.
    Stale(Vec<(Scope, Record)>),
    /// Of an outbox scan.
    Outbox(Vec<OutboxEntry>),
    /// `outbox_mark_published` answered.
    Marked,
    /// The store failed.
    Failed(StoreError),
}

impl StoreOp {
    /// The store method's name.
    pub fn name(&self) -> &'static str {
        match self {
            StoreOp::Claim { .. } => "claim",
            StoreOp::TakeOver { .. } => "take_over",
            StoreOp::WriteRecoveryPoint { .. } => "write_recovery_point",
            StoreOp::Complete { .. } => "complete",
            StoreOp::Release { .. } => "release",
            StoreOp::Read { .. } => "read",
            StoreOp::Sweep { .. } => "sweep",
            StoreOp::StaleInProgress { .. } => "stale_in_progress",
            StoreOp::OutboxPending { .. } => "outbox_pending",
            StoreOp::MarkPublished { .. } => "outbox_mark_published",
            StoreOp::CommitEffect { .. } => "insert_effect_row",
            StoreOp::StageOutbox { .. } => "stage_outbox",
            StoreOp::DeleteInProgress { .. } => "delete_in_progress",
        }
    }

    /// True for the operations that change state.
    pub fn writes(&self) -> bool {
        !matches!(self, StoreOp::Read { .. } | StoreOp::StaleInProgress { .. } | StoreOp::OutboxPending { .. })
    }

    /// Runs the operation on `store`.
    pub async fn apply(&self, store: &dyn IdempotencyStore) -> StoreReply {
        let result = match self {
            StoreOp::Claim { scope, fingerprint, now, lease_ms } => {
                store.claim(scope, fingerprint, *now, *lease_ms).await.map(StoreReply::Claim)
            }
            StoreOp::TakeOver { scope, expected, now, lease_ms } => {
                store.take_over(scope, *expected, *now, *lease_ms).await.map(StoreReply::Takeover)
            }
            StoreOp::WriteRecoveryPoint { scope, attempt, point } => {
                store.write_recovery_point(scope, *attempt, point).await.map(StoreReply::Write)
            }
            StoreOp::Complete { scope, attempt, completion } => {
                store.complete(scope, *attempt, completion).await.map(StoreReply::Write)
            }
            StoreOp::Release { scope, attempt } => store.release(scope, *attempt).await.map(StoreReply::Write),
            StoreOp::DeleteInProgress { scope, attempt } => match store.read(scope).await {
                Ok(before) => store.release(scope, *attempt).await.map(|w| StoreReply::Deleted(before, w)),
                Err(e) => Err(e),
            },
            StoreOp::Read { scope } => store.read(scope).await.map(StoreReply::Record),
            StoreOp::Sweep { now, window_ms } => store.sweep(*now, *window_ms).await.map(StoreReply::Swept),
            StoreOp::StaleInProgress { now, limit } => {
                store.stale_in_progress(*now, *limit).await.map(StoreReply::Stale)
            }
            StoreOp::OutboxPending { limit } => store.outbox_pending(*limit).await.map(StoreReply::Outbox),
            StoreOp::MarkPublished { id } => store.outbox_mark_published(id).await.map(|_| StoreReply::Marked),
            StoreOp::CommitEffect { .. } => Ok(StoreReply::Write(WriteOutcome::Applied)),
            StoreOp::StageOutbox { scope, messages, .. } => {
                store.stage_outbox(scope, messages).await.map(|()| StoreReply::Write(WriteOutcome::Applied))
            }
        };
        result.unwrap_or_else(StoreReply::Failed)
    }

    /// What the history records of this operation's result, by `by`.
    /// Reads, scans and sweeps record nothing here (the environment
    /// records a sweep's events, from the records the store returned, as
    /// the sweeper's).
    pub fn events(&self, by: Origin, reply: &StoreReply) -> Vec<Event> {
        let mut events = Vec::new();
        self.each_event(by, reply, |event| events.push(event));
        events
    }

    /// [`StoreOp::events`], handing each event to `each` instead of
    /// collecting them: the simulator's database appends them straight to
    /// the history, without a vector per operation.
    pub fn each_event(&self, by: Origin, reply: &StoreReply, mut each: impl FnMut(Event)) {
        let fenced =
            |scope: &Scope, attempt: Attempt, write| Event::WriteFenced { by, scope: scope.clone(), attempt, write };
        let event = match (self, reply) {
            (_, StoreReply::Failed(e)) => Event::StoreFailed { by, op: self.name().into(), error: e.to_string() },
            (StoreOp::Claim { scope, fingerprint, now, lease_ms }, StoreReply::Claim(Claim::Owned(attempt))) => {
                Event::Claimed {
                    by,
                    scope: scope.clone(),
                    fingerprint: fingerprint.clone(),
                    attempt: *attempt,
                    locked_until: now.plus_ms(*lease_ms),
                }
            }
            (StoreOp::Claim { scope, now, .. }, StoreReply::Claim(Claim::Existing(record))) => {
                Event::ClaimFound { by, scope: scope.clone(), record: record.clone(), as_of: *now }
            }
            (StoreOp::TakeOver { scope, now, lease_ms, .. }, StoreReply::Takeover(Takeover::Granted(attempt))) => {
                Event::TakenOver { by, scope: scope.clone(), attempt: *attempt, locked_until: now.plus_ms(*lease_ms) }
            }
            (StoreOp::TakeOver { scope, expected, .. }, StoreReply::Takeover(Takeover::Refused(_))) => {
                Event::TakeoverRefused { by, scope: scope.clone(), expected: *expected }
            }
            (StoreOp::WriteRecoveryPoint { scope, attempt, point }, StoreReply::Write(WriteOutcome::Applied)) => {
                Event::RecoveryPointWritten {
                    by,
                    scope: scope.clone(),
                    attempt: *attempt,
                    downstream_key: point.downstream_key.clone(),
                }
            }
            (StoreOp::WriteRecoveryPoint { scope, attempt, .. }, StoreReply::Write(WriteOutcome::Fenced)) => {
                fenced(scope, *attempt, WriteKind::RecoveryPoint)
            }
            (StoreOp::Complete { scope, attempt, completion }, StoreReply::Write(WriteOutcome::Applied)) => {
                return Event::each_of_completion(by, scope, *attempt, completion, each);
            }
            (StoreOp::Complete { scope, attempt, .. }, StoreReply::Write(WriteOutcome::Fenced)) => {
                fenced(scope, *attempt, WriteKind::Completion)
            }
            (StoreOp::Release { scope, attempt }, StoreReply::Write(WriteOutcome::Applied)) => {
                Event::Released { by, scope: scope.clone(), attempt: *attempt }
            }
            (StoreOp::Release { scope, attempt }, StoreReply::Write(WriteOutcome::Fenced)) => {
                fenced(scope, *attempt, WriteKind::Release)
            }
            (StoreOp::CommitEffect { scope, attempt, effect }, StoreReply::Write(_)) => Event::LocalEffectCommitted {
                by,
                scope: scope.clone(),
                attempt: *attempt,
                effect_id: effect.id.clone(),
            },
            (StoreOp::StageOutbox { scope, attempt, messages }, StoreReply::Write(_)) => Event::OutboxStaged {
                by,
                scope: scope.clone(),
                attempt: *attempt,
                outbox: messages.iter().map(|m| m.id.clone()).collect(),
            },
            _ => return,
        };
        each(event);
    }
}

impl StoreReply {
    /// True when a claim or takeover granted the caller an attempt: a
    /// moment at which the caller's lease began.
    pub fn grants(&self) -> bool {
        matches!(self, StoreReply::Claim(_) | StoreReply::Takeover(_))
    }

    /// What a protocol step sees of this reply ([`crate::Env::store`]):
    /// the reply, or `None` when the store failed.
    pub fn answered(self) -> Option<StoreReply> {
        match self {
            StoreReply::Failed(_) => None,
            reply => Some(reply),
        }
    }
}
