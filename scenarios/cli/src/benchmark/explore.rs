//! Explore versus random sweeps, per broken variant: does a small
//! configuration of `idemsim explore` find it, after how many executions
//! and how much wall time; and the random sweeps of the time-to-first-
//! failure figures, after how many seeds and how much time.

use super::Ttff;
use idemsim::sim::explore::{catalogue, Explorer};
use idemsim::sim::{StoreKind, Subject, Variant};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

/// One broken variant, both ways.
#[derive(Clone, Debug, Serialize)]
pub struct ExploreVsSweeps {
    /// The variant.
    pub variant: String,
    /// The first configuration (in catalogue order) with a failing
    /// execution, if any.
    pub explore_config: Option<String>,
    /// Executions explored until then (over every configuration tried).
    pub explore_executions: u64,
    /// Wall milliseconds until then.
    pub explore_ms: f64,
    /// Every configuration tried was explored to the end (or to the
    /// failure): a miss is then a proof for those configurations.
    pub explore_exhausted: bool,
    /// The scenario whose random sweeps found it fastest, if any.
    pub sweep_scenario: Option<String>,
    /// Median seeds to its first failure.
    pub sweep_seeds: Option<u64>,
    /// Median wall milliseconds to its first failure.
    pub sweep_ms: Option<f64>,
}

/// Every broken variant: explore (at most `executions_max` executions per
/// configuration) beside the sweeps measured in `detail`.
pub fn explore_vs_sweeps(
    executions_max: u64,
    detail: &BTreeMap<String, Ttff>,
    say: &dyn Fn(&str),
) -> Result<Vec<ExploreVsSweeps>, String> {
    let subject = Subject::from(StoreKind::Mem);
    let mut rows = Vec::new();
    for variant in Variant::ALL.into_iter().filter(|v| *v != Variant::Correct) {
        if idemsim::sweep::stopped() {
            break;
        }
        say(&format!("explore versus sweeps: {}", variant.name()));
        let started = Instant::now();
        let (mut executions, mut exhausted, mut found) = (0, true, None);
        for mut config in catalogue::configs() {
            config.steps = variant.steps();
            let explorer = Explorer::new(&config, &subject).map_err(|e| e.to_string())?;
            let report = explorer.first_failure(executions_max, &idemsim::sweep::stopped).map_err(|e| e.to_string())?;
            executions += report.executions;
            exhausted &= report.exhausted || !report.clean();
            if !report.clean() {
                found = Some(config.name);
                break;
            }
        }
        let sweep = detail
            .iter()
            .filter(|(key, t)| key.ends_with(&format!("/{}", variant.name())) && t.found > 0)
            .min_by(|a, b| a.1.median_ms.total_cmp(&b.1.median_ms));
        rows.push(ExploreVsSweeps {
            variant: variant.name().into(),
            explore_config: found,
            explore_executions: executions,
            explore_ms: started.elapsed().as_secs_f64() * 1000.0,
            explore_exhausted: exhausted,
            sweep_scenario: sweep.map(|(k, _)| k.split('/').next().unwrap_or_default().to_string()),
            sweep_seeds: sweep.map(|(_, t)| t.median_seeds),
            sweep_ms: sweep.map(|(_, t)| t.median_ms),
        });
    }
    Ok(rows)
}
