//! Property 8: no record is swept before the documented window, no unfinished
//! record is swept (that loses recovery), and no key is executed again inside
//! the window of its completed record.

use super::{Index, Property, Violation};
use crate::history::{Event, History};
use crate::ids::SimTime;

pub(super) fn check(history: &History, index: &Index) -> Vec<Violation> {
    let window = history.meta.expiry_window_ms;
    // Per record: creation of its current lifetime, and whether it completed.
    let mut lifetimes: Vec<Option<(usize, SimTime, bool)>> = vec![None; index.record_count()];
    let mut out = Vec::new();
    for (i, entry) in index.record_entries(history) {
        let Some(record) = index.record(i) else { continue };
        let lifetime = &mut lifetimes[record.get()];
        match &entry.event {
            Event::Claimed { scope, .. } => {
                if let Some((at, created, true)) = *lifetime {
                    // The sweeper judges age by its own clock against the
                    // claimer's: they may disagree by the skew bound.
                    if entry.at.plus_ms(history.meta.clock_skew_max_ms) < created.plus_ms(window) {
                        out.push(Violation::new(
                            Property::Expiry,
                            vec![at, i],
                            format!("{scope} was executed again {} ms after its completed record was created, inside the {window} ms window", entry.at.since_ms(created)),
                        ));
                    }
                }
                *lifetime = Some((i, entry.at, false));
            }
            Event::CompletionWritten { .. } => {
                if let Some(life) = lifetime {
                    life.2 = true;
                }
            }
            Event::Released { .. } => *lifetime = None,
            Event::RecordSwept { scope, created_at, completed, as_of } => {
                if !completed {
                    out.push(Violation::new(
                        Property::Expiry,
                        vec![i],
                        format!("{scope} was swept while in_progress: its recovery is lost"),
                    ));
                }
                // The age the store judged: the sweeper's clock against the
                // created_at the record stores, both as they were.
                let age = as_of.unwrap_or(entry.at).since_ms(*created_at);
                if age < window {
                    out.push(Violation::new(
                        Property::Expiry,
                        vec![i],
                        format!("{scope} was swept {age} ms after creation, before the documented {window} ms window"),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::*;
    use crate::ids::NodeId;

    const DAY: u64 = 86_400_000;

    fn swept(s: &mut Story, created_at: u64, completed: bool) -> usize {
        s.at(
            NodeId::Sweeper,
            Event::RecordSwept { scope: scope(), created_at: SimTime(created_at), completed, as_of: None },
        )
    }

    #[test]
    fn a_sweep_after_the_window_and_a_later_execution_are_clean() {
        let mut s = Story::new();
        s.claimed(by(1, 1), &scope(), "f");
        s.completed(by(1, 1), &scope(), 1, ok("x"));
        s.wait(DAY);
        swept(&mut s, 0, true);
        s.claimed(by(2, 1), &scope(), "f");
        assert!(check(&s.history, &Index::new(&s.history)).is_empty());
    }

    #[test]
    fn an_early_sweep_and_a_reexecution_inside_the_window_are_violations() {
        let mut s = Story::new();
        s.claimed(by(1, 1), &scope(), "f");
        s.completed(by(1, 1), &scope(), 1, ok("x"));
        s.wait(3_600_000);
        swept(&mut s, 0, true);
        s.claimed(by(1, 2), &scope(), "f");
        let v = check(&s.history, &Index::new(&s.history));
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].explanation.contains("before the documented"));
        assert!(v[1].explanation.contains("executed again"));
    }

    #[test]
    fn sweeping_an_unfinished_record_is_a_violation() {
        let mut s = Story::new();
        s.claimed(by(1, 1), &scope(), "f");
        s.wait(2 * DAY);
        swept(&mut s, 0, false);
        let v = check(&s.history, &Index::new(&s.history));
        assert_eq!(v.len(), 1);
        assert!(v[0].explanation.contains("recovery is lost"));
    }
}
