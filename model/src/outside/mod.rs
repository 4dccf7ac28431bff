//! Judging a running service from outside: what `idemsim http` records, and
//! the properties of docs/protocol.md §9 decided from it.
//!
//! A black-box run sees only what a client and the service's dependency
//! see: the requests as the client sent them, the answers (and the answers
//! a fault proxy kept from the client), the charges the dependency received
//! with the request reference the service forwarded, and, where the service
//! lists them, its local effects. Every judgement is keyed by the request
//! as the client sent it (tenant, method, path, key, body), never by what
//! the service computed. A property that these observations cannot decide
//! is reported as not judged, with the reason, instead of passing.

use crate::checker::{Property, Violation};
use crate::{Bytes, CallerId, IdempotencyKey, OpId, Request, StoredResponse, Text};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

mod at_most_once;
mod fencing;
mod isolation;
mod liveness;
mod progress;
mod replay;
#[cfg(test)]
mod tests;

use at_most_once::*;
use fencing::*;
use isolation::*;
use liveness::*;
use progress::*;
use replay::*;

/// One observation of a black-box run, in the order it was made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Seen {
    /// The client sent one try of an operation.
    Sent {
        /// Milliseconds since the run began.
        at_ms: u64,
        /// The operation.
        op: OpId,
        /// 1 for the first send.
        try_no: u32,
        /// The request exactly as sent (the tenant as `caller`).
        request: Request,
        /// The attack the operation belongs to.
        attack: String,
    },
    /// The client received an answer.
    Answered {
        /// Milliseconds since the run began.
        at_ms: u64,
        /// The operation.
        op: OpId,
        /// The try answered.
        try_no: u32,
        /// Status and body bytes.
        response: StoredResponse,
        /// The `Retry-After` hint, in milliseconds.
        retry_after_ms: Option<u64>,
    },
    /// The client got no answer: a timeout, a reset, or a response the
    /// fault proxy dropped (then `proxy_saw` holds it).
    Lost {
        /// Milliseconds since the run began.
        at_ms: u64,
        /// The operation.
        op: OpId,
        /// The try.
        try_no: u32,
        /// What happened.
        why: String,
        /// The response the service sent and the proxy dropped.
        proxy_saw: Option<StoredResponse>,
    },
    /// The client will send another try after a wait.
    Retry {
        /// Milliseconds since the run began.
        at_ms: u64,
        /// The operation.
        op: OpId,
        /// The try that failed.
        try_no: u32,
        /// The wait.
        wait_ms: u64,
        /// Why (a status, or a lost answer).
        cause: String,
    },
    /// The client gave up on an operation.
    GaveUp {
        /// Milliseconds since the run began.
        at_ms: u64,
        /// The operation.
        op: OpId,
        /// Why.
        reason: String,
    },
    /// The dependency was called by the service.
    Charged {
        /// Milliseconds since the run began.
        at_ms: u64,
        /// The request reference the service forwarded (from the body the
        /// client sent), if any.
        reference: Option<String>,
        /// The charge id the dependency answered.
        charge: String,
        /// The downstream idempotency key the service passed, if any.
        downstream_key: Option<String>,
        /// Whether this call made a new effect (a repeated downstream key
        /// makes none).
        new: bool,
        /// The execution that called, if the service said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution: Option<String>,
        /// The fencing token that execution held, if the service said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u64>,
        /// How long the dependency held its answer (the slow provider's
        /// delay): the execution was in progress until then.
        #[serde(default, skip_serializing_if = "is_zero")]
        delay_ms: u64,
    },
    /// The dependency refused a call with a transient failure (503), as
    /// planned: no effect was made.
    ProviderFailed {
        /// Milliseconds since the run began.
        at_ms: u64,
        /// The request reference the service forwarded, if any.
        reference: Option<String>,
    },
    /// The service's own list of its local effects for one request slot,
    /// read at the end of the run.
    LocalEffects {
        /// Milliseconds since the run began.
        at_ms: u64,
        /// The tenant.
        caller: CallerId,
        /// The endpoint's method.
        method: String,
        /// The endpoint's path.
        path: String,
        /// The key.
        key: IdempotencyKey,
        /// How many effects the service listed.
        count: usize,
    },
}

