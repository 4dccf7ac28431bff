//! `idemsim merge`: combines `run --json` reports (shards of one sweep, or
//! sweeps of other seed ranges) into one report of the same shape.

use crate::cli::{EXIT_CLEAN, EXIT_VIOLATION};
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

/// Reads, checks and merges the reports; prints the merged one.
pub fn cmd_merge(files: &[PathBuf], as_json: bool, out: &mut dyn Write) -> Result<i32, String> {
    let mut reports = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?;
        let r: Report = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not an `idemsim run --json` report: {e}", f.display()))?;
        reports.push(r);
    }
    let first = &reports[0];
    if let Some(other) =
        reports.iter().find(|r| (&r.scenario, &r.variant, &r.store) != (&first.scenario, &first.variant, &first.store))
    {
        return Err(format!(
            "reports differ: {}/{}/{} and {}/{}/{}; merge only runs of one scenario, variant and store",
            first.scenario, first.variant, first.store, other.scenario, other.variant, other.store
        ));
    }
    let mut hashes = BTreeMap::new();
    for r in &reports {
        for (seed, hash) in &r.hashes {
            if hashes.insert(seed.clone(), hash.clone()).is_some_and(|old| old != *hash) {
                return Err(format!("seed {seed} has two different trace hashes: the runs were not of the same build"));
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
    failures.sort_by_key(|f| f["seed"].as_u64().unwrap_or(u64::MAX));
    failures.truncate(crate::sweep::FAILURES_KEPT);
    let divergence = reports.iter().find_map(|r| r.divergence.clone());
    let seeds_run: u64 = reports.iter().map(|r| r.seeds_run).sum();
    let seeds_failed: u64 = reports.iter().map(|r| r.seeds_failed).sum();
    let merged = json!({
        "scenario": first.scenario, "variant": first.variant, "store": first.store,
        "seeds": { "start": reports.iter().map(|r| r.seeds.start).min(), "end": reports.iter().map(|r| r.seeds.end).max() },
        "shard": null, "merged_from": files.len(),
        "seeds_run": seeds_run, "seeds_failed": seeds_failed,
        "clean": seeds_failed == 0 && divergence.is_none(),
        "violations_by_property": by_property, "failures": failures,
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
    written.map_err(|e| e.to_string())?;
    Ok(if merged["clean"] == true { EXIT_CLEAN } else { EXIT_VIOLATION })
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
    writeln!(out, "  {} seeds, {} events", m["seeds_run"], m["events"])?;
    if m["clean"] == true {
        return writeln!(out, "CLEAN: no property violated in {} seeds", m["seeds_run"]);
    }
    writeln!(out, "FAIL: {} of {} seeds violate a property", m["seeds_failed"], m["seeds_run"])?;
    if let Some(f) = m["failures"].as_array().and_then(|a| a.first()) {
        writeln!(out, "first failing seed: {}", f["seed"])?;
        writeln!(out, "reproduce: {}", f["replay"].as_str().unwrap_or("?"))?;
    }
    Ok(())
}
