//! The `idemsim` command line: one module per command under `commands/`,
//! each its arguments (`Args`) and what it does (`exec`) over the
//! [`idemsim`] library. `main` is a thin wrapper around [`run`], which
//! writes to the given streams and returns the exit code: 0 clean, 1 a
//! property was violated (or a run failed), 2 a usage or input error, 130
//! stopped by Ctrl-C.
//!
//! **Invariant:** bad input is one line and exit 2, never a panic; the
//! library never imports this crate.
//!
//! ```
//! let (mut out, mut err) = (Vec::new(), Vec::new());
//! let args = ["idemsim", "run", "--seeds", "0..3", "--jobs", "1"].map(String::from).to_vec();
//! assert_eq!(idemsim_cli::run(args, &mut out, &mut err), idemsim_cli::EXIT_CLEAN);
//! assert!(String::from_utf8(out).unwrap().contains("CLEAN"));
//! ```

pub mod allocator;
mod args;
mod benchmark;
mod commands;
mod instructions;
mod progress;
pub mod tracing_setup;

use clap::{Parser, Subcommand};
use std::io::Write;

/// Exit code: no violation.
pub const EXIT_CLEAN: i32 = 0;
/// Exit code: a property was violated, or a run failed.
pub const EXIT_VIOLATION: i32 = 1;
/// Exit code: bad usage or input.
pub const EXIT_USAGE: i32 = 2;
/// Exit code: stopped by Ctrl-C (after printing what was found so far).
pub const EXIT_INTERRUPTED: i32 = 130;

#[derive(Parser, Debug)]
#[command(
    name = "idemsim",
    version,
    about = "Deterministic simulation testing for the idempotency-key protocol",
    long_about = "Runs the claim / execute / complete protocol against simulated networks, clocks, storage and \
                  process faults, one seed at a time, and checks every history against the protocol's properties. \
                  A seed fully determines a run: `idemsim replay --seed N` reproduces it exactly."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Sweep seeds and report violations and coverage.
    Run(commands::run::Args),
    /// Re-run one seed and print its timeline and story (or write its trace,
    /// or an HTML timeline).
    Replay(commands::replay::Args),
    /// Shrink a failing seed to a minimal scenario file.
    Shrink(commands::shrink::Args),
    /// Stress a real store: real tasks, real connections, real concurrency.
    Stress(commands::stress::Args),
    /// Test a store every way: conformance kit, linearizability, simulation, stress; one verdict per part.
    CheckStore(commands::check_store::Args),
    /// The simulator's concurrent mode: store operations of many callers, each seed's history checked for linearizability.
    Concurrent(commands::concurrent::Args),
    /// Every interleaving of a small configuration, checked and counted; the shortest counterexample, replayable.
    Explore(commands::explore::Args),
    /// Attack a running HTTP service's Idempotency-Key behaviour from outside.
    Http(commands::http::Args),
    /// Serve the protocol (or a broken variant) as a real HTTP service.
    Serve(commands::serve::Args),
    /// Measure simulation speed and time to first failure; print targets.
    Bench(commands::bench::Args),
    /// Bare madsim with a seed's traffic and none of our code, seed after
    /// seed on one thread: the floor `bench` counts instructions of.
    #[command(hide = true)]
    Floor(commands::floor::Args),
    /// Combine `run --json` reports (e.g. of shards) into one.
    Merge(commands::merge::Args),
    /// Explain a scenario: its lesson, variants, verdicts and commands to try.
    Explain(commands::explain::Args),
    /// List the scenarios.
    List(commands::list::Args),
}

/// One line to stderr, for progress and warnings: a closed stderr
/// (`2>&1 | head -1`) drops it instead of aborting the command, whose
/// report on stdout and exit code stay its own.
pub fn note(line: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Runs the command line `args` (program name first).
pub fn run(args: Vec<String>, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    if let Some(argv0) = args.first() {
        idemsim::program::set_program(argv0);
    }
    let cli = match parse(args) {
        Ok(cli) => cli,
        Err(e) => {
            let text = e.render().to_string();
            if !e.use_stderr() {
                let _ = write!(out, "{text}"); // --help, --version
                return EXIT_CLEAN;
            }
            let _ = writeln!(err, "{}", shorten_long_words(&usage_error(&e, &text)));
            return EXIT_USAGE;
        }
    };
    let result = match cli.command {
        Command::Run(args) => commands::run::exec(args, out, err),
        Command::Replay(args) => commands::replay::exec(args, out),
        Command::Shrink(args) => commands::shrink::exec(args, out),
        Command::Stress(args) => commands::stress::exec(args, out),
        Command::CheckStore(args) => commands::check_store::exec(args, out),
        Command::Concurrent(args) => commands::concurrent::exec(args, out),
        Command::Explore(args) => commands::explore::exec(args, out),
        Command::Http(args) => commands::http::exec(args, out),
        Command::Serve(args) => commands::serve::exec(args, out),
        Command::Bench(args) => commands::bench::exec(args, out, err),
        Command::Floor(args) => commands::floor::exec(args),
        Command::Merge(args) => commands::merge::exec(args, out),
        Command::Explain(args) => commands::explain::exec(args, out),
        Command::List(args) => commands::list::exec(args, out),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            let _ = writeln!(err, "error: {}", shorten_long_words(&message));
            EXIT_USAGE
        }
    }
}

/// An error line echoes what the user gave; a value of thousands of
/// characters is cut to its start and its length, so the line stays one
/// line a person reads.
fn shorten_long_words(line: &str) -> String {
    const LONG: usize = 200;
    if line.len() <= LONG {
        return line.to_string();
    }
    let words: Vec<String> = line
        .split(' ')
        .map(|w| match w.char_indices().nth(60) {
            Some((cut, _)) if w.chars().count() > LONG => {
                format!("{}... ({} characters)", &w[..cut], w.chars().count())
            }
            _ => w.to_string(),
        })
        .collect();
    words.join(" ")
}

/// Parses the command line. A value may start with `-` (a negative number
/// or seed range is then refused by its own parser, saying what is wrong,
/// instead of being taken for an unknown flag).
fn parse(args: Vec<String>) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let command = Cli::command().mut_subcommands(|c| c.allow_negative_numbers(true));
    Cli::from_arg_matches(&command.try_get_matches_from(args)?)
}

/// A usage error in one line: its message, without the usage and tips that
/// `--help` gives; a missing command names the commands.
fn usage_error(e: &clap::Error, text: &str) -> String {
    use clap::error::ErrorKind;
    use clap::CommandFactory;
    if matches!(e.kind(), ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand) {
        let commands: Vec<String> =
            Cli::command().get_subcommands().filter(|c| !c.is_hide_set()).map(|c| c.get_name().to_string()).collect();
        return format!("error: a command is missing; one of: {} (idemsim --help tells more)", commands.join(", "));
    }
    let message: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("tip:"))
        .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
        .collect();
    format!("{} (see --help)", message.join(" "))
}
