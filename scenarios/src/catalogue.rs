//! The built-in scenarios.

use crate::scenario::{Expect, Scenario};
use idemsim_model::{Coverage, Property};
use idemsim_sim::config::Mix;
use idemsim_sim::{FaultProfile, FaultSettings, SimConfig, Variant};

/// Every built-in scenario, the default first.
pub fn all() -> Vec<Scenario> {
    vec![
        default(),
        concurrent_duplicates(),
        crash_after_effect(),
        paused_holder(),
        fingerprint_mismatch(),
        validation_retry(),
        tenant_collision(),
    ]
}

fn expect(pairs: &[(Variant, Expect)]) -> std::collections::BTreeMap<Variant, Expect> {
    pairs.iter().copied().collect()
}

/// A mix of one kind of keyed operation on top of a few plain creates.
fn mix(f: impl FnOnce(&mut Mix)) -> SimConfig {
    let mut config = SimConfig::default();
    let mut m = Mix { orders: 1, charges: 1, checkout: 1, ..Mix::default() };
    m.concurrent_duplicate = 0;
    m.mismatch = 0;
    m.missing_key = 0;
    m.invalid_then_fixed = 0;
    m.tenant_collision = 0;
    f(&mut m);
    config.workload.mix = m;
    config
}

fn concurrent_duplicates() -> Scenario {
    Scenario {
        name: "concurrent-duplicates".into(),
        lesson: "Two copies of one request arrive at the same time, from two clients, on two servers, under swarm \
                 faults. The claim must be atomic: whoever inserts the record executes, everyone else gets 409 or \
                 the stored response. A claim that reads first and executes when the read found nothing lets both \
                 copies execute holding the same fencing token."
            .into(),
        config: mix(|m| m.concurrent_duplicate = 6),
        sometimes: ["in_flight_rejected", "replay"].map(String::from).to_vec(),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::CheckThenInsert, Expect::Violates(Property::Fencing)),
        ]),
    }
}

fn crash_after_effect() -> Scenario {
    let mut config = mix(|m| {
        m.charges = 3;
        m.checkout = 2;
    });
    let profile = FaultProfile { crash_before_complete_permille: 300, down_ms_max: 1_000, ..FaultProfile::calm() };
    config.faults = FaultSettings::Pinned(profile);
    Scenario {
        name: "crash-after-effect".into(),
        lesson: "A server crashes between charging the card and recording the completion. The record stays \
                 in_progress with its recovery point; after the lease a retry or the reconciler takes it over and \
                 calls the provider again with the same downstream key, which the provider collapses to one \
                 charge. Derive that key from the attempt instead and the resume charges twice."
            .into(),
        config,
        sometimes: ["crash_between_effect_and_completion", "takeover"].map(String::from).to_vec(),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::DownstreamKeyFromAttempt, Expect::Violates(Property::AtMostOnce)),
        ]),
    }
}

fn paused_holder() -> Scenario {
    let mut config = mix(|m| m.orders = 2);
    let profile = FaultProfile { pause_before_complete_permille: 300, ..FaultProfile::calm() };
    config.faults = FaultSettings::Pinned(profile);
    Scenario {
        name: "paused-holder".into(),
        lesson: "A holder freezes (a GC pause, a slow call) past its lease; a retry takes the record over and \
                 finishes; then the holder wakes and tries to complete. Fencing stops it: the takeover bumped the \
                 attempt and the completion is conditional on it. Carry on with the old attempt instead of a \
                 takeover, or drop the attempt from the completion, and the stale write lands."
            .into(),
        config,
        sometimes: ["lease_expired_mid_execute", "stale_holder_fenced"].map(String::from).to_vec(),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::TakeoverWithoutBump, Expect::Violates(Property::Fencing)),
            (Variant::UnfencedCompletion, Expect::Violates(Property::Fencing)),
        ]),
    }
}

fn fingerprint_mismatch() -> Scenario {
    Scenario {
        name: "fingerprint-mismatch".into(),
        lesson: "A client reuses a key with another body. The record's fingerprint (method, path, canonical body) \
                 no longer matches, and the answer must be 422, never the old response and never a silent success."
            .into(),
        config: mix(|m| m.mismatch = 4),
        sometimes: ["mismatch_rejected"].map(String::from).to_vec(),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::FingerprintNotCompared, Expect::Violates(Property::StatusRules)),
        ]),
    }
}

fn validation_retry() -> Scenario {
    Scenario {
        name: "validation-retry".into(),
        lesson: "A request fails validation before anything executes, and the client retries with the corrected \
                 body and the same key. The 400 must not be stored: the claim is released so the corrected retry \
                 executes. Store it and the key is stuck on the error."
            .into(),
        config: mix(|m| m.invalid_then_fixed = 4),
        sometimes: ["replay"].map(String::from).to_vec(),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::ValidationStored, Expect::Violates(Property::StatusRules)),
        ]),
    }
}

fn tenant_collision() -> Scenario {
    Scenario {
        name: "tenant-collision".into(),
        lesson: "Two tenants pick the same key string for the same request. Records are scoped by (caller, key), \
                 so each gets its own execution and response. Key the record by the key string alone and one \
                 tenant is handed the other's stored response."
            .into(),
        config: mix(|m| m.tenant_collision = 4),
        sometimes: ["replay"].map(String::from).to_vec(),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::KeyNotScoped, Expect::Violates(Property::Isolation)),
        ]),
    }
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
        sometimes: Coverage::default().counters().iter().map(|(name, _)| name.to_string()).collect(),
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
