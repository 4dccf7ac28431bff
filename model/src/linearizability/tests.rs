//! The checker and the shrinker on hand-written histories.

use super::*;
use crate::record::RecordState;
use crate::StoredResponse;

fn scope() -> Scope {
    Scope::new("acme", "k1")
}

fn fp() -> Fingerprint {
    Fingerprint::of("POST", "/orders", b"{}")
}

fn op(caller: u32, call: Call, span: (u64, u64), answer: Answer) -> Operation {
    Operation { caller, call, invoked_ns: span.0, returned_ns: Some(span.1), answer: Some(answer) }
}

fn claim(caller: u32, span: (u64, u64), answer: Claim) -> Operation {
    let call = Call::Claim { scope: scope(), fingerprint: fp(), now: SimTime(0), lease_ms: 1_000 };
    op(caller, call, span, Answer::Claim(answer))
}

fn complete(caller: u32, span: (u64, u64), attempt: u32, outcome: WriteOutcome) -> Operation {
    let completion = Completion { response: StoredResponse::new(201, "{}"), local_effect: None, outbox: Vec::new() };
    let call = Call::Complete { scope: scope(), attempt: Attempt(attempt), completion };
    op(caller, call, span, Answer::Write(outcome))
}

fn in_progress() -> Record {
    let state = RecordState::InProgress { attempt: Attempt(1), locked_until: SimTime(1_000), recovery_point: None };
    Record { fingerprint: fp(), created_at: SimTime(0), state }
}

#[test]
fn overlapping_claims_are_ordered_by_their_answers() {
    // The second claim overlaps the first and found its record: the
    // order first, then second explains both.
    let h = [claim(0, (0, 10), Claim::Owned(Attempt(1))), claim(1, (5, 15), Claim::Existing(in_progress()))];
    assert_eq!(check(&h, 10_000), Verdict::Linearizable);
    // Reversed real time: the finder returned before the owner began.
    let h = [claim(1, (0, 4), Claim::Existing(in_progress())), claim(0, (5, 10), Claim::Owned(Attempt(1)))];
    assert!(matches!(check(&h, 10_000), Verdict::NotLinearizable { .. }));
}

#[test]
fn two_owners_of_one_key_are_caught_and_shrink_to_the_pair() {
    let mut h = vec![claim(0, (0, 10), Claim::Owned(Attempt(1))), claim(1, (2, 12), Claim::Owned(Attempt(1)))];
    h.push(complete(0, (20, 30), 1, WriteOutcome::Applied));
    h.push(op(2, Call::Read { scope: Scope::new("acme", "k2") }, (0, 1), Answer::Record(None)));
    let Verdict::NotLinearizable { scope: s, operations } = check(&h, 10_000) else { panic!("caught") };
    assert_eq!(s, scope());
    // The completion after both claims is not needed to show it.
    let witness = shrink(&h, &scope(), &operations, 10_000);
    assert_eq!(witness.operations, h[..2].to_vec());
    assert_eq!((witness.before, witness.callers()), (0, vec![0, 1]));
}

#[test]
fn a_lost_answer_may_or_may_not_have_taken_effect() {
    // A completion whose answer was lost, then a read that saw it done:
    // it took effect.
    let mut lost = complete(0, (20, 30), 1, WriteOutcome::Applied);
    (lost.returned_ns, lost.answer) = (None, None);
    let read = |answer| op(1, Call::Read { scope: scope() }, (40, 50), Answer::Record(answer));
    let mut done = in_progress();
    done.state = RecordState::Completed { response: StoredResponse::new(201, "{}"), attempt: Attempt(1) };
    let h = [claim(0, (0, 10), Claim::Owned(Attempt(1))), lost.clone(), read(Some(done))];
    assert_eq!(check(&h, 10_000), Verdict::Linearizable);
    // Or it did not.
    let h = [claim(0, (0, 10), Claim::Owned(Attempt(1))), lost, read(Some(in_progress()))];
    assert_eq!(check(&h, 10_000), Verdict::Linearizable);
}

