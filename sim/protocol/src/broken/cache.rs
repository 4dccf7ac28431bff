//! A broken read (section 4: whoever did not insert reads the existing row
//! and answers by the table): the record comes from a per-server cache.

use crate::{ChargeAnswer, Claimed, ClientEnv, Env, Protocol, Reply, StoreReply};
use async_trait::async_trait;
use idemsim_model::{
    Attempt, Claim, Completion, DownstreamKey, Fingerprint, NodeId, Record, Request, Scope, SimTime, StoredResponse,
    Takeover,
};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// `read: server-cache`: each server remembers the records the store showed
/// it and answers the next request for that key from memory, without asking
/// the store. Nothing invalidates the memory, so once another server
/// completes or releases the record, this one answers 409 for a finished
/// key, or replays a record the sweeper deleted. Wraps any protocol: every
/// other step is `P`'s.
#[derive(Debug, Default)]
pub struct StaleCache<P> {
    inner: P,
    seen: Mutex<BTreeMap<(NodeId, Scope), Record>>,
    /// The name, when the maker knows a better one than `P`'s.
    name: Option<String>,
}

impl<P> StaleCache<P> {
    /// `inner` with a per-server record cache in front of its claim.
    pub fn new(inner: P) -> StaleCache<P> {
        StaleCache { inner, seen: Mutex::new(BTreeMap::new()), name: None }
    }

    /// [`StaleCache::new`], called `name`.
    pub(crate) fn named(inner: P, name: String) -> StaleCache<P> {
        StaleCache { name: Some(name), ..StaleCache::new(inner) }
    }

    fn cached(&self, node: NodeId, scope: &Scope) -> Option<Record> {
        self.seen.lock().expect("cache lock").get(&(node, scope.clone())).cloned()
    }

    fn remember(&self, node: NodeId, scope: &Scope, record: &Record) {
        self.seen.lock().expect("cache lock").insert((node, scope.clone()), record.clone());
    }
}

#[async_trait]
impl<P: Protocol> Protocol for StaleCache<P> {
    fn name(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        match self.inner.name() {
            name if name == "correct" => "stale-cache".into(),
            name => format!("{name}, read: server-cache"),
        }
    }
    fn scope(&self, request: &Request) -> Option<Scope> {
        self.inner.scope(request)
    }
    fn fingerprint_fields<'r>(&self, request: &'r Request) -> (&'r str, &'r str, &'r [u8]) {
        self.inner.fingerprint_fields(request)
    }
    fn lease_ms(&self, configured_ms: u64) -> u64 {
        self.inner.lease_ms(configured_ms)
    }
    async fn claim(
        &self,
        env: &dyn Env,
        scope: &Scope,
        fp: &Fingerprint,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Claimed, Reply> {
        if let Some(record) = self.cached(env.node(), scope) {
            return Ok(Claimed { claim: Claim::Existing(record), forced_owner: false });
        }
        let claimed = self.inner.claim(env, scope, fp, now, lease_ms).await?;
        if let Claim::Existing(record) = &claimed.claim {
            self.remember(env.node(), scope, record);
        }
        Ok(claimed)
    }
    fn fingerprint_matches(&self, record: &Record, fingerprint: &Fingerprint) -> bool {
        self.inner.fingerprint_matches(record, fingerprint)
    }
    fn replay(&self, stored: StoredResponse) -> StoredResponse {
        self.inner.replay(stored)
    }
    async fn reject_invalid(&self, env: &dyn Env, scope: &Scope, attempt: Attempt, reply: &Reply) {
        self.inner.reject_invalid(env, scope, attempt, reply).await
    }
    async fn take_over(
        &self,
        env: &dyn Env,
        s: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Option<Takeover> {
        self.inner.take_over(env, s, expected, now, lease_ms).await
    }
    fn downstream_key(
        &self,
        s: &Scope,
        fp: &Fingerprint,
        attempt: Attempt,
        recorded: Option<&DownstreamKey>,
    ) -> DownstreamKey {
        self.inner.downstream_key(s, fp, attempt, recorded)
    }
    async fn before_commit(
        &self,
        env: &dyn Env,
        s: &Scope,
        attempt: Attempt,
        completion: &mut Completion,
    ) -> Result<(), Reply> {
        self.inner.before_commit(env, s, attempt, completion).await
    }
    async fn complete(&self, env: &dyn Env, s: &Scope, attempt: Attempt, completion: Completion) -> Option<StoreReply> {
        self.inner.complete(env, s, attempt, completion).await
    }
    async fn dependency_failed(
        &self,
        env: &dyn Env,
        s: &Scope,
        attempt: Attempt,
        answer: &ChargeAnswer,
        reply: Reply,
    ) -> Reply {
        self.inner.dependency_failed(env, s, attempt, answer, reply).await
    }
    async fn sweep(&self, env: &dyn Env, now: SimTime, window_ms: u64) {
        self.inner.sweep(env, now, window_ms).await
    }
    fn retries(&self, status: u16) -> bool {
        self.inner.retries(status)
    }
    fn backoff_ms(&self, env: &dyn ClientEnv, bound_ms: u64) -> u64 {
        self.inner.backoff_ms(env, bound_ms)
    }
    fn request_for_try(&self, request: &Request, try_no: u32) -> Request {
        self.inner.request_for_try(request, try_no)
    }
    fn retry_layers(&self) -> u32 {
        self.inner.retry_layers()
    }
}

#[cfg(test)]
mod tests {
    use crate::Protocol;
    use crate::{ClaimStep, ReadStep, Steps};

    /// The steps' protocol wraps a cache around the steps, which then read
    /// the store; the name says both.
    #[test]
    fn a_server_cache_step_is_a_wrapped_protocol() {
        let cached = Steps { read: ReadStep::ServerCache, ..Steps::default() };
        assert_eq!(cached.protocol().name(), "stale-cache");
        let two = Steps { claim: ClaimStep::PerProcessLock, ..cached };
        assert_eq!(two.protocol().name(), "claim: per-process-lock, read: server-cache");
    }
}
