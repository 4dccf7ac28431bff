//! `idemsim merge`: combine `run --json` reports (of shards, say) into one.

use crate::args::OneLine;
use crate::{EXIT_CLEAN, EXIT_VIOLATION};
use std::io::Write;

/// Combine `run --json` reports (e.g. of shards) into one.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The report files.
    #[arg(required = true)]
    files: Vec<std::path::PathBuf>,
    /// One JSON document instead of text.
    #[arg(long)]
    json: bool,
}

/// Merges the reports: exit 1 when a property was violated, 2 (after the
/// report) when the reports do not cover their whole sweep, so a gate
/// never passes with a shard missing, else 0.
pub fn exec(args: Args, out: &mut dyn Write) -> Result<i32, String> {
    let merged = idemsim::merge::merge(&args.files, args.json, out).line()?;
    if !merged.clean {
        return Ok(EXIT_VIOLATION);
    }
    match merged.incomplete {
        Some(why) => {
            Err(format!("the merged report is incomplete: it covers {why}; no property was violated in what it covers"))
        }
        None => Ok(EXIT_CLEAN),
    }
}
