//! [`StepBudget`]: the steps a run takes, against its budget, so a
//! livelock is a failure with its seed and not a hang.

/// The steps a run has taken, against its budget
/// ([`crate::config::Budgets::steps_for`]).
///
/// **Invariant:** `taken` only grows; the first step past `max` is the
/// one that says so, and every later one too (the run aborts once).
#[derive(Debug)]
pub(crate) struct StepBudget {
    taken: u64,
    max: u64,
}

impl StepBudget {
    /// A budget of `max` steps.
    pub fn new(max: u64) -> StepBudget {
        StepBudget { taken: 0, max }
    }

    /// The budget.
    pub(crate) fn max(&self) -> u64 {
        self.max
    }

    /// Takes a step; true when it is past the budget.
    pub(crate) fn take(&mut self) -> bool {
        self.taken += 1;
        self.taken > self.max
    }
}
