//! `idemsim bench`: how fast the simulator runs and how fast it finds bugs.
//! Figures are printed (and written as JSON), never asserted: targets get a
//! pass/fail mark.

use crate::args::OneLine;
use idemsim::catalogue;
use idemsim::scenario::Expect;
use idemsim::stress::{stress, StressSpec};
use idemsim::sweep::{sweep, SweepSpec};
use idemsim::target::StoreTarget;
use idemsim_sim::protocol::Correct;
use idemsim_sim::{run_seed_here, RunError, SimConfig, StoreKind, Variant};
use idemsim_store::StoreFlaw;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::Arc;
use std::time::Instant;

mod explore;
mod print;
mod targets;

pub use print::text;
use targets::*;

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchSpec {
    /// Seeds for the throughput figures.
    pub seeds: u64,
    /// Independent sweeps per broken variant for time to first failure.
    pub sweeps: u32,
    /// A sweep gives up after this many seeds.
    pub seeds_max: u64,
    /// The real store for the side-by-side, if any.
    pub stress_target: Option<StoreTarget>,
    /// Seeds per point of the scaling table (a fifth for 1000 requests).
    pub scaling_seeds: u64,
    /// Seeds whose instructions callgrind counts (0: none).
    pub instruction_seeds: u64,
    /// Sweeps of each throughput kind (one worker, two workers), taken in
    /// turn; the wall-clock figures are their medians.
    pub repeats: u32,
    /// Explore versus sweeps: executions per configuration at most (0: skip).
    pub explore_max: u64,
}

/// Throughput of one configuration.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// What was varied.
    pub label: String,
    /// Seeds run.
    pub seeds: u64,
    /// Microseconds of wall time per seed (one worker).
    pub us_per_seed: f64,
    /// History events per seed.
    pub events_per_seed: f64,
    /// Nanoseconds per event.
    pub ns_per_event: f64,
}

/// Time to first failure of one broken variant.
#[derive(Clone, Debug, Serialize)]
pub struct Ttff {
    /// Median wall milliseconds until the first violating seed.
    pub median_ms: f64,
    /// Worst of the sweeps.
    pub worst_ms: f64,
    /// Median seeds tried.
    pub median_seeds: u64,
    /// Worst seeds tried.
    pub worst_seeds: u64,
    /// Sweeps that found it within `seeds_max`.
    pub found: u32,
    /// Sweeps run.
    pub sweeps: u32,
}

/// Simulation versus real-concurrency stress for one bug.
#[derive(Clone, Debug, Serialize)]
pub struct SideBySide {
    /// The bug.
    pub bug: String,
    /// Median time to first failure in simulation.
    pub run_ms: f64,
    /// Time to first failure under stress on the real database.
    pub stress_ms: f64,
    /// Stress requests sent until then.
    pub stress_requests: usize,
    /// `stress_ms / run_ms`.
    pub ratio: f64,
}

/// A figure `bench` measures, its goal and whether it meets it.
#[derive(Clone, Debug, Serialize)]
pub struct Figure {
    /// What is measured.
    pub name: String,
    /// The figure.
    pub value: f64,
    /// The goal.
    pub goal: String,
    /// Met or not.
    pub pass: bool,
}

