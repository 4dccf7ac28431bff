//! Property 7: retry discipline. A client retries only transient failures,
//! reuses the key, waits within the full-jitter bound and at least the
//! `Retry-After`, stays within the attempt cap, the total deadline and its
//! token-bucket budget; and sends per operation stay under the amplification
//! bound.

use super::Lookup;
use super::{Property, Violation};
use crate::history::{Event, History, RetryCause};
use crate::ids::{IdempotencyKey, NodeId, OpId, RequestId, SimTime};
use crate::retry::{is_transient_status, TokenBucket};

struct First<'h> {
    at: SimTime,
    key: Option<&'h IdempotencyKey>,
}

pub(super) fn check(history: &History, index: &super::Index) -> Vec<Violation> {
    let policy = &history.meta.retry;
    let mut first: Lookup<OpId, First> = crate::lookup::lookup(index.sends());
    let mut scheduled: Lookup<OpId, (usize, SimTime, u64)> = crate::lookup::lookup(index.sends());
    let mut retry_after: Lookup<RequestId, (usize, u64)> = crate::lookup::lookup(index.sends());
    let mut buckets: Lookup<NodeId, TokenBucket> = Lookup::default();
    let mut out = Vec::new();
    let mut flag = |events: Vec<usize>, why: String| out.push(Violation::new(Property::RetryDiscipline, events, why));
    // Answers, retries and sends are all the clients'.
    for (i, entry) in index.client_entries(history) {
        match &entry.event {
            Event::ResponseReceived { req, retry_after_ms: Some(ms), .. } => {
                retry_after.insert(*req, (i, *ms));
            }
            Event::RetryScheduled { req, wait_ms, cause } => {
                let next = req.try_no.0 + 1;
                if let RetryCause::Status(s) = cause {
                    if (400..500).contains(s) && !is_transient_status(*s) {
                        flag(vec![i], format!("{req} got {s}, which is not transient, and was retried"));
                    }
                }
                let hint = retry_after.get(req).copied();
                if let Some((at, ms)) = hint {
                    if *wait_ms < ms {
                        flag(
                            vec![at, i],
                            format!("{req}: retry wait {wait_ms} ms is shorter than Retry-After {ms} ms"),
                        );
                    }
                }
                // Retry-After wins over the jitter bound when it is longer.
                let bound = policy.backoff_max_ms(next).max(hint.map_or(0, |(_, ms)| ms));
                if *wait_ms > bound {
                    flag(vec![i], format!("{req}: retry wait {wait_ms} ms exceeds the full-jitter bound {bound} ms"));
                }
                let bucket = buckets.entry(entry.node).or_insert_with(|| TokenBucket::new(&policy.budget));
                if !bucket.try_spend() {
                    flag(vec![i], format!("{req}: retry scheduled with the retry budget of {} exhausted", entry.node));
                }
                scheduled.insert(req.op, (i, entry.at, *wait_ms));
            }
            Event::RequestSent { req, request, .. } if req.try_no.0 <= 1 => {
                first.insert(req.op, First { at: entry.at, key: request.key.as_ref() });
                buckets.entry(entry.node).or_insert_with(|| TokenBucket::new(&policy.budget)).on_first_send();
            }
            Event::RequestSent { req, request, .. } => {
                if req.try_no.0 > policy.attempts_max {
                    flag(vec![i], format!("{req} exceeds the cap of {} sends", policy.attempts_max));
                }
                match scheduled.remove(&req.op) {
                    None => flag(vec![i], format!("{req} was sent with no scheduled backoff")),
                    Some((at, when, wait)) if entry.at.since_ms(when) < wait => flag(
                        vec![at, i],
                        format!("{req} was sent {} ms after scheduling a wait of {wait} ms", entry.at.since_ms(when)),
                    ),
                    Some(_) => {}
                }
                if let Some(f) = first.get(&req.op) {
                    if entry.at.since_ms(f.at) > policy.deadline_ms {
                        flag(
                            vec![i],
                            format!(
                                "{req} was sent {} ms after the first send, past the {} ms deadline",
                                entry.at.since_ms(f.at),
                                policy.deadline_ms
                            ),
                        );
                    }
                    if f.key != request.key.as_ref() {
                        flag(vec![i], format!("{req} used a different idempotency key than its first send: a new key is a new operation"));
                    }
                }
            }
            _ => {}
        }
    }
    out.extend(amplification(history, index, first.len()));
    out.extend(synchronised(history, index));
    out
}

