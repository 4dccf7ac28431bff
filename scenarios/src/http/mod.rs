//! `idemsim http`: the Idempotency-Key contract of a running HTTP service,
//! tested from outside.
//!
//! A seeded plan of attacks ([`workload`]) is sent to the target over real
//! connections on loopback, each operation through the protocol core's
//! client retry loop ([`client`]), with a fault proxy on first tries. The
//! service's dependency is idemsim's own payment provider ([`provider`]),
//! which counts effects per request as the client sent it. At the end, the
//! service's local effects are read (if it lists them), every operation
//! that succeeded is replayed once more, and the observations are judged
//! by `idemsim_model::outside`. The seed fixes the plan; the interleaving
//! is real. Every run is bounded in operations and in time.

mod after;
pub mod client;
pub mod config;
pub mod provider;
mod recorder;
pub mod report;
pub mod workload;

use client::{exchange, HttpClient, Outcome};
use config::HttpConfig;
use idemsim_model::outside::{
    calls_end_ms, judge_outside, reference_of, refuses_for_now, Observability, OutsideVerdict, Seen, PROGRESS_SLACK_MS,
};
use idemsim_model::{OpId, Request, RetryPolicy};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use workload::{Attack, PlannedOp, ProxyFault};

use after::*;
pub use recorder::*;

/// How to attack.
#[derive(Clone, Debug)]
pub struct HttpSpec {
    /// The target's API.
    pub config: HttpConfig,
    /// Fixes the plan.
    pub seed: u64,
    /// Operations in the plan (the late replays come on top).
    pub ops: usize,
    /// Attack groups in flight at once.
    pub clients: usize,
    /// A try gets no answer after this.
    pub timeout_ms: u64,
    /// The slow provider's delay.
    pub slow_ms: u64,
    /// The whole run stops starting work after this.
    pub max_secs: u64,
    /// A client gives up on an operation this long after its first send
    /// (its retry deadline): longer than any lease the service holds, so
    /// that a holder's expiry is reached.
    pub deadline_ms: u64,
    /// Whether the client retries every 5xx, as most users' HTTP clients
    /// do, or only 502, 503 and 504.
    pub retry_5xx: bool,
    /// The longest lease the service holds, if known: progress is judged
    /// with it (see [`HttpSpec::for_lease`]).
    pub lease_ms: Option<u64>,
    /// Prefix of keys and references (default: unique per run).
    pub tag: Option<String>,
}

impl Default for HttpSpec {
    fn default() -> HttpSpec {
        HttpSpec {
            config: HttpConfig::default(),
            seed: 0,
            ops: 300,
            clients: 8,
            timeout_ms: 3_000,
            slow_ms: 1_200,
            max_secs: 120,
            deadline_ms: 30_000,
            retry_5xx: true,
            lease_ms: None,
            tag: None,
        }
    }
}

impl HttpSpec {
    /// The timings a service holding leases of `lease_ms` needs, where the
    /// defaults fall short: the slow provider answers after one and a half
    /// leases (so a duplicate's takeover happens while the holder still
    /// works); a try waits for that answer and two seconds more (a client
    /// that hangs up may cancel the holder's work); a client keeps retrying
    /// for the slow call, three leases and two seconds more (so a key stuck
    /// past twice the lease is seen, and a taker's slow call ends); the run
    /// may last that and a minute. `slow_ms`, if given, replaces the slow
    /// provider's delay the others derive from.
    pub fn for_lease(lease_ms: u64, slow_ms: Option<u64>) -> HttpSpec {
        let d = HttpSpec::default();
        let slow_ms = slow_ms.unwrap_or(d.slow_ms.max(lease_ms.saturating_mul(3) / 2));
        let timeout_ms = d.timeout_ms.max(slow_ms.saturating_add(2_000));
        let deadline_ms = d.deadline_ms.max(slow_ms.saturating_add(lease_ms.saturating_mul(3)).saturating_add(2_000));
        let max_secs = d.max_secs.max(deadline_ms.div_ceil(1000).saturating_add(60));
        HttpSpec { slow_ms, timeout_ms, deadline_ms, max_secs, lease_ms: Some(lease_ms), ..d }
    }
}

/// The service under test, as the client reaches it.
pub struct Service {
    /// Base URL without a trailing slash.
    pub base: String,
    /// The HTTP client (one connection per request, bounded by the timeout).
    pub http: reqwest::Client,
    /// Header names and the tenant header's value template.
    pub key_header: String,
    /// See [`HttpConfig::tenant_header`].
    pub tenant_header: String,
    /// See [`HttpConfig::tenant_value`].
    pub tenant_value: String,
    /// See [`HttpConfig::tenant_values`].
    pub tenant_values: BTreeMap<String, String>,
}

