//! `idemsim merge`: combines `run --json` reports (shards of one sweep, or
//! sweeps of other seed ranges) into one report of the same shape.

use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

#[derive(Deserialize)]
struct Report {
    scenario: String,
    variant: String,
    store: String,
    seeds: Range,
    seeds_run: u64,
    seeds_failed: u64,
    violations_by_property: BTreeMap<String, u64>,
    failures: Vec<Value>,
    coverage_seeds: BTreeMap<String, u64>,
    coverage_total: BTreeMap<String, u64>,
    fault_classes: BTreeMap<String, u64>,
    events: u64,
    elapsed_ms: u64,
    #[serde(default)]
    divergence: Option<Value>,
    #[serde(default)]
    hashes: BTreeMap<String, String>,
    #[serde(default)]
    faults_not_applied: BTreeMap<String, u64>,
    #[serde(default)]
    shard: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    interrupted: bool,
    /// Set on a merged report: whether it covered its whole sweep.
    #[serde(default)]
    complete: Option<bool>,
    /// Set on a merged report: what it covered.
    #[serde(default)]
    covered: Option<String>,
    #[serde(default)]
    failures_total: Option<u64>,
}

/// What a merge found.
pub struct Merged {
    /// No property violated in the seeds run.
    pub clean: bool,
    /// Why the merged report does not cover its whole sweep, if it does not.
    pub incomplete: Option<String>,
}

#[derive(Deserialize)]
struct Range {
    start: u64,
    end: u64,
}

fn add(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, v) in from {
        *into.entry(k.clone()).or_default() += v;
    }
}

/// Reads, checks and merges the reports; prints the merged one and says
/// whether it is clean and complete.
pub fn merge(files: &[PathBuf], as_json: bool, out: &mut dyn Write) -> Result<Merged, crate::Error> {
    use crate::Error;
    let mut reports = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| Error::io("read", f, e))?;
        let r: Report = serde_json::from_str(&text).map_err(|e| Error::Parse {
            path: f.clone(),
            expected: "an `idemsim run --json` report",
            message: e.to_string(),
        })?;
        reports.push(r);
    }
    let first = &reports[0];
    let key = |r: &Report| (r.scenario.clone(), r.variant.clone(), r.store.clone(), r.version.clone());
    if let Some(other) = reports.iter().find(|r| key(r) != key(first)) {
        let show = |r: &Report| {
            format!("{}/{}/{} (idemsim {})", r.scenario, r.variant, r.store, r.version.as_deref().unwrap_or("?"))
        };
        return Err(Error::Mismatch(format!(
            "reports differ: {} and {}; merge only runs of one scenario, variant, store and idemsim version",
            show(first),
            show(other)
        )));
    }
    let coverage = covered(files, &reports).map_err(Error::Mismatch)?;
    let mut hashes = BTreeMap::new();
    for r in &reports {
        for (seed, hash) in &r.hashes {
            if hashes.insert(seed.clone(), hash.clone()).is_some_and(|old| old != *hash) {
                return Err(Error::Mismatch(format!(
                    "seed {seed} has two different trace hashes: the runs were not of the same build"
                )));
            }
        }
    }
    let (mut by_property, mut coverage_seeds, mut coverage_total, mut faults) = Default::default();
    let mut not_applied = BTreeMap::new();
    for r in &reports {
        add(&mut not_applied, &r.faults_not_applied);
        add(&mut by_property, &r.violations_by_property);
        add(&mut coverage_seeds, &r.coverage_seeds);
        add(&mut coverage_total, &r.coverage_total);
        add(&mut faults, &r.fault_classes);
    }
    let mut failures: Vec<Value> = reports.iter().flat_map(|r| r.failures.clone()).collect();
    let failures_total: u64 = reports.iter().map(|r| r.failures_total.unwrap_or(r.failures.len() as u64)).sum();
    failures.sort_by_key(|f| f["seed"].as_u64().unwrap_or(u64::MAX));
    failures.truncate(crate::sweep::FAILURES_KEPT);
    let divergence = reports.iter().find_map(|r| r.divergence.clone());
    let seeds_run: u64 = reports.iter().map(|r| r.seeds_run).sum();
    let seeds_failed: u64 = reports.iter().map(|r| r.seeds_failed).sum();
    let merged = json!({
        "scenario": first.scenario, "variant": first.variant, "store": first.store, "version": first.version,
        "seeds": { "start": reports.iter().map(|r| r.seeds.start).min(), "end": reports.iter().map(|r| r.seeds.end).max() },
        "shard": null, "merged_from": files.len(),
        "complete": coverage.complete, "covered": coverage.text,
        "seeds_run": seeds_run, "seeds_failed": seeds_failed,
        "interrupted": reports.iter().any(|r| r.interrupted),
        "clean": seeds_failed == 0 && divergence.is_none(),
        "violations_by_property": by_property,
        "failures_total": failures_total, "failures_shown": failures.len(), "failures": failures,
        "coverage_seeds": coverage_seeds, "coverage_total": coverage_total, "fault_classes": faults,
        "faults_not_applied": not_applied,
        "events": reports.iter().map(|r| r.events).sum::<u64>(),
        "elapsed_ms": reports.iter().map(|r| r.elapsed_ms).max(),
        "divergence": divergence, "hashes": hashes,
    });
    let written = if as_json {
        writeln!(out, "{}", serde_json::to_string_pretty(&merged).expect("json"))
    } else {
        text(&merged, out)
    };
    written.map_err(|e| Error::io("write the merged report to", "the output", e))?;
    let incomplete = (!coverage.complete).then(|| coverage.text.clone());
    Ok(Merged { clean: merged["clean"] == true, incomplete })
}

