//! Folding a story's repeated tries: the same retry of the same shape,
//! again and again, said once with a count.

use super::*;

/// Folds what repeats: an operation that went exactly like an earlier one
/// (the same lines, but for times, numbers, keys and paths) becomes one
/// line saying so, and so do the tries of an operation that went like the
/// try before them. Lines that mark the violation always stay.
pub(super) fn fold_repeated_tries(history: &History, violation: &Violation, lines: Vec<Line>) -> Vec<Line> {
    let op_of_line = |i: usize| match &history.entries.get(i)?.event {
        Event::GaveUp { op, .. } => Some(*op),
        _ => req_of(history, i).map(|r| r.op),
    };
    let lines = fold_groups(
        violation,
        lines,
        |i| op_of_line(i).map(|op| (op.0, 0)),
        |first, _, lead| format!("op{} went the same way as op{}", first.0, lead.0),
    );
    fold_groups(
        violation,
        lines,
        |i| req_of(history, i).map(|r| (r.op.0, r.try_no.0)),
        |first, n, lead| {
            let req = |(op, t): (u32, u32)| format!("op{op}.{t}");
            match n {
                1 => format!("{} went the same way as {}", req(first), req(lead)),
                _ => format!("{} and the {} tries after it went the same way as {}", req(first), n - 1, req(lead)),
            }
        },
    )
}

/// One story line: when, the history entry it tells (or, for a line
/// inserted between them, the entry it follows), the text, and whether it
/// tells that entry.
pub(super) type Line = (SimTime, usize, String, bool);

/// Folds runs of consecutive groups (an operation `(op, 0)`, or a try
/// `(op, try)`) whose lines have the shape of the group that leads the run
/// into one line, `note(first folded, how many, lead)`, placed where the
/// last folded line was. Operations fold onto any earlier operation; tries
/// only onto the try just before them, and a try may add lines at its end
/// (its give-up), which stay.
pub(super) fn fold_groups(
    violation: &Violation,
    lines: Vec<Line>,
    group_of: impl Fn(usize) -> Option<(u32, u32)>,
    note: impl Fn((u32, u32), usize, (u32, u32)) -> String,
) -> Vec<Line> {
    let mut groups: Vec<((u32, u32), Vec<usize>)> = Vec::new();
    for (k, (_, i, _, tells)) in lines.iter().enumerate() {
        // An inserted line (a lease running out) belongs to no group.
        let Some(g) = group_of(*i).filter(|_| *tells) else { continue };
        match groups.iter_mut().find(|(h, _)| *h == g) {
            Some((_, ks)) => ks.push(k),
            None => groups.push((g, vec![k])),
        }
    }
    let shape = |ks: &[usize]| -> Vec<String> { ks.iter().map(|&k| shape_of(&lines[k].2)).collect() };
    let marked = |k: usize| lines[k].3 && violation.events.contains(&lines[k].1);
    let tries = groups.iter().any(|(g, _)| g.1 > 0);
    let mut drop = BTreeSet::new();
    let mut notes: Vec<(usize, String)> = Vec::new();
    if !tries {
        for b in 1..groups.len() {
            let Some(a) = (0..b).find(|&a| shape(&groups[a].1) == shape(&groups[b].1)) else { continue };
            let ks = &groups[b].1;
            let last = *ks.iter().filter(|&&k| !marked(k)).max().unwrap_or(&ks[0]);
            notes.push((last, note(groups[b].0, 1, groups[a].0)));
            drop.extend(ks.iter().copied().filter(|&k| !marked(k)));
        }
    } else {
        let mut t = 0;
        while t < groups.len() {
            let (lead, lead_ks) = (&groups[t].0, shape(&groups[t].1));
            let mut end = t + 1;
            let mut folded = Vec::new();
            while let Some((g, ks)) = groups.get(end) {
                let next_try = g.0 == lead.0 && g.1 == groups[end - 1].0 .1 + 1;
                let s = shape(ks);
                let same = s.len() >= lead_ks.len() && s[..lead_ks.len()] == lead_ks[..];
                let (common, extra) = ks.split_at(lead_ks.len().min(ks.len()));
                if !next_try || !same || common.iter().any(|&k| marked(k)) {
                    break;
                }
                folded.extend(common.iter().copied());
                end += 1;
                if !extra.is_empty() {
                    break;
                }
            }
            if let Some(&last) = folded.iter().max() {
                notes.push((last, note(groups[t + 1].0, end - t - 1, *lead)));
                drop.extend(folded);
            }
            t = end.max(t + 1);
        }
    }
    let mut out = Vec::with_capacity(lines.len());
    for (k, line) in lines.into_iter().enumerate() {
        if let Some((_, text)) = notes.iter().find(|(at, _)| *at == k) {
            let who = line.2.split(':').next().unwrap_or("").to_string();
            out.push((line.0, line.1, format!("{who}: {text}"), false));
        }
        if !drop.contains(&k) {
            out.push(line);
        }
    }
    out
}

/// For the send of a retry, what it retries after (the retry line itself
/// is left out of the story).
pub(super) fn retry_of(history: &History, i: usize) -> String {
    let Event::RequestSent { req, .. } = &history.entries[i].event else { return String::new() };
    if req.try_no.0 < 2 {
        return String::new();
    }
    let scheduled = history.entries[..i].iter().rev().find_map(|e| match &e.event {
        Event::RetryScheduled { req: r, wait_ms, cause } if r.op == req.op && r.try_no.0 + 1 == req.try_no.0 => {
            Some((*wait_ms, *cause))
        }
        _ => None,
    });
    match scheduled {
        Some((wait_ms, idemsim_model::history::RetryCause::Timeout)) => {
            format!(" (a retry {wait_ms} ms after a timeout)")
        }
        Some((wait_ms, idemsim_model::history::RetryCause::Status(s))) => {
            format!(" (a retry {wait_ms} ms after a {s})")
        }
        None => String::new(),
    }
}

/// A line without its numbers, names with numbers, paths and asides, so
/// that two tries that did the same thing at other times look the same.
pub(super) fn shape_of(line: &str) -> String {
    let mut depth = 0;
    let bare: String = line
        .chars()
        .filter(|&c| {
            match c {
                '(' | '{' => depth += 1,
                ')' | '}' => depth -= 1,
                _ => return depth == 0,
            }
            false
        })
        .collect();
    let words = bare.split_whitespace().filter(|w| {
        !w.starts_with('/') && !w.chars().any(|c| c.is_ascii_digit()) && w.chars().any(char::is_alphabetic)
    });
    words.collect::<Vec<_>>().join(" ")
}