impl Service {
    /// The header value that names `tenant`.
    pub fn tenant_header_value(&self, tenant: &str) -> String {
        config::tenant_header_value(&self.tenant_value, &self.tenant_values, tenant)
    }
}

/// A loopback `IP:port`, with `localhost` taken as 127.0.0.1 (as a URL's
/// host is); `what` names the flag or field in the error.
pub fn loopback_addr(what: &str, text: &str) -> Result<std::net::SocketAddr, crate::Error> {
    let resolved = match text.strip_prefix("localhost:") {
        Some(port) => format!("127.0.0.1:{port}"),
        None => text.to_string(),
    };
    resolved.parse().map_err(|_| crate::Error::Usage(format!("{what} {text:?} is not an IP:port (or localhost:port)")))
}

/// What a run found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HttpReport {
    /// The target's base URL.
    pub target: String,
    /// The seed.
    pub seed: u64,
    /// The key and reference prefix of this run.
    pub tag: String,
    /// Operations sent (including late replays).
    pub operations: usize,
    /// Sends including retries.
    pub sends: usize,
    /// Wall time.
    pub elapsed_ms: u64,
    /// Each attack and event counted.
    pub attacks: BTreeMap<String, usize>,
    /// Answers by status ("lost" for none).
    pub answers: BTreeMap<String, usize>,
    /// Operations whose client gave up (attempts or deadline spent).
    pub gave_up: usize,
    /// Stopped early (time limit or Ctrl-C): the verdict covers what was sent.
    pub stopped_early: Option<String>,
    /// The verdict.
    pub verdict: OutsideVerdict,
    /// The numbered story of each violation, in the verdict's order.
    pub stories: Vec<Vec<String>>,
    /// The observations (the `--trace` file's lines).
    #[serde(skip)]
    pub seen: Vec<Seen>,
}

/// Checks that `url` is plain HTTP on loopback; returns it without a
/// trailing slash.
pub fn loopback_url(url: &str) -> Result<String, crate::Error> {
    loopback(url).map_err(crate::Error::Usage)
}