/// Retries below this many say nothing about jitter.
const JITTER_SAMPLE_MIN: usize = 10;

/// Full jitter draws each wait uniformly from `[0, bound]`, so a wait lands
/// exactly on its bound about once in `bound + 1` draws. When most waits do,
/// the clients are not jittering: clients that failed together retry
/// together. The violation reports the measured burst, the most retry
/// sends in one millisecond.
fn synchronised(history: &History, index: &super::Index) -> Option<Violation> {
    let policy = &history.meta.retry;
    let mut hints: Lookup<RequestId, u64> = crate::lookup::lookup(index.sends());
    let (mut jittered, mut on_bound, mut example) = (0usize, 0usize, None);
    // Only its largest count is read: no order reaches the verdict.
    let mut per_ms: Lookup<SimTime, usize> = crate::lookup::lookup(index.sends());
    // Answers, retries and sends are all the clients'.
    for (i, entry) in index.client_entries(history) {
        match &entry.event {
            Event::ResponseReceived { req, retry_after_ms: Some(ms), .. } => {
                hints.insert(*req, *ms);
            }
            Event::RetryScheduled { req, wait_ms, .. } => {
                let bound = policy.backoff_max_ms(req.try_no.0 + 1);
                if hints.get(req).is_some_and(|hint| *hint >= bound) {
                    continue; // Retry-After decides this wait, not jitter
                }
                jittered += 1;
                if *wait_ms == bound {
                    on_bound += 1;
                    example.get_or_insert(i);
                }
            }
            Event::RequestSent { req, .. } if req.try_no.0 > 1 => *per_ms.entry(entry.at).or_default() += 1,
            _ => {}
        }
    }
    if jittered < JITTER_SAMPLE_MIN || on_bound * 2 <= jittered {
        return None;
    }
    let burst = per_ms.values().max().copied().unwrap_or(0);
    Some(Violation::new(
        Property::RetryDiscipline,
        example.into_iter().collect(),
        format!(
            "{on_bound} of {jittered} backoff waits were exactly the backoff bound: no jitter, so clients that failed together retry together (up to {burst} retries in one millisecond)"
        ),
    ))
}

