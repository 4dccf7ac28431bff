//! The API server: the protocol of PROTOCOL.md sections 3 to 7 as a request
//! handler, written as a sequence of steps so a variant swaps exactly one.

use crate::execution::{attempt_downstream_key, completion, downstream_key, recovery_data, validate};
use crate::msg::{CallBody, Msg, ReplyBody, StoreOp, StoreReply};
use crate::node::{sleep_ms, Node};
use crate::rng::{between, chance};
use crate::variant::{
    ClaimStep, DownstreamKeyStep, FingerprintStep, LocalEffectStep, PublishStep, ScopeStep, Steps, TakeoverStep,
    ValidationStep,
};
use idemsim_model::history::{Answer, Fault, Origin};
use idemsim_model::{
    decide, Attempt, Claim, Decision, Effects, Event, Fingerprint, NodeId, RecoveryPoint, Request, RequestId, Scope,
    StoredResponse, Takeover, WriteOutcome,
};
use std::rc::Rc;

/// A response and how it was reached.
struct Reply {
    answer: Answer,
    response: StoredResponse,
    retry_after_ms: Option<u64>,
}

impl Reply {
    fn new(answer: Answer, status: u16, body: &str) -> Reply {
        Reply { answer, response: StoredResponse::new(status, body), retry_after_ms: None }
    }

    fn retry_after(mut self, ms: u64) -> Reply {
        self.retry_after_ms = Some(ms);
        self
    }

