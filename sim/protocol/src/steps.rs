//! The [`Protocol`] trait: the steps of docs/protocol.md as provided methods.
//!
//! The provided methods are the correct protocol. A broken variant
//! overrides one of them; a user's own variant does the same from their
//! own crate. The flow that calls the steps (the request handler, the
//! client's retry loop, the background jobs) lives beside this file and is
//! shared by every environment.

use crate::execution::downstream_key;
use crate::{ChargeAnswer, ClientEnv, Env, Reply, StoreOp, StoreReply};
use async_trait::async_trait;
use idemsim_model::{
    Attempt, Claim, Completion, DownstreamKey, Fingerprint, Record, Request, RequestId, Scope, SimTime, StoredResponse,
    Takeover,
};

/// A claim's result, and whether a broken claim forced ownership (it
/// executes although the store found a record).
#[derive(Clone, Debug)]
pub struct Claimed {
    /// What the store answered.
    pub claim: Claim,
    /// The claimer executes whatever the store found.
    pub forced_owner: bool,
}

impl Claimed {
    /// The attempt the claimer holds (or would, for an existing record).
    pub fn attempt(&self) -> Attempt {
        match &self.claim {
            Claim::Owned(a) => *a,
            Claim::Existing(r) => r.attempt(),
        }
    }
}

/// The idempotency-key protocol, one method per step. Every method has the
/// correct behaviour as its body; override one to run a broken (or just a
/// different) step. Section numbers are those of docs/protocol.md.
///
/// ```
/// use idemsim_protocol::Protocol;
/// use idemsim_model::StoredResponse;
///
/// /// Replays a stored body re-encoded (a bug: not byte for byte).
/// struct ReEncodingReplay;
/// impl Protocol for ReEncodingReplay {
///     fn name(&self) -> String { "re-encoding-replay".into() }
///     fn replay(&self, stored: StoredResponse) -> StoredResponse {
///         let body = stored.body.lossy().replace(':', ": ");
///         StoredResponse::new(stored.status, &body)
///     }
/// }
/// assert_eq!(ReEncodingReplay.name(), "re-encoding-replay");
/// ```
#[async_trait]
pub trait Protocol: Send + Sync {
    /// A name for reports and reproduce lines.
    fn name(&self) -> String {
        "correct".into()
    }

    /// Answers one delivered request; `None` when the execution stopped at
    /// a fault site and sends nothing. The provided flow calls the steps
    /// below; override it only to replace the whole handler.
    async fn respond(&self, env: &dyn Env, request: &Request, fingerprint: &Fingerprint) -> Option<Reply> {
        crate::server::respond(self, env, request, fingerprint).await
    }

    /// Section 2: the record's key, `(caller, key)`; `None` without a key.
    fn scope(&self, request: &Request) -> Option<Scope> {
        request.scope()
    }

