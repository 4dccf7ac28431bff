//! Human and JSON reports for sweeps and replays.

use crate::scenario::Scenario;
use crate::sweep::SweepReport;
use idemsim_sim::timeline::describe;
use idemsim_sim::{trace_hash, RunOutcome, Subject};
use std::io::{self, Write};
use std::ops::Range;

/// What was run.
pub struct Context<'a> {
    /// The scenario.
    pub scenario: &'a Scenario,
    /// The variant's name.
    pub variant: &'a str,
    /// The store and protocol under test.
    pub subject: &'a Subject,
    /// The seeds.
    pub seeds: Range<u64>,
    /// Worker threads.
    pub jobs: usize,
    /// The shard run, if any.
    pub shard: Option<(u64, u64)>,
    /// The scenario file, when the scenario came from one.
    pub file: Option<&'a std::path::Path>,
    /// Stories tell every event up to the violation, not only its keys'.
    pub all: bool,
}

impl Context<'_> {
    /// The one command that reproduces `seed`.
    pub fn replay_command(&self, seed: u64) -> String {
        let source = match self.file {
            Some(path) => format!("--file {}", crate::program::quoted(&path.to_string_lossy())),
            None => format!("--scenario {}", self.scenario.name),
        };
        let mut cmd = format!("{} replay {source} --variant {} --seed {seed}", crate::program::program(), self.variant);
        if self.subject.store_name() != "mem" {
            cmd.push_str(&format!(" --store {}", self.subject.store_name()));
        }
        cmd
    }

    /// The violation whose story to tell: one of the property the scenario
    /// expects this variant to break, else the first.
    pub fn story_violation<'v>(
        &self,
        violations: &'v [idemsim_model::Violation],
    ) -> Option<&'v idemsim_model::Violation> {
        let expected = self.scenario.expected_property(self.variant);
        violations.iter().find(|v| Some(v.property) == expected).or(violations.first())
    }

    /// The command that shrinks `seed`.
    pub fn shrink_command(&self, seed: u64) -> String {
        let program = crate::program::program();
        self.replay_command(seed).replacen(&format!("{program} replay"), &format!("{program} shrink"), 1)
    }
}

/// A story in a sweep report stops after this many lines.
const STORY_LINES_MAX: usize = 40;

fn write_story(
    out: &mut dyn Write,
    h: &idemsim_model::History,
    v: &idemsim_model::Violation,
    max: usize,
) -> io::Result<()> {
    let story = idemsim_sim::story::story(h, v);
    write_story_text(out, v, &story, max)
}

