//! `idemsim serve`: the protocol core as a real HTTP service, the tester's
//! known answer for `idemsim http`.
//!
//! Every request runs `idemsim_sim::protocol::serve`, the one copy of the
//! handler the simulator and the stress mode run, over this file's
//! environment: the store is a real store, time is real, and the
//! dependency is an HTTP payment provider (idemsim's own, under
//! `idemsim http`), called with the protocol's downstream key. The
//! service behaves as `nodes` replicas behind one listener (requests go
//! round robin), so a process-local lock is as wrong here as in production.
//! A reconciler finishes stale records, as in the simulator.
//!
//! The API is the simulated one: `POST /orders`, `/charges` and
//! `/checkout` with an `Idempotency-Key` header, the tenant in `X-Tenant`,
//! and a JSON body with a positive integer `amount`; the body's `ref` is
//! forwarded to the provider. `GET /effects/{key}` lists the tenant's local
//! effects for a key. Each execution stamps its response with its id, and
//! tells the provider its id and the attempt it holds, so `idemsim http`
//! can judge fencing from outside (docs/black-box.md).

use crate::target::StoreTarget;
use crate::Error;
use async_trait::async_trait;
use axum::body::Bytes as BodyBytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use idemsim_model::history::Origin;
use idemsim_model::{
    Attempt, Bytes, CallerId, DownstreamKey, Event, IdempotencyKey, MessageId, NodeId, OpId, OutboxEntry, Request,
    RequestId, Scope, SimTime, Try,
};
use idemsim_sim::protocol::{ChargeAnswer, Env, FaultSite, KeyLock, Proceed, Protocol, StoreOp, StoreReply};
use idemsim_sim::{ProtocolSettings, RetryAfter};
use idemsim_store::IdempotencyStore;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How to serve.
#[derive(Clone, Debug)]
pub struct ServeSpec {
    /// Where to listen (loopback).
    pub listen: SocketAddr,
    /// Replicas behind the listener.
    pub nodes: u32,
    /// Lease of a claim or takeover.
    pub lease_ms: u64,
    /// Handler work before completing.
    pub work_ms: u64,
    /// Added to every store call, as for a store across a network (it
    /// widens the races a broken claim loses).
    pub store_delay_ms: u64,
    /// The payment provider's base URL; `None`: an in-process one.
    pub provider: Option<String>,
    /// A call to the provider gives up after this.
    pub provider_timeout_ms: u64,
    /// Stop after this many seconds (0: run until interrupted).
    pub max_secs: u64,
}

impl Default for ServeSpec {
    fn default() -> ServeSpec {
        ServeSpec {
            listen: SocketAddr::from(([127, 0, 0, 1], 7400)),
            nodes: 2,
            lease_ms: 500,
            work_ms: 5,
            store_delay_ms: 1,
            provider: None,
            provider_timeout_ms: 5_000,
            max_secs: 0,
        }
    }
}

/// The protocol's timings in `serve`: the spec's lease, short `Retry-After`
/// hints (sent in whole seconds, rounded down), a reconciler that scans
/// every lease.
pub fn settings(spec: &ServeSpec) -> ProtocolSettings {
    ProtocolSettings {
        lease_ms: spec.lease_ms,
        reconcile_interval_ms: spec.lease_ms,
        reconcile_idle_max_ms: 4 * spec.lease_ms,
        retry_after: RetryAfter { in_flight_min_ms: 0, takeover_refused_ms: 0, lease_lost_ms: 0, unavailable_ms: 0 },
        store_timeout_ms: 5_000,
        downstream_timeout_ms: spec.provider_timeout_ms,
        ..ProtocolSettings::default()
    }
}

/// Shared state of the service.
struct Ctx {
    store: Arc<dyn IdempotencyStore>,
    protocol: Arc<dyn Protocol>,
    settings: ProtocolSettings,
    nodes: u32,
    work_ms: u64,
    store_delay_ms: u64,
    start: Instant,
    next: AtomicU64,
    http: reqwest::Client,
    provider: Option<String>,
    /// The in-process provider's dedup table, when none is configured.
    charges: Mutex<std::collections::BTreeMap<DownstreamKey, String>>,
    locks: Mutex<BTreeSet<(Option<u32>, Scope)>>,
    consumed: Mutex<BTreeSet<MessageId>>,
}

