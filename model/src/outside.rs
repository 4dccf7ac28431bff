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

/// Property 7 from outside: a keyed request of a charging endpoint refused
/// (409, 429 or 5xx) for longer than twice any lease the service could
/// hold, while the dependency saw no call for its slot (no execution in
/// progress, none started). A call is in progress until it is answered.
fn progress(
    seen: &[Seen],
    ops: &BTreeMap<OpId, OpView<'_>>,
    by_ref: &BTreeMap<String, OpId>,
    obs: &Observability,
    lease_ms: u64,
) -> Vec<Violation> {
    let stuck_ms = lease_ms.saturating_mul(2).saturating_add(PROGRESS_SLACK_MS);
    let mut busy_until: BTreeMap<Slot, u64> = BTreeMap::new();
    // Per slot: the first refusal since the slot was last busy or answered.
    let mut quiet_from: BTreeMap<Slot, (u64, usize)> = BTreeMap::new();
    let mut told: BTreeSet<Slot> = BTreeSet::new();
    // Per slot: the dependency's last call.
    let mut last_call: BTreeMap<Slot, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, s) in seen.iter().enumerate() {
        match s {
            Seen::Charged { at_ms, reference: Some(r), delay_ms, .. } => {
                let Some(op) = by_ref.get(r) else { continue };
                let slot = slot(ops[op].request);
                last_call.insert(slot.clone(), i);
                let until = busy_until.entry(slot.clone()).or_default();
                *until = (*until).max(at_ms.saturating_add(*delay_ms));
                quiet_from.remove(&slot);
            }
            Seen::ProviderFailed { reference: Some(r), .. } => {
                let Some(op) = by_ref.get(r) else { continue };
                let slot = slot(ops[op].request);
                last_call.insert(slot.clone(), i);
                quiet_from.remove(&slot);
            }
            Seen::Answered { at_ms, op, response, .. } => {
                let v = &ops[op];
                let endpoint = (v.request.method.to_string(), v.request.path.to_string());
                if v.request.key.is_none() || !obs.charging.contains(&endpoint) {
                    continue;
                }
                let slot = slot(v.request);
                if !refuses_for_now(response.status) || *at_ms < busy_until.get(&slot).copied().unwrap_or(0) {
                    quiet_from.remove(&slot);
                    continue;
                }
                let (from_ms, from) = *quiet_from.entry(slot.clone()).or_insert((*at_ms, i));
                if *at_ms >= from_ms + stuck_ms && told.insert(slot.clone()) {
                    let first_op = slot_ops(ops, &slot).into_iter().map(|o| ops[&o].first).min();
                    let mut events: Vec<usize> =
                        first_op.into_iter().chain(last_call.get(&slot).copied()).chain([from, v.first, i]).collect();
                    events.sort_unstable();
                    events.dedup();
                    out.push(Violation::new(
                        Property::Progress,
                        events,
                        format!(
                            "{op:?} was refused {} {} ms after the key was first refused{}, with no call to the dependency since: no lease of {lease_ms} ms holds a key that long (twice the lease and {PROGRESS_SLACK_MS} ms allowed)",
                            response.status,
                            at_ms - from_ms,
                            match &seen[from] {
                                Seen::Answered { op: o, response: r, .. } => format!(" ({o:?}, {})", r.status),
                                _ => String::new(),
                            },
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

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

fn at_most_once(seen: &[Seen], ops: &BTreeMap<OpId, OpView<'_>>, by_ref: &BTreeMap<String, OpId>) -> Vec<Violation> {
    let mut effects: BTreeMap<Slot, Vec<usize>> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, s) in seen.iter().enumerate() {
        match s {
            Seen::Charged { reference: Some(r), new: true, .. } => {
                let Some(op) = by_ref.get(r) else { continue };
                let request = ops[op].request;
                if request.key.is_some() {
                    effects.entry(slot(request)).or_default().push(i);
                }
            }
            Seen::LocalEffects { caller, method, path, key, count, .. } if *count > 1 => {
                let s = (caller.clone(), method.as_str().into(), path.as_str().into(), Some(key.clone()));
                let mut events: Vec<usize> =
                    slot_ops(ops, &s).into_iter().flat_map(|op| entries_of(seen, op)).collect();
                events.push(i);
                out.push(Violation::new(
                    Property::AtMostOnce,
                    events,
                    format!(
                        "the service lists {count} local effects for tenant {} {method} {path} key {:?}",
                        caller.0, key.0
                    ),
                ));
            }
            _ => {}
        }
    }
    for (s, at) in effects.into_iter().filter(|(_, at)| at.len() > 1) {
        let n = at.len();
        let mut events = at;
        events.extend(slot_ops(ops, &s).into_iter().flat_map(|op| entries_of(seen, op)));
        out.push(Violation::new(
            Property::AtMostOnce,
            events,
            format!(
                "tenant {} {} {} key {:?} had {n} effects at the dependency; at most one is allowed",
                s.0 .0,
                s.1,
                s.2,
                s.3.as_ref().map_or("", |k| &k.0),
            ),
        ));
    }
    out
}

fn slot_ops(ops: &BTreeMap<OpId, OpView<'_>>, s: &Slot) -> Vec<OpId> {
    ops.iter().filter(|(_, v)| slot(v.request) == *s).map(|(op, _)| *op).collect()
}

fn liveness(
    seen: &[Seen],
    ops: &BTreeMap<OpId, OpView<'_>>,
    by_ref: &BTreeMap<String, OpId>,
    obs: &Observability,
) -> Vec<Violation> {
    let charged: BTreeSet<&OpId> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::Charged { reference: Some(r), .. } => by_ref.get(r),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for (op, v) in ops {
        let endpoint = (v.request.method.to_string(), v.request.path.to_string());
        let owner = v.reference.as_ref().and_then(|r| by_ref.get(r)).unwrap_or(op);
        if !obs.charging.contains(&endpoint) || charged.contains(owner) {
            continue;
        }
        let Some((i, r)) = v.answers.iter().find(|(_, r)| success(r)) else { continue };
        out.push(Violation::new(
            Property::Liveness,
            vec![v.first, *i],
            format!("{op:?} was answered {} but the dependency never saw a charge for its request", r.status),
        ));
    }
    out
}

/// A transient failure stored as the final answer: after the dependency
/// refused a request's call, a later send of that request (sent after the
/// failure was answered) gets the same failure back, byte for byte, with no
/// new call to the dependency for it. Every retry would get it again.
fn stored_transient(seen: &[Seen], ops: &BTreeMap<OpId, OpView<'_>>) -> Vec<Violation> {
    let reference_of_op = |op: &OpId| ops.get(op).and_then(|v| v.reference.as_deref());
    let sent_at = |op: OpId, try_no: u32| {
        seen.iter().position(|s| matches!(s, Seen::Sent { op: o, try_no: t, .. } if *o == op && *t == try_no))
    };
    let mut out = Vec::new();
    let mut told: BTreeSet<&str> = BTreeSet::new();
    for (failed_at, s) in seen.iter().enumerate() {
        let Seen::ProviderFailed { reference: Some(reference), .. } = s else { continue };
        if told.contains(reference.as_str()) {
            continue;
        }
        // Calls for the reference after the failure, and the 5xx answers
        // to sends of its request.
        let called = |from: usize, to: usize| {
            seen[from + 1..to].iter().any(|s| {
                matches!(s, Seen::Charged { reference: Some(r), .. } | Seen::ProviderFailed { reference: Some(r), .. } if r == reference)
            })
        };
        let failures: Vec<(usize, OpId, u32, &StoredResponse)> = seen[failed_at..]
            .iter()
            .enumerate()
            .filter_map(|(k, s)| match s {
                Seen::Answered { op, try_no, response, .. }
                    if response.status >= 500 && reference_of_op(op) == Some(reference.as_str()) =>
                {
                    Some((failed_at + k, *op, *try_no, response))
                }
                _ => None,
            })
            .collect();
        let Some(&(first_at, first_op, _, first)) = failures.first() else { continue };
        let again = failures.iter().find_map(|&(at, op, try_no, r)| {
            let sent = sent_at(op, try_no)?;
            (r == first && sent > first_at && !called(failed_at, at)).then_some((at, op, try_no, r, sent))
        });
        if let Some((at, op, try_no, r, sent)) = again {
            told.insert(reference);
            out.push(Violation::new(
                Property::Liveness,
                vec![failed_at, first_at, sent, at],
                format!(
                    "{op:?} try {try_no} was answered {} again, byte for byte, without a new call to the dependency (which had failed {first_op:?}'s call): a transient failure was stored as the answer, so every retry gets it",
                    r.status
                ),
            ));
        }
    }
    out
}

/// Whether an answer is a record's response, which every replay repeats
/// byte for byte: a success, or a 4xx given after the request's execution
/// called the dependency (a decline, say), other than the replay table's
/// refusals (400, 409, 422, 429). A 4xx with no execution behind it may be
/// a fresh validation answer, which is not stored.
fn recorded(r: &StoredResponse, executed: bool) -> bool {
    success(r) || (executed && (400..500).contains(&r.status) && ![400, 408, 409, 422, 429].contains(&r.status))
}

/// Where the dependency was first called for each reference.
fn first_calls(seen: &[Seen]) -> BTreeMap<&str, usize> {
    let mut called: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, s) in seen.iter().enumerate() {
        if let Seen::Charged { reference: Some(r), .. } | Seen::ProviderFailed { reference: Some(r), .. } = s {
            called.entry(r.as_str()).or_insert(i);
        }
    }
    called
}

/// Whether the dependency was called for the operation's request before
/// entry `at`.
fn executed_before(called: &BTreeMap<&str, usize>, v: &OpView<'_>, at: usize) -> bool {
    v.reference.as_deref().and_then(|r| called.get(r)).is_some_and(|c| *c < at)
}

fn replay_fidelity(called: &BTreeMap<&str, usize>, ops: &BTreeMap<OpId, OpView<'_>>) -> Vec<Violation> {
    let executed = |v: &OpView<'_>, i: usize| executed_before(called, v, i);
    // Every recorded answer given for one request (tenant, endpoint, key,
    // body).
    let mut first: BTreeMap<(Slot, &Bytes), (usize, &StoredResponse, OpId)> = BTreeMap::new();
    let mut all: Vec<(usize, OpId, &OpView<'_>, &StoredResponse)> = ops
        .iter()
        .filter(|(_, v)| v.request.key.is_some())
        .flat_map(|(op, v)| v.answers.iter().map(move |(i, r)| (*i, *op, v, *r)))
        .filter(|(i, _, v, r)| recorded(r, executed(v, *i)))
        .collect();
    all.sort_by_key(|(i, ..)| *i);
    let mut out = Vec::new();
    for (i, op, v, r) in all {
        let id = (slot(v.request), &v.request.body);
        match first.get(&id) {
            None => {
                first.insert(id, (i, r, op));
            }
            Some((j, want, by)) if *want != r => out.push(Violation::new(
                Property::ReplayFidelity,
                vec![ops[by].first, *j, v.first, i],
                format!(
                    "one request got two different answers from its record: {by:?} was answered {} {} and {op:?} {} {}",
                    want.status,
                    want.body.lossy(),
                    r.status,
                    r.body.lossy()
                ),
            )),
            Some(_) => {}
        }
    }
    out
}

/// Which request a success answer was the record of, where the answer
/// shows it: a charge id the dependency made for a request's `ref`, else a
/// `ref` the answer echoes. A 2xx is evidence of the record it came from,
/// not of the body the request that received it carried (a service
/// without a fingerprint replays one body's record to another body).
struct Origins<'a> {
    /// Which operation each charge id was made for, and where it was seen.
    by_charge: BTreeMap<&'a str, (OpId, usize)>,
    by_ref: &'a BTreeMap<String, OpId>,
    prefix: &'a str,
}

impl<'a> Origins<'a> {
    fn new(seen: &'a [Seen], by_ref: &'a BTreeMap<String, OpId>, prefix: &'a str) -> Origins<'a> {
        let mut by_charge = BTreeMap::new();
        for (i, s) in seen.iter().enumerate() {
            if let Seen::Charged { reference: Some(r), charge, .. } = s {
                if let Some(op) = by_ref.get(r) {
                    by_charge.entry(charge.as_str()).or_insert((*op, i));
                }
            }
        }
        Origins { by_charge, by_ref, prefix }
    }

    /// The operation whose request the answer's record was made for.
    fn of(&self, r: &StoredResponse) -> Option<OpId> {
        let body = r.body.lossy();
        let charged = match self.prefix.is_empty() {
            true => None,
            false => {
                charge_ids(&body, self.prefix).iter().find_map(|id| self.by_charge.get(id.as_str()).map(|(op, _)| *op))
            }
        };
        charged.or_else(|| reference_of(&r.body).and_then(|reference| self.by_ref.get(&reference).copied()))
    }
}

fn status_rules(
    seen: &[Seen],
    called: &BTreeMap<&str, usize>,
    ops: &BTreeMap<OpId, OpView<'_>>,
    by_ref: &BTreeMap<String, OpId>,
    origins: &Origins<'_>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    // A charge for a request that carried no key.
    for (i, s) in seen.iter().enumerate() {
        let Seen::Charged { reference: Some(r), new: true, .. } = s else { continue };
        let Some(op) = by_ref.get(r) else { continue };
        if ops[op].request.key.is_none() {
            out.push(Violation::new(
                Property::StatusRules,
                vec![ops[op].first, i],
                format!("{op:?} carried no Idempotency-Key, yet the service executed it"),
            ));
        }
    }
    for (op, v) in ops {
        for (i, r) in &v.answers {
            if recorded(r, executed_before(called, v, *i)) && !success(r) {
                continue;
            }
            if let Some((property, why, more)) = wrong_answer(ops, origins, *op, v, r, *i) {
                let mut events = vec![v.first, *i];
                events.extend(more);
                out.push(Violation::new(property, events, format!("{op:?} was answered {}: {why}", r.status)));
                break;
            }
        }
    }
    out
}

/// Why an answer breaks the replay table (or isolation), with the
/// entries that show it.
fn wrong_answer(
    ops: &BTreeMap<OpId, OpView<'_>>,
    origins: &Origins<'_>,
    op: OpId,
    v: &OpView<'_>,
    r: &StoredResponse,
    at: usize,
) -> Option<(Property, String, Vec<usize>)> {
    let status = |why: String, events: Vec<usize>| Some((Property::StatusRules, why, events));
    if v.request.key.is_none() {
        if r.status != 400 && !transient(r) {
            return status("the request had no Idempotency-Key, so 400 is due".to_string(), vec![]);
        }
        return None;
    }
    let same_key = |w: &OpView<'_>| w.request.caller == v.request.caller && w.request.key == v.request.key;
    let same_endpoint = |w: &OpView<'_>| (&w.request.method, &w.request.path) == (&v.request.method, &v.request.path);
    let identical = |w: &OpView<'_>| same_endpoint(w) && w.request.body == v.request.body;
    // Answers to other operations on the key, received before this
    // operation was first sent: what the record certainly was.
    let before: Vec<(OpId, usize, &StoredResponse, &OpView<'_>)> = ops
        .iter()
        .filter(|(o, w)| **o != op && same_key(w))
        .flat_map(|(o, w)| w.answers.iter().map(move |(i, x)| (*o, *i, *x, w)))
        .filter(|(_, i, _, _)| *i < v.first)
        .collect();
    // Whether a success to another body shows that the record holds
    // another body: by the request its record was made for, where the
    // answer shows it; else unless an identical request had already
    // succeeded before that one was sent (the record was then this body's).
    let identical_succeeded_before = |t: usize| {
        ops.iter()
            .filter(|(o, w)| **o != op && same_key(w) && identical(w))
            .any(|(_, w)| w.answers.iter().any(|(i, x)| *i < t && success(x)))
    };
    let another_body = |x: &StoredResponse, w: &OpView<'_>| match origins.of(x) {
        Some(made_for) => !identical(&ops[&made_for]),
        None => !identical_succeeded_before(w.first),
    };
    let succeeded_other =
        before.iter().find(|(_, _, x, w)| success(x) && same_endpoint(w) && !identical(w) && another_body(x, w));
    let succeeded_same = before.iter().find(|(_, _, x, w)| success(x) && identical(w));
    let refused_other = before.iter().find(|(_, _, x, w)| x.status == 400 && !identical(w));
    if let Some((o, i, _, _)) = succeeded_other {
        if r.status != 422 && !crate::retry::is_transient_status(r.status) {
            return status(
                match success(r) {
                    true => format!(
                        "the key had already succeeded with another body ({o:?}): 422 is due, never a silent success"
                    ),
                    false => format!("the key had already succeeded with another body ({o:?}), so 422 is due"),
                },
                vec![ops[o].first, *i],
            );
        }
        return None;
    }
    if let Some((o, i, refusal, _)) = refused_other.filter(|_| before.iter().all(|(_, _, x, _)| !success(x))) {
        // The refused body was invalid and this one is another: a 400
        // again, in any bytes, is the refusal replayed from a record.
        if r.status == 422 || r.status == 400 {
            let how = match r == *refusal {
                true => "the same 400, byte for byte",
                false => "400 again",
            };
            return status(
                format!("the same key was refused 400 before execution ({o:?}) and this other body got {how}; a validation error must not be stored, so a corrected request must execute"),
                vec![ops[o].first, *i],
            );
        }
        return None;
    }
    // A refusal of a keyed request (422, or a 4xx the replay table does
    // not have) needs another request on the key sent before this answer.
    let refusal = r.status == 422 || ((400..500).contains(&r.status) && ![400, 409, 429].contains(&r.status));
    let other_sent = ops.iter().any(|(o, w)| *o != op && same_key(w) && !identical(w) && w.first < at);
    if refusal && !other_sent {
        let tenant = ops.iter().find(|(o, w)| {
            **o != op && w.request.key == v.request.key && w.request.caller != v.request.caller && w.first < at
        });
        if let Some((o, w)) = tenant {
            return Some((
                Property::Isolation,
                format!(
                    "tenant {} never used this key before, but tenant {} had ({o:?}): its record answered another tenant",
                    v.request.caller.0, w.request.caller.0
                ),
                vec![w.first],
            ));
        }
        return status("no other request had used this key, so there was nothing to mismatch".to_string(), vec![]);
    }
    if refusal && r.status != 422 {
        return status(format!("a key reused with another request is answered 422, never {}", r.status), vec![]);
    }
    if r.status >= 500 {
        if let Some((o, i, _, _)) = succeeded_same {
            return status(
                format!("an identical request had already succeeded ({o:?}): a completed key replays its stored response, never a {}", r.status),
                vec![ops[o].first, *i],
            );
        }
    }
    if r.status == 409 {
        if let Some((o, i, _, _)) = succeeded_same {
            return status(
                format!("an identical request had already succeeded ({o:?}): a completed key replays its stored response; 409 means in flight"),
                vec![ops[o].first, *i],
            );
        }
    }
    if r.status == 400 {
        if let Some((o, i, _, _)) = succeeded_same {
            return status(
                format!("an identical request had succeeded ({o:?}); it must be replayed, not refused"),
                vec![ops[o].first, *i],
            );
        }
    }
    None
}

/// Property 3 from outside, from what the service told the dependency:
/// two executions holding one attempt, or a success produced by an
/// execution whose attempt was superseded by a later grant.
fn fencing(seen: &[Seen], ops: &BTreeMap<OpId, OpView<'_>>, by_ref: &BTreeMap<String, OpId>) -> Vec<Violation> {
    // Per reference: execution -> (attempt, where it first called).
    let mut calls: BTreeMap<&str, BTreeMap<&str, (u64, usize)>> = BTreeMap::new();
    for (i, s) in seen.iter().enumerate() {
        if let Seen::Charged { reference: Some(r), execution: Some(e), attempt: Some(a), .. } = s {
            calls.entry(r.as_str()).or_default().entry(e.as_str()).or_insert((*a, i));
        }
    }
    let mut out = Vec::new();
    for (reference, executions) in &calls {
        let Some(op) = by_ref.get(*reference) else { continue };
        let mut by_attempt: BTreeMap<u64, Vec<(&str, usize)>> = BTreeMap::new();
        for (e, (a, i)) in executions {
            by_attempt.entry(*a).or_default().push((e, *i));
        }
        for (a, holders) in &by_attempt {
            if holders.len() > 1 {
                let mut events: Vec<usize> = holders.iter().map(|(_, i)| *i).collect();
                events.push(ops[op].first);
                let names: Vec<&str> = holders.iter().map(|(e, _)| *e).collect();
                out.push(Violation::new(
                    Property::Fencing,
                    events,
                    format!(
                        "{} executions held attempt {a} of one request at once ({})",
                        holders.len(),
                        names.join(", ")
                    ),
                ));
            }
        }
        let Some((&latest, grants)) = by_attempt.iter().next_back() else { continue };
        let superseded = ops
            .iter()
            .filter(|(_, v)| v.reference.as_deref() == Some(*reference))
            .flat_map(|(o, v)| v.answers.iter().map(move |(i, r)| (*o, v, *i, *r)))
            .filter(|(_, _, _, r)| success(r))
            .find_map(|(o, v, i, r)| {
                let e = execution_of(r)?;
                let (a, at) = executions.get(e.as_str())?;
                (*a < latest).then_some((o, v, i, e, *a, *at))
            });
        if let Some((o, v, i, e, a, at)) = superseded {
            out.push(Violation::new(
                Property::Fencing,
                vec![at, grants[0].1, v.first, i],
                format!(
                    "{o:?} was answered by execution {e} holding attempt {a}, after attempt {latest} had been granted (execution {}): its completion should have been fenced",
                    grants[0].0
                ),
            ));
        }
    }
    out
}

/// The `execution` field of a JSON response body.
fn execution_of(r: &StoredResponse) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(&r.body.0).ok()?;
    v.get("execution")?.as_str().map(str::to_string)
}

fn isolation(ops: &BTreeMap<OpId, OpView<'_>>, origins: &Origins<'_>, obs: &Observability) -> Vec<Violation> {
    if obs.charge_prefix.is_empty() {
        return Vec::new();
    }
    let owner = &origins.by_charge;
    let mut out = Vec::new();
    for (op, v) in ops {
        for (i, r) in v.answers.iter().filter(|(_, r)| success(r)) {
            let body = r.body.lossy();
            let leak = charge_ids(&body, &obs.charge_prefix).into_iter().find_map(|id| {
                let (o, at) = owner.get(id.as_str())?;
                let other = ops[o].request;
                let mine = v.request;
                if other.caller != mine.caller {
                    Some((format!("tenant {}'s", other.caller.0), *o, *at))
                } else if (&other.method, &other.path) != (&mine.method, &mine.path) {
                    Some((format!("{} {}'s", other.method, other.path), *o, *at))
                } else {
                    None
                }
            });
            if let Some((whose, o, at)) = leak {
                out.push(Violation::new(
                    Property::Isolation,
                    vec![ops[&o].first, at, v.first, *i],
                    format!(
                        "{op:?} (tenant {} {} {}) was sent a response carrying {whose} charge, made for {o:?}",
                        v.request.caller.0, v.request.method, v.request.path
                    ),
                ));
                break;
            }
        }
    }
    out
}

/// Every `prefix…` token in a text (letters, digits, `_` and `-`).
fn charge_ids(text: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let tail = &rest[at..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(tail.len());
        out.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a run with one charging endpoint, `POST /charges`, observes.
    fn charging_obs() -> Observability {
        Observability {
            charging: [("POST".to_string(), "/charges".to_string())].into(),
            charge_prefix: "ch_".into(),
            ..Observability::default()
        }
    }

    /// Builds observations one at a time.
    #[derive(Default)]
    struct Run {
        seen: Vec<Seen>,
    }

    fn request(tenant: &str, key: Option<&str>, path: &str, amount: u32, reference: &str) -> Request {
        Request {
            caller: CallerId(tenant.into()),
            key: key.map(|k| IdempotencyKey(k.into())),
            method: "POST".into(),
            path: path.into(),
            body: Bytes::text(&format!(r#"{{"amount":{amount},"ref":"{reference}"}}"#)),
        }
    }

    impl Run {
        fn push(&mut self, s: Seen) -> usize {
            self.seen.push(s);
            self.seen.len() - 1
        }
        fn send(&mut self, op: u32, request: Request) -> usize {
            let at_ms = self.seen.len() as u64;
            self.push(Seen::Sent { at_ms, op: OpId(op), try_no: 1, request, attack: "test".into() })
        }
        fn answer(&mut self, op: u32, status: u16, body: &str) -> usize {
            let at_ms = self.seen.len() as u64;
            let response = StoredResponse::new(status, body);
            self.push(Seen::Answered { at_ms, op: OpId(op), try_no: 1, response, retry_after_ms: None })
        }
        fn charge(&mut self, reference: &str, charge: &str, new: bool, holder: Option<(&str, u64)>) -> usize {
            self.push(Seen::Charged {
                at_ms: self.seen.len() as u64,
                reference: Some(reference.into()),
                charge: charge.into(),
                downstream_key: Some(format!("dk-{reference}")),
                new,
                execution: holder.map(|(e, _)| e.into()),
                attempt: holder.map(|(_, a)| a),
                delay_ms: 0,
            })
        }
        fn judge(&self) -> OutsideVerdict {
            let obs = Observability { local_effects: false, ..charging_obs() };
            judge_outside(&self.seen, &obs)
        }
        fn broken(&self) -> Vec<(Property, String)> {
            self.judge().violations.into_iter().map(|v| (v.property, v.explanation)).collect()
        }
    }

    /// A request executed once and replayed once.
    fn clean() -> Run {
        let mut r = Run::default();
        let req = request("acme", Some("k"), "/charges", 5, "r1");
        r.send(1, req.clone());
        r.charge("r1", "ch_1", true, Some(("e1", 1)));
        r.answer(1, 201, r#"{"charge":"ch_1","execution":"e1"}"#);
        r.send(2, req);
        r.charge("r1", "ch_1", false, None);
        r.answer(2, 201, r#"{"charge":"ch_1","execution":"e1"}"#);
        r
    }

    #[test]
    fn an_execution_and_its_replay_are_clean_and_every_observable_property_is_judged() {
        let v = clean().judge();
        assert!(v.violations.is_empty(), "{:?}", v.violations);
        for p in [Property::AtMostOnce, Property::ReplayFidelity, Property::Isolation, Property::Fencing] {
            assert!(v.judged.iter().any(|j| j.property == p && j.not_judged.is_none()), "{p}");
        }
        assert!(v.judged.iter().any(|j| j.property == Property::Expiry && j.not_judged.is_some()));
    }

    #[test]
    fn a_5xx_for_a_completed_key_breaks_the_status_rules() {
        let mut r = clean();
        r.send(3, request("acme", Some("k"), "/charges", 5, "r1"));
        r.answer(3, 500, r#"{"error":"internal"}"#);
        let broken = r.broken();
        assert!(broken.iter().any(|(p, why)| *p == Property::StatusRules && why.contains("never a 500")), "{broken:?}");
    }

    /// The provider refuses the first call; the service answers 502, then
    /// answers a retry 502 again without calling the provider: stored.
    #[test]
    fn a_provider_failure_answered_again_without_a_new_call_is_a_stored_transient_error() {
        let failing = |replayed: bool| {
            let mut r = Run::default();
            let req = request("acme", Some("k"), "/charges", 5, "r1");
            r.send(1, req.clone());
            r.push(Seen::ProviderFailed { at_ms: 1, reference: Some("r1".into()) });
            r.answer(1, 502, r#"{"error":"provider unavailable"}"#);
            r.send(2, req);
            if !replayed {
                r.charge("r1", "ch_1", true, Some(("e2", 2)));
            }
            r.answer(2, 502, r#"{"error":"provider unavailable"}"#);
            r
        };
        let stored = failing(true).broken();
        assert!(
            stored.iter().any(|(p, why)| *p == Property::Liveness && why.contains("transient failure was stored")),
            "{stored:?}"
        );
        // A retry that called the provider again (and failed again) stored nothing.
        let called = failing(false).broken();
        assert!(!called.iter().any(|(_, why)| why.contains("stored")), "{called:?}");
    }

    #[test]
    fn every_property_is_judged_or_said_not_to_be() {
        let v = clean().judge();
        let listed: Vec<Property> = v.judged.iter().map(|j| j.property).collect();
        assert_eq!(listed, Property::ALL.to_vec());
        let progress = v.judged.iter().find(|j| j.property == Property::Progress).unwrap();
        assert!(progress.not_judged.as_deref().is_some_and(|why| why.contains("lease")), "{progress:?}");
    }

    #[test]
    fn two_new_charges_for_one_key_break_at_most_once() {
        let mut r = clean();
        r.charge("r1", "ch_2", true, Some(("e2", 1)));
        let broken = r.broken();
        assert!(broken.iter().any(|(p, why)| *p == Property::AtMostOnce && why.contains("2 effects")), "{broken:?}");
        assert!(broken.iter().any(|(p, _)| *p == Property::Fencing), "two executions held attempt 1: {broken:?}");
    }

    #[test]
    fn a_replay_that_differs_breaks_replay_fidelity() {
        let mut r = clean();
        r.send(3, request("acme", Some("k"), "/charges", 5, "r1"));
        r.answer(3, 201, r#"{"charge":"ch_1","execution":"e1" }"#);
        assert_eq!(r.broken().iter().filter(|(p, _)| *p == Property::ReplayFidelity).count(), 1, "{:?}", r.broken());
    }

    #[test]
    fn another_body_with_the_key_must_get_422() {
        let mut r = clean();
        r.send(3, request("acme", Some("k"), "/charges", 6, "r2"));
        r.answer(3, 201, r#"{"charge":"ch_1","execution":"e1"}"#);
        let broken = r.broken();
        assert!(broken.iter().any(|(p, why)| *p == Property::StatusRules && why.contains("422 is due")), "{broken:?}");
        let mut ok = clean();
        ok.send(3, request("acme", Some("k"), "/charges", 6, "r2"));
        ok.answer(3, 422, "{}");
        assert!(ok.broken().is_empty(), "{:?}", ok.broken());
    }

    /// A service without a fingerprint replays the first body's record to
    /// a second body (wrong: 422 is due), and then to a later copy of the
    /// first request (right: it is that request's own record). The 2xx the
    /// second body got is evidence of the record it came from, not of the
    /// body it carried.
    #[test]
    fn a_replay_of_the_first_bodys_record_is_not_evidence_of_another_body() {
        // The answers show their record: the charge made for r1.
        let mut r = clean();
        r.send(3, request("acme", Some("k"), "/charges", 6, "r2"));
        r.answer(3, 201, r#"{"charge":"ch_1","execution":"e1"}"#);
        r.send(4, request("acme", Some("k"), "/charges", 5, "r1"));
        r.answer(4, 201, r#"{"charge":"ch_1","execution":"e1"}"#);
        let status = |r: &Run| -> Vec<String> {
            r.broken().into_iter().filter(|(p, _)| *p == Property::StatusRules).map(|(_, why)| why).collect()
        };
        let broken = status(&r);
        assert_eq!(broken.len(), 1, "only the second body's silent success: {broken:?}");
        assert!(broken[0].starts_with("OpId(3) was answered 201") && broken[0].contains("422 is due"), "{broken:?}");

        // The answers show nothing: the first body had succeeded before the
        // second was sent, so the record was the first body's.
        let mut r = Run::default();
        r.send(1, request("acme", Some("k"), "/charges", 5, "r1"));
        r.answer(1, 201, r#"{"ok":true}"#);
        r.send(3, request("acme", Some("k"), "/charges", 6, "r2"));
        r.answer(3, 201, r#"{"ok":true}"#);
        r.send(4, request("acme", Some("k"), "/charges", 5, "r1"));
        r.answer(4, 201, r#"{"ok":true}"#);
        let broken = status(&r);
        assert_eq!(broken.len(), 1, "{broken:?}");
        assert!(broken[0].starts_with("OpId(3)"), "{broken:?}");
    }

    /// The judgement the fix must keep: when the other body's record came
    /// first, the first body's later success is a silent success.
    #[test]
    fn a_success_after_another_bodys_record_completed_is_still_caught() {
        // Shown by the charge: the record was made for r2.
        let mut r = Run::default();
        r.send(1, request("acme", Some("k"), "/charges", 6, "r2"));
        r.charge("r2", "ch_2", true, Some(("e1", 1)));
        r.answer(1, 201, r#"{"charge":"ch_2"}"#);
        r.send(2, request("acme", Some("k"), "/charges", 5, "r1"));
        r.answer(2, 201, r#"{"charge":"ch_2"}"#);
        let broken = r.broken();
        assert!(broken.iter().any(|(p, why)| *p == Property::StatusRules && why.starts_with("OpId(2)")), "{broken:?}");
        // Shown by the order alone.
        let mut r = Run::default();
        r.send(1, request("acme", Some("k"), "/charges", 6, "r2"));
        r.answer(1, 201, r#"{"ok":true}"#);
        r.send(2, request("acme", Some("k"), "/charges", 5, "r1"));
        r.answer(2, 201, r#"{"ok":true}"#);
        let broken = r.broken();
        assert!(broken.iter().any(|(p, why)| *p == Property::StatusRules && why.starts_with("OpId(2)")), "{broken:?}");
    }

    #[test]
    fn a_422_without_any_other_request_is_wrong_and_one_caused_by_another_tenant_is_a_leak() {
        let mut r = Run::default();
        r.send(1, request("acme", Some("k"), "/charges", 5, "r1"));
        r.answer(1, 422, "{}");
        assert!(r.broken().iter().any(|(p, why)| *p == Property::StatusRules && why.contains("nothing to mismatch")));
        let mut r = clean();
        r.send(3, request("globex", Some("k"), "/charges", 5, "r3"));
        r.answer(3, 422, "{}");
        assert!(r.broken().iter().any(|(p, why)| *p == Property::Isolation && why.contains("tenant acme had")));
    }

    #[test]
    fn another_tenants_charge_in_a_response_is_a_leak() {
        let mut r = clean();
        r.send(3, request("globex", Some("k"), "/charges", 5, "r3"));
        r.answer(3, 201, r#"{"charge":"ch_1","execution":"e1"}"#);
        let broken = r.broken();
        assert!(
            broken.iter().any(|(p, why)| *p == Property::Isolation && why.contains("tenant acme's charge")),
            "{broken:?}"
        );
    }

    #[test]
    fn a_keyless_request_must_be_refused_and_not_executed() {
        let mut r = Run::default();
        r.send(1, request("acme", None, "/charges", 5, "r1"));
        r.charge("r1", "ch_1", true, None);
        r.answer(1, 201, r#"{"charge":"ch_1"}"#);
        let broken = r.broken();
        assert_eq!(broken.iter().filter(|(p, _)| *p == Property::StatusRules).count(), 2, "{broken:?}");
    }

    #[test]
    fn a_stored_validation_error_is_caught_when_the_corrected_request_is_refused() {
        let mut r = Run::default();
        r.send(1, request("acme", Some("k"), "/charges", 0, "r1"));
        r.answer(1, 400, r#"{"error":"amount"}"#);
        r.send(2, request("acme", Some("k"), "/charges", 5, "r2"));
        r.answer(2, 422, "{}");
        assert!(r.broken().iter().any(|(p, why)| *p == Property::StatusRules && why.contains("must not be stored")));
    }

    #[test]
    fn a_stored_validation_error_replayed_in_other_bytes_is_caught_too() {
        let mut r = Run::default();
        r.send(1, request("acme", Some("k"), "/charges", 0, "r1"));
        r.answer(1, 400, r#"{"error":"amount"}"#);
        r.send(2, request("acme", Some("k"), "/charges", 5, "r2"));
        r.answer(2, 400, r#"{ "error": "amount" }"#);
        let broken = r.broken();
        assert!(
            broken.iter().any(|(p, why)| *p == Property::StatusRules && why.contains("got 400 again")),
            "{broken:?}"
        );
    }

    #[test]
    fn a_decline_after_execution_is_a_record_and_its_replays_repeat_its_bytes() {
        let decline = |second: &str| {
            let mut r = Run::default();
            let req = request("acme", Some("k"), "/charges", 5, "r1");
            r.send(1, req.clone());
            r.charge("r1", "ch_1", true, None);
            r.answer(1, 402, r#"{"error":"declined"}"#);
            r.send(2, req);
            r.answer(2, 402, second);
            r.broken()
        };
        assert!(decline(r#"{"error":"declined"}"#).is_empty());
        let broken = decline(r#"{"error": "declined"}"#);
        assert!(broken.iter().any(|(p, _)| *p == Property::ReplayFidelity), "{broken:?}");
        // Without an execution behind it a 4xx is a fresh answer, which
        // may differ.
        let mut r = Run::default();
        let req = request("acme", Some("k"), "/charges", 5, "r1");
        r.send(1, req.clone());
        r.answer(1, 404, r#"{"error":"no such account","trace":"a"}"#);
        r.send(2, req);
        r.answer(2, 404, r#"{"error":"no such account","trace":"b"}"#);
        assert!(r.broken().iter().all(|(p, _)| *p != Property::ReplayFidelity), "{:?}", r.broken());
    }

    /// A key refused with `status` at `times`, with a dependency call at
    /// `call_ms` if any, answered 1,500 ms later, judged with a lease of
    /// 1,000 ms.
    fn refused_at(status: u16, times: &[u64], call_ms: Option<u64>) -> Vec<(Property, String)> {
        let mut r = Run::default();
        let req = request("acme", Some("k"), "/charges", 5, "r1");
        r.push(Seen::Sent { at_ms: 0, op: OpId(1), try_no: 1, request: req, attack: "test".into() });
        // Another key's execution, so the service is known to call the
        // dependency.
        r.send(2, request("acme", Some("k2"), "/charges", 5, "r2"));
        r.charge("r2", "ch_2", true, None);
        if let Some(at_ms) = call_ms {
            r.push(Seen::Charged {
                at_ms,
                reference: Some("r1".into()),
                charge: "ch_1".into(),
                downstream_key: None,
                new: true,
                execution: None,
                attempt: None,
                delay_ms: 1_500,
            });
        }
        for (n, at_ms) in times.iter().enumerate() {
            let response = StoredResponse::new(status, "{}");
            r.push(Seen::Answered { at_ms: *at_ms, op: OpId(1), try_no: n as u32 + 1, response, retry_after_ms: None });
        }
        r.seen.sort_by_key(Seen::at_ms);
        let obs = Observability { lease_ms: Some(1_000), ..charging_obs() };
        judge_outside(&r.seen, &obs).violations.into_iter().map(|v| (v.property, v.explanation)).collect()
    }

    #[test]
    fn a_key_refused_past_twice_the_lease_with_no_execution_breaks_progress() {
        let stuck = |found: &[(Property, String)]| found.iter().any(|(p, _)| *p == Property::Progress);
        assert!(stuck(&refused_at(409, &[10, 1_500, 3_100], None)), "409 for 3.1 s with a 1 s lease");
        assert!(stuck(&refused_at(500, &[10, 3_100], None)), "a 500 forever after the handler raised");
        assert!(!stuck(&refused_at(409, &[10, 1_500, 2_900], None)), "within twice the lease and the slack");
        // A call in progress (slow for 1.5 s) is an execution: the refusals
        // before its end do not count.
        assert!(!stuck(&refused_at(409, &[10, 1_000, 3_100], Some(1_000))));
        assert!(stuck(&refused_at(409, &[10, 2_600, 5_700], Some(1_000))));
    }

    #[test]
    fn progress_is_judged_only_with_the_services_lease() {
        let mut r = Run::default();
        r.send(1, request("acme", Some("k"), "/charges", 5, "r1"));
        r.charge("r1", "ch_1", true, None);
        let obs = |lease_ms| Observability { lease_ms, ..charging_obs() };
        let progress = |v: OutsideVerdict| v.judged.into_iter().find(|j| j.property == Property::Progress).unwrap();
        assert!(progress(judge_outside(&r.seen, &obs(None))).not_judged.unwrap().contains("--lease-ms"));
        assert_eq!(progress(judge_outside(&r.seen, &obs(Some(500)))).not_judged, None);
    }

    #[test]
    fn answers_no_rule_reads_are_counted_by_status() {
        let mut r = clean();
        r.send(3, request("acme", Some("k"), "/charges", 5, "r1"));
        r.answer(3, 302, "");
        r.answer(3, 302, "");
        assert_eq!(r.judge().unjudged, [(302, 2)].into());
        assert!(clean().judge().unjudged.is_empty());
    }

    #[test]
    fn a_completed_key_must_replay_not_409() {
        let mut r = clean();
        r.send(3, request("acme", Some("k"), "/charges", 5, "r1"));
        r.answer(3, 409, r#"{"charge":"ch_1"}"#);
        assert!(r.broken().iter().any(|(p, why)| *p == Property::StatusRules && why.contains("409 means in flight")));
    }

    #[test]
    fn a_success_from_a_superseded_attempt_breaks_fencing() {
        let mut r = Run::default();
        r.send(1, request("acme", Some("k"), "/charges", 5, "r1"));
        r.charge("r1", "ch_1", true, Some(("e1", 1)));
        r.charge("r1", "ch_1", false, Some(("e2", 2)));
        r.answer(1, 201, r#"{"charge":"ch_1","execution":"e1"}"#);
        let broken = r.broken();
        assert!(
            broken.iter().any(|(p, why)| *p == Property::Fencing && why.contains("attempt 2 had been granted")),
            "{broken:?}"
        );
        let mut ok = Run::default();
        ok.send(1, request("acme", Some("k"), "/charges", 5, "r1"));
        ok.charge("r1", "ch_1", true, Some(("e1", 1)));
        ok.charge("r1", "ch_1", false, Some(("e2", 2)));
        ok.answer(1, 201, r#"{"charge":"ch_1","execution":"e2"}"#);
        assert!(ok.broken().is_empty(), "{:?}", ok.broken());
    }

    #[test]
    fn without_forwarded_references_effects_are_not_judged_instead_of_passing() {
        let mut r = Run::default();
        r.send(1, request("acme", Some("k"), "/charges", 5, "r1"));
        r.push(Seen::Charged {
            at_ms: 1,
            reference: None,
            charge: "x".into(),
            downstream_key: None,
            new: true,
            execution: None,
            attempt: None,
            delay_ms: 0,
        });
        r.answer(1, 201, "{}");
        let v = r.judge();
        for p in [Property::AtMostOnce, Property::Liveness, Property::Fencing, Property::Isolation] {
            assert!(v.judged.iter().any(|j| j.property == p && j.not_judged.is_some()), "{p}");
        }
    }
}
