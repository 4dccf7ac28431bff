//! Property 1 (at most one effect per request) judged from outside.

use super::*;

pub(super) fn at_most_once(
    seen: &[Seen],
    ops: &BTreeMap<OpId, OpView<'_>>,
    by_ref: &BTreeMap<String, OpId>,
) -> Vec<Violation> {
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

pub(super) fn slot_ops(ops: &BTreeMap<OpId, OpView<'_>>, s: &Slot) -> Vec<OpId> {
    ops.iter().filter(|(_, v)| slot(v.request) == *s).map(|(op, _)| *op).collect()
}
