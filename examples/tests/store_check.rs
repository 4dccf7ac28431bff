//! The one call that tests a store every way idemsim knows, on a store of
//! one's own, through the public API only.

use idemsim::store::MemStore;
use idemsim::store_check::{Outcome, Part, StoreCheck};
use idemsim::Simulation;
use idemsim_examples::RacyStore;

/// A check sized for a test: the concurrent-duplicates scenario (two
/// copies of each request at once), 64 kit cases, 2,000 concurrent
/// operations, 100 simulated seeds, 200 stress requests.
fn check(name: &str) -> StoreCheck {
    let mut check = StoreCheck::new(name);
    let sim = Simulation::scenario("concurrent-duplicates").unwrap();
    check.simulation(sim).cases(64).seeds(0..100).requests(200);
    check
}

#[test]
fn the_racy_claim_passes_the_kit_and_fails_every_concurrent_part() {
    let report = check("racy").run(|| Ok(RacyStore::new()));
    let outcome = |part| report.part(part).map(|p| p.outcome);
    // One operation at a time, the read and the insert never interleave.
    assert_eq!(outcome(Part::Conformance), Some(Outcome::Pass), "{report}");
    // Two callers meet between them: two owners of one attempt.
    assert_eq!(outcome(Part::Linearizability), Some(Outcome::Fail), "{report}");
    assert_eq!(outcome(Part::Simulation), Some(Outcome::Fail), "{report}");
    assert!(!report.pass());
    let text = report.to_string();
    assert!(text.contains("NOT LINEARIZABLE") && text.contains("owned"), "{text}");
    assert!(text.contains("Simulation::scenario(\"concurrent-duplicates\").store(\"racy\", open).replay("), "{text}");
    assert!(text.ends_with("verdict: FAIL"), "{text}");
}

#[test]
fn the_bundled_store_run_as_ones_own_passes_every_part() {
    let report = check("mine").run(|| Ok(MemStore::new()));
    assert!(report.pass(), "{report}");
    assert_eq!(report.parts.len(), Part::ALL.len());
    assert!(report.parts.iter().all(|p| !p.reproduce.is_empty()), "{report}");
}
