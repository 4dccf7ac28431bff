//! Replay fidelity and the status rules judged from outside: which
//! request each answer was the record of, and why an answer breaks the
//! replay table.

use super::*;

/// Whether an answer is a record's response, which every replay repeats
/// byte for byte: a success, or a 4xx given after the request's execution
/// called the dependency (a decline, say), other than the replay table's
/// refusals (400, 409, 422, 429). A 4xx with no execution behind it may be
/// a fresh validation answer, which is not stored.
pub(super) fn recorded(r: &StoredResponse, executed: bool) -> bool {
    success(r) || (executed && (400..500).contains(&r.status) && ![400, 408, 409, 422, 429].contains(&r.status))
}

/// Where the dependency was first called for each reference.
pub(super) fn first_calls(seen: &[Seen]) -> BTreeMap<&str, usize> {
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
pub(super) fn executed_before(called: &BTreeMap<&str, usize>, v: &OpView<'_>, at: usize) -> bool {
    v.reference.as_deref().and_then(|r| called.get(r)).is_some_and(|c| *c < at)
}

pub(super) fn replay_fidelity(called: &BTreeMap<&str, usize>, ops: &BTreeMap<OpId, OpView<'_>>) -> Vec<Violation> {
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
pub(super) struct Origins<'a> {
    /// Which operation each charge id was made for, and where it was seen.
    pub(super) by_charge: BTreeMap<&'a str, (OpId, usize)>,
    by_ref: &'a BTreeMap<String, OpId>,
    prefix: &'a str,
}

impl<'a> Origins<'a> {
    pub(super) fn new(seen: &'a [Seen], by_ref: &'a BTreeMap<String, OpId>, prefix: &'a str) -> Origins<'a> {
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
    pub(super) fn of(&self, r: &StoredResponse) -> Option<OpId> {
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

pub(super) fn status_rules(
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
pub(super) fn wrong_answer(
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
