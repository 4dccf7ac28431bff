//! idemsim's payment provider: the downstream dependency the target calls.
//!
//! `POST /charges` with a JSON body (the `ref` the client sent, forwarded
//! by the service) and an optional `Idempotency-Key` header (the service's
//! downstream key). A repeated downstream key returns the first charge and
//! makes no new effect, as a real provider's idempotency does; without a
//! key every call is a new effect. Every call is recorded with the
//! reference it carried, so effects are counted per request as the client
//! sent it. The plan can make the first two calls for a reference slow
//! (the charge is made at once, the answer waits) or the first fail (503,
//! no charge). A service may also say which execution calls and the
//! fencing token it holds (`execution`, `attempt` in the body); then
//! fencing is judged from outside too.

use super::workload::ProviderPlan;
use super::Recorder;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use idemsim_model::outside::Seen;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The provider's state.
pub struct Provider {
    rec: Arc<Recorder>,
    plan: BTreeMap<String, ProviderPlan>,
    /// Charge ids start with this (unique to the run).
    prefix: String,
    /// Downstream key to charge id.
    charges: Mutex<BTreeMap<String, String>>,
    /// Calls made, by reference.
    called: Mutex<BTreeMap<String, u32>>,
    next: Mutex<u64>,
}

impl Provider {
    /// A provider recording into `rec`.
    pub fn new(rec: Arc<Recorder>, plan: BTreeMap<String, ProviderPlan>, prefix: String) -> Provider {
        Provider { rec, plan, prefix, charges: Mutex::default(), called: Mutex::default(), next: Mutex::new(0) }
    }

    /// Binds `listen` and serves until the returned handle is aborted.
    pub async fn start(self, listen: &str) -> Result<tokio::task::JoinHandle<()>, crate::Error> {
        let addr = super::loopback_addr("provider address", listen)?;
        if !addr.ip().is_loopback() {
            return Err(crate::Error::Usage(format!("provider address {listen} is not on loopback")));
        }
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
            crate::Error::Service(format!("the provider cannot listen on {listen}: {}", crate::output::plain(&e)))
        })?;
        let app = axum::Router::new()
            .route("/charges", axum::routing::post(charge))
            .route("/", axum::routing::post(charge))
            .with_state(Arc::new(self));
        Ok(tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        }))
    }

    /// What to do with this call for `reference`: a failure on the first
    /// call; slowness on the first two (the holder's and a taker's, so a
    /// stale holder wakes while the taker still works).
    fn plan_for(&self, reference: Option<&str>) -> Option<ProviderPlan> {
        let reference = reference?;
        let mut called = self.called.lock().unwrap_or_else(|p| p.into_inner());
        let n = called.entry(reference.to_string()).or_default();
        *n += 1;
        match self.plan.get(reference).copied()? {
            ProviderPlan::Fail if *n == 1 => Some(ProviderPlan::Fail),
            ProviderPlan::Slow(ms) if *n <= 2 => Some(ProviderPlan::Slow(ms)),
            _ => None,
        }
    }

    /// Makes (or finds) the charge: its id, and whether it is new.
    fn make(&self, downstream_key: Option<&str>) -> (String, bool) {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        let mut charges = self.charges.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(id) = downstream_key.and_then(|k| charges.get(k)) {
            return (id.clone(), false);
        }
        *next += 1;
        let id = format!("{}{}", self.prefix, *next);
        if let Some(k) = downstream_key {
            charges.insert(k.to_string(), id.clone());
        }
        (id, true)
    }
}

async fn charge(State(p): State<Arc<Provider>>, headers: HeaderMap, body: Bytes) -> Response {
    let value: serde_json::Value = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    let reference = value.get("ref").and_then(|r| r.as_str()).map(str::to_string);
    let amount = value.get("amount").cloned().unwrap_or(serde_json::Value::Null);
    let downstream_key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_string);
    let execution = value.get("execution").and_then(|r| r.as_str()).map(str::to_string);
    let attempt = value.get("attempt").and_then(serde_json::Value::as_u64);
    let plan = p.plan_for(reference.as_deref());
    if plan == Some(ProviderPlan::Fail) {
        p.rec.push(|at_ms| Seen::ProviderFailed { at_ms, reference: reference.clone() });
        return (StatusCode::SERVICE_UNAVAILABLE, r#"{"error":"provider unavailable"}"#).into_response();
    }
    let (id, new) = p.make(downstream_key.as_deref());
    p.rec.push(|at_ms| Seen::Charged {
        at_ms,
        reference: reference.clone(),
        charge: id.clone(),
        downstream_key,
        new,
        execution,
        attempt,
        delay_ms: match plan {
            Some(ProviderPlan::Slow(ms)) => ms,
            _ => 0,
        },
    });
    if let Some(ProviderPlan::Slow(ms)) = plan {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let answer = serde_json::json!({ "id": id, "amount": amount, "ref": reference });
    let mut r = (StatusCode::OK, answer.to_string()).into_response();
    r.headers_mut().insert("content-type", axum::http::HeaderValue::from_static("application/json"));
    r
}