fn loopback(url: &str) -> Result<String, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("{url:?} is not a URL ({e})"))?;
    match parsed.scheme() {
        "http" => {}
        "https" => {
            return Err(format!("{url} asks for TLS; idemsim talks plain HTTP to loopback services (use http://)"))
        }
        other => return Err(format!("{url}: scheme {other:?} is not http")),
    }
    let loopback = match parsed.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    if !loopback {
        return Err(format!("{url} is not on loopback; idemsim only sends traffic to this machine"));
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// A request error in a few words.
pub fn describe_error(e: &reqwest::Error) -> String {
    let mut text = if e.is_timeout() {
        "no answer within the timeout".to_string()
    } else if e.is_connect() {
        "connection refused or failed".to_string()
    } else {
        "the connection failed or the answer was not HTTP".to_string()
    };
    let mut source = std::error::Error::source(e);
    let mut last = None;
    while let Some(s) = source {
        last = Some(s.to_string());
        source = s.source();
    }
    if let Some(cause) = last {
        text.push_str(&format!(" ({})", idemsim_store::plain_error(&cause, None)));
    }
    text
}

/// Runs the attack against `spec.config.target`.
pub fn run(spec: &HttpSpec) -> Result<HttpReport, crate::Error> {
    spec.config.validate()?;
    let base = check(spec).map_err(crate::Error::Usage)?;
    start(spec, base)
}

/// The settings' bounds, in the words of the flags; the target's base URL.
fn check(spec: &HttpSpec) -> Result<String, String> {
    let target_url = spec.config.target.as_deref().ok_or("no target: give --target URL (or `target` in the config)")?;
    let base = loopback(target_url).map_err(|e| format!("--target: {e}"))?;
    if spec.ops == 0 || spec.ops > 100_000 {
        return Err(format!("--requests must be between 1 and 100000, not {}", spec.ops));
    }
    if spec.clients == 0 || spec.clients > 256 {
        return Err(format!("--clients must be between 1 and 256, not {}", spec.clients));
    }
    if spec.lease_ms == Some(0) {
        return Err("--lease-ms must be positive".into());
    }
    if spec.timeout_ms == 0 || spec.max_secs == 0 {
        return Err("--timeout-ms and --max-secs must be positive".into());
    }
    if spec.deadline_ms == 0 || spec.deadline_ms > spec.max_secs.saturating_mul(1000) {
        return Err(format!(
            "--deadline-ms must be between 1 and --max-secs ({} s), not {}",
            spec.max_secs, spec.deadline_ms
        ));
    }
    Ok(base)
}

/// Runs the checked `spec` against `base`.
fn start(spec: &HttpSpec, base: String) -> Result<HttpReport, crate::Error> {
    let config = &spec.config;
    let tag = spec.tag.clone().unwrap_or_else(run_tag);
    let plan = workload::plan(config, spec.seed, spec.ops, &tag, spec.slow_ms);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| crate::Error::Service(format!("cannot start a runtime: {e}")))?;
    let rec = Arc::new(Recorder::new());
    let http = reqwest::Client::builder()
        .timeout(Duration::from_millis(spec.timeout_ms))
        .connect_timeout(Duration::from_millis(spec.timeout_ms.min(2_000)))
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .map_err(|e| crate::Error::Service(format!("cannot build an HTTP client: {e}")))?;
    let target = Arc::new(Service {
        base: base.clone(),
        http,
        key_header: config.key_header.clone(),
        tenant_header: config.tenant_header.clone(),
        tenant_value: config.tenant_value.clone(),
        tenant_values: config.tenant_values.clone(),
    });
    let charge_prefix = format!("ch_{tag}_");
    let started = Instant::now();
    let (stopped_early, listed) = rt.block_on(async {
        let provider = provider::Provider::new(rec.clone(), plan.provider.clone(), charge_prefix.clone());
        let provider = provider.start(&config.provider_listen).await?;
        let outcome = async {
            preflight(&target, config).await.map_err(crate::Error::Service)?;
            Ok::<_, crate::Error>(drive(spec, &target, &rec, plan.groups).await)
        }
        .await;
        let stopped = match outcome {
            Ok(stopped) => stopped,
            Err(e) => {
                provider.abort();
                return Err(e);
            }
        };
        let listed = match config.effects_url.as_deref().filter(|u| !u.is_empty()) {
            Some(url) => local_effects(&target, url, &rec).await,
            None => false,
        };
        provider.abort();
        Ok((stopped, listed))
    })?;
    drop(rt);
    let seen = rec.take();
    let obs = Observability {
        charging: config.endpoints.iter().filter(|e| e.charges).map(|e| (e.method.clone(), e.path.clone())).collect(),
        local_effects: listed,
        charge_prefix,
        lease_ms: spec.lease_ms,
    };
    let verdict = judge_outside(&seen, &obs);
    Ok(report::summarize(base, spec.seed, tag, started.elapsed(), stopped_early, verdict, seen))
}

/// A prefix unique to this run, so a service that keeps records between
/// runs never replays an earlier run's answers.
fn run_tag() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let n = (nanos as u64) ^ u64::from(std::process::id()).rotate_left(32);
    let mut s = String::new();
    let mut x = n;
    for _ in 0..8 {
        s.push(char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[(x % 36) as usize]));
        x /= 36;
    }
    s
}

