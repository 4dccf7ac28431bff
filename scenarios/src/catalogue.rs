//! The built-in scenarios.

use crate::scenario::{Expect, Scenario};
use idemsim_model::Property;
use idemsim_sim::{SimConfig, Variant};

/// Every built-in scenario, the default first.
pub fn all() -> Vec<Scenario> {
    vec![default()]
}

/// A scenario by name.
pub fn find(name: &str) -> Option<Scenario> {
    all().into_iter().find(|s| s.name == name)
}

/// The main job: a small deployment under swarm faults.
fn default() -> Scenario {
    Scenario {
        name: "default".into(),
        lesson: "Three API servers, four clients and one database under swarm faults: every seed draws its own mix \
                 of lost, duplicated and delayed messages, partitions, crashes (also between the payment call and \
                 the completion), pauses past the lease and skewed clocks. About fifty keyed requests (orders, \
                 charges, checkouts) with concurrent duplicates, reused keys with other bodies, missing keys, \
                 invalid-then-corrected bodies and tenants sharing key strings. The correct protocol keeps every \
                 property; each broken variant swaps one step and is caught."
            .into(),
        config: SimConfig::default(),
        expect: [
            (Variant::Correct, Expect::Clean),
            (Variant::CheckThenInsert, Expect::Violates(Property::Fencing)),
            (Variant::TakeoverWithoutBump, Expect::Violates(Property::Fencing)),
            (Variant::UnfencedCompletion, Expect::Violates(Property::Fencing)),
        ]
        .into_iter()
        .collect(),
    }
}