impl Seen {
    /// When it was seen.
    pub fn at_ms(&self) -> u64 {
        match self {
            Seen::Sent { at_ms, .. }
            | Seen::Answered { at_ms, .. }
            | Seen::Lost { at_ms, .. }
            | Seen::Retry { at_ms, .. }
            | Seen::GaveUp { at_ms, .. }
            | Seen::Charged { at_ms, .. }
            | Seen::ProviderFailed { at_ms, .. }
            | Seen::LocalEffects { at_ms, .. } => *at_ms,
        }
    }

    /// One line for a person.
    pub fn describe(&self) -> String {
        match self {
            Seen::Sent { op, try_no, request, attack, .. } => format!(
                "{op:?} try {try_no} [{attack}]: tenant {} sends {} {} key {} body {}",
                request.caller.0,
                request.method,
                request.path,
                request.key.as_ref().map_or("(none)".to_string(), |k| format!("{:?}", k.0)),
                request.body.lossy()
            ),
            Seen::Answered { op, try_no, response, .. } => {
                format!("{op:?} try {try_no}: answered {} {}", response.status, one_line(&response.body))
            }
            Seen::Lost { op, try_no, why, proxy_saw, .. } => match proxy_saw {
                Some(r) => {
                    format!("{op:?} try {try_no}: {why}; the service had answered {} {}", r.status, one_line(&r.body))
                }
                None => format!("{op:?} try {try_no}: {why}"),
            },
            Seen::Retry { op, try_no, wait_ms, cause, .. } => {
                format!("{op:?} try {try_no}: retries in {wait_ms} ms ({cause})")
            }
            Seen::GaveUp { op, reason, .. } => format!("{op:?}: gave up ({reason})"),
            Seen::Charged { reference, charge, downstream_key, new, execution, attempt, .. } => format!(
                "dependency charged {charge} for {}{} with downstream key {}{}",
                reference.as_deref().unwrap_or("(no reference)"),
                match (execution, attempt) {
                    (Some(e), Some(a)) => format!(", called by execution {e} holding attempt {a},"),
                    _ => String::new(),
                },
                downstream_key.as_deref().unwrap_or("(none)"),
                if *new { "" } else { " (a repeat: no new effect)" }
            ),
            Seen::ProviderFailed { reference, .. } => format!(
                "dependency refused a call for {} with 503 (a transient failure; no charge)",
                reference.as_deref().unwrap_or("(no reference)")
            ),
            Seen::LocalEffects { caller, method, path, key, count, .. } => {
                format!(
                    "the service lists {count} local effect(s) for tenant {} {method} {path} key {:?}",
                    caller.0, key.0
                )
            }
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// When the dependency's last answer for each reference was given: an
/// execution is in progress until its call is answered.
pub fn calls_end_ms(seen: &[Seen]) -> BTreeMap<&str, u64> {
    let mut out: BTreeMap<&str, u64> = BTreeMap::new();
    for s in seen {
        let (r, end) = match s {
            Seen::Charged { reference: Some(r), at_ms, delay_ms, .. } => (r, at_ms.saturating_add(*delay_ms)),
            Seen::ProviderFailed { reference: Some(r), at_ms } => (r, *at_ms),
            _ => continue,
        };
        let e = out.entry(r.as_str()).or_default();
        *e = (*e).max(end);
    }
    out
}

/// A body on one line: whitespace runs become one space, and at most 120
/// characters are kept.
fn one_line(body: &Bytes) -> String {
    let text = body.lossy().split_whitespace().collect::<Vec<_>>().join(" ");
    match text.char_indices().nth(120) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text,
    }
}

/// What a black-box run could observe, which decides what can be judged.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observability {
    /// Endpoints (method and path) whose execution calls the dependency.
    pub charging: BTreeSet<(String, String)>,
    /// Whether local effects were listed by the service.
    pub local_effects: bool,
    /// The prefix of the dependency's charge ids in this run (to find them
    /// in response bodies).
    pub charge_prefix: String,
    /// The longest lease the service can hold, when the user said
    /// (`--lease-ms`): it decides progress.
    #[serde(default)]
    pub lease_ms: Option<u64>,
}

/// Whether a property was judged, and if not, why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judged {
    /// The property.
    pub property: Property,
    /// `None` when judged; otherwise why it could not be.
    pub not_judged: Option<String>,
}

