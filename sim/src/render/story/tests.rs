//! Stories of hand-made histories.

use crate::{run_seed, SimConfig, StoreKind, Variant};

#[test]
fn a_fencing_story_names_the_claims_and_ends_with_the_property() {
    let config = SimConfig { steps: Variant::CheckThenInsert.steps(), ..SimConfig::default() };
    let found = (0..200).map(|s| run_seed(&config, StoreKind::Mem, s).unwrap()).find(|o| o.failed()).unwrap();
    let v = &found.violations[0];
    let text = super::story(&found.history, v);
    assert!(text.starts_with("  in short: "), "{text}");
    assert!(text.lines().nth(1).unwrap().starts_with("  1. at"), "{text}");
    assert!(text.contains("claims"), "{text}");
    assert!(text.contains("<== here"), "{text}");
    // The explanation closes the story, its cited event said as the
    // story line that tells it.
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("  => this breaks fencing: two executions of"), "{text}");
    assert!(v.explanation.contains("at #") && last.contains("at line ") && !last.contains("at #"), "{text}");
    let lines = text.lines().count();
    assert!(lines < found.history.entries.len() / 2, "a story is a small part of the run: {lines} lines");
    assert!(text.contains("not shown: other keys and operations"), "{text}");
    let all = super::story_with(&found.history, v, true);
    assert!(all.lines().count() > lines && !all.contains("not shown"), "{all}");
}

#[test]
fn a_paused_holders_story_opens_with_what_happened() {
    let config = SimConfig { steps: Variant::UnfencedCompletion.steps(), ..crate::SimConfig::default() };
    let summaries: Vec<String> = (0..300)
        .map(|s| run_seed(&config, StoreKind::Mem, s).unwrap())
        .filter(|o| o.failed())
        .map(|o| super::summary(&o.history, &o.violations[0]))
        .collect();
    assert!(!summaries.is_empty());
    assert!(
        summaries.iter().any(|s| s.contains("holder of attempt #1") && s.ends_with("the write was not fenced")),
        "{summaries:#?}"
    );
}
