//! `idemsim merge`: combine `run --json` reports (of shards, say) into one.

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

/// Merges the reports; exit 0 when the merged report is clean.
pub fn exec(args: Args, out: &mut dyn Write) -> Result<i32, String> {
    let clean = idemsim::merge::merge(&args.files, args.json, out)?;
    Ok(if clean { EXIT_CLEAN } else { EXIT_VIOLATION })
}
