//! The whole catalogue: every broken variant is caught with its scenario's
//! expected property within 2000 seeds and its failure shrinks to a smaller
//! scenario file that replays to the same property; every correct variant
//! is clean on seeds 0..2000 with the scenario's interleavings reached.

use idemsim::shrink::{shrink, ShrinkSpec};
use idemsim::sweep::{sweep, SweepSpec};
use idemsim::{catalogue, Expect, Scenario};
use idemsim_model::Event;
use idemsim_model::{Property, Sometimes};
use idemsim_sim::{run_seed, ClaimStep, CompletionStep, Steps, StoreKind};
use std::collections::{BTreeMap, BTreeSet};

/// The table of the issue: scenario, variant, expected verdict.
const TABLE: &[(&str, &str, Option<Property>)] = &[
    ("default", "correct", None),
    ("default", "check-then-insert", Some(Property::Fencing)),
    ("default", "takeover-without-bump", Some(Property::Fencing)),
    ("default", "unfenced-completion", Some(Property::Fencing)),
    // The checkers' blind spots, one broken step each, in the default run:
    // an answer from a cache (1), a transient error stored (2), a record
    // keyed otherwise than the client's key (3), a key replayed on another
    // endpoint and a late retry after an early sweep (4), a protocol that
    // never finishes (5).
    ("default", "stale-cache", Some(Property::StatusRules)),
    ("default", "transient-error-stored", Some(Property::Liveness)),
    ("default", "key-not-scoped", Some(Property::Isolation)),
    ("default", "key-includes-body", Some(Property::AtMostOnce)),
    ("default", "fingerprint-without-path", Some(Property::StatusRules)),
    ("default", "sweep-window-short", Some(Property::Expiry)),
    ("default", "lease-shorter-than-work", Some(Property::Progress)),
    ("concurrent-duplicates", "correct", None),
    ("concurrent-duplicates", "check-then-insert", Some(Property::Fencing)),
    ("concurrent-duplicates", "lock-around-lookup", Some(Property::Fencing)),
    ("concurrent-duplicates", "per-process-lock", Some(Property::Fencing)),
    ("crash-after-effect", "correct", None),
    ("crash-after-effect", "downstream-key-from-attempt", Some(Property::AtMostOnce)),
    ("crash-after-effect", "no-lease", Some(Property::Liveness)),
    ("paused-holder", "correct", None),
    ("paused-holder", "takeover-without-bump", Some(Property::Fencing)),
    ("paused-holder", "unfenced-completion", Some(Property::Fencing)),
    ("local-effect", "correct", None),
    ("local-effect", "effect-own-transaction", Some(Property::AtMostOnce)),
    ("fingerprint-mismatch", "correct", None),
    ("fingerprint-mismatch", "fingerprint-not-compared", Some(Property::StatusRules)),
    ("validation-retry", "correct", None),
    ("validation-retry", "validation-stored", Some(Property::StatusRules)),
    ("tenant-collision", "correct", None),
    ("tenant-collision", "key-not-scoped", Some(Property::Isolation)),
    ("expiry-window", "correct", None),
    ("expiry-window", "sweep-window-short", Some(Property::Expiry)),
    ("expiry-window", "sweep-deletes-unfinished", Some(Property::Expiry)),
    ("retry-storm", "correct", None),
    ("retry-storm", "retry-on-4xx", Some(Property::RetryDiscipline)),
    ("retry-storm", "new-key-per-retry", Some(Property::RetryDiscipline)),
    ("retry-storm", "no-jitter", Some(Property::RetryDiscipline)),
    ("retry-storm", "three-layer-retries", Some(Property::RetryDiscipline)),
    ("outbox", "correct", None),
    ("outbox", "publish-before-commit", Some(Property::Outbox)),
    ("payment-timeout", "correct", None),
    ("payment-timeout", "release-on-provider-timeout", Some(Property::AtMostOnce)),
    ("payment-timeout", "provider-key-per-execution", Some(Property::AtMostOnce)),
    ("payment-timeout", "transient-error-stored", Some(Property::Liveness)),
];