/// The verdict of the outside judge.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutsideVerdict {
    /// What broke; `events` index the observations.
    pub violations: Vec<Violation>,
    /// Each property, judged or not.
    pub judged: Vec<Judged>,
    /// Answers whose status no rule decides (neither 2xx, 4xx nor 5xx),
    /// counted by status.
    #[serde(default)]
    pub unjudged: BTreeMap<u16, usize>,
}

/// The request an operation sends, and where it was first sent.
struct OpView<'a> {
    request: &'a Request,
    /// The body's `ref`, parsed once.
    reference: Option<String>,
    first: usize,
    /// `(index, response)` of every answer, including ones the proxy dropped.
    answers: Vec<(usize, &'a StoredResponse)>,
}

/// A request slot: tenant, endpoint and key (an endpoint-scoped record is
/// allowed, docs/protocol.md §2).
type Slot = (CallerId, Text, Text, Option<IdempotencyKey>);

fn slot(r: &Request) -> Slot {
    (r.caller.clone(), r.method.clone(), r.path.clone(), r.key.clone())
}

fn success(r: &StoredResponse) -> bool {
    (200..300).contains(&r.status)
}

fn transient(r: &StoredResponse) -> bool {
    crate::retry::is_transient_status(r.status) || r.status == 409
}

/// The `ref` field of a JSON object body.
pub fn reference_of(body: &Bytes) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(&body.0).ok()?;
    v.get("ref")?.as_str().map(str::to_string)
}

/// Judges the observations of a black-box run.
pub fn judge_outside(seen: &[Seen], obs: &Observability) -> OutsideVerdict {
    let ops = op_views(seen);
    let mut by_ref: BTreeMap<String, OpId> = BTreeMap::new();
    for (op, v) in &ops {
        if let Some(r) = &v.reference {
            by_ref.entry(r.clone()).or_insert(*op);
        }
    }
    let forwarded = seen.iter().any(|s| {
        matches!(s, Seen::Charged { reference: Some(r), .. } | Seen::ProviderFailed { reference: Some(r), .. } if by_ref.contains_key(r))
    });
    let no_charges = (!forwarded).then(|| {
        "the dependency saw no charge carrying a request's `ref`: configure the service to call idemsim's provider and forward the body's ref".to_string()
    });
    let ids_seen = ops.values().flat_map(|v| &v.answers).any(|(_, r)| r.body.lossy().contains(&obs.charge_prefix));
    let no_ids = (!ids_seen || obs.charge_prefix.is_empty()).then(|| {
        "no response carried a charge id of idemsim's provider, so a leaked response cannot be traced".to_string()
    });
    let tokens = seen.iter().any(|s| {
        matches!(s, Seen::Charged { reference: Some(r), execution: Some(_), attempt: Some(_), .. } if by_ref.contains_key(r))
    });
    let no_tokens = (!tokens).then(|| {
        "the service did not tell the dependency which execution called and the attempt it held (`execution`, `attempt`)".to_string()
    });
    let origins = Origins::new(seen, &by_ref, &obs.charge_prefix);
    let never = |why: &str| (Some(why.to_string()), Vec::new());
    let mut out = Vec::new();
    let mut judged = Vec::new();
    // Where the dependency was first called for each reference: both
    // replay-fidelity and status-rules read it.
    let called = first_calls(seen);
    // Every property, so that a new one is judged here or said not to be.
    for p in Property::ALL {
        let (not_judged, found) = match p {
            Property::AtMostOnce => {
                let blind = no_charges.clone().filter(|_| !obs.local_effects);
                (blind, at_most_once(seen, &ops, &by_ref))
            }
            Property::Liveness => {
                let mut found = liveness(seen, &ops, &by_ref, obs);
                found.extend(stored_transient(seen, &ops));
                (no_charges.clone(), found)
            }
            Property::Fencing => (no_tokens.clone(), fencing(seen, &ops, &by_ref)),
            Property::ReplayFidelity => (None, replay_fidelity(&called, &ops)),
            Property::StatusRules => (None, status_rules(seen, &called, &ops, &by_ref, &origins)),
            Property::Isolation => (no_ids.clone(), isolation(&ops, &origins, obs)),
            Property::RetryDiscipline => never("the client retrying is idemsim itself"),
            Property::Expiry => never("the service's sweeper is not observable from outside"),
            Property::Outbox => never("follow-on messages are not observable from outside"),
            Property::Progress => match obs.lease_ms {
                Some(lease_ms) => (no_charges.clone(), progress(seen, &ops, &by_ref, obs, lease_ms)),
                None => never("a key refused past any lease the service could hold needs that lease: give --lease-ms"),
            },
            Property::StoreContract => never("the service's store is not reachable from outside"),
        };
        if not_judged.is_none() {
            out.extend(found);
        }
        judged.push(Judged { property: p, not_judged });
    }
    out.sort_by_key(|v| (v.events.last().copied(), v.property));
    OutsideVerdict { violations: out, judged, unjudged: unjudged(seen) }
}

