//! A harness for users' own tests: [`Simulation::check`] sweeps, and on a
//! failure panics with the story and the command that reproduces it.
//!
//! * `IDEMSIM_SEED=N` runs only seed `N`; `IDEMSIM_SEEDS=A..B` runs those
//!   seeds instead of the simulation's.
//! * With a regressions file ([`Simulation::regressions`], or
//!   [`Simulation::regressions_beside`] with `file!()`), every failing seed
//!   is added to it, and its seeds run first next time, as proptest's
//!   `proptest-regressions/` do. Keep the file in version control.
//!
//! It works the same under `cargo test` and `cargo nextest run`: nothing
//! depends on the test runner's threads or output capture.

use crate::error::Error;
use crate::simulation::Simulation;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Runs only this seed.
pub const SEED_VAR: &str = "IDEMSIM_SEED";
/// Runs these seeds (`A..B`) instead of the simulation's.
pub const SEEDS_VAR: &str = "IDEMSIM_SEEDS";

impl Simulation {
    /// Keeps failing seeds in `path`, and runs its seeds first.
    pub fn regressions(&mut self, path: impl Into<PathBuf>) -> &mut Simulation {
        self.regressions = Some(path.into());
        self
    }

    /// Keeps failing seeds in a file beside the test's source file:
    /// `.regressions_beside(file!())` in `tests/my_store.rs` uses
    /// `tests/my_store.idemsim-regressions`.
    pub fn regressions_beside(&mut self, source_file: &str) -> &mut Simulation {
        let source = locate(Path::new(source_file));
        self.regressions(source.with_extension("idemsim-regressions"))
    }

    /// Sweeps (regression seeds first) and panics on the first failure
    /// with its violations, its story and the command that reproduces it.
    /// Also panics, with one clear line, if the simulation cannot run.
    pub fn check(&self) {
        if let Err(message) = self.check_result() {
            panic!("{message}");
        }
    }

    /// [`Simulation::check`] without the panic: [`Error::Found`] holds the
    /// message of a failure; other errors say why the check could not run.
    pub fn check_result(&self) -> Result<(), Error> {
        let (seeds, from_env) = match seeds_from_env()? {
            Some(seeds) => (seeds, true),
            None => (self.seeds.clone(), false),
        };
        // Regression seeds first, unless the environment picked the seeds.
        let known = if from_env { Vec::new() } else { self.known_failures()? };
        for &seed in &known {
            let outcome = self.replay(seed)?;
            if outcome.failed() {
                return Err(Error::Found(self.failure_message(seed, &outcome, "a seed of the regressions file")));
            }
        }
        let mut sim = self.clone();
        sim.seeds(seeds);
        let report = sim.sweep()?;
        if let Some(d) = &report.divergence {
            return Err(Error::Found(format!(
                "idemsim: nondeterminism: seed {} diverged at event #{}\n  first run:  {}\n  second run: {}",
                d.seed, d.event, d.first, d.second
            )));
        }
        let Some(first) = report.failures.first() else { return Ok(()) };
        self.remember(first.seed)?;
        let outcome = self.replay(first.seed)?;
        let note = format!("{} of {} seeds failed", report.seeds_failed, report.seeds_run);
        Err(Error::Found(self.failure_message(first.seed, &outcome, &note)))
    }

