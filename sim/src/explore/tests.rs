use super::*;
use crate::protocol::Variant;
use crate::StoreKind;
use idemsim_model::Property;

fn explorer(name: &str, variant: Variant) -> Explorer {
    let mut config = catalogue::config(name).unwrap();
    config.steps = variant.steps();
    Explorer::new(&config, &Subject::from(StoreKind::Mem)).unwrap()
}

fn exhaustive(name: &str, variant: Variant) -> ExploreReport {
    explorer(name, variant).exhaustive(1_000_000, &|| false).unwrap()
}

/// Counts pinned as stateright's examples pin theirs: a change in the
/// protocol core, the environment or the explorer shows up here.
#[test]
fn the_correct_protocol_breaks_nothing_and_the_counts_are_pinned() {
    let pinned = [
        ("pair", 6, 6),
        ("other-body", 6, 6),
        ("lost-reply", 2, 2),
        ("paused-holder", 3, 3),
        ("crash", 3, 3),
        ("store-faults", 7, 7),
        ("provider-timeout", 2, 2),
    ];
    for (name, executions, histories) in pinned {
        let report = exhaustive(name, Variant::Correct);
        assert!(report.exhausted && report.clean(), "{report}");
        assert_eq!((report.executions, report.histories), (executions, histories), "{name}: {report}");
    }
}

#[test]
fn a_paused_holder_whose_completion_is_unfenced_breaks_fencing_and_replays() {
    let report = exhaustive("paused-holder", Variant::UnfencedCompletion);
    assert_eq!((report.executions, report.failing), (3, 1), "{report}");
    assert_eq!(report.broken.get(&Property::Fencing), Some(&1));
    let shortest = report.shortest.as_ref().unwrap();
    assert_eq!((shortest.property, shortest.steps), (Some(Property::Fencing), 18));
    assert_eq!(shortest.schedule.to_string(), "1.1");
    let again = explorer("paused-holder", Variant::UnfencedCompletion).replay(&shortest.schedule).unwrap();
    assert_eq!(crate::trace_hash(&again.history), crate::trace_hash(&shortest.execution.history));
    assert_eq!(again.violations, shortest.execution.violations);
}

#[test]
fn a_key_that_ignores_its_caller_is_caught_in_every_interleaving() {
    let report = exhaustive("two-callers", Variant::KeyNotScoped);
    assert!(report.exhausted);
    assert_eq!(report.failing, report.executions, "{report}");
    assert!(report.broken.contains_key(&Property::StatusRules));
}

#[test]
fn exploring_twice_gives_the_same_counts_and_histories() {
    let a = exhaustive("store-faults", Variant::TakeoverWithoutBump);
    let b = exhaustive("store-faults", Variant::TakeoverWithoutBump);
    assert_eq!(
        (a.executions, a.failing, a.histories, a.choice_points),
        (b.executions, b.failing, b.histories, b.choice_points)
    );
    let (sa, sb) = (a.shortest.unwrap(), b.shortest.unwrap());
    assert_eq!(sa.schedule, sb.schedule);
    assert_eq!(crate::trace_hash(&sa.execution.history), crate::trace_hash(&sb.execution.history));
}

#[test]
fn pct_finds_the_unfenced_completion_and_is_seeded() {
    let e = explorer("paused-holder", Variant::UnfencedCompletion);
    let a = e.pct(200, 2, 7, &|| false).unwrap();
    let b = e.pct(200, 2, 7, &|| false).unwrap();
    assert!(a.failing > 0, "{a}");
    assert_eq!((a.failing, a.histories), (b.failing, b.histories));
    let replayed = e.replay(&a.shortest.as_ref().unwrap().schedule).unwrap();
    assert!(replayed.violations.iter().any(|v| v.property == Property::Fencing));
}

#[test]
fn an_execution_budget_that_runs_out_is_said() {
    let report = explorer("two-callers", Variant::Correct).exhaustive(10, &|| false).unwrap();
    assert!(!report.exhausted && report.executions == 10);
    assert!(report.to_string().contains("NOT exhausted"), "{report}");
}

#[test]
fn schedules_round_trip_and_foreign_ones_are_refused() {
    for s in ["-", "0", "2.0.13"] {
        assert_eq!(s.parse::<Schedule>().unwrap().to_string(), s);
    }
    assert!("1..2".parse::<Schedule>().is_err() && "a".parse::<Schedule>().is_err());
    let e = explorer("lost-reply", Variant::Correct);
    for foreign in ["5", "0.0.0.0"] {
        match e.replay(&foreign.parse().unwrap()) {
            Err(ExploreError::Replay(_)) => {}
            other => panic!("{foreign}: {other:?}"),
        }
    }
}

#[test]
fn a_bad_configuration_is_one_line() {
    let mut config = catalogue::config("pair").unwrap();
    config.servers = 0;
    let err = Explorer::new(&config, &Subject::from(StoreKind::Mem)).err().unwrap();
    assert_eq!(err.to_string(), "explore config: servers: between 1 and 8 (got 0)");
}

/// A store whose completion panics, or never answers.
#[derive(Default)]
struct Broken(idemsim_store::MemStore, bool);

#[async_trait::async_trait]
impl idemsim_store::Delegate for Broken {
    fn inner(&self) -> &dyn idemsim_store::IdempotencyStore {
        &self.0
    }
    async fn complete(
        &self,
        _s: &idemsim_model::Scope,
        _a: idemsim_model::Attempt,
        _c: &idemsim_model::Completion,
    ) -> Result<idemsim_model::WriteOutcome, idemsim_store::StoreError> {
        if self.1 {
            panic!("the completion exploded");
        }
        std::future::pending().await
    }
}

#[test]
fn a_store_that_panics_or_waits_is_one_line_with_its_schedule() {
    let config = catalogue::config("lost-reply").unwrap();
    let panics = Subject::store("panics", || Ok(Broken(Default::default(), true)));
    let err = Explorer::new(&config, &panics).unwrap().exhaustive(100, &|| false).unwrap_err();
    assert!(matches!(err, ExploreError::Panicked { .. }), "{err}");
    assert!(err.to_string().contains("the completion exploded (schedule -)"), "{err}");
    let waits = Subject::store("waits", || Ok(Broken(Default::default(), false)));
    let err = Explorer::new(&config, &waits).unwrap().exhaustive(100, &|| false).unwrap_err();
    assert!(err.to_string().contains("the store's complete waited on something"), "{err}");
}
