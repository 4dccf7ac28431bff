//! A server's answer to one request, and the answers of the replay table.

use crate::ProtocolSettings;
use idemsim_model::history::Answer;
use idemsim_model::{Claim, RecordState, SimTime, StoredResponse};

/// A response and how it was reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// How the server arrived at it (instrumentation, not a header).
    pub answer: Answer,
    /// Status and body.
    pub response: StoredResponse,
    /// The `Retry-After` hint, if any.
    pub retry_after_ms: Option<u64>,
}

impl Reply {
    /// A reply with a JSON body.
    pub fn new(answer: Answer, status: u16, body: &str) -> Reply {
        Reply { answer, response: StoredResponse::new(status, body), retry_after_ms: None }
    }

    /// The same reply with a `Retry-After` hint.
    pub fn retry_after(mut self, ms: u64) -> Reply {
        self.retry_after_ms = Some(ms);
        self
    }

    /// 400: the endpoint requires a key.
    pub fn missing_key() -> Reply {
        Reply::new(Answer::MissingKey, 400, r#"{"error":"Idempotency-Key header required"}"#)
    }

    /// 422: the key was used with another request.
    pub fn mismatch() -> Reply {
        Reply::new(Answer::Mismatch, 422, r#"{"error":"Idempotency-Key reused with another request"}"#)
    }

    /// 409: another execution holds the record; retry after its lease (at
    /// least the configured floor).
    pub fn in_flight(claim: &Claim, now: SimTime, settings: &ProtocolSettings) -> Reply {
        let floor = settings.retry_after.in_flight_min_ms;
        let wait = match claim {
            Claim::Existing(r) => match r.state {
                RecordState::InProgress { locked_until, .. } => locked_until.since_ms(now).max(floor),
                _ => floor,
            },
            Claim::Owned(_) => floor,
        };
        Reply::new(Answer::InFlight, 409, r#"{"error":"a request with this key is in progress"}"#).retry_after(wait)
    }

    /// 409: a takeover lost the race for a stale record.
    pub fn takeover_refused(settings: &ProtocolSettings) -> Reply {
        Reply::new(Answer::InFlight, 409, r#"{"error":"a request with this key is in progress"}"#)
            .retry_after(settings.retry_after.takeover_refused_ms)
    }

    /// 400: validation failed before execution began.
    pub fn invalid(why: &str) -> Reply {
        Reply::new(Answer::Invalid, 400, &error_body(why))
    }

    /// 503: the store or the dependency did not answer.
    pub fn unavailable(what: &str, settings: &ProtocolSettings) -> Reply {
        Reply::new(Answer::Unavailable, 503, &error_body(what)).retry_after(settings.retry_after.unavailable_ms)
    }

    /// 409: the holder's write was fenced.
    pub fn lease_lost(settings: &ProtocolSettings) -> Reply {
        Reply::new(Answer::LeaseLost, 409, r#"{"error":"lease lost; retry"}"#)
            .retry_after(settings.retry_after.lease_lost_ms)
    }

    /// The execution's own response.
    pub fn executed(response: StoredResponse) -> Reply {
        Reply { answer: Answer::Executed, response, retry_after_ms: None }
    }

    /// A completed record's stored response.
    pub fn replayed(response: StoredResponse) -> Reply {
        Reply { answer: Answer::Replayed, response, retry_after_ms: None }
    }
}

/// `{"error":"<what>"}` (as `format!` writes it, without its machinery:
/// a seed answers a few dozen of these).
fn error_body(what: &str) -> String {
    [r#"{"error":""#, what, r#""}"#].concat()
}
