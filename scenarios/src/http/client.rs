//! One client operation against the target: the protocol core's retry
//! loop (`run_operation`, the same one the simulator's clients run) over
//! real HTTP, with the fault proxy on the first try.
//!
//! The proxy sits between the loop and the connection: it can let the
//! service answer and drop the answer (the client never sees it; the
//! proxy's copy is recorded), or reset the connection shortly after the
//! send, whether or not the service is still working.

use super::workload::{PlannedOp, ProxyFault};
use super::{Recorder, Service};
use async_trait::async_trait;
use idemsim_model::history::{Answer, RetryCause};
use idemsim_model::outside::Seen;
use idemsim_model::{Bytes, Event, NodeId, Request, RequestId, RetryPolicy, StoredResponse};
use idemsim_sim::protocol::{ClientEnv, Correct, Protocol, Reply};
use idemsim_sim::rng::{between, stream, SimRng, Stream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The client's steps: the correct protocol's, retrying every 5xx when
/// asked (as most users' HTTP clients do), not only 502, 503 and 504.
#[derive(Clone, Copy, Debug)]
pub struct ClientSteps {
    /// Retry 500, 501 and every other 5xx too.
    pub retry_5xx: bool,
}

impl Protocol for ClientSteps {
    fn name(&self) -> String {
        "http-client".into()
    }

    fn retries(&self, status: u16) -> bool {
        Correct.retries(status) || (self.retry_5xx && (500..600).contains(&status))
    }
}

/// Largest answer body kept.
const BODY_MAX: usize = 1 << 20;

/// What came back for one send.
pub enum Outcome {
    /// An HTTP answer.
    Answer(StoredResponse, Option<u64>),
    /// No answer: why.
    Lost(String),
}

/// Sends one request to the target and reads the answer (bounded in size
/// and by the target's timeout).
pub async fn exchange(target: &Service, request: &Request) -> Outcome {
    let method = reqwest::Method::from_bytes(request.method.as_bytes()).unwrap_or(reqwest::Method::POST);
    let mut send = target
        .http
        .request(method, format!("{}{}", target.base, request.path))
        .header("content-type", "application/json")
        .header(&target.tenant_header, target.tenant_header_value(&request.caller.0))
        .body(request.body.0.clone());
    if let Some(key) = &request.key {
        send = send.header(&target.key_header, key.0.as_str());
    }
    let answer = match send.send().await {
        Ok(a) => a,
        Err(e) => return Outcome::Lost(super::describe_error(&e)),
    };
    let status = answer.status().as_u16();
    let retry_after_ms = answer
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|s| s.saturating_mul(1000));
    match answer.bytes().await {
        Ok(b) => {
            let body = b[..b.len().min(BODY_MAX)].to_vec();
            Outcome::Answer(StoredResponse { status, body: Bytes(body) }, retry_after_ms)
        }
        Err(e) => Outcome::Lost(super::describe_error(&e)),
    }
}

/// One operation's client.
pub struct HttpClient {
    target: Arc<Service>,
    rec: Arc<Recorder>,
    op: PlannedOp,
    policy: RetryPolicy,
    rng: Mutex<SimRng>,
    /// Why the last send got no answer, and what the proxy kept.
    lost: Mutex<Option<(String, Option<StoredResponse>)>>,
}

impl HttpClient {
    /// A client for `op`.
    pub fn new(target: Arc<Service>, rec: Arc<Recorder>, op: PlannedOp, policy: RetryPolicy) -> HttpClient {
        let rng = Mutex::new(stream(u64::from(op.op.0), Stream::Clients));
        HttpClient { target, rec, op, policy, rng, lost: Mutex::default() }
    }

    /// The operation.
    pub fn op(&self) -> &PlannedOp {
        &self.op
    }

    fn lose(&self, why: String, kept: Option<StoredResponse>) -> Option<Reply> {
        *self.lost.lock().unwrap_or_else(|p| p.into_inner()) = Some((why, kept));
        None
    }
}

#[async_trait]
impl ClientEnv for HttpClient {
    fn node(&self) -> NodeId {
        NodeId::Client(self.op.op.0)
    }

    fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    fn now(&self) -> idemsim_model::SimTime {
        idemsim_model::SimTime(self.rec.now_ms())
    }

    fn pick_server(&self) -> NodeId {
        NodeId::Server(0)
    }

    fn draw(&self, lo: u64, hi: u64) -> u64 {
        between(&mut self.rng.lock().unwrap_or_else(|p| p.into_inner()), lo, hi)
    }

    fn first_send(&self) {}

    /// No budget: every retry the policy allows is sent, unless the
    /// target has stopped answering altogether.
    fn spend_retry(&self) -> bool {
        !self.rec.target_down()
    }

    async fn send(&self, req: RequestId, _to: NodeId, request: Request) -> Option<Reply> {
        let fault = if req.try_no.0 == 1 { self.op.fault } else { ProxyFault::None };
        let outcome = match fault {
            ProxyFault::None => exchange(&self.target, &request).await,
            ProxyFault::DropResponse => match exchange(&self.target, &request).await {
                Outcome::Answer(r, _) => {
                    self.rec.answered();
                    return self.lose("the proxy dropped the service's answer".into(), Some(r));
                }
                lost => lost,
            },
            ProxyFault::Reset { after_ms } => {
                match tokio::time::timeout(Duration::from_millis(after_ms), exchange(&self.target, &request)).await {
                    Ok(outcome) => outcome,
                    Err(_) => {
                        return self.lose(format!("the proxy reset the connection {after_ms} ms after the send"), None)
                    }
                }
            }
        };
        match outcome {
            Outcome::Answer(response, retry_after_ms) => {
                self.rec.answered();
                Some(Reply { answer: Answer::Unknown, response, retry_after_ms })
            }
            Outcome::Lost(why) => {
                if why.starts_with("connection refused") {
                    self.rec.refused();
                }
                self.lose(why, None)
            }
        }
    }

    async fn sleep_ms(&self, ms: u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }

    fn record(&self, event: Event) {
        let op = self.op.op;
        match event {
            Event::RequestSent { req, request, .. } => self.rec.push(|at_ms| Seen::Sent {
                at_ms,
                op,
                try_no: req.try_no.0,
                request,
                attack: self.op.attack.to_string(),
            }),
            Event::ResponseReceived { req, response, retry_after_ms, .. } => {
                self.rec.push(|at_ms| Seen::Answered { at_ms, op, try_no: req.try_no.0, response, retry_after_ms })
            }
            Event::TimedOut { req } => {
                let (why, proxy_saw) = self
                    .lost
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take()
                    .unwrap_or_else(|| ("no answer".into(), None));
                self.rec.push(|at_ms| Seen::Lost { at_ms, op, try_no: req.try_no.0, why, proxy_saw })
            }
            Event::RetryScheduled { req, wait_ms, cause } => {
                let cause = match cause {
                    RetryCause::Timeout => "no answer".to_string(),
                    RetryCause::Status(s) => format!("answered {s}"),
                };
                self.rec.push(|at_ms| Seen::Retry { at_ms, op, try_no: req.try_no.0, wait_ms, cause })
            }
            Event::GaveUp { reason, .. } => self.rec.push(|at_ms| Seen::GaveUp { at_ms, op, reason }),
            _ => {}
        }
    }
}
