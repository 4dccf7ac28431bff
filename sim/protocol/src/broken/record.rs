//! Broken record keeping (sections 2 and 3): the lease, the key, the
//! fingerprint comparison and validation errors.

use crate::{Claimed, Correct, Env, Protocol, Reply, StoreOp};
use async_trait::async_trait;
use idemsim_model::{
    Attempt, CallerId, Claim, Completion, Fingerprint, IdempotencyKey, Record, Request, Scope, SimTime, Takeover,
};

/// `lease: none`: a claim holds forever (a century), so a crashed holder's
/// record is never taken over.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoLease;

/// The lease of [`NoLease`].
pub const ENDLESS_LEASE_MS: u64 = 100 * 365 * 86_400_000;

impl Protocol for NoLease {
    fn name(&self) -> String {
        "no-lease".into()
    }
    fn lease_ms(&self, _configured_ms: u64) -> u64 {
        ENDLESS_LEASE_MS
    }
}

/// `scope: key-only`: the record is keyed by the key string alone, so two
/// tenants with one key share a record.
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyNotScoped;

impl Protocol for KeyNotScoped {
    fn name(&self) -> String {
        "key-not-scoped".into()
    }
    fn scope(&self, request: &Request) -> Option<Scope> {
        request.scope().map(|s| Scope { caller: CallerId("*".into()), key: s.key })
    }
}

/// `fingerprint: ignored`: whatever the body, a request "matches" the
/// record, so a reused key with another body gets the old response.
#[derive(Clone, Copy, Debug, Default)]
pub struct FingerprintNotCompared;

impl Protocol for FingerprintNotCompared {
    fn name(&self) -> String {
        "fingerprint-not-compared".into()
    }
    fn fingerprint_matches(&self, _record: &Record, _fingerprint: &Fingerprint) -> bool {
        true
    }
}

/// `validation: store`: the pre-execution error is stored as the response,
/// so a corrected retry with the same key replays the error.
#[derive(Clone, Copy, Debug, Default)]
pub struct ValidationStored;

#[async_trait]
impl Protocol for ValidationStored {
    fn name(&self) -> String {
        "validation-stored".into()
    }
    async fn reject_invalid(&self, env: &dyn Env, scope: &Scope, attempt: Attempt, reply: &Reply) {
        let completion = Completion { response: reply.response.clone(), local_effect: None, outbox: vec![] };
        let _ = env.store(StoreOp::Complete { scope: scope.clone(), attempt, completion }).await;
    }
}

/// `lease: shorter-than-work`: a lease of a thousandth of the configured
/// one (1 ms by default), shorter than the work and even than a round trip
/// to the store, with a handler that checks its lease by its own clock
/// before it starts and, finding it ran out, gives the key back (a fenced
/// release, before any effect) and answers 409. Nearly no execution ever
/// starts: fencing, at-most-once and liveness all hold, and almost nothing
/// is acknowledged.
#[derive(Clone, Copy, Debug, Default)]
pub struct LeaseShorterThanWork;

#[async_trait]
impl Protocol for LeaseShorterThanWork {
    fn name(&self) -> String {
        "lease-shorter-than-work".into()
    }
    fn lease_ms(&self, configured_ms: u64) -> u64 {
        (configured_ms / 1_000).max(1)
    }
    async fn claim(
        &self,
        env: &dyn Env,
        scope: &Scope,
        fp: &Fingerprint,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Claimed, Reply> {
        let claimed = Correct.claim(env, scope, fp, now, lease_ms).await?;
        give_back_if_lease_ran_out(env, scope, claimed, now, lease_ms).await
    }
    async fn take_over(
        &self,
        env: &dyn Env,
        scope: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Option<Takeover> {
        let granted = Correct.take_over(env, scope, expected, now, lease_ms).await?;
        Some(give_back_takeover_if_lease_ran_out(env, scope, granted, now, lease_ms).await)
    }
}

/// The check of [`LeaseShorterThanWork`] for a claim: an owned claim whose
/// lease ran out by the server's clock is released, and the request
/// answered 409.
pub(crate) async fn give_back_if_lease_ran_out(
    env: &dyn Env,
    scope: &Scope,
    claimed: Claimed,
    asked_at: SimTime,
    lease_ms: u64,
) -> Result<Claimed, Reply> {
    let Claim::Owned(attempt) = claimed.claim else { return Ok(claimed) };
    match gave_back(env, scope, attempt, asked_at, lease_ms).await {
        true => Err(Reply::lease_lost(env.settings())),
        false => Ok(claimed),
    }
}

/// The same check for a takeover: a granted one is released and refused.
pub(crate) async fn give_back_takeover_if_lease_ran_out(
    env: &dyn Env,
    scope: &Scope,
    takeover: Takeover,
    asked_at: SimTime,
    lease_ms: u64,
) -> Takeover {
    let Takeover::Granted(attempt) = takeover else { return takeover };
    match gave_back(env, scope, attempt, asked_at, lease_ms).await {
        true => Takeover::Refused(None),
        false => takeover,
    }
}

/// Releases `attempt` if the lease asked for at `asked_at` ran out by the
/// server's clock; whether it did.
async fn gave_back(env: &dyn Env, scope: &Scope, attempt: Attempt, asked_at: SimTime, lease_ms: u64) -> bool {
    if env.now() < asked_at.plus_ms(lease_ms) {
        return false;
    }
    let _ = env.store(StoreOp::Release { scope: scope.clone(), attempt }).await;
    true
}

/// `scope: key-and-body`: the record is keyed by the caller, the key and
/// the request's fingerprint, so a reused key with another body finds no
/// record and executes again (instead of 422).
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyIncludesBody;

impl Protocol for KeyIncludesBody {
    fn name(&self) -> String {
        "key-includes-body".into()
    }
    fn scope(&self, request: &Request) -> Option<Scope> {
        let scope = request.scope()?;
        let fingerprint = request.fingerprint();
        let short = &fingerprint.0[..fingerprint.0.len().min(8)];
        Some(Scope { key: IdempotencyKey(format!("{}#{short}", scope.key.0).into()), ..scope })
    }
}

/// `fingerprint: body-only`: the fingerprint hashes the body alone, not the
/// method and path, so the same key and body sent to another endpoint
/// matches the record and is answered with the first endpoint's response
/// (docs/protocol.md §2: the key on another endpoint must not replay
/// this one).
#[derive(Clone, Copy, Debug, Default)]
pub struct FingerprintWithoutPath;

impl Protocol for FingerprintWithoutPath {
    fn name(&self) -> String {
        "fingerprint-without-path".into()
    }
    fn fingerprint_fields<'r>(&self, request: &'r Request) -> (&'r str, &'r str, &'r [u8]) {
        ("", "", &request.body.0)
    }
}
