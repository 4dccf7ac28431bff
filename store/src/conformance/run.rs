//! Running one operation sequence against a store and the reference model.

use super::op::{attempt, completion, fingerprint, recovery_point, scopes, Op, LEASE_MS};
use crate::{IdempotencyStore, StoreError};
use futures::FutureExt;
use idemsim_model::{
    Claim, LocalEffect, MessageId, OutboxEntry, Record, RefStore, Scope, SimTime, Takeover, WriteOutcome,
};
use std::fmt::Write as _;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

/// A typed result, comparable between the store and the model.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Outcome {
    Claim(Claim),
    Takeover(Takeover),
    Write(WriteOutcome),
    Record(Option<Record>),
    Effects(Vec<LocalEffect>),
    Swept(Vec<(Scope, Record)>),
    Stale(Vec<(Scope, Record)>),
    Outbox(Vec<OutboxEntry>),
    Found(bool),
    Clock(SimTime),
}

/// How a step went wrong.
#[derive(Clone, Debug)]
pub(crate) enum Fault {
    Differs { expected: Outcome, actual: Outcome },
    Error(StoreError),
    Panicked(String),
    Hung(Duration),
}

/// Counts that show a passing run exercised the interesting paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Operations executed, audits included.
    pub ops: u64,
    /// Claims that inserted a record.
    pub claims_owned: u64,
    /// Claims that found one.
    pub claims_existing: u64,
    /// Takeovers granted.
    pub takeovers_granted: u64,
    /// Takeovers refused.
    pub takeovers_refused: u64,
    /// Fenced writes (stale attempt, completed or missing record).
    pub writes_fenced: u64,
    /// Completions applied.
    pub completions: u64,
    /// Sweeps that deleted something.
    pub sweeps_deleting: u64,
    /// Stale-record scans that found something.
    pub stale_found: u64,
    /// Messages marked published.
    pub messages_published: u64,
    /// Completions with outbox messages of a key whose earlier completed
    /// record was swept: a new lifetime of the key, a new message.
    pub recompleted_after_sweep: u64,
}

impl Stats {
    pub(crate) fn add(&mut self, o: &Stats) {
        self.ops += o.ops;
        self.claims_owned += o.claims_owned;
        self.claims_existing += o.claims_existing;
        self.takeovers_granted += o.takeovers_granted;
        self.takeovers_refused += o.takeovers_refused;
        self.writes_fenced += o.writes_fenced;
        self.completions += o.completions;
        self.sweeps_deleting += o.sweeps_deleting;
        self.stale_found += o.stale_found;
        self.messages_published += o.messages_published;
        self.recompleted_after_sweep += o.recompleted_after_sweep;
    }

    fn count(&mut self, outcome: &Outcome) {
        self.ops += 1;
        match outcome {
            Outcome::Claim(Claim::Owned(_)) => self.claims_owned += 1,
            Outcome::Claim(Claim::Existing(_)) => self.claims_existing += 1,
            Outcome::Takeover(Takeover::Granted(_)) => self.takeovers_granted += 1,
            Outcome::Takeover(Takeover::Refused(_)) => self.takeovers_refused += 1,
            Outcome::Write(WriteOutcome::Fenced) => self.writes_fenced += 1,
            Outcome::Swept(s) if !s.is_empty() => self.sweeps_deleting += 1,
            Outcome::Stale(s) if !s.is_empty() => self.stale_found += 1,
            Outcome::Found(true) => self.messages_published += 1,
            _ => {}
        }
    }
}

/// What running a sequence produced.
pub(crate) struct CaseRun {
    /// One line per step executed.
    pub transcript: String,
    /// The first failing step (its index and description) and how it failed.
    pub failure: Option<(usize, String, Fault)>,
    pub stats: Stats,
}

