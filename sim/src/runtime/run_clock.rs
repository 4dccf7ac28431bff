//! The run's clock: true simulated time, read from the madsim runtime the
//! run is in, kept per thread while it runs.

use idemsim_model::SimTime;

thread_local! {
    /// The clock of the run on this thread, kept while it runs: asking
    /// madsim for its current runtime's clock on every reading costs more
    /// than the reading.
    static CLOCK: std::cell::RefCell<Option<RunClock>> = const { std::cell::RefCell::new(None) };
}

/// A run's madsim clock and the instant its simulated time began.
pub(crate) struct RunClock {
    handle: madsim::time::TimeHandle,
    origin: std::time::Instant,
}

impl RunClock {
    /// The clock of the runtime this is called in.
    pub fn current() -> RunClock {
        let handle = madsim::time::TimeHandle::current();
        let origin = handle.now_instant() - handle.elapsed();
        RunClock { handle, origin }
    }

    /// True simulated time.
    pub fn now(&self) -> SimTime {
        SimTime(self.handle.elapsed().as_millis() as u64)
    }

    pub fn sleep_until_ms(&self, at_ms: u64) -> madsim::time::Sleep {
        self.handle.sleep_until(self.origin + std::time::Duration::from_millis(at_ms))
    }
}

/// `f` of the clock kept by [`keep_clock`], or else of the current runtime's.
fn with_clock<R>(f: impl FnOnce(&RunClock) -> R) -> R {
    CLOCK.with(|clock| match &*clock.borrow() {
        Some(clock) => f(clock),
        None => f(&RunClock::current()),
    })
}

/// A madsim sleep until `ms` after true simulated time now (one look-up
/// of the kept clock for both).
pub(crate) fn sleep_ms_from_now(ms: u64) -> madsim::time::Sleep {
    with_clock(|clock| clock.sleep_until_ms(clock.now().0 + ms))
}

/// True simulated time in milliseconds since the run began.
pub(crate) fn true_now() -> SimTime {
    with_clock(RunClock::now)
}

/// Keeps this runtime's clock for [`true_now`] until [`forget_clock`]:
/// called first thing inside a run.
pub(crate) fn keep_clock() {
    CLOCK.with(|clock| *clock.borrow_mut() = Some(RunClock::current()));
}

/// Forgets the clock kept by [`keep_clock`], when its run is over.
pub(crate) fn forget_clock() {
    CLOCK.with(|clock| *clock.borrow_mut() = None);
}
