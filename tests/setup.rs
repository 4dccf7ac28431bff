//! What the README promises about the set-up: the main job and the test
//! command share one build. Both use the release profile, so that profile
//! must not re-optimise the whole dependency tree for every test binary
//! (fat LTO did: 25 of the test command's 35 minutes), and `.ci/run` must
//! run exactly the README's test command.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(name: &str) -> String {
    std::fs::read_to_string(root().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The README's two set-up commands, in order.
fn readme_commands() -> Vec<String> {
    let readme = read("README.md");
    let block = readme.split("```sh\n").nth(1).expect("a first sh block").split("```").next().unwrap();
    block.lines().map(|l| l.split('#').next().unwrap().trim().to_string()).filter(|l| !l.is_empty()).collect()
}

#[test]
fn the_readme_opens_with_the_main_job_and_the_test_command_on_the_release_profile() {
    let commands = readme_commands();
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert!(commands[0].starts_with("cargo run --release --bin idemsim -- run "), "{commands:?}");
    assert_eq!(commands[1], "cargo test --release --workspace");
}

#[test]
fn the_release_profile_has_no_whole_program_lto() {
    let manifest: toml::Table = read("Cargo.toml").parse().unwrap();
    let profiles = manifest["profile"].as_table().expect("[profile]");
    let release = profiles["release"].as_table().expect("[profile.release]");
    let lto = release.get("lto").cloned().unwrap_or(toml::Value::Boolean(false));
    assert!(
        matches!(&lto, toml::Value::Boolean(false)) || lto.as_str() == Some("off"),
        "the test binaries are built with the release profile; lto = {lto}"
    );
    // `cargo test --release` does not read `[profile.bench]`: a setting
    // there would only look as if it applied to the tests, as one once did.
    assert!(!profiles.contains_key("bench"), "[profile.bench] is not what `cargo test --release` uses");
    assert!(read("README.md").contains("no whole-program LTO"), "the README states the profile");
}

#[test]
fn ci_runs_the_readmes_test_command() {
    let ci = read(".ci/run");
    let test = &readme_commands()[1];
    assert!(ci.lines().any(|l| l.trim() == test), ".ci/run must call `{test}`");
}
