//! The two ways through a configuration's executions: every one, depth
//! first (each execution replays the choices of the last one up to the
//! deepest choice point with an option left, and takes that option), or
//! a number of randomized ones under PCT (probabilistic concurrency
//! testing: random task priorities with `depth - 1` priority change
//! points, which finds any bug of depth `d` with probability at least
//! 1/(n k^(d-1)) per execution, for n tasks and k steps).

use super::execution::{Choice, Chooser};
use super::ExploreError;
use crate::rng::{self, SimRng, Stream};
use rand::Rng;
use std::collections::BTreeMap;

/// Replays a prefix of choices, then takes the first option: one
/// execution of the depth-first search.
pub(crate) struct Dfs<'a> {
    /// `(options, taken)` per choice point of the prefix.
    pub prefix: &'a [(u32, u32)],
    pub at: usize,
}

impl Chooser for Dfs<'_> {
    fn choose(&mut self, choices: &[Choice]) -> Result<usize, ExploreError> {
        let at = self.at;
        self.at += 1;
        let Some(&(options, taken)) = self.prefix.get(at) else { return Ok(0) };
        if options as usize != choices.len() {
            return Err(ExploreError::NotDeterministic { point: at, before: options, now: choices.len() as u32 });
        }
        Ok(taken as usize)
    }
}

/// The next prefix after an execution that made `trail`'s choices: the
/// deepest choice point with an option left, taking that option. `None`
/// when every execution was explored.
pub(crate) fn next_prefix(mut trail: Vec<(u32, u32)>) -> Option<Vec<(u32, u32)>> {
    while let Some(&(options, taken)) = trail.last() {
        if taken + 1 < options {
            trail.last_mut().expect("not empty").1 += 1;
            return Some(trail);
        }
        trail.pop();
    }
    None
}

/// Replays a schedule exactly.
pub(crate) struct Replay<'a> {
    pub schedule: &'a [u32],
    pub at: usize,
}

impl Chooser for Replay<'_> {
    fn choose(&mut self, choices: &[Choice]) -> Result<usize, ExploreError> {
        let at = self.at;
        self.at += 1;
        let Some(&taken) = self.schedule.get(at) else {
            return Err(ExploreError::Replay(format!(
                "the schedule ends at choice point {at}, and the execution goes on: it is not one of this configuration's"
            )));
        };
        if taken as usize >= choices.len() {
            return Err(ExploreError::Replay(format!(
                "choice point {at} has {} options, the schedule takes option {taken}: it is not one of this configuration's",
                choices.len()
            )));
        }
        Ok(taken as usize)
    }
}

/// PCT: each task gets a random priority when first seen (above
/// `depth`); the highest-priority task runs; at each of `depth - 1`
/// change points (random choice points in `1..=points`) the running task
/// drops to a priority below every initial one. A fault, where allowed,
/// is injected with probability 1/4.
pub(crate) struct Pct {
    rng: SimRng,
    priorities: BTreeMap<usize, u64>,
    change_points: Vec<usize>,
    at: usize,
}

impl Pct {
    /// Run `run` of a PCT search seeded `seed`, over executions of about
    /// `points` choice points.
    pub(crate) fn new(seed: u64, run: u64, depth: u32, points: usize) -> Pct {
        let mut rng = rng::stream(rng::key(&[seed, run]), Stream::Explore);
        let change_points = (1..depth).map(|_| rng.gen_range(1..=points.max(1))).collect();
        Pct { rng, priorities: BTreeMap::new(), change_points, at: 0 }
    }
}

impl Chooser for Pct {
    fn choose(&mut self, choices: &[Choice]) -> Result<usize, ExploreError> {
        self.at += 1;
        let floor = self.change_points.len() as u64 + 1;
        for c in choices {
            if !self.priorities.contains_key(&c.task) {
                let p = self.rng.gen_range(floor..u64::MAX / 2);
                self.priorities.insert(c.task, p);
            }
        }
        let top = |p: &BTreeMap<usize, u64>| choices.iter().map(|c| c.task).max_by_key(|t| p[t]).expect("choices");
        let mut task = top(&self.priorities);
        if let Some(i) = self.change_points.iter().position(|&at| at == self.at) {
            self.priorities.insert(task, i as u64);
            task = top(&self.priorities);
        }
        let of_task: Vec<usize> = (0..choices.len()).filter(|&i| choices[i].task == task).collect();
        let faults = of_task.len() - 1;
        let pick = match faults > 0 && self.rng.gen_ratio(1, 4) {
            true => of_task[1 + self.rng.gen_range(0..faults)],
            false => of_task[0],
        };
        Ok(pick)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_depth_first_order_visits_every_leaf_once() {
        // Two choice points of 2 and 3 options: 6 leaves in order.
        let mut seen = Vec::new();
        let mut prefix = Vec::new();
        loop {
            let trail: Vec<(u32, u32)> =
                (0..2).map(|i| prefix.get(i).copied().unwrap_or((if i == 0 { 2 } else { 3 }, 0))).collect();
            seen.push((trail[0].1, trail[1].1));
            match next_prefix(trail) {
                Some(p) => prefix = p,
                None => break,
            }
        }
        assert_eq!(seen, vec![(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]);
    }
}
