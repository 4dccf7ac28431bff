//! Liveness judged from outside: every request ends, and a transient
//! failure is never stored as the final answer.

use super::*;

pub(super) fn liveness(
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
pub(super) fn stored_transient(seen: &[Seen], ops: &BTreeMap<OpId, OpView<'_>>) -> Vec<Violation> {
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
