//! Plain-words rendering of history events, for timelines, stories and logs.

use idemsim_model::history::{Answer, Fault, Origin, Phase, RetryCause, WriteKind};
use idemsim_model::{Event, History, SimTime, StoredResponse};
use std::fmt::Write as _;

fn who(origin: &Origin) -> String {
    match origin {
        Origin::Request { req, copy: 1 } => req.to_string(),
        Origin::Request { req, copy } => format!("{req} (copy {copy})"),
        Origin::Reconciler => "reconciler".into(),
        Origin::Sweeper => "sweeper".into(),
        Origin::Relay => "relay".into(),
    }
}

fn response(r: &StoredResponse) -> String {
    let body = r.body.lossy();
    let body = if body.len() > 72 { format!("{}...", &body[..body.floor_char_boundary(72)]) } else { body };
    format!("{} {body}", r.status)
}

fn answer(a: Answer) -> &'static str {
    match a {
        Answer::Executed => "executed",
        Answer::Replayed => "replayed",
        Answer::MissingKey => "missing key",
        Answer::Mismatch => "fingerprint mismatch",
        Answer::InFlight => "in flight",
        Answer::Invalid => "invalid, not stored",
        Answer::LeaseLost => "lease lost",
        Answer::Unavailable => "unavailable",
        Answer::Unknown => "seen from outside",
    }
}

/// One event in a few plain words.
pub fn describe(event: &Event) -> String {
    match event {
        Event::RequestSent { req, to, request } => {
            let key = request.key.as_ref().map_or("no key".to_string(), |k| format!("key {}", k.0));
            format!("sends {req} {} {} for {} ({key}) to {to}", request.method, request.path, request.caller.0)
        }
        Event::RequestReceived { req, copy: 1, fingerprint } => format!("receives {req} (fingerprint {fingerprint})"),
        Event::RequestReceived { req, copy, fingerprint } => {
            format!("receives {req} again, copy {copy} (fingerprint {fingerprint})")
        }
        Event::ResponseSent { req, answer: a, response: r, .. } => {
            format!("answers {req}: {} ({})", response(r), answer(*a))
        }
        Event::ResponseReceived { req, response: r, .. } => format!("gets {}  for {req}", response(r)),
        Event::TimedOut { req } => format!("times out waiting for {req}"),
        Event::RetryScheduled { req, wait_ms, cause } => {
            let cause = match cause {
                RetryCause::Timeout => "a timeout".to_string(),
                RetryCause::Status(s) => format!("a {s}"),
            };
            format!("will retry {req} in {wait_ms} ms after {cause}")
        }
        Event::GaveUp { op, reason } => format!("gives up on op{}: {reason}", op.0),
        Event::Claimed { by, scope, attempt, locked_until, .. } => {
            // After a release the key's tombstone keeps its attempt count,
            // so a new record's first attempt can be #2 or more.
            let counted = if attempt.0 > 1 { " (counting on from the released record)" } else { "" };
            let lease = lease_until(*locked_until);
            format!("{} claims {scope}: new record, attempt {attempt}{counted}, {lease}", who(by))
        }
        Event::ClaimFound { by, scope, record, .. } => {
            let state = if record.is_completed() { "completed" } else { "in progress" };
            format!("{} finds {scope} {state} (attempt {})", who(by), record.attempt())
        }
        Event::TakenOver { by, scope, attempt, locked_until } => {
            format!("{} takes over {scope} with attempt {attempt}, {}", who(by), lease_until(*locked_until))
        }
        Event::TakeoverRefused { by, scope, expected } => {
            format!("{} is refused the takeover of {scope} (expected {expected})", who(by))
        }
        Event::ExecutionStarted { by, scope, attempt } => {
            format!("{} starts executing {scope} holding attempt {attempt}", who(by))
        }
        Event::RecoveryPointWritten { by, scope, attempt, downstream_key } => {
            format!(
                "{} writes recovery point of {scope} (attempt {attempt}, downstream key {})",
                who(by),
                downstream_key.0
            )
        }
        Event::LocalEffectCommitted { by, scope, attempt, effect_id } => {
            format!("{} commits local effect {effect_id} for {scope} (attempt {attempt})", who(by))
        }
        Event::CompletionWritten { by, scope, attempt, response: r, .. } => {
            format!("{} completes {scope} with attempt {attempt}: stores {}", who(by), response(r))
        }
        Event::Released { by, scope, attempt } => {
            format!("{} releases {scope} (attempt {attempt}): nothing stored", who(by))
        }
        Event::WriteFenced { by, scope, attempt, write } => {
            let what = match write {
                WriteKind::RecoveryPoint => "recovery point",
                WriteKind::Completion => "completion",
                WriteKind::Release => "release",
            };
            // Not "stale": the attempt may have lost a takeover, or the
            // record may simply be completed or released already.
            format!("refuses the {what} of {scope} by {}: attempt {attempt} does not hold the record", who(by))
        }
        Event::StoreFailed { by, op, error } => format!("store {op} for {} failed: {error}", who(by)),
        Event::StoreProbed(p) => {
            let (scope, probe, answer) = (&p.scope, p.probe.describe(), p.answer.describe());
            format!("is probed by a second service on {scope}: it {probe}; the store answers {answer}")
        }
        Event::RecordSwept { scope, completed, .. } => {
            format!("sweeps {scope} ({})", if *completed { "completed" } else { "IN PROGRESS" })
        }
        Event::DownstreamCalled { by, scope, attempt, downstream_key, .. } => {
            format!("is called by {} for {scope} (attempt {attempt}) with key {}", who(by), downstream_key.0)
        }
        Event::DownstreamEffect { scope, downstream_key } => {
            format!("performs the effect for {scope} (key {})", downstream_key.0)
        }
        Event::DownstreamAnswered { scope, downstream_key, status, retry_after_ms, delay_ms } => {
            let late = match delay_ms {
                0 => String::new(),
                ms => format!(", {ms} ms late"),
            };
            let key = &downstream_key.0;
            match (status, retry_after_ms) {
                (402, _) => format!("declines the charge for {scope} (key {key}) with 402{late}"),
                (status, Some(ms)) => format!(
                    "refuses the charge for {scope} (key {key}) with {status}, Retry-After {ms} ms: nothing charged{late}"
                ),
                (status, None) => format!("answers {status} for {scope} (key {key}){late}"),
            }
        }
        Event::OutboxStaged { by, scope, attempt, outbox } => {
            let ids: Vec<&str> = outbox.iter().map(|id| &*id.0).collect();
            format!("{} queues outbox message {} of {scope} on its own (attempt {attempt})", who(by), ids.join(", "))
        }
        Event::MessagePublished { id, .. } => format!("publishes message {}", id.0),
        Event::MessageConsumed { id, applied, .. } => {
            format!("consumes message {}{}", id.0, if *applied { "" } else { " (duplicate, ignored)" })
        }
        Event::Fault(f) => fault(f),
        Event::Phase { phase } => match phase {
            Phase::Faults => "--- fault phase begins ---".into(),
            Phase::Heal => "--- faults heal; background jobs finish the rest ---".into(),
            Phase::End => "--- run ends; checkers judge ---".into(),
        },
    }
}

