//! Every `idemsim` command the README shows runs, through the real binary,
//! and exits with the code the README states: 0, unless the command's line
//! says `exits N`. A README command that stopped working (a seed that no
//! longer fails, a store that refuses a sequence) fails here, not in a
//! newcomer's first hour.
//!
//! Each paragraph of a code block (lines between blank lines) runs in
//! order, since a later line may read what an earlier one wrote (`merge
//! shard*.json`, `replay --file small.json`); paragraphs, and lines that
//! use a database server (they write no files), run side by side,
//! each in a scratch directory that sees the checkout's `docs/`. A line
//! that needs a database server runs when the server answers on its local
//! port, and is skipped with a printed line when it does not, except under
//! `CI=true`, where a missing server fails the test.

use std::fs::File;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_idemsim");
const PREFIX: &str = "cargo run --release --bin idemsim --";
/// Longer than the slowest line (a real-store stress run, or `bench`).
const LINE_LIMIT: Duration = Duration::from_secs(300);

fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The paragraphs of the README's `sh` blocks that run idemsim, each a
/// list of its lines.
fn paragraphs(readme: &str) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new()];
    let mut inside = false;
    for line in readme.lines() {
        match (inside, line.trim_start().starts_with("```")) {
            (false, true) => inside = line.trim() == "```sh",
            (true, true) => {
                inside = false;
                out.push(Vec::new());
            }
            (true, false) if line.trim().is_empty() => out.push(Vec::new()),
            // A real-store line writes no file: it runs on its own.
            (true, false) if line.contains(PREFIX) && server(line).is_some() => {
                out.push(vec![line.to_string()]);
                out.push(Vec::new());
            }
            (true, false) if line.contains(PREFIX) => out.last_mut().unwrap().push(line.to_string()),
            _ => {}
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

/// The exit code a line states (`exits N` in its comment), else 0.
fn expected_code(line: &str) -> i32 {
    let comment = line.split_once(" # ").map_or("", |(_, c)| c);
    let Some((_, rest)) = comment.split_once("exits ") else { return 0 };
    rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

/// The database server a line needs, as (name, local address).
fn server(line: &str) -> Option<(&'static str, SocketAddr)> {
    let port = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
    [("pg", 5432), ("mysql", 3306), ("redis", 6379)]
        .into_iter()
        .find(|(name, _)| line.contains(&format!("--store {name}")))
        .map(|(name, p)| (name, port(p)))
}

fn answers(addr: SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok()
}

/// Runs one README line with `sh` in `dir`, the binary in place of `cargo
/// run`; its whole process group is ended afterwards (a `serve &` in the
/// line must not outlive it). Returns the exit code and the output's tail.
fn run_line(line: &str, dir: &Path, n: usize) -> (i32, String) {
    let command = line.replace(PREFIX, BIN);
    let log = dir.join(format!("line{n}.log"));
    let out = File::create(&log).unwrap();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(out.try_clone().unwrap())
        .stdout(out)
        .process_group(0)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > LINE_LIMIT {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = Command::new("kill").arg("--").arg(format!("-{}", child.id())).stderr(Stdio::null()).status();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(15).collect();
    let tail = tail.into_iter().rev().collect::<Vec<_>>().join("\n");
    match status {
        Some(status) => (status.code().unwrap_or(-1), tail),
        None => (-1, format!("still running after {LINE_LIMIT:?}\n{tail}")),
    }
}

/// Runs a paragraph's lines in order in a fresh scratch directory; returns
/// one message per line that did not exit as stated.
fn run_paragraph(lines: &[String], index: usize) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!("idemsim-tour-{}-{index}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(checkout().join("docs"), dir.join("docs")).unwrap();
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let mut wrong = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        if let Some((name, addr)) = server(line) {
            if !answers(addr) {
                match ci {
                    true => wrong.push(format!("{line}\n  needs {name} at {addr}, which is not answering (CI=true)")),
                    false => println!("SKIPPED (no {name} server at {addr}): {line}"),
                }
                continue;
            }
        }
        let (code, tail) = run_line(line, &dir, n);
        let expected = expected_code(line);
        if code != expected {
            wrong.push(format!("{line}\n  exited {code}, the README says {expected}; its output ends:\n{tail}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    wrong
}

#[test]
fn the_parser_reads_paragraphs_and_stated_codes() {
    let readme = "```sh\ncargo run --release --bin idemsim -- a   # exits 1: caught\n\
                  cargo run --release --bin idemsim -- b\n\ncargo test\n\
                  cargo run --release --bin idemsim -- c # a comment\n\
                  cargo run --release --bin idemsim -- check-store --store pg\n```\n\
                  ```text\ncargo run --release --bin idemsim -- d\n```\n";
    let p = paragraphs(readme);
    assert_eq!(p.len(), 3, "{p:?}");
    assert_eq!(p[2].len(), 1, "a real-store line on its own");
    assert_eq!(p[0].len(), 2);
    assert_eq!(expected_code(&p[0][0]), 1);
    assert_eq!(expected_code(&p[0][1]), 0);
    assert_eq!(expected_code(&p[1][0]), 0);
    assert!(server("x --store pg y").is_some() && server("x --store sqlite").is_none());
}

#[test]
fn every_readme_command_exits_as_the_readme_states() {
    let readme = std::fs::read_to_string(checkout().join("README.md")).unwrap();
    let paragraphs = paragraphs(&readme);
    let lines: usize = paragraphs.iter().map(Vec::len).sum();
    assert!(lines >= 15, "the README's idemsim commands were not found ({lines})");
    let wrong: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> =
            paragraphs.iter().enumerate().map(|(i, p)| s.spawn(move || run_paragraph(p, i))).collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(wrong.is_empty(), "README commands that do not exit as stated:\n{}", wrong.join("\n\n"));
}