/// Prints a story with at most `max` numbered steps: its summary, the
/// steps, and its closing lines.
pub(crate) fn write_story_text(
    out: &mut dyn Write,
    v: &idemsim_model::Violation,
    story: &str,
    max: usize,
) -> io::Result<()> {
    let numbered = |l: &&str| l.trim_start().split_once(". at ").is_some_and(|(n, _)| n.parse::<usize>().is_ok());
    let lines: Vec<&str> = story.lines().collect();
    let first = lines.iter().position(&numbered).unwrap_or(lines.len());
    let steps = lines[first..].iter().take_while(|l| numbered(l)).count();
    writeln!(out, "story of the {} violation:", v.property.name())?;
    for line in lines[..first].iter().chain(lines[first..].iter().take(steps.min(max))) {
        writeln!(out, "{line}")?;
    }
    if steps > max {
        writeln!(out, "  ... {} more steps (shrink the seed for a shorter story)", steps - max)?;
    }
    for line in &lines[first + steps..] {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The sweep summary for a person.
pub fn sweep_text(ctx: &Context<'_>, r: &SweepReport, out: &mut dyn Write) -> io::Result<()> {
    let shard = ctx.shard.map_or(String::new(), |(k, n)| format!(", shard {k} of {n}"));
    writeln!(
        out,
        "idemsim run: scenario {}, variant {}, store {}, seeds {}..{}{shard} ({})",
        ctx.scenario.name,
        ctx.variant,
        ctx.subject.store_name(),
        ctx.seeds.start,
        ctx.seeds.end,
        plural(ctx.jobs as u64, "job")
    )?;
    writeln!(
        out,
        "  {} in {:.2} s: {:.0} seeds/s, {}",
        plural(r.seeds_run, "seed"),
        r.elapsed.as_secs_f64(),
        r.seeds_per_sec(),
        plural(r.events, "event")
    )?;
    writeln!(out, "  faults that happened (seeds): {}", join_counts(&r.fault_classes))?;
    for (why, seeds) in &r.not_applied {
        writeln!(out, "  NOT APPLIED in {}: {why}", plural(*seeds, "seed"))?;
    }
    let o = &r.coverage_total.outcomes;
    writeln!(
        out,
        "  operations: {} ({}% acknowledged, {}% gave up, {}% ended with an error; progress needs {}% of those sent after the faults healed)",
        o.operations,
        o.percent(o.acknowledged),
        o.percent(o.gave_up),
        o.percent(o.errors),
        ctx.scenario.config.protocol.progress_min_percent
    )?;
    writeln!(out, "  coverage (seeds where it happened, total times):")?;
    for (name, total) in r.coverage_total.counters() {
        let seeds = r.coverage_seeds.get(name).copied().unwrap_or(0);
        let wanted = ctx.scenario.sometimes.iter().any(|s| s == name);
        let mark = if seeds == 0 && wanted { "  <- never happened" } else { "" };
        writeln!(out, "    {name:<38} {seeds:>7} {total:>9}{mark}")?;
    }
    if let Some(d) = &r.divergence {
        writeln!(out, "NONDETERMINISM: seed {} diverged at event #{}", d.seed, d.event)?;
        writeln!(out, "  first run:  {}", d.first)?;
        writeln!(out, "  second run: {}", d.second)?;
    } else if r.determinism_checked {
        writeln!(out, "determinism: {} seeds run twice, identical", r.seeds_run)?;
    }
    if r.interrupted {
        writeln!(
            out,
            "INTERRUPTED (Ctrl-C) after {}: the figures cover those seeds only",
            plural(r.seeds_run, "seed")
        )?;
    }
    if r.seeds_failed == 0 {
        writeln!(out, "CLEAN: no property violated in {}", plural(r.seeds_run, "seed"))?;
        return Ok(());
    }
    writeln!(out, "FAIL: {} of {} violate a property", r.seeds_failed, plural(r.seeds_run, "seed"))?;
    for (property, seeds) in &r.violations_by_property {
        writeln!(out, "    {:<20} {}", property.name(), plural(*seeds, "seed"))?;
    }
    if r.seeds_errored > 0 {
        writeln!(out, "    {:<20} {}", "run errors", plural(r.seeds_errored, "seed"))?;
    }
    let Some(first) = r.failures.first() else { return Ok(()) };
    writeln!(out, "first failing seed: {}", first.seed)?;
    if let Some(e) = &first.error {
        writeln!(out, "  run error: {e}")?;
    }
    let replayed =
        ctx.scenario.config_for(ctx.variant).ok().and_then(|c| idemsim_sim::run_seed(&c, ctx.subject, first.seed).ok());
    for v in first.violations.iter().take(5) {
        writeln!(out, "  {v}")?;
        let Some(outcome) = &replayed else { continue };
        for &i in &v.events {
            if let Some(e) = outcome.history.entries.get(i) {
                writeln!(
                    out,
                    "      #{i:<5} {:>10}  {:<11} {}",
                    e.at.to_string(),
                    e.node.to_string(),
                    describe(&e.event)
                )?;
            }
        }
    }
    if first.violations.len() > 5 {
        writeln!(out, "  ... and {} more violations in this seed", first.violations.len() - 5)?;
    }
    if let (Some(outcome), Some(v)) = (&replayed, ctx.story_violation(&first.violations)) {
        write_story(out, &outcome.history, v, STORY_LINES_MAX)?;
        writeln!(out, "shrink it:  {}", ctx.shrink_command(first.seed))?;
    }
    writeln!(out, "reproduce: {}", ctx.replay_command(first.seed))?;
    Ok(())
}

fn join_counts(counts: &std::collections::BTreeMap<String, u64>) -> String {
    if counts.is_empty() {
        return "none".into();
    }
    counts.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
}

/// The sweep summary as one JSON document.
pub fn sweep_json(ctx: &Context<'_>, r: &SweepReport, out: &mut dyn Write) -> io::Result<()> {
    let failures: Vec<serde_json::Value> = r
        .failures
        .iter()
        .map(|f| {
            serde_json::json!({
                "seed": f.seed, "hash": f.hash, "error": f.error,
                "violations": f.violations, "replay": ctx.replay_command(f.seed),
            })
        })
        .collect();
    let doc = serde_json::json!({
        "scenario": ctx.scenario.name,
        "variant": ctx.variant,
        "store": ctx.subject.store_name(),
        "seeds": { "start": ctx.seeds.start, "end": ctx.seeds.end },
        "shard": ctx.shard.map(|(k, n)| format!("{k}/{n}")),
        "jobs": ctx.jobs,
        "version": env!("CARGO_PKG_VERSION"),
        "seeds_run": r.seeds_run,
        "seeds_failed": r.seeds_failed,
        "interrupted": r.interrupted,
        "clean": r.seeds_failed == 0 && r.divergence.is_none() && !r.interrupted,
        "violations_by_property": r.violations_by_property,
        "failures_total": r.failures_total,
        "failures_shown": failures.len(),
        "failures": failures,
        "coverage_seeds": r.coverage_seeds,
        "coverage_total": r.coverage_total,
        "fault_classes": r.fault_classes,
        "faults_not_applied": r.not_applied,
        "events": r.events,
        "elapsed_ms": r.elapsed.as_millis() as u64,
        "seeds_per_sec": r.seeds_per_sec(),
        "determinism": { "checked": r.determinism_checked, "divergence": r.divergence },
        "hashes": r.hashes,
    });
    writeln!(out, "{}", serde_json::to_string_pretty(&doc).expect("json"))
}

/// One seed's timeline and verdict.
pub fn replay_text(ctx: &Context<'_>, o: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "idemsim replay: scenario {}, variant {}, store {}, seed {}",
        ctx.scenario.name,
        ctx.variant,
        ctx.subject.store_name(),
        o.seed
    )?;
    let happened = o.history.fault_classes();
    writeln!(out, "faults that happened: {}", if happened.is_empty() { "none".into() } else { happened.join(", ") })?;
    out.write_all(idemsim_sim::timeline::render(&o.history).as_bytes())?;
    if let Some(e) = &o.error {
        writeln!(out, "RUN ERROR: {e}")?;
    }
    for v in &o.violations {
        writeln!(out, "VIOLATION {v}")?;
    }
    if let Some(v) = ctx.story_violation(&o.violations) {
        let story = idemsim_sim::story::story_with(&o.history, v, ctx.all);
        write_story_text(out, v, &story, usize::MAX)?;
    }
    let verdict = if o.failed() { "FAIL" } else { "CLEAN" };
    writeln!(
        out,
        "{verdict}: {}, {}, trace hash {}",
        plural(o.violations.len() as u64, "violation"),
        plural(o.history.entries.len() as u64, "event"),
        trace_hash(&o.history)
    )
}

/// One seed as a JSON document.
pub fn replay_json(ctx: &Context<'_>, o: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
    let doc = serde_json::json!({
        "scenario": ctx.scenario.name,
        "variant": ctx.variant,
        "store": ctx.subject.store_name(),
        "seed": o.seed,
        "hash": trace_hash(&o.history),
        "clean": !o.failed(),
        "error": o.error.as_ref().map(|e| e.to_string()),
        "violations": o.violations,
        "coverage": o.coverage,
        "profile": o.profile,
        "plan": o.plan,
        "meta": o.history.meta,
        "events": o.history.entries,
    });
    writeln!(out, "{}", serde_json::to_string(&doc).expect("json"))
}

/// A stress run for a person.
pub fn stress_text(r: &crate::stress::StressReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "idemsim stress: store {}, seed {}, {}, {}",
        r.store,
        r.seed,
        plural(r.clients as u64, "client"),
        plural(r.requests as u64, "request")
    )?;
    if r.interrupted {
        writeln!(out, "  INTERRUPTED (Ctrl-C): the verdict covers the requests sent before it")?;
    }
    writeln!(
        out,
        "  {} sends in {:.2} s: {:.0} sends/s, {} events; {} holders paused past the lease, {} executions abandoned, \
         {} connections terminated, {} store errors",
        r.sends,
        r.elapsed_ms as f64 / 1000.0,
        r.requests_per_sec,
        r.events,
        r.pauses,
        r.abandoned,
        r.terminated,
        r.store_errors
    )?;
    for (kind, n) in r.store_error_kinds.iter().take(8) {
        writeln!(out, "    {n:>6} x {kind}")?;
    }
    if r.violations.is_empty() {
        return writeln!(
            out,
            "CLEAN: no property violated (the seed fixes the workload and the faults, not the interleaving)"
        );
    }
    let mut by: std::collections::BTreeMap<&str, usize> = Default::default();
    for v in &r.violations {
        *by.entry(v.property.name()).or_default() += 1;
    }
    writeln!(out, "FAIL: {}", plural(r.violations.len() as u64, "violation"))?;
    for (p, n) in by {
        writeln!(out, "    {p:<20} {n}")?;
    }
    for v in r.violations.iter().take(5) {
        writeln!(out, "  {v}")?;
        for (i, e) in v.events.iter().filter_map(|i| Some((i, r.cited.get(i)?))) {
            let at = idemsim_model::SimTime(e.at_ms).to_string();
            writeln!(out, "      #{i:<5} {at:>10}  {:<11} {}", e.node, e.text)?;
        }
    }
    if let Some(more) = r.violations.len().checked_sub(5).filter(|&n| n > 0) {
        let noun = if more == 1 { "violation" } else { "violations" };
        writeln!(out, "  ... and {more} more {noun}")?;
    }
    Ok(())
}