    /// The seeds of the regressions file.
    fn known_failures(&self) -> Result<Vec<u64>, Error> {
        let Some(path) = &self.regressions else { return Ok(Vec::new()) };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io("read the regressions file", path, e)),
        };
        text.lines()
            .map(str::trim)
            .filter(|l| l.starts_with("seed "))
            .map(|l| {
                let number = l["seed ".len()..].split('#').next().unwrap_or_default().trim();
                number.parse().map_err(|_| Error::Parse {
                    path: path.clone(),
                    expected: "a regressions file",
                    message: format!("'{l}' is not `seed N`"),
                })
            })
            .collect()
    }

    /// Adds a failing seed to the regressions file, once.
    fn remember(&self, seed: u64) -> Result<(), Error> {
        let Some(path) = &self.regressions else { return Ok(()) };
        if self.known_failures()?.contains(&seed) {
            return Ok(());
        }
        let mut text = std::fs::read_to_string(path).unwrap_or_else(|_| {
            "# Seeds that failed idemsim checks in this test; they run first next time.\n\
             # Keep this file in version control, like proptest-regressions/.\n"
                .to_string()
        });
        let what = format!("{}/{} on {}", self.scenario.name, self.protocol_name(), self.subject.store_name());
        text.push_str(&format!("seed {seed} # {what}\n"));
        std::fs::write(path, text).map_err(|e| Error::io("write the regressions file", path, e))
    }

    fn failure_message(&self, seed: u64, outcome: &idemsim_sim::RunOutcome, note: &str) -> String {
        let mut m = format!(
            "idemsim: scenario {}, protocol {}, store {}: seed {seed} fails ({note})\n",
            self.scenario.name,
            self.protocol_name(),
            self.subject.store_name()
        );
        if let Some(e) = &outcome.error {
            m.push_str(&format!("  run error: {e}\n"));
        }
        for v in outcome.violations.iter().take(5) {
            m.push_str(&format!("  {v}\n"));
        }
        if let Some(story) = self.story(outcome) {
            m.push_str(&format!("story:\n{story}\n"));
        }
        m.push_str(&format!("reproduce: {}\n", reproduce_command(seed)));
        m
    }
}

/// The seeds the environment asks for, if it does.
fn seeds_from_env() -> Result<Option<Range<u64>>, Error> {
    seeds_asked(std::env::var(SEED_VAR).ok(), std::env::var(SEEDS_VAR).ok())
}

/// The seeds `IDEMSIM_SEED` (first) or `IDEMSIM_SEEDS` ask for.
fn seeds_asked(seed: Option<String>, seeds: Option<String>) -> Result<Option<Range<u64>>, Error> {
    if let Some(seed) = seed {
        let seed: u64 =
            seed.trim().parse().map_err(|_| Error::Usage(format!("{SEED_VAR}='{seed}' is not a seed (a number)")))?;
        return Ok(Some(seed..seed.saturating_add(1)));
    }
    let Some(range) = seeds else { return Ok(None) };
    crate::sweep::parse_seeds(&range).map(Some).map_err(|e| Error::Usage(format!("{SEEDS_VAR}: {e}")))
}

/// The command that runs this test again on `seed` alone.
fn reproduce_command(seed: u64) -> String {
    let package = std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| "<your package>".into());
    let test = std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .map(str::to_string)
        .or_else(|| std::env::var("NEXTEST_TEST_NAME").ok())
        .unwrap_or_else(|| "<this test>".into());
    format!(
        "{SEED_VAR}={seed} cargo test -p {package} -- --exact {test}\n   (or: {SEED_VAR}={seed} cargo nextest run -p {package} -E 'test(={test})')"
    )
}

/// `file!()` is relative to the workspace root, a test runs in its
/// package's directory: find the file from there or an ancestor.
fn locate(source: &Path) -> PathBuf {
    if source.is_absolute() || source.exists() {
        return source.to_path_buf();
    }
    let start = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from("."), PathBuf::from);
    start.ancestors().map(|dir| dir.join(source)).find(|p| p.exists()).unwrap_or_else(|| source.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_picks_one_seed_or_a_range_or_says_what_is_wrong() {
        let s = |v: &str| Some(v.to_string());
        assert_eq!(seeds_asked(None, None).unwrap(), None);
        assert_eq!(seeds_asked(s("17"), s("0..5")).unwrap(), Some(17..18));
        assert_eq!(seeds_asked(None, s("3..9")).unwrap(), Some(3..9));
        let bad = seeds_asked(s("x"), None).unwrap_err();
        assert!(matches!(&bad, Error::Usage(m) if m.contains("IDEMSIM_SEED='x'")), "{bad:?}");
        assert!(seeds_asked(None, s("9..3")).unwrap_err().to_string().contains("A..B"));
    }
}
