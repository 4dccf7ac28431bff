//! Property 3: no write of attempt `a` is accepted after an attempt `> a` was
//! granted for that key, and every takeover grants a strictly larger attempt
//! (otherwise two holders share one fencing token). No two executions start
//! holding the same attempt of one record.
//!
//! A write is judged by the attempt its writer holds (the one its
//! execution started with), not only by the attempt the write names: a
//! completion that ignores its attempt ("unfenced") lands under the new
//! holder's attempt, and is still a stale holder's write.
//!
//! A record is judged for its whole life: after it is released or swept,
//! no write is accepted until a claim makes it again (a store whose
//! update revives the row lets a stale holder's completion land there).

use super::Lookup;
use super::{Index, Property, RecordId, Violation};
use crate::history::{Event, History, Origin};
use crate::ids::{Attempt, Scope};

/// Per record (by [`RecordId`]): the highest attempt granted in its current
/// lifetime and where, and the executions started in it.
#[derive(Clone, Default)]
struct Lifetime {
    granted: Option<(Attempt, usize)>,
    started: Vec<(Attempt, usize)>,
    /// Released or swept at this entry, and no claim since.
    gone: Option<(usize, &'static str)>,
}

pub(super) fn check(history: &History, index: &Index) -> Vec<Violation> {
    let mut records: Vec<Lifetime> = vec![Lifetime::default(); index.record_count()];
    // The attempt each writer's execution of a record started with.
    let mut held: Lookup<(&Origin, RecordId), Attempt> = crate::lookup::lookup(index.sends());
    let mut out = Vec::new();
    for (i, entry) in index.record_entries(history) {
        let Some(record) = index.record(i) else { continue };
        let life = &mut records[record.get()];
        if let Some((by, scope, attempt, what)) = accepted_write(&entry.event) {
            let w = writer(&held, by, record, attempt);
            after_gone(life.gone, scope, w, i, what, &mut out);
            stale(life.granted, scope, w, i, what, &mut out);
        }
        let granted = &mut life.granted;
        match &entry.event {
            Event::Claimed { attempt, .. } => {
                *granted = Some((*attempt, i));
                life.gone = None;
            }
            Event::TakenOver { scope, attempt, .. } => {
                if let Some((max, at)) = *granted {
                    if *attempt <= max {
                        out.push(Violation::new(
                            Property::Fencing,
                            vec![at, i],
                            format!("takeover of {scope} granted attempt {attempt} but {max} was already granted at #{at}: two holders share a fencing token"),
                        ));
                    }
                }
                let top = granted.map_or(*attempt, |(max, _)| max.max(*attempt));
                *granted = Some((top, i));
            }
            Event::ExecutionStarted { by, scope, attempt } => {
                held.insert((by, record), *attempt);
                // A holder that starts after its record was released or
                // swept holds nothing: its writes are judged (and fenced)
                // as stale, but it shares no token with the next record.
                if granted.is_none() {
                    continue;
                }
                let first = match life.started.iter_mut().find(|(a, _)| a == attempt) {
                    Some((_, at)) => Some(std::mem::replace(at, i)),
                    None => {
                        life.started.push((*attempt, i));
                        None
                    }
                };
                if let Some(first) = first {
                    out.push(Violation::new(
                        Property::Fencing,
                        vec![first, i],
                        format!("two executions of {scope} hold attempt {attempt} (the first started at #{first}): they share a fencing token"),
                    ));
                }
            }
            Event::Released { .. } => {
                *life = Lifetime { gone: Some((i, "released")), ..Lifetime::default() };
            }
            Event::RecordSwept { .. } => {
                *life = Lifetime { gone: Some((i, "swept")), ..Lifetime::default() };
            }
            _ => {}
        }
    }
    out
}

/// A write the store accepted: its writer, record, the attempt it names,
/// and what it wrote.
fn accepted_write(event: &Event) -> Option<(&Origin, &Scope, Attempt, &'static str)> {
    match event {
        Event::RecoveryPointWritten { by, scope, attempt, .. } => Some((by, scope, *attempt, "recovery point")),
        Event::LocalEffectCommitted { by, scope, attempt, .. } => Some((by, scope, *attempt, "local effect")),
        Event::CompletionWritten { by, scope, attempt, .. } => Some((by, scope, *attempt, "completion")),
        Event::Released { by, scope, attempt } => Some((by, scope, *attempt, "release")),
        _ => None,
    }
}

/// The attempt a write was made under, and the one its writer holds
/// (when the writer's execution was recorded).
#[derive(Clone, Copy)]
struct Written {
    named: Attempt,
    held: Attempt,
}

fn writer(held: &Lookup<(&Origin, RecordId), Attempt>, by: &Origin, record: RecordId, named: Attempt) -> Written {
    let holds = held.get(&(by, record)).copied().unwrap_or(named);
    Written { named, held: holds.min(named) }
}

/// A write accepted on a record that was released or swept, before any
/// claim made it again: the store revived a row it had let go.
fn after_gone(
    gone: Option<(usize, &'static str)>,
    scope: &Scope,
    written: Written,
    i: usize,
    what: &str,
    out: &mut Vec<Violation>,
) {
    let Some((at, how)) = gone else { return };
    out.push(Violation::new(
        Property::Fencing,
        vec![at, i],
        format!(
            "{what} of {scope} by attempt {} was accepted after the record was {how} at #{at}, with no claim since: a write on a record that is gone must be fenced",
            written.held
        ),
    ));
}

fn stale(
    granted: Option<(Attempt, usize)>,
    scope: &Scope,
    written: Written,
    i: usize,
    what: &str,
    out: &mut Vec<Violation>,
) {
    let Some((max, at)) = granted else {
        return;
    };
    let attempt = written.held;
    if attempt >= max {
        return;
    }
    let named = match written.named == attempt {
        true => String::new(),
        false => format!(" (written as attempt {}: the write ignored its attempt)", written.named),
    };
    out.push(Violation::new(
        Property::Fencing,
        vec![at, i],
        format!(
            "{what} of {scope} by stale attempt {attempt}{named} was accepted after attempt {max} was granted at #{at}"
        ),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(history: &History) -> Vec<Violation> {
        check(history, &Index::new(history))
    }
    use crate::checker::testkit::*;

    #[test]
    fn a_fenced_takeover_is_clean() {
        let mut s = Story::new();
        s.claimed(by(1, 1), &scope(), "f");
        s.wait(2000);
        s.taken_over(by(1, 2), &scope(), 2);
        s.completed(by(1, 2), &scope(), 2, ok("x"));
        assert!(judge(&s.history).is_empty());
    }

    #[test]
    fn a_stale_completion_accepted_after_takeover_is_a_violation() {
        let mut s = Story::new();
        s.claimed(by(1, 1), &scope(), "f");
        s.wait(2000);
        let takeover = s.taken_over(by(1, 2), &scope(), 2);
        let stale = s.completed(by(1, 1), &scope(), 1, ok("late"));
        let v = judge(&s.history);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].events, vec![takeover, stale]);
        assert!(v[0].explanation.contains("stale attempt #1"), "{}", v[0]);
    }

    #[test]
    fn a_takeover_without_bump_is_a_violation() {
        let mut s = Story::new();
        s.claimed(by(1, 1), &scope(), "f");
        s.wait(2000);
        s.taken_over(by(1, 2), &scope(), 1);
        let v = judge(&s.history);
        assert_eq!(v.len(), 1);
        assert!(v[0].explanation.contains("share a fencing token"));
    }

    #[test]
    fn two_executions_with_one_attempt_are_a_violation() {
        let mut s = Story::new();
        let start = |s: &mut Story, op| {
            s.at(
                crate::NodeId::Server(0),
                Event::ExecutionStarted { by: by(op, 1), scope: scope(), attempt: crate::Attempt(1) },
            )
        };
        s.claimed(by(1, 1), &scope(), "f");
        let first = start(&mut s, 1);
        let second = start(&mut s, 2);
        let v = judge(&s.history);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].events, vec![first, second]);
        assert!(v[0].explanation.contains("two executions"));
    }

