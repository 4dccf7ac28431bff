//! `idemsim shrink`: cut a failing seed down to a minimal scenario file.

use crate::args::{target_scenario, variant_of, OneLine, ScenarioArgs};
use crate::EXIT_VIOLATION;
use idemsim::program::{program, quoted};
use std::io::Write;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    target: ScenarioArgs,
    /// The failing seed.
    #[arg(long)]
    seed: u64,
    /// Where to write the minimal scenario (.json or .toml; default:
    /// shrunk-SCENARIO-VARIANT-SEED.json).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// At most this many candidate runs.
    #[arg(long, default_value_t = 3000)]
    runs_max: u32,
    /// The story tells every event up to the violation.
    #[arg(long)]
    all: bool,
}

pub fn exec(args: Args, out: &mut dyn Write) -> Result<i32, String> {
    let scenario = target_scenario(&args.target)?;
    let variant = variant_of(&args.target, &scenario)?;
    let path = args.out.clone().unwrap_or_else(|| default_shrink_path(&scenario.name, &variant, args.seed));
    let output = idemsim::output::prepare(&path, &["json", "toml"], "the shrunk scenario").line()?;
    let spec = idemsim::shrink::ShrinkSpec {
        scenario: &scenario,
        variant: &variant,
        subject: crate::args::subject_of(&args.target, &scenario)?,
        seed: args.seed,
        runs_max: args.runs_max,
        property: scenario.expected_property(&variant),
    };
    let _ = writeln!(out, "idemsim shrink: scenario {}, variant {variant}, seed {}", scenario.name, args.seed);
    shrink_and_write(&spec, output.path(), args.all, out)?;
    output.keep();
    Ok(EXIT_VIOLATION)
}

pub(crate) fn default_shrink_path(scenario: &str, variant: &str, seed: u64) -> std::path::PathBuf {
    format!("shrunk-{scenario}-{variant}-{seed}.json").into()
}

/// Shrinks, writes the minimal file, and prints sizes, story and the
/// command that replays it.
pub(crate) fn shrink_and_write(
    spec: &idemsim::shrink::ShrinkSpec<'_>,
    path: &std::path::Path,
    all: bool,
    out: &mut dyn Write,
) -> Result<(), String> {
    let shrunk = idemsim::shrink::shrink(spec).line()?;
    let toml = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let text = match toml {
        true => shrunk.scenario.to_toml(),
        false => format!("{}\n", serde_json::to_string_pretty(&shrunk.scenario).expect("json")),
    };
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let story = shrunk.story(all);
    let _ = writeln!(out, "  property: {}", shrunk.property.name());
    let _ = writeln!(out, "  before:   {}", shrunk.before);
    let _ = writeln!(out, "  after:    {}", shrunk.after);
    let _ = writeln!(out, "  ({} candidate runs)", shrunk.runs);
    let _ = writeln!(out, "story:\n{story}");
    let _ = writeln!(out, "wrote {}", path.display());
    let _ = writeln!(out, "reproduce: {} replay --file {}", program(), quoted(&path.to_string_lossy()));
    Ok(())
}