fn fault(f: &Fault) -> String {
    match f {
        Fault::Dropped { to, what, .. } => format!("drops {what} to {to}"),
        Fault::Duplicated { to, what, .. } => format!("duplicates {what}, the copy goes to {to}"),
        Fault::Crashed { node } => format!("CRASH {node}"),
        Fault::Restarted { node } => format!("restarts {node}"),
        Fault::Paused { node, for_ms } => format!("PAUSE {node} for {for_ms} ms"),
        Fault::Resumed { node } => format!("resumes {node}"),
        Fault::Partitioned { node, outgoing, incoming } => {
            let way = match (outgoing, incoming) {
                (true, true) => "both ways",
                (true, false) => "outgoing",
                _ => "incoming",
            };
            format!("PARTITION {node} ({way})")
        }
        Fault::Reconnected { node } => format!("reconnects {node}"),
        Fault::PartitionsHealed => "repairs all partitions".into(),
        Fault::ClockSkewed { node, offset_ms } => format!("skews the clock of {node} by {offset_ms:+} ms"),
        Fault::UnsyncedWritesLost { count } => format!("LOSES {count} unsynced store writes in the crash"),
    }
}

/// The whole history, one numbered line per event.
pub fn render(history: &History) -> String {
    let mut out = String::new();
    for (i, e) in history.entries.iter().enumerate() {
        let _ = writeln!(out, "#{i:<5} {:>10}  {:<11} {}", e.at.to_string(), e.node.to_string(), describe(&e.event));
    }
    out
}

/// `lease until T`, or for a lease no run outlasts (a year or more: a
/// protocol without a lease asks for a century) `a lease that never ends`.
fn lease_until(locked_until: SimTime) -> String {
    const YEAR_MS: u64 = 365 * 24 * 3_600_000;
    match locked_until.0 >= YEAR_MS {
        true => "a lease that never ends".to_string(),
        false => format!("lease until {locked_until}"),
    }
}