/// A service started by [`start`]; dropping it stops it.
pub struct Running {
    /// The address it listens on.
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), Error>>>,
}

impl Running {
    /// Stops serving and waits for the service to end.
    pub fn stop(mut self) -> Result<(), Error> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), Error> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(Error::Service("the service's thread panicked".into())),
            None => Ok(()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// Opens the store, binds and serves on a thread of its own; returns once
/// it listens (or could not start).
pub fn start(spec: &ServeSpec, target: &StoreTarget, protocol: Arc<dyn Protocol>) -> Result<Running, Error> {
    let usage = |s: String| Err(Error::Usage(s));
    if !spec.listen.ip().is_loopback() {
        return usage(format!("--listen {} is not a loopback address; idemsim serves on loopback only", spec.listen));
    }
    if spec.nodes == 0 || spec.nodes > 64 {
        return usage(format!("--nodes must be 1..=64, not {}", spec.nodes));
    }
    if spec.lease_ms == 0 || spec.provider_timeout_ms == 0 {
        return usage("--lease-ms and --provider-timeout-ms must be positive".into());
    }
    let provider = match &spec.provider {
        Some(p) => Some(crate::http::loopback_url(p).map_err(|e| Error::Usage(format!("--provider: {e}")))?),
        None => None,
    };
    let (spec, target) = (spec.clone(), target.clone());
    let (ready_tx, ready) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || -> Result<(), Error> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| Error::Service(format!("cannot start a runtime: {e}")))?;
        rt.block_on(async move {
            let opened = async {
                let (store, _) = target.open("idemsim_serve", 16, None).await?;
                let listener = tokio::net::TcpListener::bind(spec.listen).await.map_err(|e| {
                    Error::Service(format!("cannot listen on {}: {}", spec.listen, crate::output::plain(&e)))
                })?;
                let http = reqwest::Client::builder()
                    .timeout(Duration::from_millis(spec.provider_timeout_ms))
                    .no_proxy()
                    .build()
                    .map_err(|e| Error::Service(format!("cannot build an HTTP client: {e}")))?;
                Ok::<_, Error>((store, listener, http))
            };
            let (store, listener, http) = match opened.await {
                Ok(o) => o,
                Err(e) => {
                    // Said once, to the caller of `start`.
                    let _ = ready_tx.send(Err(e));
                    return Ok(());
                }
            };
            let ctx = Arc::new(Ctx {
                store,
                protocol,
                settings: settings(&spec),
                nodes: spec.nodes,
                work_ms: spec.work_ms,
                store_delay_ms: spec.store_delay_ms,
                start: Instant::now(),
                next: AtomicU64::new(1),
                http,
                provider,
                charges: Mutex::default(),
                locks: Mutex::default(),
                consumed: Mutex::default(),
            });
            let reconciler = {
                let ctx = ctx.clone();
                tokio::spawn(async move {
                    let env = ServeEnv {
                        ctx: ctx.clone(),
                        node: NodeId::Reconciler,
                        origin: Origin::Reconciler,
                        execution: None,
                    };
                    idemsim_sim::protocol::reconciler(&*ctx.protocol, &env).await;
                })
            };
            let app = axum::Router::new()
                .route("/effects/{key}", axum::routing::get(effects))
                .route("/health", axum::routing::get(|| async { "ok" }))
                .fallback(handle)
                .with_state(ctx);
            let _ = ready_tx.send(listener.local_addr().map_err(|e| Error::Service(format!("cannot listen: {e}"))));
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
            reconciler.abort();
            served.map_err(|e| Error::Service(format!("serving failed: {e}")))
        })
    });
    match ready.recv() {
        Ok(Ok(addr)) => Ok(Running { addr, stop: Some(stop), thread: Some(thread) }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => Err(thread.join().map_or_else(
            |_| Error::Service("the service's thread panicked".into()),
            |r| r.err().unwrap_or_else(|| Error::Service("the service ended before it listened".into())),
        )),
    }
}