    #[test]
    fn a_stale_holder_writing_under_the_new_attempt_is_a_violation() {
        let mut s = Story::new();
        s.claimed(by(1, 1), &scope(), "f");
        s.at(
            crate::NodeId::Server(0),
            Event::ExecutionStarted { by: by(1, 1), scope: scope(), attempt: crate::Attempt(1) },
        );
        s.wait(2000);
        let takeover = s.taken_over(by(2, 1), &scope(), 2);
        let stale = s.completed(by(1, 1), &scope(), 2, ok("late"));
        let v = judge(&s.history);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].events, vec![takeover, stale]);
        assert!(v[0].explanation.contains("ignored its attempt"), "{}", v[0]);
    }

    #[test]
    fn a_release_ends_the_lifetime() {
        let mut s = Story::new();
        s.claimed(by(1, 1), &scope(), "f");
        s.taken_over(by(1, 2), &scope(), 2);
        s.at(crate::NodeId::Db, Event::Released { by: by(1, 2), scope: scope(), attempt: crate::Attempt(2) });
        s.claimed(by(2, 1), &scope(), "g");
        s.completed(by(2, 1), &scope(), 1, ok("x"));
        assert!(judge(&s.history).is_empty());
    }

    #[test]
    fn a_completion_accepted_after_a_release_or_a_sweep_is_a_violation() {
        for (gone, how) in [
            (Event::Released { by: by(1, 1), scope: scope(), attempt: crate::Attempt(1) }, "released"),
            (
                Event::RecordSwept {
                    scope: scope(),
                    created_at: crate::SimTime(0),
                    completed: true,
                    as_of: Some(crate::SimTime(10)),
                },
                "swept",
            ),
        ] {
            let mut s = Story::new();
            s.claimed(by(1, 1), &scope(), "f");
            let at = s.at(crate::NodeId::Db, gone);
            let late = s.completed(by(1, 1), &scope(), 1, ok("late"));
            let v = judge(&s.history);
            assert_eq!(v.len(), 1, "{v:?}");
            assert_eq!(v[0].events, vec![at, late]);
            assert!(v[0].explanation.contains(&format!("after the record was {how}")), "{}", v[0]);
        }
    }

    /// A holder of a released record that starts late, then a new record
    /// for the key (a retry after the window): two lifetimes, two attempt
    /// #1s, no shared token.
    #[test]
    fn a_new_record_counts_attempts_afresh() {
        let start = |s: &mut Story, op| {
            let e = Event::ExecutionStarted { by: by(op, 1), scope: scope(), attempt: crate::Attempt(1) };
            s.at(crate::NodeId::Server(0), e)
        };
        let mut s = Story::new();
        s.claimed(by(1, 1), &scope(), "f");
        s.taken_over(Origin::Reconciler, &scope(), 2);
        s.at(crate::NodeId::Db, Event::Released { by: Origin::Reconciler, scope: scope(), attempt: crate::Attempt(2) });
        start(&mut s, 1);
        s.claimed(by(2, 1), &scope(), "f");
        start(&mut s, 2);
        assert!(judge(&s.history).is_empty(), "{:?}", judge(&s.history));
    }
}
