//! The simulator's faults are real: the correct protocol passes with every
//! interesting interleaving reached, and each broken step is caught and
//! replays exactly.

use idemsim::sweep::{sweep, SweepSpec};
use idemsim_model::Property;
use idemsim_model::{
    Attempt, Claim, Completion, Fingerprint, LocalEffect, MessageId, OutboxEntry, Record, RecoveryPoint, Scope,
    SimTime, Takeover, WriteOutcome,
};
use idemsim_sim::{run_seed, FaultProfile, FaultSettings, RunError, SimConfig, StoreKind, Variant};
use idemsim_store::StoreError;
use idemsim_tests::broken::{Broken, Flaw};

fn spec(variant: Variant, store: StoreKind, seeds: std::ops::Range<u64>) -> SweepSpec {
    SweepSpec {
        config: SimConfig { steps: variant.steps(), ..SimConfig::default() },
        subject: store.into(),
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
    config.budgets.steps_max = Some(300);
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
    let lost = |o: &idemsim_sim::RunOutcome| {
        o.history.entries.iter().any(|e| {
            matches!(e.event, idemsim_model::Event::Fault(idemsim_model::history::Fault::UnsyncedWritesLost { .. }))
        })
    };
    // Both built-in stores opt in to CrashDurability.
    for store in [StoreKind::Mem, StoreKind::Sqlite] {
        let caught = (0..200).map(|seed| run_seed(&config, store, seed).unwrap()).find(|o| o.failed());
        let caught = caught.unwrap_or_else(|| panic!("{store:?}: lost writes should break a property in 200 seeds"));
        assert!(lost(&caught) && caught.not_applied.is_empty(), "{store:?}");
    }
    // A store that does not opt in runs without the fault, and says so.
    let plain = idemsim_sim::Subject::store("plain", || Ok(Plain::waiting_ms(0)));
    let report = sweep(&SweepSpec { subject: plain, config, ..spec(Variant::Correct, StoreKind::Mem, 0..5) }, &|_| {});
    let report = report.unwrap();
    assert_eq!(report.seeds_failed, 0);
    let (why, seeds) = report.not_applied.first_key_value().expect("the sweep says what it left out");
    assert!(why.contains("lost unsynced writes") && why.contains("'plain'"), "{why}");
    assert_eq!(*seeds, 5);
}

/// A `MemStore` that keeps the default `durability()` (it does not opt
/// in), answering each operation after `wait_ms` of simulated time (none
/// when 0), as a store across a network does.
struct Plain {
    store: idemsim_store::MemStore,
    wait_ms: u64,
}

impl Plain {
    fn waiting_ms(wait_ms: u64) -> Plain {
        Plain { store: idemsim_store::MemStore::new(), wait_ms }
    }

    async fn wait(&self) {
        if self.wait_ms > 0 {
            madsim::time::sleep(std::time::Duration::from_millis(self.wait_ms)).await;
        }
    }
}

#[async_trait::async_trait]
impl idemsim_store::IdempotencyStore for Plain {
    fn name(&self) -> &str {
        match self.wait_ms {
            0 => "plain",
            _ => "slow",
        }
    }
    async fn claim(&self, s: &Scope, f: &Fingerprint, now: SimTime, lease: u64) -> Result<Claim, StoreError> {
        self.wait().await;
        self.store.claim(s, f, now, lease).await
    }
    async fn take_over(&self, s: &Scope, a: Attempt, now: SimTime, lease: u64) -> Result<Takeover, StoreError> {
        self.wait().await;
        self.store.take_over(s, a, now, lease).await
    }
    async fn write_recovery_point(&self, s: &Scope, a: Attempt, p: &RecoveryPoint) -> Result<WriteOutcome, StoreError> {
        self.wait().await;
        self.store.write_recovery_point(s, a, p).await
    }
    async fn complete(&self, s: &Scope, a: Attempt, c: &Completion) -> Result<WriteOutcome, StoreError> {
        self.wait().await;
        self.store.complete(s, a, c).await
    }
    async fn release(&self, s: &Scope, a: Attempt) -> Result<WriteOutcome, StoreError> {
        self.wait().await;
        self.store.release(s, a).await
    }
    async fn read(&self, s: &Scope) -> Result<Option<Record>, StoreError> {
        self.wait().await;
        self.store.read(s).await
    }
    async fn effects(&self, s: &Scope) -> Result<Vec<LocalEffect>, StoreError> {
        self.wait().await;
        self.store.effects(s).await
    }
    async fn sweep(&self, now: SimTime, window_ms: u64) -> Result<Vec<(Scope, Record)>, StoreError> {
        self.wait().await;
        self.store.sweep(now, window_ms).await
    }
    async fn stale_in_progress(&self, now: SimTime, limit: usize) -> Result<Vec<(Scope, Record)>, StoreError> {
        self.wait().await;
        self.store.stale_in_progress(now, limit).await
    }
    async fn outbox_pending(&self, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        self.wait().await;
        self.store.outbox_pending(limit).await
    }
    async fn outbox_mark_published(&self, id: &MessageId) -> Result<bool, StoreError> {
        self.wait().await;
        self.store.outbox_mark_published(id).await
    }
}

/// A pause bound to a fault site waits for a handler on its node to reach
/// the site (after its execution, before its completion), where a plain
/// timed pause strikes at its time, whatever the node is doing.
#[test]
fn a_site_bound_pause_strikes_at_the_site_not_at_its_time() {
    use idemsim_model::history::Fault;
    use idemsim_model::{Event, NodeId};
    use idemsim_sim::plan::{FaultAction, TimedFault};
    let server = NodeId::Server(0);
    let run = |action: FaultAction| {
        let faults = vec![TimedFault { at_ms: 100, action }];
        let config = SimConfig {
            faults: FaultSettings::Scheduled { profile: FaultProfile::calm(), faults },
            ..SimConfig::default()
        };
        run_seed(&config, StoreKind::Mem, 0).unwrap().history
    };
    let pauses = |history: &idemsim_model::History| -> Vec<u64> {
        let paused = |e: &&idemsim_model::history::Entry| matches!(e.event, Event::Fault(Fault::Paused { node, .. }) if node == server);
        history.entries.iter().filter(paused).map(|e| e.at.0).collect()
    };
    let plain = run(FaultAction::Pause { node: server, for_ms: 1500 });
    assert_eq!(pauses(&plain), vec![100]);
    let bound = run(FaultAction::PauseBeforeCompletion { node: server, for_ms: 1500 });
    let at = pauses(&bound);
    assert_eq!(at.len(), 1, "it strikes once: {at:?}");
    let executing =
        bound.entries.iter().find(|e| e.node == server && matches!(e.event, Event::ExecutionStarted { .. }));
    let executing = executing.expect("server-0 executes something").at.0;
    assert!(at[0] > 100 && at[0] >= executing, "paused at {} ms, first execution at {executing} ms", at[0]);
}

/// A store that answers only after a wait (as one across a network does):
/// its operations are handed to tasks on the database node, answered
/// there, and lost with them when the database crashes, which is neither
/// a hang nor a violation.
#[test]
fn a_store_that_waits_runs_clean_through_database_crashes() {
    let slow = idemsim_sim::Subject::store("slow", || Ok(Plain::waiting_ms(2)));
    let profile = FaultProfile { db_crashes: 3, down_ms_max: 300, ..FaultProfile::calm() };
    let config = SimConfig { faults: FaultSettings::Pinned(profile), ..SimConfig::default() };
    let report = sweep(&SweepSpec { subject: slow, config, ..spec(Variant::Correct, StoreKind::Mem, 0..20) }, &|_| {});
    let report = report.unwrap();
    assert_eq!(report.seeds_failed, 0, "{:?}", report.failures.first().map(|f| (&f.error, &f.violations)));
    assert_eq!(report.fault_classes.get("db-crash"), Some(&20), "every seed crashes the database");
    // The classes counted are what happened, not what the profile allows:
    // a calm profile's runs report none.
    let config = SimConfig { faults: FaultSettings::Pinned(FaultProfile::calm()), ..SimConfig::default() };
    let calm = sweep(&SweepSpec { config, ..spec(Variant::Correct, StoreKind::Mem, 0..5) }, &|_| {}).unwrap();
    assert!(calm.fault_classes.is_empty(), "{:?}", calm.fault_classes);
}

/// A store that never answers a read fails the run, naming the store and
/// what it did not answer, instead of hanging or passing quietly.
#[test]
fn a_store_that_hangs_fails_the_run_with_its_name() {
    let hangs = idemsim_sim::Subject::store("hangs", || Ok(Broken::new(Flaw::HangsOnRead)));
    let config = SimConfig { steps: Variant::CheckThenInsert.steps(), ..SimConfig::default() };
    let out = run_seed(&config, &hangs, 0).unwrap();
    let error = out.error.expect("the run fails").to_string();
    assert!(error.contains("store 'mem that hangs in read' did not answer read within 10 s"), "{error}");
}

/// Inside the simulator an error is the store failing, not a fault.
#[test]
fn a_store_that_errs_fails_the_run_with_its_name() {
    let errs = idemsim_sim::Subject::store("errs", || Ok(Broken::new(Flaw::ErrsOnComplete)));
    let out = run_seed(&SimConfig::default(), &errs, 0).unwrap();
    let error = out.error.expect("the run fails").to_string();
    assert!(error.contains("store 'mem that errs in complete' failed in complete: conflict: deliberate"), "{error}");
}

/// Every catalogue variant runs the same as its small `Protocol`
/// implementation as it does as a `Steps` value.
#[test]
fn each_variant_as_a_protocol_runs_exactly_as_its_steps() {
    for scenario in idemsim::catalogue::all() {
        for name in scenario.expect.keys() {
            let Some(variant) = Variant::from_name(name) else { continue };
            let config = scenario.config_for(name).unwrap();
            let own = idemsim_sim::Subject::from(StoreKind::Mem).protocol_with(move || variant.protocol());
            for seed in 0..2 {
                let by_steps = run_seed(&config, StoreKind::Mem, seed).unwrap();
                let by_protocol = run_seed(&config, &own, seed).unwrap();
                assert_eq!(by_steps.hash(), by_protocol.hash(), "{}/{name} seed {seed}", scenario.name);
            }
        }
    }
}
