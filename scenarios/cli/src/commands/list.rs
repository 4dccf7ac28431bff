//! `idemsim list`: the scenarios.

use crate::EXIT_CLEAN;
use std::io::Write;

/// List the scenarios.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// One JSON document instead of text.
    #[arg(long)]
    json: bool,
}

pub fn exec(args: Args, out: &mut dyn Write) -> Result<i32, String> {
    let all = idemsim::catalogue::all();
    let written = if args.json {
        let list: Vec<serde_json::Value> = all
            .iter()
            .map(|s| {
                let variants: serde_json::Map<String, serde_json::Value> =
                    s.expect.iter().map(|(v, e)| (v.clone(), e.to_string().into())).collect();
                serde_json::json!({ "name": s.name, "lesson": s.lesson, "variants": variants })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&list).expect("json"))
    } else {
        all.iter().try_for_each(|s| {
            let first = s.lesson.split(". ").next().unwrap_or(&s.lesson);
            writeln!(out, "{:<24} {first}.", s.name)
        })
    };
    written.map_err(|e| e.to_string())?;
    Ok(EXIT_CLEAN)
}