/// Everything `bench` measures.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Seeds per second on one core (default scenario, mem store).
    pub seeds_per_sec: f64,
    /// History events recorded per second on one core.
    pub events_per_sec: f64,
    /// Simulated time per wall time.
    pub sim_to_wall_ratio: f64,
    /// Simulated time per wall time on the `expiry-window` scenario (about
    /// 2.25 simulated days a seed, mostly waiting for the sweeper).
    pub expiry_sim_to_wall_ratio: f64,
    /// Wall milliseconds per simulated 24 hours of `expiry-window`.
    pub expiry_ms_per_sim_day: f64,
    /// Peak resident memory of the process after the one-worker run, MiB.
    pub peak_rss_mib: f64,
    /// Seeds per second with 1 and 2 workers, and their ratio.
    pub jobs_scaling: BTreeMap<String, f64>,
    /// Seeds per second of every one-worker sweep, in the order run: the
    /// spread the medians above were taken from.
    pub seeds_per_sec_runs: Vec<f64>,
    /// The same for the two-worker sweeps.
    pub seeds_per_sec_two_jobs_runs: Vec<f64>,
    /// Cost against requests per seed and servers.
    pub scaling: Vec<Point>,
    /// Median milliseconds to the first failure, by `scenario/variant`.
    pub time_to_first_failure: BTreeMap<String, f64>,
    /// The same in full.
    pub time_to_first_failure_detail: BTreeMap<String, Ttff>,
    /// Simulation versus stress.
    pub side_by_side: Vec<SideBySide>,
    /// `idemsim explore` versus random sweeps, per broken variant.
    pub explore_vs_sweeps: Vec<explore::ExploreVsSweeps>,
    /// Why the side-by-side did not run, if it did not.
    pub side_by_side_skipped: Option<String>,
    /// Instructions per default seed and per seed of bare madsim with the
    /// same traffic, counted by callgrind (repeatable, unlike the rest).
    pub instructions: Option<crate::instructions::Instructions>,
    /// Why they were not counted, if they were not.
    pub instructions_skipped: Option<String>,
    /// Milliseconds to record and check for linearizability a concurrent
    /// history of 10,000 operations of 16 callers on the mem store.
    pub linearizability_ms: f64,
    /// Targets and marks.
    pub targets: Vec<Figure>,
    /// Stopped by Ctrl-C: the figures are partial and judged by no target.
    pub interrupted: bool,
}

fn throughput(config: &SimConfig, seeds: u64, jobs: usize) -> Result<(f64, f64, f64), String> {
    let spec = SweepSpec {
        config: config.clone(),
        subject: StoreKind::Mem.into(),
        seeds: 0..seeds,
        jobs,
        check_determinism: false,
        record_hashes: false,
        shard: None,
    };
    let started = Instant::now();
    let report = sweep(&spec, &|_| {}).map_err(|e| e.to_string())?;
    let wall = started.elapsed().as_secs_f64().max(1e-9);
    // The seeds that ran: a Ctrl-C cuts a sweep short.
    let seeds = report.seeds_run as f64;
    if report.seeds_run == 0 {
        return Ok((f64::NAN, f64::NAN, f64::NAN));
    }
    let sim_ms = (config.phases.fault_ms + config.phases.heal_ms) as f64 * seeds;
    Ok((seeds / wall, report.events as f64 / wall, sim_ms / (wall * 1000.0)))
}

/// The default scenario's sweeps on one and on two workers.
struct ThroughputRuns {
    /// Seeds, events and simulated milliseconds per wall second, one worker.
    one: Vec<(f64, f64, f64)>,
    /// Seeds per second, two workers.
    two: Vec<f64>,
    /// Peak RSS after the first one-worker sweep, before two workers ran.
    peak_rss_mib: f64,
}

/// `spec.repeats` sweeps of each kind, one worker then two, in turn: a slow
/// spell of a shared host falls on both kinds alike, and the medians pass
/// over it.
fn throughput_runs(config: &SimConfig, spec: &BenchSpec) -> Result<ThroughputRuns, String> {
    let mut runs = ThroughputRuns { one: Vec::new(), two: Vec::new(), peak_rss_mib: 0.0 };
    for i in (0..spec.repeats.max(1)).take_while(|&i| i == 0 || !idemsim::sweep::stopped()) {
        runs.one.push(throughput(config, spec.seeds, 1)?);
        if i == 0 {
            runs.peak_rss_mib = peak_rss_mib();
        }
        runs.two.push(throughput(config, spec.seeds, 2)?.0);
    }
    Ok(runs)
}

