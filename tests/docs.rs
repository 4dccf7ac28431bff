//! The docs cite each other and the code cites them: every citation must
//! lead somewhere. The protocol's sections live in docs/protocol.md, and
//! every `docs/protocol.md §N` in the repository names one of them.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The repository's Rust sources and Markdown pages, without build output
/// or installed packages.
fn sources() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                if !name.starts_with('.') && !["target", "node_modules", "validation"].contains(&name.as_str()) {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") || name.ends_with(".md") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The numbers of docs/protocol.md's numbered sections (`## N. Title`).
fn sections() -> Vec<u32> {
    let page = std::fs::read_to_string(root().join("docs/protocol.md")).unwrap();
    page.lines()
        .filter_map(|l| l.strip_prefix("## "))
        .filter_map(|l| l.split_once(". ").and_then(|(n, _)| n.parse().ok()))
        .collect()
}

/// The section numbers a text cites: `docs/protocol.md §N`, and `§M` in
/// `§N to §M`.
fn citations(text: &str) -> Vec<u32> {
    let number = |s: &str| -> (Option<u32>, usize) {
        let digits = s.chars().take_while(char::is_ascii_digit).count();
        (s[..digits].parse().ok(), digits)
    };
    let mut cited = Vec::new();
    for (i, m) in text.match_indices("docs/protocol.md §") {
        let rest = &text[i + m.len()..];
        let (first, len) = number(rest);
        cited.extend(first);
        if let Some(tail) = rest[len..].strip_prefix(" to §") {
            cited.extend(number(tail).0);
        }
    }
    cited
}

#[test]
fn every_citation_of_the_protocol_names_one_of_its_sections() {
    let sections = sections();
    assert_eq!(sections, (1..=9).collect::<Vec<_>>(), "docs/protocol.md's numbered sections");
    let mut cited = 0;
    for path in sources() {
        if path.ends_with("tests/docs.rs") {
            continue; // this file's own examples
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for n in citations(&text) {
            assert!(sections.contains(&n), "{} cites docs/protocol.md §{n}, which does not exist", path.display());
            cited += 1;
        }
        if path.ends_with("docs/performance.md") {
            continue; // a record of past figures, not a citation
        }
        assert!(!text.contains("PROTOCOL.md"), "{} cites PROTOCOL.md, which is not in the repository", path.display());
    }
    assert!(cited >= 10, "only {cited} citations found: is the scan looking in the right places?");
}

#[test]
fn citations_are_read_as_written() {
    assert_eq!(citations("see docs/protocol.md §3."), vec![3]);
    assert_eq!(citations("(docs/protocol.md §4 to §8 over maps)"), vec![4, 8]);
    assert_eq!(citations("docs/protocol.md §12 and docs/protocol.md §2"), vec![12, 2]);
}

/// The methods of `trait Protocol` with a provided body, read from its
/// source: every `fn` between the trait's opening line and its closing
/// brace, but `name`.
fn protocol_steps() -> Vec<String> {
    let source = std::fs::read_to_string(root().join("sim/protocol/src/steps.rs")).unwrap();
    let body = source.split_once("pub trait Protocol: Send + Sync {").expect("the trait").1;
    let body = &body[..body.find("\n}\n").expect("the trait's end")];
    let mut steps: Vec<String> = body
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("async fn ").or_else(|| l.trim_start().strip_prefix("fn ")))
        .map(|l| l.split(['(', '<']).next().unwrap().to_string())
        .filter(|name| name != "name")
        .collect();
    steps.sort();
    steps
}

#[test]
fn the_list_of_overridable_steps_is_the_traits() {
    let page = std::fs::read_to_string(root().join("docs/scenarios.md")).unwrap();
    let mark = "<!-- protocol steps: tests/docs.rs checks this list -->";
    let list = page.split_once(mark).expect("the marked list").1.split("\n\n").next().unwrap();
    let mut listed: Vec<String> = list.split('`').skip(1).step_by(2).map(String::from).collect();
    listed.sort();
    let steps = protocol_steps();
    assert!(steps.len() >= 20 && steps.contains(&"spend_retry".to_string()), "{steps:?}");
    assert_eq!(listed, steps, "docs/scenarios.md lists other steps than trait Protocol has");
}