/// The preflight (see [`HttpConfig::preflight`]): the target must answer
/// HTTP, within the timeout, and not an HTML page.
async fn preflight(target: &Service, config: &HttpConfig) -> Result<(), String> {
    let Some((method, path, with_body)) = config.preflight_request() else { return Ok(()) };
    let body = match with_body {
        true => config::body(&config.endpoints[0].body, 1, "idemsim-preflight"),
        false => String::new(),
    };
    let probe = Request {
        caller: idemsim_model::CallerId(config.tenants[0].as_str().into()),
        key: None,
        method: method.as_str().into(),
        path: path.as_str().into(),
        body: idemsim_model::Bytes::text(&body),
    };
    let within = Duration::from_millis(10_000);
    // A service started a moment ago may not listen yet: a refused
    // connection is tried again for up to 5 s.
    let started = Instant::now();
    let outcome = loop {
        let outcome = tokio::time::timeout(within, exchange(target, &probe))
            .await
            .map_err(|_| format!("{} did not answer within 10 s", target.base))?;
        match outcome {
            Outcome::Lost(why)
                if why.starts_with("connection refused") && started.elapsed() < Duration::from_secs(5) =>
            {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            outcome => break outcome,
        }
    };
    match outcome {
        Outcome::Lost(why) => Err(format!("{} cannot be reached: {why}", target.base)),
        Outcome::Answer(r, _) => {
            let text = r.body.lossy();
            if text.trim_start().starts_with('<') {
                return Err(format!(
                    "{} {} answered {} with HTML, not the API (is --target the API's base URL?)",
                    target.base, path, r.status
                ));
            }
            if r.status == 404 || r.status == 405 {
                return Err(format!("{} {} {} answered {}: no such endpoint", method, target.base, path, r.status));
            }
            Ok(())
        }
    }
}

/// The client's retry policy: short backoff, a bounded number of sends
/// and total time.
fn policy(spec: &HttpSpec) -> RetryPolicy {
    RetryPolicy {
        base_ms: 20,
        cap_ms: 400,
        attempts_max: 20,
        deadline_ms: spec.deadline_ms,
        timeout_ms: spec.timeout_ms,
        budget: idemsim_model::retry::RetryBudget { tokens_max: 1_000_000, deposit_milli: 1000 },
    }
}

/// Runs the groups, `spec.clients` at a time, then replays every request
/// that succeeded once more. `Some(why)` when it stopped early.
async fn drive(
    spec: &HttpSpec,
    target: &Arc<Service>,
    rec: &Arc<Recorder>,
    groups: Vec<workload::Group>,
) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(spec.max_secs);
    let permits = Arc::new(tokio::sync::Semaphore::new(spec.clients));
    let mut stopped = None;
    let mut tasks = tokio::task::JoinSet::new();
    let mut last_op = 0;
    for group in groups {
        if let Some(why) = stop_reason(deadline, rec) {
            stopped = Some(why);
            break;
        }
        let Ok(permit) = permits.clone().acquire_owned().await else { break };
        last_op = group.stages.iter().flatten().map(|o| o.op.0).max().unwrap_or(last_op).max(last_op);
        let (target, rec, policy) = (target.clone(), rec.clone(), policy(spec));
        let steps = client::ClientSteps { retry_5xx: spec.retry_5xx };
        tasks.spawn(async move {
            for stage in group.stages {
                let mut running = tokio::task::JoinSet::new();
                let barrier = Arc::new(tokio::sync::Barrier::new(stage.len()));
                for op in stage {
                    let client = HttpClient::new(target.clone(), rec.clone(), op, policy.clone());
                    let barrier = barrier.clone();
                    running.spawn(async move {
                        barrier.wait().await;
                        let (op, request) = (client.op().op, client.op().request.clone());
                        idemsim_sim::protocol::run_operation(&steps, &client, op, &request).await;
                    });
                }
                while running.join_next().await.is_some() {}
            }
            drop(permit);
        });
    }
    while tasks.join_next().await.is_some() {}
    if stopped.is_none() && rec.target_down() {
        stopped = Some(TARGET_DOWN.into());
    }
    if stopped.is_none() {
        stopped = late_replays(spec, target, rec, last_op, deadline).await;
    }
    stopped
}

fn stop_reason(deadline: Instant, rec: &Recorder) -> Option<String> {
    if crate::sweep::stopped() {
        return Some("interrupted".into());
    }
    if rec.target_down() {
        return Some(TARGET_DOWN.into());
    }
    (Instant::now() >= deadline).then(|| OUT_OF_TIME.into())
}

/// Counts of what the run did.
fn counts(seen: &[Seen]) -> BTreeMap<String, usize> {
    let mut attacks: BTreeMap<String, usize> = Attack::ALL.iter().map(|a| (a.name().to_string(), 0)).collect();
    let mut ops_of: BTreeMap<OpId, &str> = BTreeMap::new();
    for s in seen {
        if let Seen::Sent { op, attack, try_no: 1, .. } = s {
            ops_of.insert(*op, attack);
        }
    }
    for attack in ops_of.values() {
        *attacks.entry(attack.to_string()).or_default() += 1;
    }
    for s in seen {
        let what = match s {
            Seen::Retry { cause, .. } if cause.starts_with("answered 5") || cause == "answered 429" => {
                "retries-after-5xx"
            }
            Seen::Retry { cause, .. } if cause == "answered 409" => "retries-after-409",
            Seen::Lost { proxy_saw: Some(_), .. } => "answers-dropped-by-proxy",
            _ => continue,
        };
        *attacks.entry(what.to_string()).or_default() += 1;
    }
    for what in ["retries-after-5xx", "retries-after-409", "answers-dropped-by-proxy"] {
        attacks.entry(what.to_string()).or_default();
    }
    attacks
}
