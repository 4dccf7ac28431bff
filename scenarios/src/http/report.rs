//! The report of `idemsim http`: counts, the verdict per property, and a
//! numbered story per violation.

use super::{counts, HttpReport};
use idemsim_model::outside::{OutsideVerdict, Seen};
use idemsim_model::Violation;
use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

/// Builds the report of a finished run.
pub fn summarize(
    target: String,
    seed: u64,
    tag: String,
    elapsed: Duration,
    stopped_early: Option<String>,
    verdict: OutsideVerdict,
    seen: Vec<Seen>,
) -> HttpReport {
    let mut answers: BTreeMap<String, usize> = BTreeMap::new();
    let mut operations = std::collections::BTreeSet::new();
    let (mut sends, mut gave_up) = (0, 0);
    for s in &seen {
        match s {
            Seen::GaveUp { .. } => gave_up += 1,
            Seen::Sent { op, .. } => {
                sends += 1;
                operations.insert(*op);
            }
            Seen::Answered { response, .. } => *answers.entry(response.status.to_string()).or_default() += 1,
            Seen::Lost { .. } => *answers.entry("lost".into()).or_default() += 1,
            _ => {}
        }
    }
    let stories = verdict.violations.iter().map(|v| story(&seen, v)).collect();
    HttpReport {
        target,
        seed,
        tag,
        operations: operations.len(),
        sends,
        elapsed_ms: elapsed.as_millis() as u64,
        attacks: counts(&seen),
        answers,
        gave_up,
        stopped_early,
        verdict,
        stories,
        seen,
    }
}

/// At most this many violations get a story in the text report.
const STORIES_MAX: usize = 5;
/// At most this many lines per story.
const STORY_LINES_MAX: usize = 14;

/// The story of one violation: its observations, numbered.
pub fn story(seen: &[Seen], v: &Violation) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let shown: Vec<usize> = match v.events.len() > STORY_LINES_MAX {
        true => v.events[v.events.len() - STORY_LINES_MAX..].to_vec(),
        false => v.events.clone(),
    };
    if shown.len() < v.events.len() {
        lines.push(format!(
            "   ({} earlier observations not shown; --trace has them all)",
            v.events.len() - shown.len()
        ));
    }
    for (n, i) in shown.iter().enumerate() {
        let s = &seen[*i];
        lines.push(format!("  {:>2}. {:>6} ms  {}", n + 1, s.at_ms(), cut(&s.describe(), 160)));
    }
    lines
}

fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}...", &s[..at]),
        None => s.to_string(),
    }
}

/// The text report; `reproduce` is the command that runs the same plan.
pub fn text(r: &HttpReport, reproduce: &str, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "idemsim http: {} (seed {}, run tag {}): {} operations, {} sends in {:.1} s",
        r.target,
        r.seed,
        r.tag,
        r.operations,
        r.sends,
        r.elapsed_ms as f64 / 1000.0
    )?;
    let attacks: Vec<String> = r.attacks.iter().map(|(k, v)| format!("{k} {v}")).collect();
    writeln!(out, "  attacks:  {}", attacks.join(", "))?;
    let answers: Vec<String> = r.answers.iter().map(|(k, v)| format!("{k} x{v}")).collect();
    writeln!(out, "  answers:  {}; {} operation(s) gave up", answers.join(", "), r.gave_up)?;
    writeln!(out, "  properties:")?;
    for j in &r.verdict.judged {
        let found = r.verdict.violations.iter().filter(|v| v.property == j.property).count();
        match (&j.not_judged, found) {
            (Some(why), _) => writeln!(out, "    {:<16} not judged: {why}", j.property.name())?,
            (None, 0) => writeln!(out, "    {:<16} PASS", j.property.name())?,
            (None, n) => writeln!(out, "    {:<16} FAIL  {n} violation(s)", j.property.name())?,
        }
    }
    if let Some(why) = &r.stopped_early {
        writeln!(out, "  stopped early: {why}; the verdict covers what was sent")?;
    }
    if r.verdict.violations.is_empty() {
        writeln!(out, "CLEAN: no violation seen from outside")?;
        return writeln!(out, "\nthe same plan again (the interleaving is real): {reproduce}");
    }
    writeln!(out, "VIOLATIONS: {}", r.verdict.violations.len())?;
    let mut shown_per_property: BTreeMap<_, usize> = BTreeMap::new();
    let mut shown = 0;
    for v in &r.verdict.violations {
        let n = shown_per_property.entry(v.property).or_default();
        if *n >= 2 || shown >= STORIES_MAX {
            continue;
        }
        *n += 1;
        shown += 1;
        writeln!(out, "\n{}: {}", v.property.name(), v.explanation)?;
        for line in story(&r.seen, v) {
            writeln!(out, "{line}")?;
        }
    }
    if r.verdict.violations.len() > shown {
        writeln!(out, "\n({} more violations; --json lists them all)", r.verdict.violations.len() - shown)?;
    }
    writeln!(out, "\nreproduce (same plan; the interleaving is real): {reproduce}")?;
    Ok(())
}

/// The raw exchange as JSON Lines.
pub fn trace(r: &HttpReport, out: &mut dyn Write) -> std::io::Result<()> {
    for s in &r.seen {
        writeln!(out, "{}", serde_json::to_string(s).expect("observations serialize"))?;
    }
    Ok(())
}