    fn unavailable(what: &str) -> Reply {
        Reply::new(Answer::Unavailable, 503, &format!(r#"{{"error":"{what}"}}"#)).retry_after(100)
    }

    fn lease_lost() -> Reply {
        Reply::new(Answer::LeaseLost, 409, r#"{"error":"lease lost; retry"}"#).retry_after(200)
    }
}

/// The server's message handler: each request gets its own task.
pub(crate) fn handle(node: &Rc<Node>, msg: Msg) {
    let Msg::Request { req, request } = msg else { return };
    let node = node.clone();
    madsim::task::spawn_local(async move {
        let client = client_of(&node, req);
        let (copy, fingerprint) = node.sim.with(|w| {
            let fingerprint = request.fingerprint_in(&mut w.fingerprints);
            let copies = w.received.entry(req).or_insert(0);
            *copies += 1;
            let copy = *copies;
            w.record(node.id, Event::RequestReceived { req, copy, fingerprint: fingerprint.clone() });
            (copy, fingerprint)
        });
        let handler = Handler { node: &node, req, copy, request: &request, fingerprint };
        let Some(reply) = handler.respond().await else { return };
        node.sim.record(
            node.id,
            Event::ResponseSent {
                req,
                copy,
                answer: reply.answer,
                response: reply.response.clone(),
                retry_after_ms: reply.retry_after_ms,
            },
        );
        let msg =
            Msg::Response { req, answer: reply.answer, response: reply.response, retry_after_ms: reply.retry_after_ms };
        node.sim.send(node.id, client, msg);
    });
}

fn client_of(node: &Node, req: RequestId) -> NodeId {
    node.sim.with(|w| w.client_of(req))
}

struct Handler<'a> {
    node: &'a Rc<Node>,
    req: RequestId,
    copy: u32,
    request: &'a Request,
    fingerprint: Fingerprint,
}

impl Handler<'_> {
    fn origin(&self) -> Origin {
        Origin::Request { req: self.req, copy: self.copy }
    }

    fn steps(&self) -> Steps {
        self.node.sim.with(|w| w.config.steps)
    }

    async fn respond(&self) -> Option<Reply> {
        let Some(scope) = self.request.scope() else {
            return Some(Reply::new(Answer::MissingKey, 400, r#"{"error":"Idempotency-Key header required"}"#));
        };
        let steps = self.steps();
        let scope = match steps.scope {
            // The broken step: the record is keyed by the key string alone.
            ScopeStep::KeyOnly => Scope { caller: idemsim_model::CallerId("*".into()), key: scope.key },
            ScopeStep::CallerAndKey => scope,
        };
        let now = self.node.now();
        let claim = match steps.claim {
            ClaimStep::Atomic => self.claim(&scope, now).await,
            ClaimStep::CheckThenInsert => self.check_then_insert(&scope, now, None).await,
            ClaimStep::LockAroundLookup => self.check_then_insert(&scope, now, Some(None)).await,
            ClaimStep::PerProcessLock => self.check_then_insert(&scope, now, Some(Some(self.node.id))).await,
        };
        let claim = match claim {
            Ok(claim) => claim,
            Err(reply) => return Some(reply),
        };
        if claim.forced_owner {
            return self.execute(&scope, claim.claim_attempt(), None).await;
        }
        let fingerprint = match (&claim.claim, steps.fingerprint) {
            // The broken step: whatever the body, the request "matches" the record.
            (Claim::Existing(r), FingerprintStep::Ignored) => r.fingerprint.clone(),
            _ => self.fingerprint.clone(),
        };
        match decide(&fingerprint, Some(&claim.claim), now) {
            Decision::MissingKey => unreachable!("the request has a key"),
            Decision::Mismatch => {
                Some(Reply::new(Answer::Mismatch, 422, r#"{"error":"Idempotency-Key reused with another request"}"#))
            }
            Decision::InFlight => Some(self.in_flight(&claim.claim, now)),
            Decision::Replay(response) => Some(Reply { answer: Answer::Replayed, response, retry_after_ms: None }),
            Decision::Execute { attempt } => self.execute(&scope, attempt, None).await,
            Decision::TakeOver { expected, recovery_point } => {
                self.take_over(&scope, expected, recovery_point, now).await
            }
        }
    }

    /// The atomic claim: insert-if-absent.
    async fn claim(&self, scope: &Scope, now: idemsim_model::SimTime) -> Result<Claimed, Reply> {
        let lease_ms = self.lease_ms();
        let op = StoreOp::Claim { scope: scope.clone(), fingerprint: self.fingerprint.clone(), now, lease_ms };
        match self.store(op).await {
            Some(StoreReply::Claim(claim)) => Ok(Claimed { claim, forced_owner: false }),
            _ => Err(Reply::unavailable("store unavailable")),
        }
    }

    /// The broken claims: read, and if nothing was there, own the execution
    /// whatever the insert then finds. With `lock`, a key lock is held: the
    /// lock service's (`Some(None)`) around the lookup only, or this
    /// process's (`Some(Some(server))`) around the lookup and the insert.
    async fn check_then_insert(
        &self,
        scope: &Scope,
        now: idemsim_model::SimTime,
        lock: Option<Option<NodeId>>,
    ) -> Result<Claimed, Reply> {
        let lock = lock.map(|owner| (owner, scope.clone()));
        if let Some(lock) = &lock {
            self.node.sim.lock_key(lock.clone(), self.node.id).await;
        }
        let read = self.store(StoreOp::Read { scope: scope.clone() }).await;
        if let Some(lock @ (None, _)) = &lock {
            self.node.sim.unlock_key(lock);
        }
        let claimed = match read {
            Some(StoreReply::Record(Some(_))) => self.claim(scope, now).await,
            Some(StoreReply::Record(None)) => self.claim(scope, now).await.map(|claimed| {
                let forced_owner = matches!(claimed.claim, Claim::Existing(_));
                Claimed { forced_owner, ..claimed }
            }),
            _ => Err(Reply::unavailable("store unavailable")),
        };
        if let Some(lock @ (Some(_), _)) = &lock {
            self.node.sim.unlock_key(lock);
        }
        claimed
    }

    fn in_flight(&self, claim: &Claim, now: idemsim_model::SimTime) -> Reply {
        let wait = match claim {
            Claim::Existing(r) => match r.state {
                idemsim_model::RecordState::InProgress { locked_until, .. } => locked_until.since_ms(now).max(50),
                _ => 50,
            },
            Claim::Owned(_) => 50,
        };
        Reply::new(Answer::InFlight, 409, r#"{"error":"a request with this key is in progress"}"#).retry_after(wait)
    }

    /// The fenced takeover of an expired lease.
    async fn take_over(
        &self,
        scope: &Scope,
        expected: Attempt,
        recovery_point: Option<RecoveryPoint>,
        now: idemsim_model::SimTime,
    ) -> Option<Reply> {
        if self.steps().takeover == TakeoverStep::KeepAttempt {
            return self.execute(scope, expected, recovery_point).await;
        }
        let op = StoreOp::TakeOver { scope: scope.clone(), expected, now, lease_ms: self.lease_ms() };
        match self.store(op).await {
            Some(StoreReply::Takeover(Takeover::Granted(attempt))) => {
                self.execute(scope, attempt, recovery_point).await
            }
            Some(StoreReply::Takeover(Takeover::Refused(_))) => Some(
                Reply::new(Answer::InFlight, 409, r#"{"error":"a request with this key is in progress"}"#)
                    .retry_after(100),
            ),
            _ => Some(Reply::unavailable("store unavailable")),
        }
    }

    /// Executes holding `attempt`: validate, (recovery point, dependency),
    /// complete. `None` when this server crashed on the way.
    async fn execute(&self, scope: &Scope, attempt: Attempt, recovery_point: Option<RecoveryPoint>) -> Option<Reply> {
        let sim = &self.node.sim;
        sim.record(self.node.id, Event::ExecutionStarted { by: self.origin(), scope: scope.clone(), attempt });
        if let Err(why) = validate(self.request) {
            let reply = Reply::new(Answer::Invalid, 400, &format!(r#"{{"error":"{why}"}}"#));
            let op = match self.steps().validation {
                // The broken step: the pre-execution error is stored.
                ValidationStep::Store => StoreOp::Complete {
                    scope: scope.clone(),
                    attempt,
                    completion: idemsim_model::Completion {
                        response: reply.response.clone(),
                        local_effect: None,
                        outbox: vec![],
                    },
                },
                ValidationStep::Release => StoreOp::Release { scope: scope.clone(), attempt },
            };
            let _ = self.store(op).await;
            return Some(reply);
        }
        let work = sim.with(|w| between(&mut w.server_rng, w.config.protocol.work_ms[0], w.config.protocol.work_ms[1]));
        sleep_ms(work).await;
        let mut charge = None;
        if Effects::of_path(&self.request.path).external {
            match self.charge(scope, attempt, recovery_point).await {
                Ok(id) => charge = Some(id),
                Err(reply) => return Some(reply),
            }
        }
        let mut completion = completion(scope, self.request, charge.as_deref());
        if let Err(reply) = self.effect_before_commit(scope, attempt, &mut completion).await {
            return Some(reply);
        }
        self.maybe_crash().await;
        self.maybe_pause().await;
        let response = completion.response.clone();
        let op = StoreOp::Complete { scope: scope.clone(), attempt, completion };
        match self.store(op).await {
            Some(StoreReply::Write(WriteOutcome::Applied)) => {
                if self.lose_response() {
                    return None;
                }
                Some(Reply { answer: Answer::Executed, response, retry_after_ms: None })
            }
            Some(StoreReply::Write(WriteOutcome::Fenced)) => Some(Reply::lease_lost()),
            _ => Some(Reply::unavailable("completion outcome unknown")),
        }
    }

    /// Recovery point, then the dependency, with the stable downstream key.
    async fn charge(&self, scope: &Scope, attempt: Attempt, resume: Option<RecoveryPoint>) -> Result<String, Reply> {
        let from_attempt = self.steps().downstream_key == DownstreamKeyStep::PerAttempt;
        let downstream_key = match resume.filter(|_| !from_attempt) {
            Some(point) => point.downstream_key,
            None => {
                let downstream_key = match from_attempt {
                    // The broken step: a key per attempt, so a resume charges again.
                    true => attempt_downstream_key(scope, attempt),
                    false => downstream_key(scope, &self.fingerprint),
                };
                let point = RecoveryPoint { downstream_key: downstream_key.clone(), data: recovery_data(self.request) };
                match self.store(StoreOp::WriteRecoveryPoint { scope: scope.clone(), attempt, point }).await {
                    Some(StoreReply::Write(WriteOutcome::Applied)) => {}
                    Some(StoreReply::Write(WriteOutcome::Fenced)) => return Err(Reply::lease_lost()),
                    _ => return Err(Reply::unavailable("store unavailable")),
                }
                downstream_key
            }
        };
        let timeout = self.node.sim.with(|w| w.config.protocol.downstream_timeout_ms);
        let body = CallBody::Charge { scope: scope.clone(), attempt, downstream_key };
        match self.node.call(NodeId::Downstream, self.origin(), body, timeout).await {
            Some(ReplyBody::Charged { charge_id }) => Ok(charge_id),
            _ => Err(Reply::unavailable("payment provider timed out")),
        }
    }

    /// The broken steps that act before the completion commits: the local
    /// effect in its own transaction, and publishing straight from the
    /// handler. Each takes its part out of the completion.
    async fn effect_before_commit(
        &self,
        scope: &Scope,
        attempt: Attempt,
        completion: &mut idemsim_model::Completion,
    ) -> Result<(), Reply> {
        let steps = self.steps();
        if steps.local_effect == LocalEffectStep::OwnTransaction {
            if let Some(effect) = completion.local_effect.take() {
                let op = StoreOp::CommitEffect { scope: scope.clone(), attempt, effect };
                if self.store(op).await.is_none() {
                    return Err(Reply::unavailable("store unavailable"));
                }
            }
        }
        if steps.publish == PublishStep::BeforeCommit {
            for message in std::mem::take(&mut completion.outbox) {
                let entry = idemsim_model::OutboxEntry { scope: scope.clone(), message };
                let id = entry.message.id.clone();
                self.node.sim.record(self.node.id, Event::MessagePublished { id, scope: scope.clone() });
                let _ = self.node.call(NodeId::Consumer, self.origin(), CallBody::Publish { entry }, 200).await;
            }
        }
        Ok(())
    }

    /// Fault site: crash after the effects began and before the completion.
    async fn maybe_crash(&self) {
        let crash =
            self.node.sim.with(|w| w.faults_on && chance(&mut w.server_rng, w.profile.crash_before_complete_permille));
        if crash {
            let down_ms = self.node.sim.with(|w| between(&mut w.server_rng, 50, w.profile.down_ms_max.max(500)));
            self.node.sim.crash(self.node.id, down_ms);
            std::future::pending::<()>().await;
        }
    }

    /// Fault site: the holder freezes past its lease before completing.
    async fn maybe_pause(&self) {
        let pause_ms = self.node.sim.with(|w| {
            let on = w.faults_on && chance(&mut w.server_rng, w.profile.pause_before_complete_permille);
            let lease = w.config.protocol.lease_ms;
            on.then(|| between(&mut w.server_rng, lease + lease / 2, 3 * lease))
        });
        if let Some(ms) = pause_ms {
            self.node.sim.pause(self.node.id, ms);
            sleep_ms(0).await;
        }
    }

    /// Fault site: the response is lost right after the commit.
    fn lose_response(&self) -> bool {
        self.node.sim.with(|w| {
            let lost = w.faults_on && chance(&mut w.server_rng, w.profile.lose_response_permille);
            if lost {
                let client = w.client_of(self.req);
                let what = format!("response to {} (lost after commit)", self.req);
                w.record(self.node.id, Event::Fault(Fault::Dropped { from: self.node.id, to: client, what }));
            }
            lost
        })
    }

    async fn store(&self, op: StoreOp) -> Option<StoreReply> {
        let timeout = self.node.sim.with(|w| w.config.protocol.store_timeout_ms);
        match self.node.call(NodeId::Db, self.origin(), CallBody::Store(op), timeout).await? {
            ReplyBody::Store(StoreReply::Failed(_)) => None,
            ReplyBody::Store(reply) => Some(reply),
            _ => None,
        }
    }

    fn lease_ms(&self) -> u64 {
        self.node.sim.with(|w| w.lease_ms())
    }
}

/// A claim's result, and whether a broken claim step forced ownership.
struct Claimed {
    claim: Claim,
    forced_owner: bool,
}

impl Claimed {
    fn claim_attempt(&self) -> Attempt {
        match &self.claim {
            Claim::Owned(a) => *a,
            Claim::Existing(r) => r.attempt(),
        }
    }
}