#[test]
fn the_catalogue_holds_exactly_the_table() {
    for &(name, variant, property) in TABLE {
        let scenario = catalogue::find(name).unwrap_or_else(|| panic!("no scenario {name}"));
        let expect = property.map_or(Expect::Clean, Expect::Violates);
        assert_eq!(scenario.expect.get(variant), Some(&expect), "{name}/{variant}");
        let broken = scenario.steps_of(variant).unwrap().broken();
        assert_eq!(broken.len(), usize::from(property.is_some()), "{name}/{variant} must swap exactly one step");
    }
}

/// A variant of the table in `sim/protocol/src/variant.rs` that no
/// scenario expects would be caught by nothing anyone runs.
#[test]
fn every_variant_is_expected_by_some_scenario() {
    let expected: BTreeSet<String> = catalogue::all().into_iter().flat_map(|s| s.expect.into_keys()).collect();
    for v in idemsim_sim::Variant::ALL {
        assert!(
            expected.contains(v.name()),
            "no scenario expects {v}: give it an `expect` in scenarios/src/catalogue.rs"
        );
    }
}

#[test]
fn every_correct_variant_is_clean_and_reaches_its_interleavings() {
    for scenario in catalogue::all() {
        assert_eq!(scenario.expect.get("correct"), Some(&Expect::Clean), "{}", scenario.name);
        let spec = SweepSpec {
            config: scenario.config_for("correct").unwrap(),
            subject: StoreKind::Mem.into(),
            seeds: 0..2000,
            jobs: 2,
            check_determinism: false,
            record_hashes: false,
            shard: None,
        };
        let report = sweep(&spec, &|_| {}).unwrap();
        assert_eq!(report.seeds_failed, 0, "{}: {:?}", scenario.name, report.failures.first());
        assert!(!scenario.sometimes.is_empty(), "{}: a pass must show its interleavings", scenario.name);
        for name in &scenario.sometimes {
            let seeds = report.coverage_seeds.get(name).copied().unwrap_or(0);
            assert!(seeds > 0, "{}: {name} never happened in 2000 seeds", scenario.name);
        }
    }
}

/// The first seed of 0..2000 where `variant` fails, with its property.
fn first_failure(scenario: &Scenario, variant: &str, property: Property) -> u64 {
    let config = scenario.config_for(variant).unwrap();
    let found = (0..2000).map(|seed| run_seed(&config, StoreKind::Mem, seed).unwrap()).find(|o| o.failed());
    let found = found.unwrap_or_else(|| panic!("{}/{variant} not caught in 2000 seeds", scenario.name));
    assert!(
        found.violations.iter().any(|v| v.property == property),
        "{}/{variant} seed {}: expected {property}, got {:?}",
        scenario.name,
        found.seed,
        found.violations
    );
    found.seed
}

