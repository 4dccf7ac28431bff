//! How the user ran idemsim, for the commands a report prints (reproduce
//! lines, shrink and replay hints): `idemsim` when it ran from the PATH,
//! `cargo run --release --bin idemsim --` when it ran from a cargo target
//! directory, else the path it was run by. A program that is not the
//! `idemsim` binary (a user's test) never sets it and prints `idemsim`.

use std::borrow::Cow;
use std::path::Path;
use std::sync::OnceLock;

static PROGRAM: OnceLock<String> = OnceLock::new();

/// The command prefix printed commands start with.
pub fn program() -> &'static str {
    PROGRAM.get().map_or("idemsim", String::as_str)
}

/// Records how this process was run, from its `argv[0]`; the first call
/// wins.
pub fn set_program(argv0: &str) {
    let cwd = std::env::current_dir().unwrap_or_default();
    let _ = PROGRAM.set(program_in(argv0, &cwd));
}

/// The command prefix for a program run as `argv0` from `cwd`: a binary in
/// a cargo target directory is `cargo run ...` only from inside that
/// workspace; from elsewhere, its absolute path.
pub fn program_in(argv0: &str, cwd: &Path) -> String {
    let path = Path::new(argv0);
    if path.components().count() <= 1 {
        return "idemsim".into();
    }
    let absolute = cwd.join(path);
    let profile = absolute.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str());
    let target = absolute.parent().and_then(Path::parent);
    let in_target = target.and_then(Path::file_name).is_some_and(|n| n == "target");
    let workspace = target.and_then(Path::parent);
    let inside = workspace.is_some_and(|w| cwd.starts_with(w));
    match (in_target, profile) {
        (true, Some("release")) if inside => "cargo run --release --bin idemsim --".into(),
        (true, Some("debug")) if inside => "cargo run --bin idemsim --".into(),
        _ if path.is_absolute() => quoted(argv0).into_owned(),
        _ => quoted(&absolute.to_string_lossy()).into_owned(),
    }
}

/// A word as a POSIX shell reads it back: as it is when it has only
/// characters no shell treats specially, else in single quotes.
pub fn quoted(word: &str) -> Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    match !word.is_empty() && word.chars().all(plain) {
        true => Cow::Borrowed(word),
        false => Cow::Owned(format!("'{}'", word.replace('\'', r"'\''"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_printed_as_the_user_ran_idemsim() {
        let repo = Path::new("/w/x");
        assert_eq!(program_in("idemsim", repo), "idemsim");
        assert_eq!(program_in("target/release/idemsim", repo), "cargo run --release --bin idemsim --");
        assert_eq!(program_in("/w/x/target/debug/idemsim", Path::new("/w/x/docs")), "cargo run --bin idemsim --");
        assert_eq!(program_in("/opt/bin/idemsim", repo), "/opt/bin/idemsim");
        // Outside the workspace, `cargo run` would not find it: the path.
        assert_eq!(program_in("/w/x/target/release/idemsim", Path::new("/tmp")), "/w/x/target/release/idemsim");
        assert_eq!(program_in("../x/target/release/idemsim", Path::new("/w/y")), "/w/y/../x/target/release/idemsim");
        assert_eq!(program_in("/my tools/idemsim", repo), "'/my tools/idemsim'");
    }

    #[test]
    fn words_are_quoted_only_when_a_shell_would_misread_them() {
        assert_eq!(quoted("shrunk-a-b-3.json"), "shrunk-a-b-3.json");
        assert_eq!(quoted("my file.json"), "'my file.json'");
        assert_eq!(quoted("it's"), r"'it'\''s'");
        assert_eq!(quoted(""), "''");
        assert_eq!(quoted("$HOME"), "'$HOME'");
    }
}