/// `s` whole if it has at most `max` characters, else cut before the word
/// that crosses `max` (or at `max` when the last word boundary is in its
/// first half), followed by `...`: a line a person reads, never a token
/// cut in two.
pub fn cut_at_word(s: &str, max: usize) -> String {
    let Some((limit, _)) = s.char_indices().nth(max) else { return s.to_string() };
    let head = &s[..limit];
    let at = match head.rfind(char::is_whitespace) {
        Some(space) if space >= limit / 2 => space,
        _ => limit,
    };
    format!("{}...", head[..at].trim_end())
}

/// `1 job`, `2 jobs`: every count a report prints with its noun.
pub fn plural(n: impl Into<u64>, word: &str) -> String {
    let n: u64 = n.into();
    match n {
        1 => format!("1 {word}"),
        _ => format!("{n} {word}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::cut_at_word;

    #[test]
    fn a_cut_never_splits_a_word() {
        assert_eq!(cut_at_word("short", 10), "short");
        let error = "complete: store unavailable: db error: connection reset by peer while reading";
        let cut = cut_at_word(error, 40);
        assert_eq!(cut, "complete: store unavailable: db error:...");
        assert!(error.starts_with(cut.trim_end_matches("...")));
        // One long token: cut where it must be.
        assert_eq!(cut_at_word(&"x".repeat(30), 10), format!("{}...", "x".repeat(10)));
    }
}