#[test]
fn a_completion_applied_twice_is_caught() {
    let h = [
        claim(0, (0, 10), Claim::Owned(Attempt(1))),
        complete(0, (20, 30), 1, WriteOutcome::Applied),
        complete(1, (40, 50), 1, WriteOutcome::Applied),
    ];
    assert!(matches!(check(&h, 10_000), Verdict::NotLinearizable { .. }));
}

#[test]
fn a_budget_too_small_says_unknown_not_clean() {
    let h: Vec<Operation> = (0..8).map(|c| claim(c, (0, 100), Claim::Existing(in_progress()))).collect();
    let mut h = h;
    h.push(claim(9, (0, 100), Claim::Owned(Attempt(1))));
    assert_eq!(check(&h, 10_000), Verdict::Linearizable);
    assert!(matches!(check(&h, 2), Verdict::Unknown { .. }));
}

#[test]
fn a_witness_starts_after_the_last_quiet_moment_from_the_states_before() {
    // A claim, its completion, then much later a completion applied
    // again by another attempt: the witness is that last write alone,
    // from the completed record the first two leave.
    let h = [
        claim(0, (0, 10), Claim::Owned(Attempt(1))),
        complete(0, (20, 30), 1, WriteOutcome::Applied),
        op(1, Call::Read { scope: scope() }, (35, 38), Answer::Record(None)),
        complete(1, (40, 50), 2, WriteOutcome::Applied),
    ];
    // The read that saw nothing is a wrong answer too; without it:
    let h: Vec<Operation> = [&h[..2], &h[3..]].concat();
    let Verdict::NotLinearizable { operations, .. } = check(&h, 10_000) else { panic!("caught") };
    let witness = shrink(&h, &scope(), &operations, 10_000);
    assert_eq!(witness.operations, h[2..].to_vec());
    assert_eq!(witness.before, 2);
    assert_eq!(witness.starts.len(), 1);
    assert!(witness.starts[0].read(&scope()).unwrap().is_completed());
}

#[test]
fn an_operation_whose_answer_was_lost_is_never_dropped() {
    // A lost claim may have made the record the later completion applied
    // to: dropping it would make a witness of a store that did nothing
    // wrong. Here, with it, an order explains everything.
    let mut lost = claim(0, (0, 10), Claim::Owned(Attempt(1)));
    (lost.returned_ns, lost.answer) = (None, None);
    let h = [lost, complete(0, (20, 30), 1, WriteOutcome::Applied)];
    assert_eq!(check(&h, 10_000), Verdict::Linearizable);
    assert!(!super::shrink::changes_nothing(&h[0]));
}

#[test]
fn a_sweep_is_judged_key_by_key_on_its_answer_cut_to_the_key() {
    let done = {
        let mut r = in_progress();
        r.state = RecordState::Completed { response: StoredResponse::new(201, "{}"), attempt: Attempt(1) };
        r
    };
    let other = Scope::new("acme", "k2");
    let sweep = |span, swept: Vec<(Scope, Record)>| {
        op(2, Call::Sweep { now: SimTime(5_000), window_ms: 1_000 }, span, Answer::Swept(swept))
    };
    let base = [claim(0, (0, 10), Claim::Owned(Attempt(1))), complete(0, (20, 30), 1, WriteOutcome::Applied)];
    // The sweep reports the old completed record (and one of another key,
    // which this key's part does not see): explained.
    let h = [&base[..], &[sweep((40, 50), vec![(other.clone(), done.clone()), (scope(), done.clone())])]].concat();
    assert_eq!(check(&h, 10_000), Verdict::Linearizable);
    // It says it deleted nothing of this key, though the record was
    // completed and past the window: no order explains that.
    let h = [&base[..], &[sweep((40, 50), vec![(other, done)])]].concat();
    let Verdict::NotLinearizable { scope: s, operations } = check(&h, 10_000) else { panic!("caught") };
    let witness = shrink(&h, &s, &operations, 10_000);
    assert!(witness.operations.iter().any(|o| matches!(o.call, Call::Sweep { .. })), "{witness:?}");
    assert!(witness.story(&s).to_string().contains("deleted nothing"));
}
