//! How the user ran idemsim, for the commands a report prints (reproduce
//! lines, shrink and replay hints): `idemsim` when it ran from the PATH,
//! `cargo run --release --bin idemsim --` when it ran from a cargo target
//! directory, else the path it was run by. A program that is not the
//! `idemsim` binary (a user's test) never sets it and prints `idemsim`.

use std::sync::OnceLock;

static PROGRAM: OnceLock<String> = OnceLock::new();

/// The command prefix printed commands start with.
pub fn program() -> &'static str {
    PROGRAM.get().map_or("idemsim", String::as_str)
}

/// Records how this process was run, from its `argv[0]`; the first call
/// wins.
pub fn set_program(argv0: &str) {
    let _ = PROGRAM.set(program_of(argv0));
}

/// The command prefix for a program run as `argv0`.
pub fn program_of(argv0: &str) -> String {
    let path = std::path::Path::new(argv0);
    if path.components().count() <= 1 {
        return "idemsim".into();
    }
    let dir = path.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str());
    let in_target = path.parent().and_then(|p| p.parent()).and_then(|p| p.file_name()).is_some_and(|n| n == "target");
    match (in_target, dir) {
        (true, Some("release")) => "cargo run --release --bin idemsim --".into(),
        (true, Some("debug")) => "cargo run --bin idemsim --".into(),
        _ => argv0.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_printed_as_the_user_ran_idemsim() {
        assert_eq!(program_of("idemsim"), "idemsim");
        assert_eq!(program_of("target/release/idemsim"), "cargo run --release --bin idemsim --");
        assert_eq!(program_of("/w/x/target/debug/idemsim"), "cargo run --bin idemsim --");
        assert_eq!(program_of("/opt/bin/idemsim"), "/opt/bin/idemsim");
    }
}
