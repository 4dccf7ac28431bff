//! Progress: a protocol that keeps every safety property by never finishing
//! anything is useless. Each run counts how its operations ended
//! (acknowledged with a success, given up, answered with an error) and
//! fails when fewer were acknowledged than the scenario expects
//! (`RunMeta::progress_min_percent`).

use super::{Property, Violation};
use crate::history::{Entry, Event, History, Phase};
use crate::ids::OpId;
use serde::{Deserialize, Serialize};

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
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum End {
    Pending,
    Acknowledged,
    GaveUp(usize),
}

impl Outcomes {
    /// Counts a history's operations.
    pub fn of(history: &History) -> Outcomes {
        Outcomes::of_ends(&ends(history.entries.iter().enumerate(), history.entries.len()))
    }

    /// Counts operations from how each ended (see [`super::Index::op_ends`]).
    pub(crate) fn of_ends(ends: &[(OpId, End)]) -> Outcomes {
        let mut o = Outcomes { operations: ends.len() as u64, ..Outcomes::default() };
        for (_, end) in ends {
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

/// How each operation ended, in operation order.
/// `entries` are the history's, or any part of them that holds its sends,
/// successes and give-ups (see [`super::Index::client_entries`]).
pub(super) fn ends<'h>(entries: impl Iterator<Item = (usize, &'h Entry)>, len: usize) -> Vec<(OpId, End)> {
    let mut ends: Vec<(OpId, End)> = Vec::new();
    let mut slots: super::Lookup<OpId, usize> = crate::lookup::lookup(len / 8);
    for (i, entry) in entries {
        let op = match &entry.event {
            Event::RequestSent { req, .. } => req.op,
            Event::ResponseReceived { req, response, .. } if (200..300).contains(&response.status) => req.op,
            Event::GaveUp { op, .. } => *op,
            _ => continue,
        };
        let slot = *slots.entry(op).or_insert_with(|| {
            ends.push((op, End::Pending));
            ends.len() - 1
        });
        let end = &mut ends[slot].1;
        match &entry.event {
            Event::ResponseReceived { .. } => *end = End::Acknowledged,
            Event::GaveUp { .. } if *end != End::Acknowledged => *end = End::GaveUp(i),
            _ => {}
        }
    }
    ends.sort_unstable_by_key(|(op, _)| *op);
    ends
}

/// Judged on the operations first sent after the faults healed: heavy
/// enough faults may defeat any protocol while they last (a seed of the
/// correct protocol may lose every operation to a database that stays
/// down), but an operation that starts in a healthy system and is not
/// refused (400, 422: the protocol answering as it should) must succeed.
/// Of those, at least `progress_min_percent` must have been acknowledged,
/// and a single give-up never fails a run.
pub(super) fn check(history: &History, index: &super::Index) -> Vec<Violation> {
    let min = u64::from(history.meta.progress_min_percent);
    let heal = history.entries.iter().position(|e| matches!(e.event, Event::Phase { phase: Phase::Heal }));
    let Some(heal) = heal else { return Vec::new() };
    let (mut acknowledged, mut gave_up) = (0u64, Vec::new());
    for &(op, end) in index.op_ends(history) {
        if index.first_send(op).is_none_or(|at| at < heal) {
            continue;
        }
        match end {
            End::Acknowledged => acknowledged += 1,
            End::GaveUp(i) => gave_up.push(i),
            End::Pending => {}
        }
    }
    // One give-up is not a pattern: a client may come out of the faults
    // with its retry budget spent (1 seed in 20,000 of the default run).
    let wanted = acknowledged + gave_up.len() as u64;
    if gave_up.len() < 2 || acknowledged * 100 >= min * wanted {
        return Vec::new();
    }
    // The first give-ups, and the end of the run where the count is final.
    let mut events: Vec<usize> = gave_up.iter().copied().take(3).collect();
    let end = history.entries.iter().rposition(|e| matches!(e.event, Event::Phase { phase: Phase::End }));
    events.extend(end.or(history.entries.len().checked_sub(1)));
    vec![Violation::new(
        Property::Progress,
        events,
        format!(
            "of {wanted} operations sent after the faults healed, only {acknowledged} ({}%) were acknowledged and {} gave up, below the {min}% expected",
            acknowledged * 100 / wanted,
            gave_up.len()
        ),
    )]
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

    fn check_story(s: &Story) -> Vec<Violation> {
        check(&s.history, &crate::checker::Index::new(&s.history))
    }

    #[test]
    fn a_run_that_acknowledges_enough_is_clean() {
        let s = run(5, 5);
        assert!(check_story(&s).is_empty());
        let o = Outcomes::of(&s.history);
        assert_eq!((o.operations, o.acknowledged, o.gave_up, o.errors), (10, 5, 5, 0));
    }

    /// Operations first sent while the faults were on are excused.
    #[test]
    fn give_ups_under_faults_are_excused() {
        let mut s = run(0, 4);
        assert_eq!(check_story(&run(0, 1)), vec![], "one give-up is not a pattern");
        let heal = s.history.entries.iter().position(|e| matches!(e.event, Event::Phase { phase: Phase::Heal }));
        let heal = s.history.entries.remove(heal.unwrap());
        s.history.entries.push(heal);
        assert!(check_story(&s).is_empty());
    }

    #[test]
    fn a_run_that_mostly_gives_up_breaks_progress() {
        let s = run(2, 8);
        let v = check_story(&s);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].property, Property::Progress);
        assert!(
            v[0].explanation.starts_with("of 10 operations sent after the faults healed, only 2 (20%)"),
            "{}",
            v[0]
        );
        assert_eq!(v[0].events.len(), 4, "three give-ups and the end");
    }
}