/// The cost of `seeds` seeds of `config`; `None` when a Ctrl-C came
/// before any ran.
fn point(label: String, config: &SimConfig, seeds: u64) -> Result<Option<Point>, String> {
    let started = Instant::now();
    let (mut events, mut ran) = (0u64, 0u64);
    for seed in (0..seeds).take_while(|_| !idemsim::sweep::stopped()) {
        let outcome = run_seed_here(config, StoreKind::Mem, seed).map_err(|e| e.to_string())?;
        if let Some(RunError::Panicked(why)) = outcome.error {
            return Err(format!("seed {seed} of {label} panicked: {why}"));
        }
        events += outcome.history.entries.len() as u64;
        ran += 1;
    }
    if ran == 0 {
        return Ok(None);
    }
    let seeds = ran;
    let us = started.elapsed().as_secs_f64() * 1e6 / seeds as f64;
    let per_seed = events as f64 / seeds as f64;
    Ok(Some(Point {
        label,
        seeds,
        us_per_seed: us,
        events_per_seed: per_seed,
        ns_per_event: us * 1000.0 / per_seed.max(1.0),
    }))
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse::<f64>().ok());
    kib.unwrap_or(0.0) / 1024.0
}

/// One independent sweep: seeds from `start` until one violates `expect`.
fn first_failure(config: &SimConfig, expect: Expect, start: u64, seeds_max: u64) -> Option<(u64, f64)> {
    let started = Instant::now();
    for i in (0..seeds_max).take_while(|_| !idemsim::sweep::stopped()) {
        // Seeds run in turn on this thread, as a sweep's worker runs them;
        // after a panic the thread's runtime state cannot be trusted.
        let outcome = run_seed_here(config, StoreKind::Mem, start + i).ok()?;
        if matches!(outcome.error, Some(RunError::Panicked(_))) {
            return None;
        }
        let hit = match expect {
            Expect::Violates(p) => outcome.violations.iter().any(|v| v.property == p),
            Expect::Clean => false,
        };
        if hit {
            return Some((i + 1, started.elapsed().as_secs_f64() * 1000.0));
        }
    }
    None
}

/// The middle figure, or the mean of the middle two.
fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let mid = v.len() / 2;
    match v.len() % 2 {
        1 => v[mid],
        _ => (v[mid - 1] + v[mid]) / 2.0,
    }
}