/// What a set of reports covers.
struct Coverage {
    /// Every shard of one sweep, or one unbroken range, all run to the end.
    complete: bool,
    /// In words.
    text: String,
}

/// Checks that the reports are shards of one sweep (same range and count,
/// none twice) or disjoint ranges, and says what they cover.
fn covered(files: &[PathBuf], reports: &[Report]) -> Result<Coverage, String> {
    let shards: Vec<Option<(u64, u64)>> = reports
        .iter()
        .map(|r| r.shard.as_deref().map(crate::shard::parse).transpose())
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    // Every input that did not cover what it was asked: interrupted, or
    // itself an incomplete merge.
    let short: Vec<String> = reports
        .iter()
        .zip(files)
        .filter_map(|(r, f)| match (r.interrupted, r.complete) {
            (true, _) => Some(format!("{} was interrupted", f.display())),
            (false, Some(false)) => {
                Some(format!("{} is an incomplete merge ({})", f.display(), r.covered.as_deref().unwrap_or("?")))
            }
            _ => None,
        })
        .collect();
    let coverage = match shards.iter().all(Option::is_some) {
        true => shard_coverage(files, reports, &shards)?,
        false if shards.iter().any(Option::is_some) => {
            return Err(
                "some reports are shards and some are not: merge the shards of one sweep, or whole sweeps".into()
            )
        }
        false => range_coverage(files, reports)?,
    };
    Ok(match short.is_empty() {
        true => coverage,
        false => Coverage { complete: false, text: format!("{} ({})", coverage.text, short.join("; ")) },
    })
}

fn shard_coverage(files: &[PathBuf], reports: &[Report], shards: &[Option<(u64, u64)>]) -> Result<Coverage, String> {
    let (first, n) = (&reports[0], shards[0].map_or(1, |(_, n)| n));
    let mut seen: BTreeMap<u64, &PathBuf> = BTreeMap::new();
    for ((r, shard), file) in reports.iter().zip(shards).zip(files) {
        let (k, count) = shard.expect("all are shards");
        if count != n || (r.seeds.start, r.seeds.end) != (first.seeds.start, first.seeds.end) {
            return Err(format!(
                "{} is shard {k}/{count} of seeds {}..{}, {} is shard of {n} of seeds {}..{}: not one sweep",
                file.display(),
                r.seeds.start,
                r.seeds.end,
                files[0].display(),
                first.seeds.start,
                first.seeds.end
            ));
        }
        if let Some(other) = seen.insert(k, file) {
            return Err(format!("shard {k}/{n} appears twice ({} and {})", other.display(), file.display()));
        }
    }
    let missing: Vec<String> = (1..=n).filter(|k| !seen.contains_key(k)).map(|k| format!("{k}/{n}")).collect();
    let range = format!("seeds {}..{}", first.seeds.start, first.seeds.end);
    Ok(match missing.is_empty() {
        true => Coverage { complete: true, text: format!("all {n} shards of {range}") },
        false => Coverage {
            complete: false,
            text: format!("{} of {n} shards of {range}; missing: {}", seen.len(), missing.join(", ")),
        },
    })
}

fn range_coverage(files: &[PathBuf], reports: &[Report]) -> Result<Coverage, String> {
    let mut ranges: Vec<(u64, u64, &PathBuf)> =
        reports.iter().zip(files).map(|(r, f)| (r.seeds.start, r.seeds.end, f)).collect();
    ranges.sort();
    for pair in ranges.windows(2) {
        let ((a_start, a_end, a), (b_start, b_end, b)) = (pair[0], pair[1]);
        if b_start < a_end {
            return Err(format!(
                "{} (seeds {a_start}..{a_end}) and {} (seeds {b_start}..{b_end}) overlap: a seed would count twice",
                a.display(),
                b.display()
            ));
        }
    }
    let joined: Vec<String> = ranges.iter().map(|(s, e, _)| format!("{s}..{e}")).collect();
    let gaps = ranges.windows(2).any(|p| p[1].0 != p[0].1);
    Ok(Coverage { complete: !gaps, text: format!("seeds {}", joined.join(", ")) })
}

fn text(m: &Value, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "idemsim merge: {} reports of scenario {}, variant {}, store {}",
        m["merged_from"],
        m["scenario"].as_str().unwrap_or("?"),
        m["variant"].as_str().unwrap_or("?"),
        m["store"].as_str().unwrap_or("?")
    )?;
    let covered = m["covered"].as_str().unwrap_or("?");
    match m["complete"] == true {
        true => writeln!(out, "  covers {covered}")?,
        false => writeln!(out, "  INCOMPLETE: covers {covered} only")?,
    }
    let count = |field: &str| m[field].as_u64().unwrap_or(0);
    let plural = crate::report::plural;
    writeln!(out, "  {}, {}", plural(count("seeds_run"), "seed"), plural(count("events"), "event"))?;
    writeln!(out, "  coverage (seeds where it happened):")?;
    if let Some(seeds) = m["coverage_seeds"].as_object() {
        for (name, n) in seeds {
            writeln!(out, "    {name:<38} {n:>7}")?;
        }
    }
    if m["clean"] == true {
        return writeln!(out, "CLEAN: no property violated in {}", plural(count("seeds_run"), "seed"));
    }
    writeln!(out, "FAIL: {} of {} violate a property", m["seeds_failed"], plural(count("seeds_run"), "seed"))?;
    if let Some(f) = m["failures"].as_array().and_then(|a| a.first()) {
        writeln!(out, "first failing seed: {}", f["seed"])?;
        writeln!(out, "reproduce: {}", f["replay"].as_str().unwrap_or("?"))?;
    }
    Ok(())
}
