//! Clients: each operation is sent, awaited with a timeout, and retried
//! under the `RetryPolicy` of PROTOCOL.md section 7 (only transient
//! failures, same key, full-jitter backoff honouring `Retry-After`, attempt
//! cap, total deadline, token-bucket budget).

use crate::msg::Msg;
use crate::node::{sleep_ms, Node};
use crate::rng::between;
use crate::variant::RetryStep;
use crate::workload::Operation;
use crate::world::true_now;
use idemsim_model::history::RetryCause;
use idemsim_model::retry::{is_transient_status, TokenBucket};
use idemsim_model::{Event, NodeId, RequestId, Try};
use std::rc::Rc;

/// Starts every operation of this client at its time.
pub(crate) fn drive(node: &Rc<Node>, ops: Vec<Operation>) {
    for op in ops {
        let node = node.clone();
        madsim::task::spawn_local(async move {
            sleep_ms(op.start_ms.saturating_sub(true_now().0)).await;
            run_op(&node, &op).await;
        });
    }
}

/// How many times the layers above the client's own retry loop start it
/// again under `RetryStep::ThreeLayers`: two layers of `attempts_max` each.
fn restarts_max(step: RetryStep, attempts_max: u32) -> u32 {
    match step {
        RetryStep::ThreeLayers => attempts_max * attempts_max - 1,
        _ => 0,
    }
}

async fn run_op(node: &Rc<Node>, op: &Operation) {
    let sim = &node.sim;
    let (policy, servers, step) =
        sim.with(|w| (w.config.protocol.retry.clone(), w.config.topology.servers, w.config.steps.retry));
    let mut first_at = true_now();
    let mut try_no = 1;
    // Sends of the current run of the retry loop (the layer that keeps the
    // policy), and how often the layers above restarted it.
    let (mut inner, mut restarts) = (1, 0);
    loop {
        let req = RequestId { op: op.op, try_no: Try(try_no) };
        let request = request_for(op, step, try_no);
        let server = sim.with(|w| {
            if try_no == 1 {
                bucket(w, op.client).on_first_send();
            }
            NodeId::Server(between(&mut w.client_rng, 0, u64::from(servers) - 1) as u32)
        });
        sim.record(node.id, Event::RequestSent { req, to: server, request: request.clone() });
        let msg = Msg::Request { req, request };
        let (cause, retry_after_ms) = match node.request(server, req, msg, policy.timeout_ms).await {
            Some(Msg::Response { answer, response, retry_after_ms, .. }) => {
                let status = response.status;
                sim.record(node.id, Event::ResponseReceived { req, answer, response, retry_after_ms });
                let retried_anyway = step == RetryStep::On4xx && (400..500).contains(&status);
                if !is_transient_status(status) && !retried_anyway {
                    return;
                }
                (RetryCause::Status(status), retry_after_ms.unwrap_or(0))
            }
            _ => {
                sim.record(node.id, Event::TimedOut { req });
                (RetryCause::Timeout, 0)
            }
        };
        let next = inner + 1;
        let verdict = sim.with(|w| {
            if next > policy.attempts_max {
                return Err(format!("gave up after {} sends", policy.attempts_max));
            }
            let wait = match step {
                RetryStep::NoJitter => policy.backoff_max_ms(next),
                _ => between(&mut w.client_rng, 0, policy.backoff_max_ms(next)),
            };
            let wait = wait.max(retry_after_ms);
            if true_now().plus_ms(wait).since_ms(first_at) > policy.deadline_ms {
                return Err(format!("the next send would pass the {} ms deadline", policy.deadline_ms));
            }
            if !bucket(w, op.client).try_spend() {
                return Err("retry budget exhausted".to_string());
            }
            Ok(wait)
        });
        match verdict {
            Ok(wait_ms) => {
                sim.record(node.id, Event::RetryScheduled { req, wait_ms, cause });
                sleep_ms(wait_ms).await;
                (try_no, inner) = (try_no + 1, next);
            }
            Err(_) if restarts < restarts_max(step, policy.attempts_max) => {
                // An outer layer saw the failure and calls the whole loop again.
                let wait_ms = sim.with(|w| between(&mut w.client_rng, 0, policy.cap_ms));
                sim.record(node.id, Event::RetryScheduled { req, wait_ms, cause });
                sleep_ms(wait_ms).await;
                (try_no, inner, restarts, first_at) = (try_no + 1, 1, restarts + 1, true_now());
            }
            Err(reason) => {
                sim.record(node.id, Event::GaveUp { op: op.op, reason });
                return;
            }
        }
    }
}

/// The request a send carries: the operation's, or under
/// `RetryStep::NewKey` one with a fresh key on every retry.
fn request_for(op: &Operation, step: RetryStep, try_no: u32) -> idemsim_model::Request {
    match (&op.request.key, step) {
        (Some(key), RetryStep::NewKey) if try_no > 1 => idemsim_model::Request {
            key: Some(idemsim_model::IdempotencyKey(format!("{}-retry-{try_no}", key.0))),
            ..op.request.clone()
        },
        _ => op.request.clone(),
    }
}

fn bucket(w: &mut crate::world::World, client: u32) -> &mut TokenBucket {
    let budget = w.config.protocol.retry.budget.clone();
    w.buckets.entry(client).or_insert_with(|| TokenBucket::new(&budget))
}
