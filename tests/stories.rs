//! Stories never contradict themselves, over the whole catalogue: for the
//! first failing seed of every broken variant, and for its shrunk run, the
//! story of every violation cites only its own lines, folds repeated tries
//! onto the lines of the node that repeated them, prints no lease nobody
//! could outlast as a date, and never says one write was both refused and
//! accepted.

use idemsim::catalogue;
use idemsim::shrink::{shrink, ShrinkSpec};
use idemsim::Expect;
use idemsim_sim::story::story_with;
use idemsim_sim::{run_seed, RunOutcome, StoreKind};

/// The story lines (`  7. at    1.234s  db: ...`) as (number, text after the time).
fn lines(story: &str) -> Vec<(usize, String)> {
    story
        .lines()
        .filter_map(|l| {
            let (number, rest) = l.trim_start().split_once(". at ")?;
            let n = number.parse().ok()?;
            let text = rest.trim_start().split_once("  ")?.1.to_string();
            Some((n, text))
        })
        .collect()
}

fn judge(label: &str, story: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    let told = lines(story);
    let count = told.len();
    // One numbering: `at line K` is a line of this story; `#N` is never
    // cited bare (only `event #N (not shown)` or an attempt, `attempt #N`).
    for cite in story.match_indices("at line ").map(|(at, _)| &story[at + 8..]) {
        let k: usize = cite.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap_or(0);
        if k == 0 || k > count {
            wrong.push(format!("{label}: cites line {k} of {count}"));
        }
    }
    if story.contains(" at #") {
        wrong.push(format!("{label}: cites an event by its history number"));
    }
    for (n, text) in &told {
        // A fold note is said by the node whose tries it folds.
        if text.contains("went the same way as") && text.starts_with("the lease of") {
            wrong.push(format!("{label}: line {n} folds tries onto a lease line: {text}"));
        }
        // No lease printed as a date a century away.
        if text.split_whitespace().any(|w| {
            w.trim_end_matches(['s', ',', ')'])
                .split('.')
                .next()
                .is_some_and(|d| d.len() >= 8 && d.chars().all(|c| c.is_ascii_digit()))
        }) {
            wrong.push(format!("{label}: line {n} prints a time no run reaches: {text}"));
        }
    }
    // A refused write is never the accepted one: after "refuses the
    // completion of S by W: attempt #A ...", a "W completes S with
    // attempt #B" line has B other than A.
    for (n, text) in &told {
        let Some(rest) = text.split_once("refuses the completion of ").map(|x| x.1) else { continue };
        let Some((scope, rest)) = rest.split_once(" by ") else { continue };
        let Some((writer, rest)) = rest.split_once(": attempt ") else { continue };
        let refused = rest.split_whitespace().next().unwrap_or("");
        let accepted = format!("{writer} completes {scope} with attempt {refused}:");
        if let Some((m, _)) = told.iter().find(|(m, t)| m > n && t.contains(&accepted)) {
            wrong.push(format!("{label}: line {n} refuses what line {m} accepts"));
        }
    }
    wrong
}

fn stories(outcome: &RunOutcome) -> Vec<String> {
    outcome.violations.iter().map(|v| story_with(&outcome.history, v, false)).collect()
}

#[test]
fn no_story_in_the_catalogue_contradicts_itself() {
    let mut wrong = Vec::new();
    let mut judged = 0;
    for scenario in catalogue::all() {
        for (variant, expect) in &scenario.expect {
            let Expect::Violates(property) = *expect else { continue };
            let config = scenario.config_for(variant).unwrap();
            let found = (0..2000).map(|seed| run_seed(&config, StoreKind::Mem, seed).unwrap()).find(|o| o.failed());
            let found = found.unwrap_or_else(|| panic!("{}/{variant} not caught", scenario.name));
            let label = format!("{}/{variant} seed {}", scenario.name, found.seed);
            for story in stories(&found) {
                wrong.extend(judge(&label, &story));
                judged += 1;
            }
            let spec = ShrinkSpec {
                scenario: &scenario,
                variant,
                subject: StoreKind::Mem.into(),
                seed: found.seed,
                runs_max: 3000,
                property: Some(property),
            };
            let shrunk = shrink(&spec).unwrap();
            wrong.extend(judge(&format!("{label} shrunk"), &shrunk.story(false)));
            judged += 1;
        }
    }
    assert!(judged > 100, "{judged} stories");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_checks_catch_what_they_are_for() {
    let story = "  in short: x broke: y at #12\n  1. at    0.001s  client-0: sends op1.1\n  2. at    0.002s  db: op1.1 claims a/k: new record, attempt #1, lease until 3153600000.002s\n  3. at    1.000s  the lease of a/k attempt #1 runs out: op3 went the same way as op1\n";
    let wrong = judge("made up", story);
    assert_eq!(wrong.len(), 3, "{wrong:?}");
    let refused = "  1. at    1.0s  db: refuses the completion of a/k by op1.1: attempt #1 does not hold the record\n  2. at    1.1s  db: op1.1 completes a/k with attempt #1: stores 201\n  => this breaks fencing: at line 2\n";
    assert_eq!(judge("made up", refused).len(), 1);
    let fine = "  1. at    1.0s  db: op1.1 completes a/k with attempt #1: stores 201\n  => this breaks liveness: at line 1, at event #40 (not shown)\n";
    assert!(judge("made up", fine).is_empty());
}
