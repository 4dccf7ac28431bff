//! The checks of the design that anyone can run, on the sources as
//! written: files short enough to read, errors that are types, not
//! strings, wherever a user's code receives them, and a simulator runtime
//! that does not reach up into what runs on it. (The protocol core's
//! freedom from madsim and tokio is `cargo tree`'s, in `.ci/run`.)

use std::path::{Path, PathBuf};

/// The crates' sources, outside tests (`tests/` folders and `tests.rs`
/// modules), relative to the repository.
fn sources(crates: &[&str]) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    let mut dirs: Vec<PathBuf> = crates.iter().map(|c| root.join(c)).collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() && name != "tests" {
                dirs.push(path);
            } else if name.ends_with(".rs") && name != "tests.rs" {
                let shown = path.strip_prefix(&root).unwrap().display().to_string();
                found.push((shown, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    found.sort();
    found
}

/// The library crates a user's code calls.
const LIBRARIES: [&str; 6] = ["model/src", "store/src", "sim/protocol/src", "sim/src", "scenarios/src", "examples/src"];

#[test]
fn no_source_file_is_over_500_lines() {
    let mut all = LIBRARIES.to_vec();
    all.push("scenarios/cli/src");
    let long: Vec<String> = sources(&all)
        .into_iter()
        .filter(|(_, text)| text.lines().count() > 500)
        .map(|(path, text)| format!("{path}: {} lines", text.lines().count()))
        .collect();
    assert!(long.is_empty(), "split these by concept: {long:?}");
}

/// Each `pub fn`'s signature, from `pub` to its body or `;`, on one line.
fn public_signatures(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for at in ["pub fn ", "pub async fn "] {
        for (i, _) in text.match_indices(at) {
            let rest = &text[i..];
            let end = rest.find(['{', ';']).unwrap_or(rest.len());
            found.push(rest[..end].split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    found
}

/// Whether a signature returns a `Result` whose error is a bare `String`.
fn returns_string_error(signature: &str) -> bool {
    let Some((_, ret)) = signature.rsplit_once("->") else { return false };
    let ret = ret.trim().trim_end_matches("where").trim();
    ret.contains("Result<") && (ret.ends_with(", String>") || ret.ends_with(",String>"))
}

#[test]
fn the_scan_sees_a_string_error_and_passes_a_typed_one() {
    let text = "pub fn a(x: u8)\n    -> Result<u8, String> {\n}\npub async fn b() -> Result<(), Error> {}";
    let signatures = public_signatures(text);
    assert_eq!(signatures.len(), 2, "{signatures:?}");
    assert!(returns_string_error(&signatures[0]) && !returns_string_error(&signatures[1]));
}

#[test]
fn no_public_function_returns_its_error_as_a_string() {
    let (mut stringly, mut scanned) = (Vec::new(), 0);
    for (path, text) in sources(&LIBRARIES) {
        let signatures = public_signatures(&text);
        scanned += signatures.len();
        stringly.extend(signatures.into_iter().filter(|s| returns_string_error(s)).map(|s| format!("{path}: {s}")));
        if text.contains("type Err = String") || text.contains("Error = String;") {
            stringly.push(format!("{path}: an error type that is a String"));
        }
    }
    // Not vacuous: the public API is hundreds of functions.
    assert!(scanned > 500, "only {scanned} public functions found");
    assert!(stringly.is_empty(), "return a typed error (idemsim::Error, or the crate's own):\n{}", stringly.join("\n"));
}

/// The paths a `runtime/` file names from the simulator's upper folders.
fn upward_paths(text: &str) -> Vec<&str> {
    ["crate::nodes", "crate::faults", "crate::render"].into_iter().filter(|up| text.contains(up)).collect()
}

#[test]
fn the_upward_scan_sees_an_upper_path_and_passes_a_runtime_one() {
    assert_eq!(upward_paths("use crate::nodes::db::StoreQueue;"), ["crate::nodes"]);
    assert!(upward_paths("use crate::runtime::agenda::Step;").is_empty());
}

/// The simulator's runtime is the machinery every node shares: of its
/// files, only `world.rs`, where the run's parts meet, names what the
/// nodes, the faults or the rendering are.
#[test]
fn the_runtime_names_nodes_and_faults_only_where_the_world_is_made() {
    let runtime = sources(&["sim/src/runtime"]);
    assert!(runtime.len() > 10, "the scan sees the runtime's files: {}", runtime.len());
    let upward: Vec<String> = runtime
        .iter()
        .filter(|(path, _)| !path.ends_with("runtime/world.rs"))
        .filter(|(_, text)| !upward_paths(text).is_empty())
        .map(|(path, text)| format!("{path}: {:?}", upward_paths(text)))
        .collect();
    assert!(upward.is_empty(), "runtime files that reach up: {upward:?}");
}
