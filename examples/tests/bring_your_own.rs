//! The worked example, run as a user would run it: a store of one's own and
//! a protocol variant of one's own, each caught by a sweep with its
//! property, shrunk to a scenario file, and replayed from that file with
//! the same trace hash. Only idemsim's public API is used.

use idemsim::model::Property;
use idemsim::store::conformance::Conformance;
use idemsim::store::{MemStore, StoreError};
use idemsim::stress::{stress_with, BoxFuture, Opened, StressSpec};
use idemsim::Simulation;
use idemsim_examples::{RacyStore, ReEncodingReplay};
use std::path::PathBuf;
use std::sync::Arc;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("idemsim-examples-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Sweeps, takes the first failing seed, shrinks it, writes the file, and
/// replays the file with the same store and protocol: the same property
/// breaks and the trace hash is the shrunk run's.
fn caught_shrunk_and_replayed(sim: &Simulation, property: Property, file: &str) {
    let report = sim.sweep().unwrap();
    let first = report.failures.first().unwrap_or_else(|| panic!("not caught in {:?}", sim.subject()));
    assert!(first.violations.iter().any(|v| v.property == property), "{:?}", first.violations);

    let shrunk = sim.shrink(first.seed).unwrap();
    assert_eq!(shrunk.property, property);
    assert!(shrunk.after.events <= shrunk.before.events, "{} -> {}", shrunk.before, shrunk.after);
    let path = scratch(file);
    shrunk.write(&path).unwrap();

    let mut again = Simulation::file(&path).unwrap();
    again.store_kind(idemsim::sim::StoreKind::Mem);
    let subject = sim.subject().clone();
    if let Some(make) = subject.own_protocol() {
        again.protocol_factory(make);
    }
    if subject.store_name() == "racy" {
        again.store("racy", || Ok(RacyStore::new()));
    }
    let seed = again.reproduced_seed().expect("a shrunk file names its seed");
    let replayed = again.replay(seed).unwrap();
    assert!(replayed.violations.iter().any(|v| v.property == property), "{:?}", replayed.violations);
    assert_eq!(replayed.hash(), shrunk.outcome.hash(), "the file replays the shrunk run exactly");
    let story = again.story(&replayed).unwrap();
    assert!(story.lines().count() > 2, "{story}");
}

#[test]
fn the_racy_claim_passes_the_sequential_kit() {
    // One operation at a time, the read and the upsert never interleave.
    let verdict = Conformance::new().cases(256).check(|| async { Ok(RacyStore::new()) });
    assert!(verdict.is_ok(), "{}", verdict.unwrap_err());
}

#[test]
fn the_racy_claim_is_caught_by_the_simulator_shrunk_and_replayed() {
    let mut sim = Simulation::scenario("concurrent-duplicates").unwrap();
    sim.store("racy", || Ok(RacyStore::new())).seeds(0..200).jobs(2);
    caught_shrunk_and_replayed(&sim, Property::Fencing, "racy.json");
}

#[test]
fn the_re_encoding_replay_is_caught_shrunk_and_replayed() {
    let mut sim = Simulation::scenario("default").unwrap();
    sim.protocol(ReEncodingReplay).seeds(0..200).jobs(2);
    caught_shrunk_and_replayed(&sim, Property::ReplayFidelity, "re-encoding.toml");
}

#[test]
fn the_correct_protocol_on_a_store_of_ones_own_is_clean() {
    let mut sim = Simulation::scenario("default").unwrap();
    sim.store("mine", || Ok(MemStore::new())).seeds(0..100).jobs(2).check_determinism(true);
    sim.check();
}

#[test]
fn the_harness_panics_with_the_story_and_how_to_reproduce_and_remembers_the_seed() {
    let regressions = scratch("harness.idemsim-regressions");
    let _ = std::fs::remove_file(&regressions);
    let mut sim = Simulation::scenario("default").unwrap();
    sim.protocol(ReEncodingReplay).seeds(0..200).jobs(2).regressions(&regressions);
    // A finding is `Error::Found`, told in full; other kinds say the check could not run.
    let Err(idemsim::Error::Found(message)) = sim.check_result() else { panic!("a failure is found") };
    assert!(message.contains("replay-fidelity"), "{message}");
    assert!(message.contains("story:"), "{message}");
    assert!(message.contains("reproduce: IDEMSIM_SEED="), "{message}");
    let remembered = std::fs::read_to_string(&regressions).unwrap();
    let seed = remembered.lines().find_map(|l| l.strip_prefix("seed ")).expect("the failing seed is kept");
    // Next time the remembered seed runs first, before any sweep.
    sim.seeds(100_000..100_001);
    let again = sim.check_result().unwrap_err().to_string();
    assert!(again.contains("a seed of the regressions file"), "{again}");
    assert!(again.contains(&format!("seed {}", seed.split_whitespace().next().unwrap())), "{again}");
}

#[test]
fn a_store_that_panics_fails_the_run_naming_the_store_and_the_seed() {
    let mut sim = Simulation::scenario("default").unwrap();
    sim.store("explodes", || Ok(Explodes)).seeds(0..3).jobs(1);
    let message = sim.check_result().unwrap_err().to_string();
    assert!(message.contains("store 'explodes' panicked in claim"), "{message}");
    assert!(message.contains("seed 0"), "{message}");
}

#[test]
fn a_store_that_cannot_open_is_one_clear_line() {
    let mut sim = Simulation::scenario("default").unwrap();
    sim.store("closed", || Err::<MemStore, _>(StoreError::Unavailable("no such database".into())));
    let message = sim.seeds(0..2).check_result().unwrap_err().to_string();
    assert!(message.contains("store 'closed' could not be opened: store unavailable: no such database"), "{message}");
}

#[test]
fn the_stress_mode_runs_a_store_of_ones_own() {
    let open = || -> BoxFuture<'static, Result<Opened, StoreError>> {
        Box::pin(async { Ok(Opened::store(RacyStore::new())) })
    };
    let spec = StressSpec { requests: 300, ..StressSpec::default() };
    let report = stress_with(&spec, &open, Arc::new(idemsim::sim::protocol::Correct)).unwrap();
    assert_eq!(report.store, "racy");
    assert!(report.sends >= 300 && report.pauses > 0, "{report:?}");
}

