//! Property 3 (fencing) judged from outside, from what the service told
//! the dependency.

use super::*;

/// Property 3 from outside, from what the service told the dependency:
/// two executions holding one attempt, or a success produced by an
/// execution whose attempt was superseded by a later grant.
pub(super) fn fencing(
    seen: &[Seen],
    ops: &BTreeMap<OpId, OpView<'_>>,
    by_ref: &BTreeMap<String, OpId>,
) -> Vec<Violation> {
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
pub(super) fn execution_of(r: &StoredResponse) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(&r.body.0).ok()?;
    v.get("execution")?.as_str().map(str::to_string)
}