/// Runs `ops` on `store` and on a fresh reference store, then audits every
/// scope and the outbox, stopping at the first divergence.
pub(crate) async fn run_case(store: &dyn IdempotencyStore, ops: &[Op], op_timeout: Duration) -> CaseRun {
    let mut model = RefStore::new();
    let mut clock = Clock { now: SimTime(0), issued: Vec::new() };
    let mut run = CaseRun { transcript: String::new(), failure: None, stats: Stats::default() };
    let mut swept: Vec<Scope> = Vec::new();
    let audit = audit_ops();
    let steps =
        ops.iter().map(|op| (op.to_string(), Step::Op(op))).chain(audit.iter().map(|(d, s)| (d.clone(), s.clone())));
    for (i, (description, step)) in steps.enumerate() {
        let expected = clock.apply_model(&mut model, &step, i);
        let actual = guarded(clock.apply_store(store, &step, i), op_timeout).await;
        let verdict = match actual {
            Ok(actual) if actual == expected => None,
            Ok(actual) => Some(Fault::Differs { expected: expected.clone(), actual }),
            Err(fault) => Some(fault),
        };
        let _ = writeln!(run.transcript, "{:>3}. {description:<58} -> {}", i + 1, show(&expected));
        if let Some(fault) = verdict {
            run.failure = Some((i, description, fault));
            return run;
        }
        clock.observe(&expected);
        run.stats.count(&expected);
        match (&step, &expected) {
            (Step::Op(Op::Complete { scope, messages, .. }), Outcome::Write(WriteOutcome::Applied)) => {
                run.stats.completions += 1;
                let again = *messages > 0 && swept.contains(&scopes()[*scope]);
                run.stats.recompleted_after_sweep += u64::from(again);
            }
            (Step::Op(Op::Sweep { .. }), Outcome::Swept(deleted)) => {
                swept.extend(deleted.iter().map(|(s, _)| s.clone()))
            }
            _ => {}
        }
    }
    run
}

/// A step: a drawn operation, or one of the audits that close every case.
#[derive(Clone)]
enum Step<'a> {
    Op(&'a Op),
    AuditRead(Scope),
    AuditEffects(Scope),
    AuditOutbox,
}

fn audit_ops() -> Vec<(String, Step<'static>)> {
    let mut v = Vec::new();
    for scope in scopes() {
        v.push((format!("audit: read {scope}"), Step::AuditRead(scope.clone())));
        v.push((format!("audit: effects {scope}"), Step::AuditEffects(scope)));
    }
    v.push(("audit: all pending outbox messages".to_string(), Step::AuditOutbox));
    v
}

struct Clock {
    now: SimTime,
    /// Message ids issued by applied completions, for `MarkPublished`.
    issued: Vec<MessageId>,
}

impl Clock {
    fn pick(&self, pick: usize) -> MessageId {
        if self.issued.is_empty() {
            return MessageId("never-issued".into());
        }
        self.issued[pick % self.issued.len()].clone()
    }

    fn observe(&mut self, outcome: &Outcome) {
        if let Outcome::Clock(now) = outcome {
            self.now = *now;
        }
    }

    fn apply_model(&mut self, m: &mut RefStore, step: &Step<'_>, i: usize) -> Outcome {
        let all = scopes();
        let now = self.now;
        let op = match step {
            Step::Op(op) => *op,
            Step::AuditRead(s) => return Outcome::Record(m.read(s)),
            Step::AuditEffects(s) => return Outcome::Effects(m.effects(s)),
            Step::AuditOutbox => return Outcome::Outbox(m.outbox_pending(usize::MAX)),
        };
        match op {
            Op::Claim { scope, body } => Outcome::Claim(m.claim(&all[*scope], &fingerprint(*body), now, LEASE_MS)),
            Op::TakeOver { scope, expected } => {
                Outcome::Takeover(m.take_over(&all[*scope], attempt(*expected), now, LEASE_MS))
            }
            Op::WriteRecoveryPoint { scope, attempt: a, tag } => {
                Outcome::Write(m.write_recovery_point(&all[*scope], attempt(*a), &recovery_point(*tag)))
            }
            Op::Complete { scope, attempt: a, status, local_effect, messages } => {
                let c = completion(i, &all[*scope], *status, *local_effect, *messages);
                let outcome = m.complete(&all[*scope], attempt(*a), &c);
                if outcome == WriteOutcome::Applied {
                    self.issued.extend(c.outbox.iter().map(|msg| msg.id.clone()));
                }
                Outcome::Write(outcome)
            }
            Op::Release { scope, attempt: a } => Outcome::Write(m.release(&all[*scope], attempt(*a))),
            Op::Read { scope } => Outcome::Record(m.read(&all[*scope])),
            Op::Effects { scope } => Outcome::Effects(m.effects(&all[*scope])),
            Op::Sweep { window_ms } => Outcome::Swept(m.sweep(now, *window_ms)),
            Op::StaleInProgress { limit } => Outcome::Stale(m.stale_in_progress(now, *limit)),
            Op::OutboxPending { limit } => Outcome::Outbox(m.outbox_pending(*limit)),
            Op::MarkPublished { pick } => Outcome::Found(m.outbox_mark_published(&self.pick(*pick))),
            Op::Advance { ms } => Outcome::Clock(now.plus_ms(*ms)),
        }
    }

