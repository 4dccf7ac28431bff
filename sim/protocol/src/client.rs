//! The client's retry loop (docs/protocol.md §7) over the retry steps of
//! [`Protocol`]: retry only what the protocol says is transient, honour
//! `Retry-After`, back off with the protocol's jitter, cap the attempts and
//! the total time, spend the retry budget. Every environment runs this
//! one copy.

use crate::{ClientEnv, Protocol};
use idemsim_model::history::RetryCause;
use idemsim_model::{Event, OpId, Request, RequestId, Try};

/// Sends `request` (operation `op`) and retries it until it gets an
/// answer it should not retry, or gives up.
pub async fn run_operation<P: Protocol + ?Sized>(p: &P, env: &dyn ClientEnv, op: OpId, request: &Request) {
    let policy = env.policy().clone();
    // Each layer above the one that keeps the policy restarts it, up to
    // `attempts_max` times: with three layers, attempts_max^2 - 1 restarts.
    let restarts_max = policy.attempts_max.saturating_pow(p.retry_layers().max(1) - 1) - 1;
    let mut first_at = env.now();
    let mut try_no = 1;
    // Sends of the current run of the retry loop, and how often the layers
    // above restarted it.
    let (mut inner, mut restarts) = (1, 0);
    loop {
        let req = RequestId { op, try_no: Try(try_no) };
        let sent = p.request_for_try(request, try_no);
        if try_no == 1 {
            env.first_send();
        }
        let server = env.pick_server();
        env.record(Event::RequestSent { req, to: server, request: sent.clone() });
        let (cause, retry_after_ms) = match env.send(req, server, sent).await {
            Some(reply) => {
                let status = reply.response.status;
                env.record(Event::ResponseReceived {
                    req,
                    answer: reply.answer,
                    response: reply.response,
                    retry_after_ms: reply.retry_after_ms,
                });
                if !p.retries(status) {
                    return;
                }
                (RetryCause::Status(status), reply.retry_after_ms)
            }
            None => {
                env.record(Event::TimedOut { req });
                (RetryCause::Timeout, None)
            }
        };
        let next = inner + 1;
        let verdict = (|| {
            if next > policy.attempts_max {
                return Err(format!("gave up after {} sends", policy.attempts_max));
            }
            let wait = p.retry_wait_ms(p.backoff_ms(env, policy.backoff_max_ms(next)), retry_after_ms);
            if env.now().plus_ms(wait).since_ms(first_at) > policy.deadline_ms {
                return Err(format!("the next send would pass the {} ms deadline", policy.deadline_ms));
            }
            if !p.spend_retry(env, req) {
                return Err("retry budget exhausted".to_string());
            }
            Ok(wait)
        })();
        match verdict {
            Ok(wait_ms) => {
                env.record(Event::RetryScheduled { req, wait_ms, cause });
                env.sleep_ms(wait_ms).await;
                (try_no, inner) = (try_no + 1, next);
            }
            Err(_) if restarts < restarts_max => {
                // An outer layer saw the failure and calls the whole loop again.
                let wait_ms = env.draw(0, policy.cap_ms);
                env.record(Event::RetryScheduled { req, wait_ms, cause });
                env.sleep_ms(wait_ms).await;
                (try_no, inner, restarts, first_at) = (try_no + 1, 1, restarts + 1, env.now());
            }
            Err(reason) => {
                env.record(Event::GaveUp { op, reason });
                return;
            }
        }
    }
}