/// Answers by status that no rule decides: every rule reads 2xx, 4xx or
/// 5xx.
fn unjudged(seen: &[Seen]) -> BTreeMap<u16, usize> {
    let mut out = BTreeMap::new();
    for s in seen {
        if let Seen::Answered { response, .. } = s {
            if !(200..300).contains(&response.status) && !(400..600).contains(&response.status) {
                *out.entry(response.status).or_default() += 1;
            }
        }
    }
    out
}

/// Whether an answer refuses a key for now (in flight, too many, or a
/// server error), as progress counts refusals.
pub fn refuses_for_now(status: u16) -> bool {
    status == 409 || status == 429 || status >= 500
}

/// How much longer than twice the lease a key may stay refused: the
/// client's retry waits and the service's sweep interval.
pub const PROGRESS_SLACK_MS: u64 = 1_000;

fn op_views(seen: &[Seen]) -> BTreeMap<OpId, OpView<'_>> {
    let mut ops: BTreeMap<OpId, OpView<'_>> = BTreeMap::new();
    for (i, s) in seen.iter().enumerate() {
        match s {
            Seen::Sent { op, request, .. } => {
                ops.entry(*op).or_insert_with(|| OpView {
                    request,
                    reference: reference_of(&request.body),
                    first: i,
                    answers: Vec::new(),
                });
            }
            Seen::Answered { op, response, .. } | Seen::Lost { op, proxy_saw: Some(response), .. } => {
                if let Some(v) = ops.get_mut(op) {
                    v.answers.push((i, response));
                }
            }
            _ => {}
        }
    }
    ops
}

/// The entries that tell an operation in a story: its first send, and its
/// first success (else its first answer).
fn entries_of(seen: &[Seen], op: OpId) -> Vec<usize> {
    let mine = |s: &Seen| matches!(s, Seen::Answered { op: o, .. } | Seen::Lost { op: o, .. } if *o == op);
    let sent = seen.iter().position(|s| matches!(s, Seen::Sent { op: o, .. } if *o == op));
    let success =
        seen.iter().position(|s| matches!(s, Seen::Answered { op: o, response, .. } if *o == op && success(response)));
    let answer = success.or_else(|| seen.iter().position(mine));
    sent.into_iter().chain(answer).collect()
}
