//! `Explorer` on code idemsim has never seen, through the public API only,
//! as a user's crate would write it: a store whose completion is not
//! fenced, under a protocol with a 90 s lease. Every interleaving of the
//! catalogue's paused-holder configuration is checked; the bug is found
//! with its shortest schedule, and without the bug the same space is clean.

use idemsim::prelude::*;
use idemsim::sim::explore::{catalogue, Chooser};
use idemsim_examples::{LongLease, UnfencedComplete};

fn paused_holder() -> ExploreConfig {
    catalogue::config("paused-holder").expect("in the catalogue")
}

#[test]
fn every_interleaving_of_a_paused_holder_finds_the_unfenced_store_under_a_90_s_lease() {
    let mine = Subject::store("unfenced", || Ok(UnfencedComplete::default())).protocol(LongLease);
    let explorer = Explorer::new(&paused_holder(), &mine).unwrap();
    let report = explorer.exhaustive(10_000, &|| false).unwrap();
    assert!(report.exhausted, "{report}");
    let shortest = report.shortest.as_ref().expect("the unfenced store is caught");
    assert_eq!(shortest.property, Some(Property::Fencing), "{report}");
    // The pause that found it is one and a half of the subject's lease, not
    // of the configured 1 s one.
    let paused = shortest.execution.steps.iter().filter(|s| s.fault.is_some()).count();
    assert_eq!(paused, 2, "both holders paused: {report}");
    assert!(shortest.execution.history.entries.iter().any(|e| e.at.0 > 135_000), "the pauses follow the 90 s lease");

    // The schedule replays the execution exactly.
    let again = explorer.replay(&shortest.schedule).unwrap();
    assert_eq!(idemsim::sim::trace_hash(&again.history), idemsim::sim::trace_hash(&shortest.execution.history));

    // Without the bug, the same space under the same 90 s lease is clean:
    // the explorer's timing follows the lease and makes no false alarm.
    let fixed = Subject::store("mem", || Ok(MemStore::new())).protocol(LongLease);
    let report = Explorer::new(&paused_holder(), &fixed).unwrap().exhaustive(10_000, &|| false).unwrap();
    assert!(report.exhausted && report.clean(), "{report}");
    assert_eq!(report.executions, report.histories);
}

/// A chooser of one's own: always the last option (the latest task, the
/// last fault), one execution.
struct Last;

impl Chooser for Last {
    fn choose(
        &mut self,
        choices: &[idemsim::sim::explore::Choice],
    ) -> Result<usize, idemsim::sim::explore::ExploreError> {
        Ok(choices.len() - 1)
    }
}

#[test]
fn a_chooser_of_ones_own_drives_one_execution() {
    let explorer = Explorer::new(&paused_holder(), &Subject::store("mem", || Ok(MemStore::new()))).unwrap();
    let execution = explorer.execute(&mut Last).unwrap();
    assert!(!execution.failed(), "{:?}", execution.violations);
    assert!(execution.steps.iter().any(|s| s.fault.is_some()), "the last option is a fault where one is allowed");
}