    /// Section 3: what the request fingerprint hashes: method, path and
    /// canonical body. The one fingerprint step: every environment hashes
    /// these fields (the simulator through a memo; see [`fingerprint`]).
    fn fingerprint_fields<'r>(&self, request: &'r Request) -> (&'r str, &'r str, &'r [u8]) {
        (&request.method, &request.path, &request.body.0)
    }

    /// Section 3: the lease a claim or takeover asks for.
    fn lease_ms(&self, configured_ms: u64) -> u64 {
        configured_ms
    }

    /// Section 4: claim atomically (insert-if-absent), never
    /// check-then-insert.
    async fn claim(
        &self,
        env: &dyn Env,
        scope: &Scope,
        fingerprint: &Fingerprint,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Claimed, Reply> {
        let op = StoreOp::Claim { scope: scope.clone(), fingerprint: fingerprint.clone(), now, lease_ms };
        match env.store(op).await {
            Some(StoreReply::Claim(claim)) => Ok(Claimed { claim, forced_owner: false }),
            _ => Err(Reply::unavailable("store unavailable", env.settings())),
        }
    }

    /// Section 3: whether a request matches the record found for its key.
    fn fingerprint_matches(&self, record: &Record, fingerprint: &Fingerprint) -> bool {
        record.fingerprint == *fingerprint
    }

    /// Section 3: a completed record is answered with its stored response,
    /// byte for byte.
    fn replay(&self, stored: StoredResponse) -> StoredResponse {
        stored
    }

    /// Section 3, last row: a validation error raised before execution is
    /// not stored; the claim is released so a corrected retry executes.
    async fn reject_invalid(&self, env: &dyn Env, scope: &Scope, attempt: Attempt, _reply: &Reply) {
        let _ = env.store(StoreOp::Release { scope: scope.clone(), attempt }).await;
    }

    /// Section 6: a stale record is taken over with a fenced takeover that
    /// bumps the attempt. `None` when the store did not answer.
    async fn take_over(
        &self,
        env: &dyn Env,
        scope: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Option<Takeover> {
        match env.store(StoreOp::TakeOver { scope: scope.clone(), expected, now, lease_ms }).await {
            Some(StoreReply::Takeover(t)) => Some(t),
            _ => None,
        }
    }

    /// Section 6: the key passed to the dependency, derived from the record
    /// and stable across attempts: the one the recovery point recorded, or
    /// else one from the scope and fingerprint. A key other than `recorded`
    /// is written as a new recovery point before the call.
    fn downstream_key(
        &self,
        scope: &Scope,
        fingerprint: &Fingerprint,
        _attempt: Attempt,
        recorded: Option<&DownstreamKey>,
    ) -> DownstreamKey {
        recorded.cloned().unwrap_or_else(|| downstream_key(scope, fingerprint))
    }

    /// Sections 5 and 6: anything done before the completing transaction.
    /// Correctly, nothing: the local effect and the outbox messages commit
    /// with the completion.
    async fn before_commit(
        &self,
        _env: &dyn Env,
        _scope: &Scope,
        _attempt: Attempt,
        _completion: &mut Completion,
    ) -> Result<(), Reply> {
        Ok(())
    }

    /// Section 6: the completion, conditional on the attempt. `None` when
    /// the store did not answer (the outcome is unknown).
    async fn complete(
        &self,
        env: &dyn Env,
        scope: &Scope,
        attempt: Attempt,
        completion: Completion,
    ) -> Option<StoreReply> {
        env.store(StoreOp::Complete { scope: scope.clone(), attempt, completion }).await
    }

    /// Section 6: the dependency refused for now (`answer` is
    /// [`ChargeAnswer::Unavailable`]) or did not answer
    /// ([`ChargeAnswer::Unknown`]: the charge may have gone through).
    /// Correctly, in both cases, the record stays `in_progress` with its
    /// recovery point (a retry or the reconciler resumes it with the same
    /// downstream key, which the dependency collapses onto the charge if
    /// there was one) and the client gets `reply`, a transient 503 with the
    /// dependency's `Retry-After` if longer than ours.
    async fn dependency_failed(
        &self,
        _env: &dyn Env,
        _scope: &Scope,
        _attempt: Attempt,
        _answer: &ChargeAnswer,
        reply: Reply,
    ) -> Reply {
        reply
    }

    /// Section 8: one pass of the sweeper, deleting completed records older
    /// than the documented window.
    async fn sweep(&self, env: &dyn Env, now: SimTime, window_ms: u64) {
        let _ = env.store(StoreOp::Sweep { now, window_ms }).await;
    }

    /// Section 7: whether a client retries an answer with this status
    /// (transient ones only: 409, 429, 502, 503, 504).
    fn retries(&self, status: u16) -> bool {
        idemsim_model::retry::is_transient_status(status)
    }

    /// Section 7: the wait before a retry, given the backoff's bound: full
    /// jitter, uniform in `0..=bound_ms`.
    fn backoff_ms(&self, env: &dyn ClientEnv, bound_ms: u64) -> u64 {
        env.draw(0, bound_ms)
    }

    /// Section 7: the wait before a retry, given the backoff drawn by
    /// [`Protocol::backoff_ms`] and the `Retry-After` the server sent (if
    /// any): never shorter than `Retry-After`.
    fn retry_wait_ms(&self, backoff_ms: u64, retry_after_ms: Option<u64>) -> u64 {
        backoff_ms.max(retry_after_ms.unwrap_or(0))
    }

    /// Section 7: takes one token from the retry budget for a retry of
    /// `req`'s operation; `false` when the budget is empty and the
    /// operation gives up. The budget is the client's, shared by all its
    /// operations (a token bucket, `ClientEnv::spend_retry`), so an outage
    /// is not amplified.
    fn spend_retry(&self, env: &dyn ClientEnv, _req: RequestId) -> bool {
        env.spend_retry()
    }

    /// Section 7: the request a try sends: the same key every time.
    fn request_for_try(&self, request: &Request, _try_no: u32) -> Request {
        request.clone()
    }

    /// Section 7: how many layers of the stack retry (each restarting the
    /// one below); correctly exactly one.
    fn retry_layers(&self) -> u32 {
        1
    }
}

/// The request fingerprint `p` gives `request`: the hash of its
/// [`Protocol::fingerprint_fields`].
pub fn fingerprint<P: Protocol + ?Sized>(p: &P, request: &Request) -> Fingerprint {
    let (method, path, body) = p.fingerprint_fields(request);
    Fingerprint::of(method, path, body)
}

/// The correct protocol: every provided method as written.
#[derive(Clone, Copy, Debug, Default)]
pub struct Correct;

impl Protocol for Correct {}

/// A shared protocol is a protocol: every step forwards.
#[async_trait]
impl<P: Protocol + ?Sized> Protocol for std::sync::Arc<P> {
    fn name(&self) -> String {
        (**self).name()
    }
    async fn respond(&self, env: &dyn Env, request: &Request, fingerprint: &Fingerprint) -> Option<Reply> {
        (**self).respond(env, request, fingerprint).await
    }
    fn scope(&self, request: &Request) -> Option<Scope> {
        (**self).scope(request)
    }
    fn fingerprint_fields<'r>(&self, request: &'r Request) -> (&'r str, &'r str, &'r [u8]) {
        (**self).fingerprint_fields(request)
    }
    fn lease_ms(&self, configured_ms: u64) -> u64 {
        (**self).lease_ms(configured_ms)
    }
    async fn claim(
        &self,
        env: &dyn Env,
        s: &Scope,
        fp: &Fingerprint,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Claimed, Reply> {
        (**self).claim(env, s, fp, now, lease_ms).await
    }
    fn fingerprint_matches(&self, record: &Record, fingerprint: &Fingerprint) -> bool {
        (**self).fingerprint_matches(record, fingerprint)
    }
    fn replay(&self, stored: StoredResponse) -> StoredResponse {
        (**self).replay(stored)
    }
    async fn reject_invalid(&self, env: &dyn Env, scope: &Scope, attempt: Attempt, reply: &Reply) {
        (**self).reject_invalid(env, scope, attempt, reply).await
    }
    async fn take_over(
        &self,
        env: &dyn Env,
        s: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Option<Takeover> {
        (**self).take_over(env, s, expected, now, lease_ms).await
    }
    fn downstream_key(
        &self,
        s: &Scope,
        fp: &Fingerprint,
        attempt: Attempt,
        recorded: Option<&DownstreamKey>,
    ) -> DownstreamKey {
        (**self).downstream_key(s, fp, attempt, recorded)
    }
    async fn before_commit(
        &self,
        env: &dyn Env,
        s: &Scope,
        attempt: Attempt,
        completion: &mut Completion,
    ) -> Result<(), Reply> {
        (**self).before_commit(env, s, attempt, completion).await
    }
    async fn complete(&self, env: &dyn Env, s: &Scope, attempt: Attempt, completion: Completion) -> Option<StoreReply> {
        (**self).complete(env, s, attempt, completion).await
    }
    async fn dependency_failed(
        &self,
        env: &dyn Env,
        s: &Scope,
        attempt: Attempt,
        answer: &ChargeAnswer,
        reply: Reply,
    ) -> Reply {
        (**self).dependency_failed(env, s, attempt, answer, reply).await
    }
    async fn sweep(&self, env: &dyn Env, now: SimTime, window_ms: u64) {
        (**self).sweep(env, now, window_ms).await
    }
    fn retries(&self, status: u16) -> bool {
        (**self).retries(status)
    }
    fn backoff_ms(&self, env: &dyn ClientEnv, bound_ms: u64) -> u64 {
        (**self).backoff_ms(env, bound_ms)
    }
    fn retry_wait_ms(&self, backoff_ms: u64, retry_after_ms: Option<u64>) -> u64 {
        (**self).retry_wait_ms(backoff_ms, retry_after_ms)
    }
    fn spend_retry(&self, env: &dyn ClientEnv, req: RequestId) -> bool {
        (**self).spend_retry(env, req)
    }
    fn request_for_try(&self, request: &Request, try_no: u32) -> Request {
        (**self).request_for_try(request, try_no)
    }
    fn retry_layers(&self) -> u32 {
        (**self).retry_layers()
    }
}
