//! The simulator's faults are real: the correct protocol passes with every
//! interesting interleaving reached, and each broken step is caught and
//! replays exactly.

use idemsim_model::Property;
use idemsim_scenarios::sweep::{sweep, SweepSpec};
use idemsim_sim::{run_seed, FaultProfile, FaultSettings, RunError, SimConfig, StoreKind, Variant};

fn spec(variant: Variant, store: StoreKind, seeds: std::ops::Range<u64>) -> SweepSpec {
    SweepSpec {
        config: SimConfig { steps: variant.steps(), ..SimConfig::default() },
        store,
        seeds,
        jobs: 2,
        check_determinism: false,
        record_hashes: false,
        shard: None,
    }
}

/// The first failing seed of a variant, found within 2000 seeds.
fn first_failure(variant: Variant, store: StoreKind) -> idemsim_sim::RunOutcome {
    let config = SimConfig { steps: variant.steps(), ..SimConfig::default() };
    (0..2000)
        .map(|seed| run_seed(&config, store, seed).unwrap())
        .find(|o| o.failed())
        .unwrap_or_else(|| panic!("{variant} was not caught within 2000 seeds"))
}

fn assert_caught_and_replayed(variant: Variant, store: StoreKind, property: Property) {
    let found = first_failure(variant, store);
    assert!(found.violations.iter().any(|v| v.property == property), "{variant}: {:?}", found.violations);
    let config = SimConfig { steps: variant.steps(), ..SimConfig::default() };
    let replay = run_seed(&config, store, found.seed).unwrap();
    assert_eq!(replay.violations, found.violations, "{variant} seed {}", found.seed);
    assert_eq!(replay.hash(), found.hash());
}

#[test]
fn check_then_insert_is_caught_and_replays() {
    assert_caught_and_replayed(Variant::CheckThenInsert, StoreKind::Mem, Property::Fencing);
}

#[test]
fn takeover_without_bump_is_caught_and_replays() {
    assert_caught_and_replayed(Variant::TakeoverWithoutBump, StoreKind::Mem, Property::Fencing);
}

#[test]
fn unfenced_completion_is_caught_and_replays() {
    assert_caught_and_replayed(Variant::UnfencedCompletion, StoreKind::Mem, Property::Fencing);
}

#[test]
fn sqlite_runs_under_simulation_passes_and_catches_a_broken_step() {
    let report = sweep(&spec(Variant::Correct, StoreKind::Sqlite, 0..40), &|_| {}).unwrap();
    assert_eq!(report.seeds_failed, 0, "{:?}", report.failures.first());
    assert_caught_and_replayed(Variant::UnfencedCompletion, StoreKind::Sqlite, Property::Fencing);
}

#[test]
fn no_faults_means_no_fault_events_and_a_clean_run() {
    let config = SimConfig { faults: FaultSettings::None, ..SimConfig::default() };
    let out = run_seed(&config, StoreKind::Mem, 3).unwrap();
    assert!(!out.failed(), "{:?}", out.violations);
    assert!(!out.history.entries.iter().any(|e| matches!(e.event, idemsim_model::Event::Fault(_))));
}

#[test]
fn a_runaway_run_is_a_reported_livelock_not_a_hang() {
    let mut config = SimConfig::default();
    config.budgets.steps_max = 300;
    let out = run_seed(&config, StoreKind::Mem, 1).unwrap();
    assert!(matches!(out.error, Some(RunError::Livelock(_))), "{:?}", out.error);
    assert!(out.failed());
}

#[test]
fn lost_unsynced_writes_break_exactly_once() {
    // A store with write-back caching loses acknowledged completions in a
    // crash; the retry executes again. The protocol cannot survive that,
    // and the simulator shows it.
    let profile = FaultProfile { db_crashes: 3, down_ms_max: 300, ..FaultProfile::calm() };
    let config = SimConfig {
        faults: FaultSettings::Pinned(profile),
        durability: idemsim_sim::Durability::WriteBack { sync_interval_ms: 2_000 },
        ..SimConfig::default()
    };
    let caught = (0..200).map(|seed| run_seed(&config, StoreKind::Mem, seed).unwrap()).find(|o| o.failed());
    let caught = caught.expect("lost writes should break a property within 200 seeds");
    assert!(caught.history.entries.iter().any(|e| matches!(
        e.event,
        idemsim_model::Event::Fault(idemsim_model::history::Fault::UnsyncedWritesLost { .. })
    )));
    let err = run_seed(&config, StoreKind::Sqlite, 0).unwrap_err();
    assert!(err.to_string().contains("needs the mem store"), "{err}");
}
