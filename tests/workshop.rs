//! The workshop pages show the story `idemsim run ... --shrink` prints for
//! their scenario's first broken variant; this checks that each pasted
//! story is the one the simulator tells today. After a change that alters
//! the stories, regenerate them with
//! `IDEMSIM_BLESS=1 cargo test --release -p idemsim-tests workshop`.

use idemsim::catalogue;
use idemsim::shrink::{shrink, ShrinkSpec};
use idemsim_sim::{run_seed, StoreKind};
use std::path::{Path, PathBuf};

const MARK: &str = "<!-- the story `--shrink` prints; tests/workshop.rs checks it -->";

fn pages() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/workshop");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(|c: char| c.is_ascii_digit())))
        .collect();
    pages.sort();
    pages
}

/// The scenario and variant of the page's first `--shrink` command.
fn command(page: &str) -> (String, String) {
    let line = page.lines().find(|l| l.starts_with("idemsim run --scenario") && l.contains("--shrink")).unwrap();
    let word = |flag: &str| line.split_whitespace().skip_while(|w| *w != flag).nth(1).unwrap().to_string();
    (word("--scenario"), word("--variant"))
}

/// The story that command prints: the shrunk first failing seed of 0..200.
fn story(scenario: &str, variant: &str) -> String {
    let scenario = catalogue::find(scenario).unwrap();
    let config = scenario.config_for(variant).unwrap();
    let seed = (0..200).find(|&s| run_seed(&config, StoreKind::Mem, s).unwrap().failed()).unwrap();
    let spec = ShrinkSpec {
        scenario: &scenario,
        variant,
        subject: StoreKind::Mem.into(),
        seed,
        runs_max: 3000,
        property: None,
    };
    shrink(&spec).unwrap().story(false)
}

/// The page with its story block set to `story`: after the mark, a text
/// fence; inserted before "What to look for" when the page has none yet.
fn with_story(page: &str, story: &str) -> String {
    let block = format!("{MARK}\n```text\n{story}```\n");
    match page.find(MARK) {
        Some(at) => {
            let end = page[at..].match_indices("```").nth(1).map(|(i, _)| at + i + 3).unwrap();
            let end = end + usize::from(page[end..].starts_with('\n'));
            format!("{}{block}{}", &page[..at], &page[end..])
        }
        None => {
            let at = page.find("What to look for").unwrap();
            format!("{}The shrunk story reads:\n\n{block}\n{}", &page[..at], &page[at..])
        }
    }
}

#[test]
fn the_workshop_pages_show_todays_stories() {
    let bless = std::env::var_os("IDEMSIM_BLESS").is_some();
    let mut stale = Vec::new();
    for path in pages() {
        let page = std::fs::read_to_string(&path).unwrap();
        let (scenario, variant) = command(&page);
        let story = story(&scenario, &variant);
        assert!(story.lines().count() <= 18, "{}: a story for a slide\n{story}", path.display());
        let expected = with_story(&page, &story);
        if expected == page {
            continue;
        }
        match bless {
            true => std::fs::write(&path, expected).unwrap(),
            false => stale.push(format!("{} ({scenario}/{variant}):\n{story}", path.display())),
        }
    }
    assert!(
        stale.is_empty(),
        "stories differ from the pages (IDEMSIM_BLESS=1 cargo test --release -p idemsim-tests workshop rewrites them):\n{}",
        stale.join("\n")
    );
}
