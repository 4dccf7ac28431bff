//! The request handler (docs/protocol.md §3 to §6) as a flow over the
//! steps of [`Protocol`]: claim, decide by the replay table, take over a
//! stale record, execute (validate, recovery point, dependency, local
//! effect), complete. Every environment runs this one copy.

use crate::execution::{completion, declined, recovery_data, validate};
use crate::{ChargeAnswer, Env, FaultSite, Proceed, Protocol, Reply, StoreOp, StoreReply};
use idemsim_model::{
    decide, Attempt, Claim, Decision, Effects, Event, Fingerprint, RecoveryPoint, Request, RequestId, Scope, SimTime,
    Takeover, WriteOutcome,
};

/// Handles one delivered copy of a request: records its receipt, answers
/// it, and records the answer. `None` when the execution stopped at a
/// fault site (nothing is sent).
pub async fn serve<P: Protocol + ?Sized>(
    protocol: &P,
    env: &dyn Env,
    req: RequestId,
    copy: u32,
    request: &Request,
    fingerprint: Fingerprint,
) -> Option<Reply> {
    env.record(Event::RequestReceived { req, copy, fingerprint: fingerprint.clone() });
    let reply = protocol.respond(env, request, &fingerprint).await?;
    env.record(Event::ResponseSent {
        req,
        copy,
        answer: reply.answer,
        response: reply.response.clone(),
        retry_after_ms: reply.retry_after_ms,
    });
    Some(reply)
}

/// The provided [`Protocol::respond`]: the replay table of section 3 over
/// the protocol's steps.
pub async fn respond<P: Protocol + ?Sized>(
    p: &P,
    env: &dyn Env,
    request: &Request,
    fingerprint: &Fingerprint,
) -> Option<Reply> {
    let Some(scope) = p.scope(request) else { return Some(Reply::missing_key()) };
    let now = env.now();
    let lease_ms = p.lease_ms(env.settings().lease_ms);
    let claimed = match p.claim(env, &scope, fingerprint, now, lease_ms).await {
        Ok(claimed) => claimed,
        Err(reply) => return Some(reply),
    };
    let created_at = match &claimed.claim {
        Claim::Existing(record) => record.created_at,
        Claim::Owned(_) => now,
    };
    let run = Execution { env, request, fingerprint, scope: &scope, created_at };
    if claimed.forced_owner {
        return run.execute(p, claimed.attempt(), None).await;
    }
    let compared = match &claimed.claim {
        Claim::Existing(r) if p.fingerprint_matches(r, fingerprint) => &r.fingerprint,
        _ => fingerprint,
    };
    match decide(compared, Some(&claimed.claim), now) {
        Decision::MissingKey => unreachable!("the request has a key"),
        Decision::Mismatch => Some(Reply::mismatch()),
        Decision::InFlight => Some(Reply::in_flight(&claimed.claim, now, env.settings())),
        Decision::Replay(response) => Some(Reply::replayed(p.replay(response))),
        Decision::Execute { attempt } => run.execute(p, attempt, None).await,
        Decision::TakeOver { expected, recovery_point } => {
            match p.take_over(env, &scope, expected, now, lease_ms).await {
                Some(Takeover::Granted(attempt)) => run.execute(p, attempt, recovery_point).await,
                Some(Takeover::Refused(_)) => Some(Reply::takeover_refused(env.settings())),
                None => Some(Reply::unavailable("store unavailable", env.settings())),
            }
        }
    }
}

/// One execution of a request that holds the record.
struct Execution<'a> {
    env: &'a dyn Env,
    request: &'a Request,
    fingerprint: &'a Fingerprint,
    scope: &'a Scope,
    /// The record's creation time: which lifetime of the key this is.
    created_at: SimTime,
}

