//! The timers that wake the agenda task.
//!
//! Whoever schedules an action arms, with the agenda task's waker, a madsim
//! timer for the action's millisecond, unless one is armed for it already:
//! the agenda task is never woken just to learn that it must sleep again,
//! and a millisecond costs one timer however many actions fall in it. A
//! timer cannot be taken back, so the agenda task also wakes for times
//! whose actions are gone (an answered waiter's deadline); it then finds
//! nothing due and sleeps again.

use crate::runtime::world::RunClock;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Waker};

/// The agenda task's waker and the milliseconds a timer will wake it at.
#[derive(Default)]
pub(crate) struct Wakeups {
    waker: Option<Waker>,
    /// Ascending, no repeats: the near future's timers, few enough that a
    /// sorted vector beats a tree.
    armed: Vec<u64>,
}

impl Wakeups {
    /// Remembers the agenda task's waker (once it runs).
    pub fn set_waker(&mut self, waker: &Waker) {
        if self.waker.as_ref().is_none_or(|w| !w.will_wake(waker)) {
            self.waker = Some(waker.clone());
        }
    }

    /// Makes sure the agenda task runs at `at_ms`: now if that has come,
    /// otherwise by a timer on `clock` (the run's, kept by the world before
    /// the agenda task starts). Before the task first runs there is nothing
    /// to do: it looks at the agenda then.
    pub fn ensure(&mut self, at_ms: u64, now_ms: u64, clock: Option<&RunClock>) {
        let Some(waker) = &self.waker else { return };
        if at_ms <= now_ms {
            return waker.wake_by_ref();
        }
        if let Err(slot) = self.armed.binary_search(&at_ms) {
            self.armed.insert(slot, at_ms);
            // Polled once, it arms its timer (a later time is never due yet).
            let clock = clock.expect("the run's clock is kept before its agenda task runs");
            let mut sleep = clock.sleep_until_ms(at_ms);
            let due = Pin::new(&mut sleep).poll(&mut Context::from_waker(waker)).is_ready();
            assert!(!due, "a timer at {at_ms} ms is not due at {now_ms} ms");
        }
    }

    /// Makes sure the agenda task runs at `at_ms` or before, when it will
    /// look again: a timer armed for an earlier millisecond will do.
    pub fn ensure_by(&mut self, at_ms: u64, now_ms: u64, clock: Option<&RunClock>) {
        let first_later = self.armed.partition_point(|&armed| armed <= now_ms);
        if self.armed.get(first_later).is_none_or(|&armed| armed > at_ms) {
            self.ensure(at_ms, now_ms, clock);
        }
    }

    /// Forgets the timers that have fired by `now_ms`.
    pub fn forget_past(&mut self, now_ms: u64) {
        let fired = self.armed.partition_point(|&armed| armed <= now_ms);
        self.armed.drain(..fired);
    }

    /// Wakes the agenda task now (the run is stopping) and lets its waker go.
    pub fn wake_now(&mut self) {
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}