fn amplification(history: &History, index: &super::Index, ops: usize) -> Option<Violation> {
    let sends = index.client_entries(history).filter(|(_, e)| matches!(e.event, Event::RequestSent { .. })).count();
    let bound = history.meta.amplification_max_percent as usize;
    if ops == 0 || sends * 100 <= ops * bound {
        return None;
    }
    Some(Violation::new(
        Property::RetryDiscipline,
        vec![],
        format!("{sends} sends for {ops} operations: amplification {}% exceeds the bound {bound}%", sends * 100 / ops),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::testkit::*;
    use crate::history::Answer;
    use crate::request::StoredResponse;

    fn check_story(s: &Story) -> Vec<Violation> {
        check(&s.history, &crate::checker::Index::new(&s.history))
    }

    fn retry(s: &mut Story, r: RequestId, wait_ms: u64, cause: RetryCause) -> usize {
        s.at(NodeId::Client(0), Event::RetryScheduled { req: r, wait_ms, cause })
    }

    fn keyed() -> crate::Request {
        request("acme", Some("k1"), "/orders", "{}")
    }

    #[test]
    fn a_disciplined_retry_is_clean() {
        let mut s = Story::new();
        s.send(0, req(1, 1), keyed());
        s.wait(1000);
        s.at(NodeId::Client(0), Event::TimedOut { req: req(1, 1) });
        retry(&mut s, req(1, 1), 40, RetryCause::Timeout);
        s.wait(40);
        s.send(0, req(1, 2), keyed());
        assert!(check_story(&s).is_empty());
    }

    #[test]
    fn retrying_a_422_is_a_violation() {
        let mut s = Story::new();
        s.send(0, req(1, 1), keyed());
        s.received(0, req(1, 1), Answer::Mismatch, StoredResponse::new(422, "mismatch"));
        retry(&mut s, req(1, 1), 10, RetryCause::Status(422));
        s.wait(10);
        s.send(0, req(1, 2), keyed());
        let v = check_story(&s);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].explanation.contains("not transient"));
    }

    #[test]
    fn waits_beyond_jitter_or_under_retry_after_are_violations() {
        let mut s = Story::new();
        s.send(0, req(1, 1), keyed());
        s.at(
            NodeId::Client(0),
            Event::ResponseReceived {
                req: req(1, 1),
                answer: Answer::InFlight,
                response: StoredResponse::new(409, ""),
                retry_after_ms: Some(30),
            },
        );
        retry(&mut s, req(1, 1), 20, RetryCause::Status(409));
        s.wait(20);
        s.send(0, req(1, 2), keyed());
        retry(&mut s, req(1, 2), 101, RetryCause::Timeout); // bound for try 3 is 100
        s.wait(101);
        s.send(0, req(1, 3), keyed());
        let v = check_story(&s);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].explanation.contains("Retry-After"));
        assert!(v[1].explanation.contains("full-jitter"));
    }

    #[test]
    fn a_retry_after_longer_than_the_jitter_bound_wins() {
        let mut s = Story::new();
        s.send(0, req(1, 1), keyed());
        s.at(
            NodeId::Client(0),
            Event::ResponseReceived {
                req: req(1, 1),
                answer: Answer::InFlight,
                response: StoredResponse::new(409, ""),
                retry_after_ms: Some(900),
            },
        );
        retry(&mut s, req(1, 1), 900, RetryCause::Status(409));
        s.wait(900);
        s.send(0, req(1, 2), keyed());
        assert_eq!(check_story(&s), vec![]);
    }

    #[test]
    fn a_new_key_an_early_send_and_an_unscheduled_retry_are_violations() {
        let mut s = Story::new();
        s.send(0, req(1, 1), keyed());
        retry(&mut s, req(1, 1), 40, RetryCause::Timeout);
        s.wait(10);
        s.send(0, req(1, 2), request("acme", Some("k2"), "/orders", "{}"));
        s.send(0, req(1, 3), keyed());
        let v = check_story(&s);
        let text: Vec<String> = v.iter().map(|v| v.explanation.clone()).collect();
        assert_eq!(v.len(), 3, "{text:?}");
        assert!(text[0].contains("10 ms after scheduling"));
        assert!(text[1].contains("different idempotency key"));
        assert!(text[2].contains("no scheduled backoff"));
    }

    #[test]
    fn an_exhausted_budget_and_the_deadline_are_enforced() {
        let mut s = Story::new().meta(|m| {
            m.retry.budget.tokens_max = 1;
            m.retry.budget.deposit_milli = 0;
            m.retry.deadline_ms = 100;
        });
        s.send(0, req(1, 1), keyed());
        for try_no in 1..3 {
            retry(&mut s, req(1, try_no), 50, RetryCause::Timeout);
            s.wait(60);
            s.send(0, req(1, try_no + 1), keyed());
        }
        let v = check_story(&s);
        let text: Vec<String> = v.iter().map(|v| v.explanation.clone()).collect();
        assert_eq!(v.len(), 2, "{text:?}");
        assert!(text[0].contains("budget"));
        assert!(text[1].contains("deadline"));
    }

    #[test]
    fn waits_always_on_the_bound_are_reported_as_missing_jitter() {
        let run = |jitter: bool| {
            let mut s = Story::new();
            for op in 1..=12 {
                let r = RequestId { op: OpId(op), try_no: crate::ids::Try(1) };
                s.send(0, r, keyed());
                let wait = if jitter { u64::from(op) } else { 50 };
                retry(&mut s, r, wait, RetryCause::Timeout);
            }
            check_story(&s)
        };
        let v = run(false);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].explanation.contains("12 of 12 backoff waits"), "{}", v[0].explanation);
        assert!(run(true).is_empty());
    }

    #[test]
    fn amplification_above_the_bound_is_a_violation() {
        let mut s = Story::new().meta(|m| m.amplification_max_percent = 150);
        s.send(0, req(1, 1), keyed());
        for try_no in 1..3 {
            retry(&mut s, req(1, try_no), 0, RetryCause::Timeout);
            s.send(0, req(1, try_no + 1), keyed());
        }
        let v = check_story(&s);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].explanation.contains("amplification 300%"));
    }
}
