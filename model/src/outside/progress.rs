//! Property 7 (progress) judged from outside.

use super::*;

/// Property 7 from outside: a keyed request of a charging endpoint refused
/// (409, 429 or 5xx) for longer than twice any lease the service could
/// hold, while the dependency saw no call for its slot (no execution in
/// progress, none started). A call is in progress until it is answered.
pub(super) fn progress(
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