/// Serves until Ctrl-C (or `max_secs`), after printing the address on
/// `announce`.
pub fn serve(
    spec: &ServeSpec,
    target: &StoreTarget,
    protocol: Arc<dyn Protocol>,
    announce: &mut dyn std::io::Write,
) -> Result<(), Error> {
    let name = protocol.name();
    let running = start(spec, target, protocol)?;
    let _ = writeln!(
        announce,
        "idemsim serve: listening on http://{} (variant {name}, store {}, {} replicas, lease {} ms, provider {})",
        running.addr,
        target.name(),
        spec.nodes,
        spec.lease_ms,
        spec.provider.as_deref().unwrap_or("in-process")
    );
    let _ = announce.flush();
    let started = Instant::now();
    while !crate::sweep::stopped() && (spec.max_secs == 0 || started.elapsed().as_secs() < spec.max_secs) {
        std::thread::sleep(Duration::from_millis(50));
    }
    running.stop()
}

/// The tenant, from `X-Tenant` (`public` without one).
fn tenant(headers: &HeaderMap) -> CallerId {
    let t = headers.get("x-tenant").and_then(|v| v.to_str().ok()).unwrap_or("public");
    CallerId(t.into())
}

fn json(status: u16, body: Vec<u8>, retry_after_ms: Option<u64>) -> Response {
    let mut r = (StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), body).into_response();
    r.headers_mut().insert("content-type", axum::http::HeaderValue::from_static("application/json"));
    if let Some(ms) = retry_after_ms {
        r.headers_mut().insert("retry-after", axum::http::HeaderValue::from(ms / 1000));
    }
    r
}