/// A store whose every claim panics.
struct Explodes;

#[idemsim::prelude::async_trait]
impl idemsim::store::IdempotencyStore for Explodes {
    fn name(&self) -> &str {
        "explodes"
    }
    async fn claim(
        &self,
        _: &idemsim::model::Scope,
        _: &idemsim::model::Fingerprint,
        _: idemsim::model::SimTime,
        _: u64,
    ) -> Result<idemsim::model::Claim, StoreError> {
        panic!("boom");
    }
    async fn take_over(
        &self,
        _: &idemsim::model::Scope,
        _: idemsim::model::Attempt,
        _: idemsim::model::SimTime,
        _: u64,
    ) -> Result<idemsim::model::Takeover, StoreError> {
        Err(StoreError::Unavailable("unused".into()))
    }
    async fn write_recovery_point(
        &self,
        _: &idemsim::model::Scope,
        _: idemsim::model::Attempt,
        _: &idemsim::model::RecoveryPoint,
    ) -> Result<idemsim::model::WriteOutcome, StoreError> {
        Err(StoreError::Unavailable("unused".into()))
    }
    async fn complete(
        &self,
        _: &idemsim::model::Scope,
        _: idemsim::model::Attempt,
        _: &idemsim::model::Completion,
    ) -> Result<idemsim::model::WriteOutcome, StoreError> {
        Err(StoreError::Unavailable("unused".into()))
    }
    async fn release(
        &self,
        _: &idemsim::model::Scope,
        _: idemsim::model::Attempt,
    ) -> Result<idemsim::model::WriteOutcome, StoreError> {
        Err(StoreError::Unavailable("unused".into()))
    }
    async fn read(&self, _: &idemsim::model::Scope) -> Result<Option<idemsim::model::Record>, StoreError> {
        Ok(None)
    }
    async fn effects(&self, _: &idemsim::model::Scope) -> Result<Vec<idemsim::model::LocalEffect>, StoreError> {
        Ok(Vec::new())
    }
    async fn sweep(
        &self,
        _: idemsim::model::SimTime,
        _: u64,
    ) -> Result<Vec<(idemsim::model::Scope, idemsim::model::Record)>, StoreError> {
        Ok(Vec::new())
    }
    async fn stale_in_progress(
        &self,
        _: idemsim::model::SimTime,
        _: usize,
    ) -> Result<Vec<(idemsim::model::Scope, idemsim::model::Record)>, StoreError> {
        Ok(Vec::new())
    }
    async fn outbox_pending(&self, _: usize) -> Result<Vec<idemsim::model::OutboxEntry>, StoreError> {
        Ok(Vec::new())
    }
    async fn outbox_mark_published(&self, _: &idemsim::model::MessageId) -> Result<bool, StoreError> {
        Ok(false)
    }
}
