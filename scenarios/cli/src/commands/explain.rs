//! `idemsim explain`: a scenario's lesson, variants, verdicts and commands
//! to try, or the whole scenario as a file to start from.

use crate::args::scenario;
use crate::EXIT_CLEAN;
use idemsim::program::program;
use std::io::Write;

/// Explain a scenario: its lesson, variants, verdicts and commands to try.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario.
    name: String,
    /// The whole scenario as JSON (a scenario file to start from).
    #[arg(long, conflicts_with = "toml")]
    json: bool,
    /// The whole scenario as TOML.
    #[arg(long)]
    toml: bool,
}

pub fn exec(args: Args, out: &mut dyn Write) -> Result<i32, String> {
    let (s, json, toml) = (scenario(&args.name)?, args.json, args.toml);
    let written = if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&s).expect("json"))
    } else if toml {
        write!(out, "{}", s.to_toml())
    } else {
        (|| {
            writeln!(out, "{}\n\n{}\n", s.name, s.lesson)?;
            writeln!(out, "variants (expected verdict over seeds 0..2000):")?;
            for (variant, expect) in &s.expect {
                let steps = s.steps_of(variant).map(|st| st.broken().join(", ")).unwrap_or_default();
                let swapped = if steps.is_empty() { String::new() } else { format!("  (swaps {steps})") };
                writeln!(out, "  {variant:<30} {expect}{swapped}")?;
            }
            if !s.sometimes.is_empty() {
                writeln!(out, "interleavings a clean run must show: {}", s.sometimes.join(", "))?;
            }
            writeln!(out, "\ntry:")?;
            for variant in s.expect.keys() {
                writeln!(out, "  {} run --scenario {} --variant {variant} --seeds 0..200", program(), s.name)?;
            }
            writeln!(out, "  {} run --scenario {} --variant <variant> --seeds 0..200 --shrink", program(), s.name)?;
            writeln!(
                out,
                "  {} replay --scenario {} --variant <variant> --seed <a failing seed> --html t.html",
                program(),
                s.name
            )?;
            writeln!(out, "  {} explain {} --json > my-scenario.json   # then edit, and run --file", program(), s.name)
        })()
    };
    written.map_err(|e| e.to_string())?;
    Ok(EXIT_CLEAN)
}