    async fn apply_store(&self, s: &dyn IdempotencyStore, step: &Step<'_>, i: usize) -> Result<Outcome, StoreError> {
        let all = scopes();
        let now = self.now;
        let op = match step {
            Step::Op(op) => *op,
            Step::AuditRead(sc) => return Ok(Outcome::Record(s.read(sc).await?)),
            Step::AuditEffects(sc) => return Ok(Outcome::Effects(s.effects(sc).await?)),
            Step::AuditOutbox => return Ok(Outcome::Outbox(s.outbox_pending(usize::MAX).await?)),
        };
        Ok(match op {
            Op::Claim { scope, body } => {
                Outcome::Claim(s.claim(&all[*scope], &fingerprint(*body), now, LEASE_MS).await?)
            }
            Op::TakeOver { scope, expected } => {
                Outcome::Takeover(s.take_over(&all[*scope], attempt(*expected), now, LEASE_MS).await?)
            }
            Op::WriteRecoveryPoint { scope, attempt: a, tag } => {
                Outcome::Write(s.write_recovery_point(&all[*scope], attempt(*a), &recovery_point(*tag)).await?)
            }
            Op::Complete { scope, attempt: a, status, local_effect, messages } => {
                let c = completion(i, &all[*scope], *status, *local_effect, *messages);
                Outcome::Write(s.complete(&all[*scope], attempt(*a), &c).await?)
            }
            Op::Release { scope, attempt: a } => Outcome::Write(s.release(&all[*scope], attempt(*a)).await?),
            Op::Read { scope } => Outcome::Record(s.read(&all[*scope]).await?),
            Op::Effects { scope } => Outcome::Effects(s.effects(&all[*scope]).await?),
            Op::Sweep { window_ms } => Outcome::Swept(s.sweep(now, *window_ms).await?),
            Op::StaleInProgress { limit } => Outcome::Stale(s.stale_in_progress(now, *limit).await?),
            Op::OutboxPending { limit } => Outcome::Outbox(s.outbox_pending(*limit).await?),
            Op::MarkPublished { pick } => Outcome::Found(s.outbox_mark_published(&self.pick(*pick)).await?),
            Op::Advance { ms } => Outcome::Clock(now.plus_ms(*ms)),
        })
    }
}

/// Runs a store call, turning an error, a panic or a hang into a `Fault`.
async fn guarded(call: impl Future<Output = Result<Outcome, StoreError>>, limit: Duration) -> Result<Outcome, Fault> {
    match tokio::time::timeout(limit, AssertUnwindSafe(call).catch_unwind()).await {
        Err(_) => Err(Fault::Hung(limit)),
        Ok(Err(panic)) => Err(Fault::Panicked(crate::panic_message(&*panic))),
        Ok(Ok(Err(e))) => Err(Fault::Error(e)),
        Ok(Ok(Ok(outcome))) => Ok(outcome),
    }
}

pub(crate) fn show(o: &Outcome) -> String {
    match o {
        Outcome::Claim(Claim::Owned(a)) => format!("Owned({a})"),
        Outcome::Claim(Claim::Existing(r)) => format!("Existing({})", show_record(r)),
        Outcome::Takeover(Takeover::Granted(a)) => format!("Granted({a})"),
        Outcome::Takeover(Takeover::Refused(r)) => {
            format!("Refused({})", r.as_ref().map_or("none".into(), show_record))
        }
        Outcome::Write(w) => format!("{w:?}"),
        Outcome::Record(r) => r.as_ref().map_or("none".into(), show_record),
        Outcome::Effects(e) => format!("{:?}", e.iter().map(|e| e.id.as_str()).collect::<Vec<_>>()),
        Outcome::Swept(s) | Outcome::Stale(s) => {
            format!("{:?}", s.iter().map(|(s, r)| format!("{s}: {}", show_record(r))).collect::<Vec<_>>())
        }
        Outcome::Outbox(o) => format!("{:?}", o.iter().map(|e| e.message.id.0.as_str()).collect::<Vec<_>>()),
        Outcome::Found(b) => b.to_string(),
        Outcome::Clock(t) => format!("now {t}"),
    }
}

fn show_record(r: &Record) -> String {
    match &r.state {
        idemsim_model::RecordState::InProgress { attempt, locked_until, recovery_point } => format!(
            "in_progress {attempt} until {locked_until}{}",
            recovery_point.as_ref().map_or(String::new(), |p| format!(" rp {}", p.downstream_key.0))
        ),
        idemsim_model::RecordState::Completed { response, attempt } => {
            format!("completed {attempt} {} {:?}", response.status, response.body)
        }
    }
}
