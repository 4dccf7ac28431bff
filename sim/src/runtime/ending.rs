//! [`Ending`]: how a run ends: stopped at the end of its phases, or cut
//! short by its first failure.

use crate::runtime::step_budget::StepBudget;
use crate::RunError;
use futures::channel::oneshot;

/// Whether the run goes on, and why not.
///
/// **Invariant:** the first failure wins and is the one reported; the
/// controller's abort signal fires once, with it. Once stopping, the
/// agenda task returns.
pub(crate) struct Ending {
    steps: StepBudget,
    abort: Option<oneshot::Sender<String>>,
    failure: Option<RunError>,
    stopping: bool,
}

impl Ending {
    /// A run of at most `steps_max` steps, whose controller hears of its
    /// failure on `abort`.
    pub fn new(steps_max: u64, abort: oneshot::Sender<String>) -> Ending {
        Ending { steps: StepBudget::new(steps_max), abort: Some(abort), failure: None, stopping: false }
    }

    /// Counts one step; the first past the budget fails the run as a
    /// livelock.
    #[inline]
    pub fn step(&mut self) {
        if self.steps.take() && self.failure.is_none() {
            let why = format!("step budget of {} exceeded (a livelock?)", self.steps.max());
            self.fail(RunError::Livelock(why));
        }
    }

    /// The run fails with `error`, unless it failed already.
    pub fn fail(&mut self, error: RunError) {
        if self.failure.is_some() {
            return;
        }
        let why = error.to_string();
        self.failure = Some(error);
        if let Some(abort) = self.abort.take() {
            let _ = abort.send(why);
        }
    }

    /// Whether the run has failed.
    pub fn failed(&self) -> bool {
        self.failure.is_some()
    }

    /// Why the run failed, taken.
    pub fn take_failure(&mut self) -> Option<RunError> {
        self.failure.take()
    }

    /// The run's phases are over: the agenda task returns.
    pub fn stop(&mut self) {
        self.stopping = true;
    }

    /// Whether the run is stopping.
    pub fn stopping(&self) -> bool {
        self.stopping
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failure_wins_and_aborts_once() {
        let (tx, mut rx) = oneshot::channel();
        let mut ending = Ending::new(2, tx);
        ending.step();
        ending.step();
        assert!(!ending.failed(), "two steps are within a budget of two");
        ending.fail(RunError::Store("broke".into()));
        ending.step();
        assert_eq!(rx.try_recv().unwrap().as_deref(), Some("broke"));
        assert_eq!(ending.take_failure(), Some(RunError::Store("broke".into())));
    }

    #[test]
    fn the_step_past_the_budget_is_a_livelock() {
        let (tx, mut rx) = oneshot::channel();
        let mut ending = Ending::new(1, tx);
        ending.step();
        ending.step();
        assert!(rx.try_recv().unwrap().is_some_and(|why| why.contains("step budget of 1 exceeded")));
        assert!(matches!(ending.take_failure(), Some(RunError::Livelock(_))));
    }
}
