//! What a black-box run records: every observation, in order, and when
//! the target stopped answering.

use super::*;

/// Observations from many tasks, in the order they were made.
pub struct Recorder {
    pub(super) start: Instant,
    pub(super) seen: Mutex<Vec<Seen>>,
    /// When the target last answered anything, and last refused a
    /// connection (ms since the start).
    pub(super) last_answer_ms: AtomicU64,
    pub(super) last_refused_ms: AtomicU64,
}

/// A target that refused every connection for this long has stopped.
pub const DOWN_AFTER_MS: u64 = 5_000;

/// Why a run stopped when the target went away.
pub const TARGET_DOWN: &str = "the target stopped answering (connections refused for 5 s)";

/// Why a run stopped when its `--max-secs` ran out (the late probes still
/// run then: they are part of the verdict, not an interruption).
pub(super) const OUT_OF_TIME: &str = "the --max-secs limit was reached";

impl Recorder {
    pub(super) fn new() -> Recorder {
        Recorder {
            start: Instant::now(),
            seen: Mutex::default(),
            last_answer_ms: AtomicU64::new(0),
            last_refused_ms: AtomicU64::new(0),
        }
    }

    /// The target answered (anything, even an error).
    pub fn answered(&self) {
        self.last_answer_ms.fetch_max(self.now_ms(), Ordering::Relaxed);
    }

    /// The target refused a connection.
    pub fn refused(&self) {
        self.last_refused_ms.fetch_max(self.now_ms(), Ordering::Relaxed);
    }

    /// Connections have been refused, and nothing answered, for
    /// [`DOWN_AFTER_MS`].
    pub fn target_down(&self) -> bool {
        let (answer, refused) =
            (self.last_answer_ms.load(Ordering::Relaxed), self.last_refused_ms.load(Ordering::Relaxed));
        refused >= answer + DOWN_AFTER_MS
    }

    /// Milliseconds since the run began.
    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Records an observation stamped now (under the lock, so the order of
    /// the list is the order of the stamps).
    pub fn push(&self, make: impl FnOnce(u64) -> Seen) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let at = self.now_ms();
        seen.push(make(at));
    }

    pub(super) fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.seen.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
