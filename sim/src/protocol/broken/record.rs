//! Broken record keeping (sections 2 and 3): the lease, the key, the
//! fingerprint comparison and validation errors.

use crate::protocol::{Env, Protocol, Reply, StoreOp};
use async_trait::async_trait;
use idemsim_model::{Attempt, CallerId, Completion, Fingerprint, Record, Request, Scope};

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
