//! Sweep progress on stderr: a bar on a terminal, a line per tenth (and
//! one every 5 s) elsewhere.

use indicatif::{ProgressBar, ProgressStyle};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

/// A progress bar on a terminal, a line per tenth elsewhere.
pub struct Progress {
    total: u64,
    /// What is done, and to what: ("swept", "seeds").
    words: (&'static str, &'static str),
    bar: Option<ProgressBar>,
    printed: AtomicU64,
    enabled: bool,
    started: std::time::Instant,
    /// When the last line was printed, in ms since `started`.
    last_line_ms: AtomicU64,
}

impl Progress {
    /// A progress display for `total` seeds; silent when not `enabled`.
    pub fn new(total: u64, enabled: bool) -> Progress {
        Progress::of(total, enabled, ("swept", "seeds"))
    }

    /// A progress display for `total` things, `words` saying what is done
    /// to them (`("stressed", "requests")`).
    pub fn of(total: u64, enabled: bool, words: (&'static str, &'static str)) -> Progress {
        use std::io::IsTerminal;
        let bar = (enabled && io::stderr().is_terminal() && total > 1).then(|| {
            let bar = ProgressBar::new(total);
            let template = format!("{{bar:40}} {{pos}}/{{len}} {}  {{per_sec}}  eta {{eta}}", words.1);
            let style = ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        let started = std::time::Instant::now();
        let printed = AtomicU64::new(0);
        Progress { total, words, bar, printed, enabled, started, last_line_ms: AtomicU64::new(0) }
    }

    /// `done` seeds have finished.
    pub fn tick(&self, done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
            return;
        }
        if !self.enabled || self.total < 100 {
            return;
        }
        // A line per tenth, and one every 5 s on a long sweep.
        let now_ms = self.started.elapsed().as_millis() as u64;
        let due = now_ms >= self.last_line_ms.load(Ordering::Relaxed) + 5_000;
        let tenth = done.is_multiple_of((self.total / 10).max(1));
        if (tenth || due) && self.printed.fetch_max(done, Ordering::Relaxed) < done {
            self.last_line_ms.store(now_ms, Ordering::Relaxed);
            let rate = done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
            let (verb, unit) = self.words;
            crate::note(format_args!("{verb} {done}/{} {unit} ({rate:.0} {unit}/s)", self.total));
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