async fn handle(
    State(ctx): State<Arc<Ctx>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: BodyBytes,
) -> Response {
    let path = uri.path().to_string();
    if method != Method::POST || !["/orders", "/charges", "/checkout"].contains(&path.as_str()) {
        return json(404, br#"{"error":"not found"}"#.to_vec(), None);
    }
    let key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).map(|k| IdempotencyKey(k.into()));
    let request = Request {
        caller: tenant(&headers),
        key,
        method: method.as_str().into(),
        path: path.into(),
        body: Bytes(body.to_vec()),
    };
    let n = ctx.next.fetch_add(1, Ordering::Relaxed);
    let node = NodeId::Server((n % u64::from(ctx.nodes)) as u32);
    let req = RequestId { op: OpId(n as u32), try_no: Try(1) };
    let execution = Some(format!("{node}-e{n}"));
    let env = ServeEnv { ctx: ctx.clone(), node, origin: Origin::Request { req, copy: 1 }, execution };
    let fingerprint = idemsim_protocol::fingerprint(&*ctx.protocol, &request);
    match idemsim_sim::protocol::serve(&*ctx.protocol, &env, req, 1, &request, fingerprint).await {
        Some(reply) => json(reply.response.status, reply.response.body.0, reply.retry_after_ms),
        None => json(503, br#"{"error":"execution stopped"}"#.to_vec(), Some(0)),
    }
}

async fn effects(State(ctx): State<Arc<Ctx>>, Path(key): Path<String>, headers: HeaderMap) -> Response {
    let scope = Scope { caller: tenant(&headers), key: IdempotencyKey(key.into()) };
    match ctx.store.effects(&scope).await {
        Ok(list) => {
            let ids: Vec<&str> = list.iter().map(|e| e.id.as_str()).collect();
            json(200, serde_json::to_vec(&ids).expect("strings serialize"), None)
        }
        Err(e) => json(503, format!(r#"{{"error":{:?}}}"#, e.to_string()).into_bytes(), Some(0)),
    }
}

/// One request (or the reconciler) in the service.
struct ServeEnv {
    ctx: Arc<Ctx>,
    node: NodeId,
    origin: Origin,
    /// This request's execution id (the reconciler's: one per attempt).
    execution: Option<String>,
}

impl ServeEnv {
    /// The id of the execution holding `attempt`.
    fn execution(&self, attempt: Attempt) -> String {
        self.execution.clone().unwrap_or_else(|| format!("reconciler-a{}", attempt.0))
    }

    /// A process-local lock belongs to this replica; a shared one to all.
    fn lock_key(&self, lock: &KeyLock) -> (Option<u32>, Scope) {
        let replica = match (lock.process_local, self.node) {
            (true, NodeId::Server(n)) => Some(n),
            (true, _) => Some(u32::MAX),
            (false, _) => None,
        };
        (replica, lock.scope.clone())
    }

    async fn charge_over_http(
        &self,
        provider: &str,
        key: &DownstreamKey,
        attempt: Attempt,
        request: &Request,
    ) -> ChargeAnswer {
        let amount = idemsim_sim::protocol::execution::amount_of(request).unwrap_or(0);
        let reference = idemsim_model::outside::reference_of(&request.body);
        let execution = self.execution(attempt);
        let body =
            serde_json::json!({ "amount": amount, "ref": reference, "execution": execution, "attempt": attempt.0 });
        let sent =
            self.ctx.http.post(format!("{provider}/charges")).header("idempotency-key", key.0.as_str()).json(&body);
        let Ok(answer) = sent.send().await else { return ChargeAnswer::Unknown };
        let status = answer.status().as_u16();
        if !answer.status().is_success() {
            let retry_after_ms = answer
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok())
                .map(|secs| secs.saturating_mul(1_000));
            return provider_refusal(status, retry_after_ms);
        }
        let id = answer.json::<serde_json::Value>().await.ok().and_then(|v| Some(v.get("id")?.as_str()?.to_string()));
        id.map_or(ChargeAnswer::Unknown, ChargeAnswer::Charged)
    }
}

#[async_trait]
impl Env for ServeEnv {
    fn node(&self) -> NodeId {
        self.node
    }

    fn origin(&self) -> Origin {
        self.origin
    }

    fn settings(&self) -> &ProtocolSettings {
        &self.ctx.settings
    }

    fn now(&self) -> SimTime {
        SimTime(self.ctx.start.elapsed().as_millis() as u64)
    }

    async fn store(&self, op: StoreOp) -> Option<StoreReply> {
        let limit = Duration::from_millis(self.ctx.settings.store_timeout_ms);
        if self.ctx.store_delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(self.ctx.store_delay_ms)).await;
        }
        match tokio::time::timeout(limit, op.apply(&*self.ctx.store)).await {
            Ok(StoreReply::Failed(e)) => {
                tracing::warn!("store {}: {e}", op.name());
                None
            }
            Ok(reply) => Some(reply),
            Err(_) => None,
        }
    }

    async fn charge(
        &self,
        _scope: &Scope,
        attempt: Attempt,
        downstream_key: DownstreamKey,
        request: &Request,
    ) -> ChargeAnswer {
        if let Some(provider) = &self.ctx.provider {
            return self.charge_over_http(provider, &downstream_key, attempt, request).await;
        }
        let mut charges = self.ctx.charges.lock().unwrap_or_else(|p| p.into_inner());
        let n = charges.len() + 1;
        ChargeAnswer::Charged(charges.entry(downstream_key).or_insert_with(|| format!("ch_local_{n}")).clone())
    }

    async fn publish(&self, entry: OutboxEntry) -> bool {
        self.ctx.consumed.lock().unwrap_or_else(|p| p.into_inner()).insert(entry.message.id);
        true
    }

    async fn sleep_ms(&self, ms: u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }

    fn record(&self, event: Event) {
        tracing::debug!(node = %self.node, "{event:?}");
    }

    fn work_ms(&self) -> u64 {
        self.ctx.work_ms
    }

    async fn fault(&self, _site: FaultSite) -> Proceed {
        Proceed::Continue
    }

    async fn lock(&self, lock: &KeyLock) {
        let key = self.lock_key(lock);
        while !self.ctx.locks.lock().unwrap_or_else(|p| p.into_inner()).insert(key.clone()) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    fn unlock(&self, lock: &KeyLock) {
        let key = self.lock_key(lock);
        self.ctx.locks.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
    }

    fn stamp(&self, attempt: Attempt) -> Option<String> {
        Some(self.execution(attempt))
    }
}

/// What a provider's error status means for the charge: 429 and 503 (and
/// a 409 for a call with the key still in flight there) refuse for now and
/// charge nothing; any other 4xx but 408 is a refusal for good, like the
/// 402 of a declined card; a 408 or another 5xx leaves the charge unknown.
fn provider_refusal(status: u16, retry_after_ms: Option<u64>) -> ChargeAnswer {
    match status {
        429 | 503 | 409 => ChargeAnswer::Unavailable { retry_after_ms },
        408 => ChargeAnswer::Unknown,
        400..=499 => ChargeAnswer::Declined,
        _ => ChargeAnswer::Unknown,
    }
}
