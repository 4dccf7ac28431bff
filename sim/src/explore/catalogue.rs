//! The small configurations a design review or a workshop reasons about,
//! each one a few operations and at most a fault or two: small enough to
//! explore every interleaving.

use super::config::{ExploreConfig, FaultKind, OperationSpec};

/// The names of the catalogue's configurations, in order.
pub const NAMES: [&str; 11] = [
    "pair",
    "other-body",
    "other-path",
    "invalid-then-fixed",
    "lost-reply",
    "paused-holder",
    "crash",
    "checkout-crash",
    "store-faults",
    "provider-timeout",
    // Last: two independent operations interleave every way (77,220
    // executions), so a search for a first failure reaches it after the
    // small ones.
    "two-callers",
];

/// Every configuration of the catalogue.
pub fn configs() -> Vec<ExploreConfig> {
    NAMES.iter().map(|n| config(n).expect("every name has a configuration")).collect()
}

/// The configuration called `name`.
pub fn config(name: &str) -> Option<ExploreConfig> {
    let one = || vec![OperationSpec::charge("k1")];
    let (description, operations, faults, budget): (&str, Vec<OperationSpec>, Vec<FaultKind>, u32) = match name {
        "pair" => ("two clients send one request (same key, same body) at once, to two servers", pair(100), vec![], 0),
        "other-body" => ("two clients send one key with other bodies at once (a mismatch)", pair(250), vec![], 0),
        "other-path" => (
            "two clients send one key, same body, to two endpoints at once",
            vec![OperationSpec::charge("k1"), OperationSpec { path: "/orders".into(), ..OperationSpec::charge("k1") }],
            vec![],
            0,
        ),
        "invalid-then-fixed" => (
            "an invalid request (amount -5), then the corrected one with the same key half a second later",
            vec![
                OperationSpec { amount: -5, ..OperationSpec::charge("k1") },
                OperationSpec { at_ms: 500, ..OperationSpec::charge("k1") },
            ],
            vec![],
            0,
        ),
        "checkout-crash" => (
            "one checkout (a local write, a charge and a message) whose server may crash around its completion",
            vec![OperationSpec { path: "/checkout".into(), ..OperationSpec::charge("k1") }],
            vec![FaultKind::Crash],
            1,
        ),
        "two-callers" => ("two callers use the same key at once: their records must stay apart", two_callers(), vec![], 0),
        "lost-reply" => ("one request whose reply may be lost; the client retries on another server", one(), vec![FaultKind::LoseReply], 1),
        "paused-holder" => (
            "one request whose holder may freeze past its lease before it completes (and so may the holder that takes over)",
            one(),
            vec![FaultKind::Pause],
            2,
        ),
        "crash" => ("one request whose server may crash right before or after it completes", one(), vec![FaultKind::Crash], 1),
        "store-faults" => (
            "one request; any store operation may be lost, or applied with its answer lost",
            one(),
            vec![FaultKind::StoreFail, FaultKind::StoreIndeterminate],
            1,
        ),
        "provider-timeout" => ("one request; the dependency may charge and its answer be lost", one(), vec![FaultKind::ProviderTimeout], 1),
        _ => return None,
    };
    Some(ExploreConfig {
        name: name.into(),
        description: description.into(),
        operations,
        faults,
        fault_budget: budget,
        ..ExploreConfig::default()
    })
}

/// Two operations with key `k1`: the second with `amount`.
fn pair(amount: i64) -> Vec<OperationSpec> {
    vec![OperationSpec::charge("k1"), OperationSpec { amount, ..OperationSpec::charge("k1") }]
}

fn two_callers() -> Vec<OperationSpec> {
    vec![OperationSpec::charge("k1"), OperationSpec { caller: "globex".into(), ..OperationSpec::charge("k1") }]
}