impl Execution<'_> {
    /// Validate, work, (recovery point, dependency), complete, holding
    /// `attempt`.
    async fn execute<P: Protocol + ?Sized>(
        &self,
        p: &P,
        attempt: Attempt,
        resume: Option<RecoveryPoint>,
    ) -> Option<Reply> {
        let (env, scope) = (self.env, self.scope);
        env.record(Event::ExecutionStarted { by: env.origin(), scope: scope.clone(), attempt });
        if let Err(why) = validate(self.request) {
            let reply = Reply::invalid(&why.to_string());
            p.reject_invalid(env, scope, attempt, &reply).await;
            return Some(reply);
        }
        env.sleep_ms(env.work_ms()).await;
        let mut paid = Paid::Nothing;
        if Effects::of_path(&self.request.path).external {
            match self.charge(p, attempt, resume).await {
                Ok(outcome) => paid = outcome,
                Err(reply) => return Some(reply),
            }
        }
        let charged = matches!(paid, Paid::Charged(_));
        let stamp = env.stamp(attempt);
        let mut completion = match &paid {
            Paid::Declined => declined(scope, self.request, stamp.as_deref()),
            Paid::Charged(id) => completion(scope, self.created_at, self.request, Some(id), stamp.as_deref()),
            Paid::Nothing => completion(scope, self.created_at, self.request, None, stamp.as_deref()),
        };
        if let Err(reply) = p.before_commit(env, scope, attempt, &mut completion).await {
            return Some(reply);
        }
        if env.fault(FaultSite::BeforeCompletion { attempt, charged }).await == Proceed::Stop {
            return None;
        }
        let response = completion.response.clone();
        match p.complete(env, scope, attempt, completion).await {
            Some(StoreReply::Write(WriteOutcome::Applied)) => match env.fault(FaultSite::AfterCompletion).await {
                Proceed::Continue => Some(Reply::executed(response)),
                Proceed::Stop => None,
            },
            Some(StoreReply::Write(WriteOutcome::Fenced)) => Some(Reply::lease_lost(env.settings())),
            _ => Some(Reply::unavailable("completion outcome unknown", env.settings())),
        }
    }

    /// Recovery point (unless the one resumed from has the key), then the
    /// dependency with the protocol's downstream key: charged or declined,
    /// or the reply to send when it refused or did not answer.
    async fn charge<P: Protocol + ?Sized>(
        &self,
        p: &P,
        attempt: Attempt,
        resume: Option<RecoveryPoint>,
    ) -> Result<Paid, Reply> {
        let (env, scope) = (self.env, self.scope);
        let recorded = resume.map(|point| point.downstream_key);
        let key = p.downstream_key(scope, self.fingerprint, attempt, recorded.as_ref());
        if recorded.as_ref() != Some(&key) {
            let point = RecoveryPoint { downstream_key: key.clone(), data: recovery_data(self.request) };
            match env.store(StoreOp::WriteRecoveryPoint { scope: scope.clone(), attempt, point }).await {
                Some(StoreReply::Write(WriteOutcome::Applied)) => {}
                Some(StoreReply::Write(WriteOutcome::Fenced)) => return Err(Reply::lease_lost(env.settings())),
                _ => return Err(Reply::unavailable("store unavailable", env.settings())),
            }
        }
        match env.charge(scope, attempt, key, self.request).await {
            ChargeAnswer::Charged(id) => Ok(Paid::Charged(id)),
            ChargeAnswer::Declined => Ok(Paid::Declined),
            answer => {
                let reply = failure_reply(&answer, env.settings());
                Err(p.dependency_failed(env, scope, attempt, &answer, reply).await)
            }
        }
    }
}

/// The 503 for a dependency that refused for now (with its `Retry-After`
/// when longer than ours) or did not answer.
pub(crate) fn failure_reply(answer: &ChargeAnswer, settings: &crate::ProtocolSettings) -> Reply {
    match answer {
        ChargeAnswer::Unavailable { retry_after_ms } => {
            let reply = Reply::unavailable("payment provider unavailable", settings);
            Reply { retry_after_ms: reply.retry_after_ms.max(*retry_after_ms), ..reply }
        }
        _ => Reply::unavailable("payment provider timed out", settings),
    }
}

/// What the dependency call left the execution with.
enum Paid {
    /// No external effect on this path.
    Nothing,
    /// Charged: the charge's id.
    Charged(String),
    /// Declined for good: the operation completes with a 402.
    Declined,
}
