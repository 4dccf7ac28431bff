//! The timeline page's data, checked without a browser (tests/browser.rs
//! draws it).

use crate::{run_seed, SimConfig, StoreKind, Variant};

#[test]
fn the_page_is_self_contained_and_carries_the_violation() {
    let config = SimConfig { steps: Variant::UnfencedCompletion.steps(), ..SimConfig::default() };
    let found = (0..200).map(|s| run_seed(&config, StoreKind::Mem, s).unwrap()).find(|o| o.failed()).unwrap();
    let page = super::render("t <x>", &found.history, &found.violations);
    assert!(page.contains("<title>idemsim: t &lt;x&gt;</title>"));
    // The only URL in the page is the SVG namespace's name, never fetched.
    assert_eq!(page.matches("http").count(), page.matches("http://www.w3.org/2000/svg").count());
    assert!(!page.contains("src=\"http") && !page.contains("href=\"http"), "no fetches");
    let data = page.split("const DATA = ").nth(1).unwrap().split(";\nconst ROW_H").next().unwrap();
    let json: serde_json::Value = serde_json::from_str(&data.replace("<\\/", "</")).unwrap();
    assert_eq!(json["events"].as_array().unwrap().len(), found.history.entries.len());
    assert!(json["events"].as_array().unwrap().iter().any(|e| e["violation"] == true));
    assert!(json["lanes"].as_array().unwrap().len() >= 5);
}
