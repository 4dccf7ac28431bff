//! The report of `idemsim http`: counts, the verdict per property, and a
//! numbered story per violation.

use super::{counts, HttpReport};
use crate::report::plural;
use idemsim_model::outside::{OutsideVerdict, Seen};
use idemsim_model::{OpId, Violation};
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
    crate::report::cut_at_word(s, max)
}

/// The text report; `reproduce` is the command that runs the same plan.
pub fn text(r: &HttpReport, reproduce: &str, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "idemsim http: {} (seed {}, run tag {}): {}, {} in {:.1} s",
        r.target,
        r.seed,
        r.tag,
        plural(r.operations as u64, "operation"),
        plural(r.sends as u64, "send"),
        r.elapsed_ms as f64 / 1000.0
    )?;
    let attacks: Vec<String> = r.attacks.iter().map(|(k, v)| format!("{k} {v}")).collect();
    writeln!(out, "  attacks:  {}", attacks.join(", "))?;
    let answers: Vec<String> = r.answers.iter().map(|(k, v)| format!("{k} x{v}")).collect();
    writeln!(out, "  answers:  {}; {} gave up", answers.join(", "), plural(r.gave_up as u64, "operation"))?;
    writeln!(out, "  properties:")?;
    for j in &r.verdict.judged {
        let found = r.verdict.violations.iter().filter(|v| v.property == j.property).count();
        match (&j.not_judged, found) {
            (Some(why), _) => writeln!(out, "    {:<16} not judged: {why}", j.property.name())?,
            (None, 0) => writeln!(out, "    {:<16} PASS", j.property.name())?,
            (None, n) => writeln!(out, "    {:<16} FAIL  {}", j.property.name(), plural(n as u64, "violation"))?,
        }
    }
    let unjudged: Vec<String> = r.verdict.unjudged.iter().map(|(k, v)| format!("{k} x{v}")).collect();
    match unjudged.is_empty() {
        true => writeln!(out, "  answers no rule could judge: none")?,
        false => writeln!(out, "  answers no rule could judge: {} (by status)", unjudged.join(", "))?,
    }
    if let Some(why) = &r.stopped_early {
        writeln!(out, "  stopped early: {why}; the verdict covers what was sent")?;
    }
    if r.verdict.violations.is_empty() {
        writeln!(out, "CLEAN: no violation seen from outside")?;
        return writeln!(out, "\nthe same plan again (the interleaving is real): {reproduce}");
    }
    let groups = by_cause(r);
    writeln!(
        out,
        "VIOLATIONS: {} in {} by cause, largest first (--json lists every one):",
        r.verdict.violations.len(),
        plural(groups.len() as u64, "group")
    )?;
    for (n, g) in groups.iter().enumerate() {
        let v = &r.verdict.violations[g.first];
        writeln!(out, "\n{}. {} [{}] x{}: {}", n + 1, v.property.name(), g.attack, g.count, v.explanation)?;
        if n < STORIES_MAX {
            for line in &r.stories[g.first] {
                writeln!(out, "{line}")?;
            }
        }
    }
    if groups.len() > STORIES_MAX {
        writeln!(out, "\n(the stories of {} smaller groups are in --json)", groups.len() - STORIES_MAX)?;
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

/// Violations of one cause: the property, the attack of the operation the
/// first observation belongs to, and the explanation's shape (its numbers
/// taken out).
struct Group {
    count: usize,
    /// The first violation of the group, by index in the verdict.
    first: usize,
    attack: String,
}

/// The violations grouped by cause, largest group first (ties: the group
/// whose first violation comes first).
fn by_cause(r: &HttpReport) -> Vec<Group> {
    let mut attacks: BTreeMap<OpId, &str> = BTreeMap::new();
    for s in &r.seen {
        if let Seen::Sent { op, attack, .. } = s {
            attacks.entry(*op).or_insert(attack);
        }
    }
    let attack_of = |v: &Violation| {
        let op = v.events.iter().find_map(|i| match &r.seen.get(*i)? {
            Seen::Sent { op, .. } | Seen::Answered { op, .. } | Seen::Lost { op, .. } => Some(*op),
            _ => None,
        })?;
        attacks.get(&op).map(|a| a.to_string())
    };
    let mut groups: BTreeMap<(String, String, String), Group> = BTreeMap::new();
    for (i, v) in r.verdict.violations.iter().enumerate() {
        let attack = attack_of(v).unwrap_or_else(|| "-".into());
        let key = (v.property.name().to_string(), attack.clone(), shape(&v.explanation));
        groups.entry(key).or_insert(Group { count: 0, first: i, attack }).count += 1;
    }
    let mut groups: Vec<Group> = groups.into_values().collect();
    groups.sort_by_key(|g| (std::cmp::Reverse(g.count), g.first));
    groups
}

/// An explanation with every run of digits replaced by `#`: the same
/// cause on other operations, keys and charges has one shape.
fn shape(explanation: &str) -> String {
    let mut out = String::with_capacity(explanation.len());
    let mut in_digits = false;
    for c in explanation.chars() {
        match (c.is_ascii_digit(), in_digits) {
            (true, false) => out.push('#'),
            (true, true) => {}
            (false, _) => out.push(c),
        }
        in_digits = c.is_ascii_digit();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explanations_of_one_cause_have_one_shape() {
        let a = shape("OpId(8) was answered 201: the key had already succeeded with another body (OpId(7))");
        let b = shape("OpId(305) was answered 201: the key had already succeeded with another body (OpId(12))");
        assert_eq!(a, b);
        assert_ne!(a, shape("OpId(8) was answered 409: an identical request had already succeeded (OpId(7))"));
    }
}
