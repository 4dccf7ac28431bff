//! The bench report as a table.

use super::*;

/// The bench report as tables.
pub fn text(r: &BenchReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "idemsim bench (default scenario, mem store)")?;
    if r.interrupted {
        writeln!(out, "  INTERRUPTED (Ctrl-C): the figures below are partial, and no target is judged")?;
    }
    let runs = |v: &[f64]| v.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(", ");
    writeln!(
        out,
        "  seeds/s, one core      {}  (median of {} sweeps: {})",
        fig(r.seeds_per_sec, 12, 0),
        r.seeds_per_sec_runs.len(),
        runs(&r.seeds_per_sec_runs)
    )?;
    writeln!(out, "  events/s, one core     {}", fig(r.events_per_sec, 12, 0))?;
    writeln!(out, "  simulated/wall time    {}x", fig(r.sim_to_wall_ratio, 12, 0))?;
    writeln!(out, "  peak RSS, one worker   {} MiB", fig(r.peak_rss_mib, 12, 1))?;
    writeln!(
        out,
        "  expiry-window          {}x simulated/wall, {} ms per simulated 24 h",
        fig(r.expiry_sim_to_wall_ratio, 12, 0),
        fig(r.expiry_ms_per_sim_day, 0, 1)
    )?;
    let j = |k: &str| r.jobs_scaling.get(k).copied().unwrap_or(f64::NAN);
    writeln!(
        out,
        "  seeds/s, 1 / 2 jobs    {} / {} ({}x; two-worker sweeps: {})",
        fig(j("jobs_1"), 12, 0),
        fig(j("jobs_2"), 0, 0),
        fig(j("ratio"), 0, 2),
        runs(&r.seeds_per_sec_two_jobs_runs)
    )?;
    writeln!(out, "cost per seed:")?;
    writeln!(out, "  {:<26} {:>10} {:>12} {:>10}", "configuration", "us/seed", "events/seed", "ns/event")?;
    for p in &r.scaling {
        writeln!(
            out,
            "  {:<26} {:>10.0} {:>12.0} {:>10.0}",
            p.label, p.us_per_seed, p.events_per_seed, p.ns_per_event
        )?;
    }
    let Some(sweeps) = r.time_to_first_failure_detail.values().next().map(|d| d.sweeps) else {
        writeln!(out, "time to first failure: not measured (interrupted before it)")?;
        return side_by_side_and_the_rest(r, out);
    };
    writeln!(out, "time to first failure ({sweeps} independent sweeps each):")?;
    writeln!(
        out,
        "  {:<40} {:>10} {:>10} {:>9} {:>7} {:>7}",
        "scenario/variant", "median ms", "worst ms", "med seeds", "worst", "found"
    )?;
    for (name, d) in &r.time_to_first_failure_detail {
        let (med, worst) = match d.found {
            0 => (fig(f64::NAN, 10, 1), fig(f64::NAN, 10, 1)),
            _ => (fig(d.median_ms, 10, 1), fig(d.worst_ms, 10, 1)),
        };
        writeln!(
            out,
            "  {name:<40} {med} {worst} {:>9} {:>7} {:>4}/{}",
            d.median_seeds, d.worst_seeds, d.found, d.sweeps
        )?;
    }
    side_by_side_and_the_rest(r, out)
}

/// The report's side-by-side table, instruction counts and targets.
pub(super) fn side_by_side_and_the_rest(r: &BenchReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "simulation versus stress on a real database:")?;
    for s in &r.side_by_side {
        writeln!(
            out,
            "  {:<22} run {:>8.1} ms   stress {:>9.1} ms ({} requests)   stress/run {:>8.1}x",
            s.bug, s.run_ms, s.stress_ms, s.stress_requests, s.ratio
        )?;
    }
    if let Some(why) = &r.side_by_side_skipped {
        writeln!(out, "  skipped: {why}")?;
    }
    if !r.explore_vs_sweeps.is_empty() {
        writeln!(out, "explore (every interleaving of small configurations) versus random sweeps:")?;
    }
    for e in &r.explore_vs_sweeps {
        let explored = match &e.explore_config {
            Some(c) => format!("found in {c} after {} executions, {:.1} ms", e.explore_executions, e.explore_ms),
            None if e.explore_exhausted => format!("not found: {} executions, none fails", e.explore_executions),
            None => format!("not found in {} executions (budget ran out)", e.explore_executions),
        };
        let swept = match (&e.sweep_scenario, e.sweep_seeds, e.sweep_ms) {
            (Some(s), Some(n), Some(ms)) => format!("sweeps: {s} after {n} seeds, {ms:.1} ms"),
            _ => "sweeps: not found".to_string(),
        };
        writeln!(out, "  {:<28} explore: {explored:<52} {swept}", e.variant)?;
    }
    writeln!(
        out,
        "linearizability: 10,000 operations of 16 callers recorded and checked in {} ms",
        fig(r.linearizability_ms, 0, 0)
    )?;
    writeln!(out, "instructions (callgrind; repeatable, unlike the wall-clock figures above):")?;
    match (&r.instructions, &r.instructions_skipped) {
        (Some(i), _) => writeln!(
            out,
            "  {:.2}M per default seed; bare madsim with the same {:.0} messages {:.2}M; ratio {:.2}x ({} seeds, the `{}` build)",
            i.per_seed / 1e6,
            i.messages_per_seed,
            i.floor_per_seed / 1e6,
            i.ratio,
            i.seeds,
            i.build
        )?,
        (None, why) => writeln!(out, "  skipped: {}", why.as_deref().unwrap_or("not asked for"))?,
    }
    writeln!(out, "targets:")?;
    for t in &r.targets {
        let mark = if t.pass { "PASS" } else { "FAIL" };
        writeln!(out, "  [{mark}] {:<44} {:>14.1}  (goal {})", t.name, t.value, t.goal)?;
    }
    Ok(())
}
