//! The database's side of a second service's probe: read the record, send
//! the store the operation chosen for it (one the protocol never asks
//! for, and the model refuses), read the record again, and record all of
//! it (`Event::StoreProbed`, judged by property `store-contract`).
//!
//! The three steps must see no other operation in between, so a probe runs
//! only on a store that answers at once (the three then run without a
//! yield, and the database node applies one operation at a time); on a
//! store whose operations wait, the probe is dropped at its first wait
//! and nothing is recorded. A store error also ends a probe unrecorded
//! (it may refuse an odd operation so); a panic fails the run, as in any
//! operation.

use crate::runtime::node::Node;
use futures::FutureExt;
use idemsim_model::probe::{Probe, ProbeAnswer, Probed};
use idemsim_model::{Event, NodeId, Scope};
use idemsim_store::{panic_message, IdempotencyStore, StoreError};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll};

/// Runs a probe of `scope`'s record on the database node's store.
pub(crate) fn probe(node: &Node, scope: &Scope, pick: u64, lease_ms: u64) {
    let store = node.sim.with(|w| w.store.clone());
    match run(&*store, scope, pick, lease_ms) {
        Ok(Some(event)) => node.sim.with(|w| w.record(NodeId::Db, event)),
        Ok(None) => {}
        Err(why) => node.sim.with(|w| w.store_broke(format!("store '{}' {why}", store.name()))),
    }
}

/// The probe's event; `None` when the store would have to wait or
/// answered with an error; a panic of the store as a line.
fn run(store: &dyn IdempotencyStore, scope: &Scope, pick: u64, lease_ms: u64) -> Result<Option<Event>, String> {
    let Some(before) = now(store.read(scope), "read")? else { return Ok(None) };
    let probe = Probe::choose(before.as_ref(), pick, lease_ms);
    let answer = match &probe {
        Probe::TakeOverLive { expected, now: at, lease_ms } => {
            now(store.take_over(scope, *expected, *at, *lease_ms), "take_over")?.map(ProbeAnswer::Takeover)
        }
        Probe::ClaimLive { fingerprint, now: at, lease_ms } => {
            now(store.claim(scope, fingerprint, *at, *lease_ms), "claim")?.map(ProbeAnswer::Claim)
        }
        Probe::CompleteNotHeld { attempt } => {
            now(store.complete(scope, *attempt, &Probe::completion()), "complete")?.map(ProbeAnswer::Write)
        }
        Probe::ReleaseNotHeld { attempt } => now(store.release(scope, *attempt), "release")?.map(ProbeAnswer::Write),
    };
    let Some(answer) = answer else { return Ok(None) };
    let Some(after) = now(store.read(scope), "read")? else { return Ok(None) };
    Ok(Some(Event::StoreProbed(Box::new(Probed { scope: scope.clone(), before, probe, answer, after }))))
}

/// Polls a store call once: its answer if it has one now, `None` if it
/// would wait or answered with an error (a store may refuse an odd
/// operation with an error; only its answers are judged), a panic as a
/// line naming `op`.
fn now<T>(call: impl Future<Output = Result<T, StoreError>>, op: &str) -> Result<Option<T>, String> {
    let mut call = std::pin::pin!(AssertUnwindSafe(call).catch_unwind());
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    match call.as_mut().poll(&mut cx) {
        Poll::Pending | Poll::Ready(Ok(Err(_))) => Ok(None),
        Poll::Ready(Ok(Ok(answer))) => Ok(Some(answer)),
        Poll::Ready(Err(panic)) => {
            Err(format!("panicked in {op} (a second service's probe): {}", panic_message(&*panic)))
        }
    }
}
