//! Progress: a protocol that keeps every safety property by never finishing
//! anything is useless. Each run counts how its operations ended
//! (acknowledged with a success, given up, answered with an error) and
//! fails when fewer were acknowledged than the scenario expects
//! (`RunMeta::progress_min_percent`).

use super::{Property, Violation};
use crate::history::{Event, History, Phase};
use crate::ids::OpId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the operations of a run (or a sweep, added up) ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcomes {
    /// Operations sent at least once.
    pub operations: u64,
    /// Answered with a success (2xx) at least once.
    pub acknowledged: u64,
    /// The client gave up on them (attempts, deadline, budget) without a
    /// success.
    pub gave_up: u64,
    /// Their last answer was an error the client does not retry (400, 422,
    /// a stored error), or nothing came back.
    pub errors: u64,
}

/// How an operation ended.
#[derive(Clone, Copy, PartialEq)]
enum End {
    Pending,
    Acknowledged,
    GaveUp(usize),
}

impl Outcomes {
    /// Counts a history's operations.
    pub fn of(history: &History) -> Outcomes {
        let ends = ends(history);
        let mut o = Outcomes { operations: ends.len() as u64, ..Outcomes::default() };
        for end in ends.values() {
            match end {
                End::Acknowledged => o.acknowledged += 1,
                End::GaveUp(_) => o.gave_up += 1,
                End::Pending => o.errors += 1,
            }
        }
        o
    }

    /// Adds another run's counts.
    pub fn add(&mut self, other: &Outcomes) {
        self.operations += other.operations;
        self.acknowledged += other.acknowledged;
        self.gave_up += other.gave_up;
        self.errors += other.errors;
    }

    /// `part` as a whole percentage of the operations (0 when there are none).
    pub fn percent(&self, part: u64) -> u64 {
        (part * 100).checked_div(self.operations).unwrap_or(0)
    }
}

fn ends(history: &History) -> BTreeMap<OpId, End> {
    let mut ends: BTreeMap<OpId, End> = BTreeMap::new();
    for (i, entry) in history.entries.iter().enumerate() {
        match &entry.event {
            Event::RequestSent { req, .. } => {
                ends.entry(req.op).or_insert(End::Pending);
            }
            Event::ResponseReceived { req, response, .. } if (200..300).contains(&response.status) => {
                ends.insert(req.op, End::Acknowledged);
            }
            Event::GaveUp { op, .. } => {
                let end = ends.entry(*op).or_insert(End::Pending);
                if *end != End::Acknowledged {
                    *end = End::GaveUp(i);
                }
            }
            _ => {}
        }
    }
    ends
}

/// At least `progress_min_percent` of the run's operations must have been
/// acknowledged, unless every operation that was not ended while the
/// faults were on: heavy enough faults may defeat any protocol while they
/// last, but an operation that still fails once they healed is the
/// protocol's doing.
pub(super) fn check(history: &History) -> Vec<Violation> {
    let min = u64::from(history.meta.progress_min_percent);
    let o = Outcomes::of(history);
    if o.operations == 0 || o.acknowledged * 100 >= min * o.operations {
        return Vec::new();
    }
    let heal = history.entries.iter().position(|e| matches!(e.event, Event::Phase { phase: Phase::Heal }));
    let Some(heal) = heal else { return Vec::new() };
    let mut last: BTreeMap<OpId, usize> = BTreeMap::new();
    for (i, entry) in history.entries.iter().enumerate() {
        if let Some(op) = op_of(&entry.event) {
            last.insert(op, i);
        }
    }
    let failed_after_heal: Vec<usize> = ends(history)
        .into_iter()
        .filter(|(op, end)| *end != End::Acknowledged && last.get(op).is_some_and(|&at| at > heal))
        .map(|(op, end)| match end {
            End::GaveUp(i) => i,
            _ => last[&op],
        })
        .collect();
    if failed_after_heal.is_empty() {
        return Vec::new();
    }
    // The first operations that failed after the faults healed, and the
    // end of the run where the count is final.
    let mut events: Vec<usize> = failed_after_heal.iter().copied().take(3).collect();
    let end = history.entries.iter().rposition(|e| matches!(e.event, Event::Phase { phase: Phase::End }));
    events.extend(end.or(history.entries.len().checked_sub(1)));
    vec![Violation::new(
        Property::Progress,
        events,
        format!(
            "only {} of {} operations ({}%) were acknowledged, below the {min}% expected, and {} still failed after the faults healed: {} gave up, {} ended with an error",
            o.acknowledged,
            o.operations,
            o.percent(o.acknowledged),
            failed_after_heal.len(),
            o.gave_up,
            o.errors
        ),
    )]
}

fn op_of(event: &Event) -> Option<OpId> {
    match event {
        Event::RequestSent { req, .. }
        | Event::ResponseReceived { req, .. }
        | Event::TimedOut { req }
        | Event::RetryScheduled { req, .. } => Some(req.op),
        Event::GaveUp { op, .. } => Some(*op),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::*;
    use crate::history::Answer;
    use crate::ids::NodeId;
    use crate::request::StoredResponse;

    fn run(acknowledged: u32, gave_up: u32) -> Story {
        let mut s = Story::new().meta(|m| m.progress_min_percent = 50);
        s.at(NodeId::World, Event::Phase { phase: Phase::Heal });
        for op in 1..=acknowledged + gave_up {
            s.send(0, req(op, 1), request("acme", Some(&format!("k{op}")), "/orders", "{}"));
            if op <= acknowledged {
                s.received(0, req(op, 1), Answer::Executed, ok("done"));
            } else {
                s.received(0, req(op, 1), Answer::Unavailable, StoredResponse::new(503, "down"));
                s.at(NodeId::Client(0), Event::GaveUp { op: OpId(op), reason: "attempts".into() });
            }
        }
        s.end();
        s
    }

    #[test]
    fn a_run_that_acknowledges_enough_is_clean() {
        let s = run(5, 5);
        assert!(check(&s.history).is_empty());
        let o = Outcomes::of(&s.history);
        assert_eq!((o.operations, o.acknowledged, o.gave_up, o.errors), (10, 5, 5, 0));
    }

    /// Operations that gave up while the faults were on are excused.
    #[test]
    fn give_ups_under_faults_are_excused() {
        let mut s = run(0, 4);
        let heal = s.history.entries.iter().position(|e| matches!(e.event, Event::Phase { phase: Phase::Heal }));
        let heal = s.history.entries.remove(heal.unwrap());
        s.history.entries.push(heal);
        assert!(check(&s.history).is_empty());
    }

    #[test]
    fn a_run_that_mostly_gives_up_breaks_progress() {
        let s = run(2, 8);
        let v = check(&s.history);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].property, Property::Progress);
        assert!(v[0].explanation.starts_with("only 2 of 10 operations (20%)"), "{}", v[0]);
        assert_eq!(v[0].events.len(), 4, "three give-ups and the end");
    }
}
