//! Isolation between tenants judged from outside.

use super::*;

pub(super) fn isolation(
    ops: &BTreeMap<OpId, OpView<'_>>,
    origins: &Origins<'_>,
    obs: &Observability,
) -> Vec<Violation> {
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
pub(super) fn charge_ids(text: &str, prefix: &str) -> Vec<String> {
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
