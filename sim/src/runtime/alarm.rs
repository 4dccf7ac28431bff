//! Waiting for a point in simulated time with one madsim timer.
//!
//! madsim's `Sleep` adds a timer to the runtime's heap every time it is
//! polled before its deadline, and a timer cannot be taken back. A task
//! that is woken for another reason (a reply, a kick, an older timer) and
//! polls its `Sleep` again leaves one more timer behind, which wakes it
//! again later: the timers multiply. An [`Alarm`] arms its timer once and
//! afterwards only reads the clock.
//!
//! Deadlines lie on the run's whole-millisecond grid (`after_ms(n)` is due
//! at the start of millisecond `now + n`), so every timer due in the same
//! millisecond fires in the same step of madsim's clock: one clock advance
//! and one pass over the ready tasks per simulated millisecond, however many
//! timers it holds.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Ready once its deadline has passed; wakes its task then.
pub(crate) struct Alarm {
    sleep: madsim::time::Sleep,
    armed: bool,
}

impl Alarm {
    /// An alarm `ms` from now.
    pub fn after_ms(ms: u64) -> Alarm {
        Alarm { sleep: crate::runtime::world::sleep_ms_from_now(ms), armed: false }
    }

    /// True once the deadline has passed; otherwise makes sure (once) that
    /// a timer wakes this task then.
    pub fn poll_due(&mut self, cx: &mut Context<'_>) -> bool {
        if self.sleep.is_elapsed() {
            return true;
        }
        if !self.armed {
            self.armed = true;
            return Pin::new(&mut self.sleep).poll(cx).is_ready();
        }
        false
    }
}

impl Future for Alarm {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.poll_due(cx) {
            true => Poll::Ready(()),
            false => Poll::Pending,
        }
    }
}

/// `future`'s output, or `None` if `ms` pass first. The future is polled
/// first, so an answer that is ready when the deadline passes wins.
pub(crate) async fn within<F: Future + Unpin>(ms: u64, future: F) -> Option<F::Output> {
    Within { future, alarm: Alarm::after_ms(ms) }.await
}

struct Within<F> {
    future: F,
    alarm: Alarm,
}

impl<F: Future + Unpin> Future for Within<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(out) = Pin::new(&mut self.future).poll(cx) {
            return Poll::Ready(Some(out));
        }
        match self.alarm.poll_due(cx) {
            true => Poll::Ready(None),
            false => Poll::Pending,
        }
    }
}