fn ttff(config: &SimConfig, expect: Expect, spec: &BenchSpec) -> Ttff {
    let sweeps: Vec<u64> = (0..spec.sweeps).map(|i| u64::from(i) * 1_000_003 + 17).collect();
    let results: Vec<Option<(u64, f64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = sweeps
            .chunks(sweeps.len().div_ceil(2).max(1))
            .map(|chunk| {
                s.spawn(move || {
                    chunk.iter().map(|&start| first_failure(config, expect, start, spec.seeds_max)).collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    });
    let found: Vec<(u64, f64)> = results.iter().flatten().copied().collect();
    Ttff {
        median_ms: median(found.iter().map(|f| f.1).collect()),
        worst_ms: found.iter().map(|f| f.1).fold(0.0, f64::max),
        median_seeds: median(found.iter().map(|f| f.0 as f64).collect()) as u64,
        worst_seeds: found.iter().map(|f| f.0).max().unwrap_or(0),
        found: found.len() as u32,
        sweeps: spec.sweeps,
    }
}

/// Stress chunks of 250 requests, seed after seed, until a violation.
fn stress_ttff(target: &StoreTarget, flaw: StoreFlaw) -> Result<(f64, usize), String> {
    let started = Instant::now();
    let mut requests = 0;
    for seed in (0..40).take_while(|_| !idemsim::sweep::stopped()) {
        let spec = StressSpec { seed, requests: 250, schema: "idemsim_bench".into(), ..StressSpec::default() };
        let report = stress(&spec, target, Some(flaw), Arc::new(Correct)).map_err(|e| e.to_string())?;
        requests += report.sends;
        if !report.violations.is_empty() {
            return Ok((started.elapsed().as_secs_f64() * 1000.0, requests));
        }
    }
    Err(format!("{} not found by stress within 40 runs", flaw.name()))
}

/// Runs every measurement. `say` reports progress lines.
pub fn bench(spec: &BenchSpec, say: &dyn Fn(&str)) -> Result<BenchReport, String> {
    let default = catalogue::find("default").expect("the default scenario exists").config;
    say("throughput, one and two workers");
    let runs = throughput_runs(&default, spec)?;
    let peak_rss_mib = runs.peak_rss_mib;
    let seeds_per_sec_runs: Vec<f64> = runs.one.iter().map(|r| r.0).collect();
    let seeds_per_sec = median(seeds_per_sec_runs.clone());
    let events_per_sec = median(runs.one.iter().map(|r| r.1).collect());
    let sim_to_wall_ratio = median(runs.one.iter().map(|r| r.2).collect());
    let two = median(runs.two.clone());
    say("throughput, expiry-window, one worker");
    let expiry = catalogue::find("expiry-window").expect("the expiry-window scenario exists").config;
    let (_, _, expiry_sim_to_wall_ratio) = throughput(&expiry, (spec.seeds / 20).max(5), 1)?;
    let expiry_ms_per_sim_day = 86_400_000.0 / expiry_sim_to_wall_ratio;
    let jobs_scaling: BTreeMap<String, f64> = [
        ("jobs_1".to_string(), seeds_per_sec),
        ("jobs_2".to_string(), two),
        ("ratio".to_string(), two / seeds_per_sec),
    ]
    .into();
    say("scaling with requests and servers");
    let mut scaling = Vec::new();
    for requests in [10u32, 100, 1000] {
        let mut c = default.clone();
        c.workload.requests = requests;
        c.budgets.steps_max = Some(2_000_000);
        let seeds = if requests >= 1000 { (spec.scaling_seeds / 5).max(1) } else { spec.scaling_seeds };
        scaling.extend(point(format!("requests={requests} servers=3"), &c, seeds)?);
    }
    for servers in [1u32, 3, 9] {
        let mut c = default.clone();
        c.topology.servers = servers;
        scaling.extend(point(format!("requests=50 servers={servers}"), &c, spec.scaling_seeds)?);
    }
    let (instructions, instructions_skipped) = match spec.instruction_seeds {
        0 => (None, Some("--instruction-seeds 0".to_string())),
        _ if idemsim::sweep::stopped() => (None, Some("interrupted (Ctrl-C)".to_string())),
        n => {
            say("instructions per seed, under callgrind");
            match crate::instructions::count(&default, n) {
                Ok(i) => (Some(i), None),
                Err(why) => (None, Some(why)),
            }
        }
    };
    let mut detail = BTreeMap::new();
    for scenario in catalogue::all() {
        for (variant, expect) in &scenario.expect {
            if *expect == Expect::Clean {
                continue;
            }
            if idemsim::sweep::stopped() {
                break;
            }
            say(&format!("time to first failure: {}/{variant}", scenario.name));
            let config = scenario.config_for(variant).line()?;
            detail.insert(format!("{}/{variant}", scenario.name), ttff(&config, *expect, spec));
        }
    }
    let time_to_first_failure = detail.iter().map(|(k, t)| (k.clone(), t.median_ms)).collect();
    let linearizability_ms = match idemsim::sweep::stopped() {
        true => f64::NAN,
        false => {
            say("linearizability: 10,000 operations of 16 callers");
            linearizability_ms()?
        }
    };
    let (side_by_side, side_by_side_skipped) = side_by_side(spec, &detail, say);
    let explore_vs_sweeps = match spec.explore_max {
        0 => Vec::new(),
        n => explore::explore_vs_sweeps(n, &detail, say)?,
    };
    let jobs = two / seeds_per_sec;
    // An interrupted bench measured part of each figure: no verdicts on them.
    let interrupted = idemsim::sweep::stopped();
    let targets = match interrupted {
        true => Vec::new(),
        false => {
            let speed =
                Speed { seeds_per_sec, events_per_sec, sim_to_wall_ratio, expiry_ms_per_sim_day, jobs, peak_rss_mib };
            let mut t = targets(&speed, &detail);
            t.extend(instructions.as_ref().map(instruction_target));
            t.push(Figure {
                name: "linearizability check, 10,000 ops of 16 callers (ms)".into(),
                value: linearizability_ms,
                goal: "< 10000 ms".into(),
                pass: linearizability_ms < 10_000.0,
            });
            t
        }
    };
    Ok(BenchReport {
        interrupted,
        seeds_per_sec,
        events_per_sec,
        sim_to_wall_ratio,
        expiry_sim_to_wall_ratio,
        expiry_ms_per_sim_day,
        peak_rss_mib,
        jobs_scaling,
        seeds_per_sec_runs,
        seeds_per_sec_two_jobs_runs: runs.two,
        scaling,
        time_to_first_failure,
        time_to_first_failure_detail: detail,
        side_by_side,
        side_by_side_skipped,
        explore_vs_sweeps,
        instructions,
        instructions_skipped,
        linearizability_ms,
        targets,
    })
}

/// At most twice what bare madsim costs for the same traffic.
/// Records and checks a concurrent history of 10,000 operations of 16
/// callers over 8 keys on the mem store; the wall milliseconds.
fn linearizability_ms() -> Result<f64, String> {
    let started = Instant::now();
    let mut kit = idemsim_store::conformance::Concurrent::new();
    let verdict = kit
        .callers(16)
        .operations(10_000)
        .keys(8)
        .check(|| async { Ok(idemsim_store::MemStore::new()) })
        .map_err(|e| e.to_string())?;
    match verdict.linearizable() {
        true => Ok(started.elapsed().as_secs_f64() * 1000.0),
        false => Err(format!("the mem store was judged not linearizable: {verdict}")),
    }
}

fn instruction_target(i: &crate::instructions::Instructions) -> Figure {
    Figure {
        name: "instructions per default seed (callgrind)".into(),
        value: i.per_seed,
        goal: format!("<= 2x the madsim floor, {:.0}", 2.0 * i.floor_per_seed),
        pass: i.per_seed <= 2.0 * i.floor_per_seed,
    }
}

fn side_by_side(
    spec: &BenchSpec,
    detail: &BTreeMap<String, Ttff>,
    say: &dyn Fn(&str),
) -> (Vec<SideBySide>, Option<String>) {
    let Some(target) = &spec.stress_target else {
        return (Vec::new(), Some("no real store given (--stress-store)".into()));
    };
    let pairs = [
        (Variant::CheckThenInsert, StoreFlaw::CheckThenInsert),
        (Variant::UnfencedCompletion, StoreFlaw::UnfencedCompletion),
    ];
    let mut rows = Vec::new();
    for (variant, flaw) in pairs.into_iter().take_while(|_| !idemsim::sweep::stopped()) {
        let Some(sim) = detail.get(&format!("default/{variant}")) else { continue };
        say(&format!("side by side: {} under stress on {}", flaw.name(), target.name()));
        match stress_ttff(target, flaw) {
            Ok((stress_ms, stress_requests)) => rows.push(SideBySide {
                bug: flaw.name().to_string(),
                run_ms: sim.median_ms,
                stress_ms,
                stress_requests,
                ratio: stress_ms / sim.median_ms,
            }),
            Err(e) => return (rows, Some(e)),
        }
    }
    (rows, None)
}

/// A figure with `precision` decimals, or `-` for one not measured (a
/// Ctrl-C came first): never `NaN` or `inf`.
fn fig(x: f64, width: usize, precision: usize) -> String {
    match x.is_finite() {
        true => format!("{x:>width$.precision$}"),
        false => format!("{:>width$}", "-"),
    }
}