#[test]
fn every_broken_variant_is_caught_and_shrinks_to_a_smaller_file_that_replays() {
    let dir = std::env::temp_dir().join(format!("idemsim-shrunk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for scenario in catalogue::all() {
        for (variant, expect) in &scenario.expect {
            let Expect::Violates(property) = *expect else { continue };
            let seed = first_failure(&scenario, variant, property);
            let spec = ShrinkSpec {
                scenario: &scenario,
                variant,
                subject: StoreKind::Mem.into(),
                seed,
                runs_max: 3000,
                property: Some(property),
            };
            let shrunk = shrink(&spec).unwrap();
            let label = format!("{}/{variant} seed {seed}", scenario.name);
            assert_eq!(shrunk.property, property, "{label}");
            let (b, a) = (shrunk.before, shrunk.after);
            assert!(a.faults + a.operations < b.faults + b.operations, "{label}: {b} -> {a}");
            assert!(a.events < b.events, "{label}: {b} -> {a}");
            // A minimum a person would write: one client (operations fold
            // onto it), the servers the violation needs (two processes for
            // a per-process lock, and for a takeover by a server whose
            // clock runs ahead of the holder's; else one), and a story that
            // fits a slide.
            assert_eq!(a.clients, 1, "{label}: {a}");
            let two = ["per-process-lock", "provider-key-per-execution"];
            let servers = if two.contains(&variant.as_str()) { 2 } else { 1 };
            assert!(a.servers <= servers, "{label}: {a}");
            assert!(a.story_lines <= 15, "{label}: {a}\n{}", shrunk.story(false));
            // The file round-trips and replays to the same property.
            let path = dir.join(format!("{}-{variant}.json", scenario.name));
            std::fs::write(&path, serde_json::to_string_pretty(&shrunk.scenario).unwrap()).unwrap();
            let file = Scenario::from_file(&path).unwrap();
            let run = file.reproduces.clone().unwrap();
            let replay = run_seed(&file.config_for(&run.variant).unwrap(), StoreKind::Mem, run.seed).unwrap();
            assert!(replay.violations.iter().any(|v| v.property == property), "{label}: {:?}", replay.violations);
            assert_eq!(replay.hash(), shrunk.outcome.hash(), "{label}: the replay is the shrunk run");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A variant written outside the simulator (here, in this crate), with two
/// broken steps at once, runs through a catalogue scenario.
#[test]
fn a_user_variant_runs_through_the_catalogue() {
    let mut scenario = catalogue::find("paused-holder").unwrap();
    let mine = Steps { claim: ClaimStep::PerProcessLock, completion: CompletionStep::Unfenced, ..Steps::default() };
    scenario.add_variant("my-two-bugs", mine, Expect::Violates(Property::Fencing));
    scenario.check().unwrap();
    let seed = first_failure(&scenario, "my-two-bugs", Property::Fencing);
    let json = serde_json::to_string(&scenario).unwrap();
    assert!(json.contains(r#""my-two-bugs":{"claim":"per-process-lock""#), "{json}");
    let back: Scenario = serde_json::from_str(&json).unwrap();
    assert_eq!(back.steps_of("my-two-bugs").unwrap(), mine);
    assert!(seed < 2000);
}

/// A record keyed by the key alone is judged by the client's view: the
/// leak across tenants is isolation, never a lost effect (liveness), and
/// the story shows both callers.
#[test]
fn key_not_scoped_is_isolation_not_liveness() {
    let config = catalogue::find("tenant-collision").unwrap().config_for("key-not-scoped").unwrap();
    let mut isolated = 0;
    for seed in 0..100 {
        let out = run_seed(&config, StoreKind::Mem, seed).unwrap();
        assert!(out.violations.iter().all(|v| v.property != Property::Liveness), "seed {seed}: {:?}", out.violations);
        let Some(v) = out.violations.iter().find(|v| v.property == Property::Isolation) else { continue };
        isolated += 1;
        let story = idemsim_sim::story::story(&out.history, v);
        assert!(story.contains(" for acme ") && story.contains(" for globex "), "seed {seed}: {story}");
    }
    assert!(isolated > 90, "isolation in {isolated} of 100 seeds");
}

/// The default run reaches the misuse that real clients do: a key on
/// another endpoint is refused with 422, a late retry inside the window is
/// replayed, and a retry after the window finds its record swept.
#[test]
fn the_default_workload_reuses_keys_across_endpoints_and_windows() {
    let config = catalogue::find("default").unwrap().config_for("correct").unwrap();
    let (mut other_endpoint, mut late, mut swept) = (0, 0, 0);
    for seed in 0..50 {
        let out = run_seed(&config, StoreKind::Mem, seed).unwrap();
        assert!(out.violations.is_empty(), "seed {seed}: {:?}", out.violations.first());
        let mut paths: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        for e in &out.history.entries {
            if let Event::RequestSent { request: r, .. } = &e.event {
                let Some(key) = &r.key else { continue };
                paths.entry((r.caller.0.to_string(), key.0.to_string())).or_default().insert(r.path.to_string());
            }
        }
        other_endpoint += paths.values().filter(|p| p.len() > 1).count();
        late += out.coverage[Sometimes::LateReplay];
        swept += out.coverage[Sometimes::RecordSwept];
    }
    assert!(other_endpoint > 0 && late > 0 && swept > 0, "{other_endpoint} {late} {swept}");
}

/// Regression (issue: checkers' blind spots, point 6): the expiry checker
/// measured a record's age from the database's apply event, one network hop
/// after the claiming server's clock set `created_at`, and called a correct
/// sweep 2 ms early. It now judges the age the store judged: the sweeper's
/// clock against the stored `created_at`.
#[test]
fn expiry_window_seed_10965_is_not_a_false_positive() {
    let config = catalogue::find("expiry-window").unwrap().config_for("correct").unwrap();
    let out = run_seed(&config, StoreKind::Mem, 10965).unwrap();
    assert!(out.coverage[Sometimes::RecordSwept] > 0, "the seed sweeps records");
    assert_eq!(out.violations, vec![], "{:?}", out.violations.first());
}
