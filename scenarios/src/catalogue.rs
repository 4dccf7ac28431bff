//! The built-in scenarios.

use crate::scenario::{Expect, Scenario};
use idemsim_model::{Property, Sometimes};
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
        local_effect(),
        expiry_window(),
        retry_storm(),
        outbox(),
        payment_timeout(),
    ]
}

fn local_effect() -> Scenario {
    let mut config = mix(|m| {
        m.orders = 4;
        m.charges = 0;
        m.checkout = 0;
    });
    let profile = FaultProfile { crash_before_complete_permille: 300, down_ms_max: 1_000, ..FaultProfile::calm() };
    config.faults = FaultSettings::Pinned(profile);
    Scenario {
        name: "local-effect".into(),
        lesson: "The effect is a row in the same database: an order. It must commit in the completion's transaction, \
                 so a crash before the completion leaves neither the row nor the response, the reconciler releases \
                 the record, and the retry creates the order once. Commit the row in its own transaction first and \
                 a crash between the two leaves an order with no completion: the retry creates a second one."
            .into(),
        config,
        sometimes: names(&[Sometimes::CrashMidExecution, Sometimes::Takeover]),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::EffectOwnTransaction, Expect::Violates(Property::AtMostOnce)),
        ]),
        variants: Default::default(),
        reproduces: None,
    }
}

const MINUTE_MS: u64 = 60_000;
const HOUR_MS: u64 = 60 * MINUTE_MS;
const DAY_MS: u64 = 24 * HOUR_MS;

fn expiry_window() -> Scenario {
    let mut config = mix(|m| {
        m.orders = 2;
        m.charges = 2;
        m.checkout = 0;
    });
    config.topology.servers = 2;
    config.topology.clients = 3;
    config.workload.requests = 20;
    config.workload.spread_ms = 12 * HOUR_MS;
    let p = &mut config.protocol;
    p.retry = idemsim_model::RetryPolicy {
        base_ms: MINUTE_MS,
        cap_ms: 4 * HOUR_MS,
        attempts_max: 10,
        deadline_ms: 20 * HOUR_MS,
        timeout_ms: 30_000,
        budget: idemsim_model::retry::RetryBudget { tokens_max: 50, deposit_milli: 1_000 },
    };
    p.reconcile_interval_ms = 5 * MINUTE_MS;
    p.reconcile_bound_ms = 20 * MINUTE_MS;
    p.relay_interval_ms = MINUTE_MS;
    p.sweep_interval_ms = HOUR_MS;
    p.amplification_max_percent = 1_000;
    config.faults = FaultSettings::Pinned(FaultProfile {
        drop_permille: 50,
        partitions: 3,
        partition_ms_max: 6 * HOUR_MS,
        crash_before_complete_permille: 200,
        down_ms_max: 10 * MINUTE_MS,
        lose_response_permille: 300,
        ..FaultProfile::calm()
    });
    config.phases.fault_ms = DAY_MS;
    config.phases.heal_ms = DAY_MS + 6 * HOUR_MS;
    Scenario {
        name: "expiry-window".into(),
        lesson: "Records expire, but not before every retry that could still come has come. Clients here retry for \
                 up to 20 hours (long partitions, lost responses), the documented window is 24 hours, and the \
                 sweeper deletes completed records only after it: a retry hours later is replayed, and the record \
                 goes a day later. Sweep after an hour and a late retry executes again; sweep in_progress records \
                 whose lease ran out and a crashed execution loses its recovery point."
            .into(),
        config,
        sometimes: names(&[Sometimes::LateReplay, Sometimes::RecordSwept, Sometimes::CrashMidExecution]),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::SweepWindowShort, Expect::Violates(Property::Expiry)),
            (Variant::SweepDeletesUnfinished, Expect::Violates(Property::Expiry)),
        ]),
        variants: Default::default(),
        reproduces: None,
    }
}

fn retry_storm() -> Scenario {
    let mut config = mix(|m| {
        m.orders = 3;
        m.charges = 3;
        m.checkout = 0;
        m.mismatch = 1;
        m.missing_key = 1;
    });
    config.workload.requests = 80;
    config.workload.spread_ms = 10_000;
    config.faults = FaultSettings::Scheduled {
        profile: FaultProfile::calm(),
        faults: vec![idemsim_sim::plan::TimedFault {
            at_ms: 3_000,
            action: idemsim_sim::plan::FaultAction::Crash { node: idemsim_model::NodeId::Db, down_ms: 4_000 },
        }],
    };
    Scenario {
        name: "retry-storm".into(),
        lesson: "The database is down for four seconds under steady load. Disciplined clients retry only transient \
                 failures, with the same key, after a fully jittered backoff, within a retry budget, so the outage \
                 costs a bounded number of extra sends and the keys make the retries safe. Retry a 4xx, mint a new \
                 key per retry, drop the jitter (everyone retries at the same instant) or retry at three layers \
                 (six sends become two hundred) and the retry discipline is broken."
            .into(),
        config,
        sometimes: names(&[Sometimes::RetryBudgetExhausted, Sometimes::Replay]),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::RetryOn4xx, Expect::Violates(Property::RetryDiscipline)),
            (Variant::NewKeyPerRetry, Expect::Violates(Property::RetryDiscipline)),
            (Variant::NoJitter, Expect::Violates(Property::RetryDiscipline)),
            (Variant::ThreeLayerRetries, Expect::Violates(Property::RetryDiscipline)),
        ]),
        variants: Default::default(),
        reproduces: None,
    }
}

fn outbox() -> Scenario {
    let config = mix(|m| {
        m.orders = 1;
        m.charges = 0;
        m.checkout = 4;
    });
    Scenario {
        name: "outbox".into(),
        lesson: "A checkout must also tell the warehouse. The message is written to an outbox table in the \
                 completion's transaction and a relay publishes it afterwards, at least once; the consumer dedups \
                 by message id, so it is applied exactly once, and never for a checkout that did not commit. \
                 Publish from the handler before the completion commits and the warehouse hears of checkouts that \
                 may never exist."
            .into(),
        config,
        sometimes: names(&[Sometimes::MessageRedelivered, Sometimes::CrashBetweenEffectAndCompletion]),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::PublishBeforeCommit, Expect::Violates(Property::Outbox)),
        ]),
        variants: Default::default(),
        reproduces: None,
    }
}

fn payment_timeout() -> Scenario {
    let mut config = mix(|m| {
        m.orders = 0;
        m.charges = 4;
        m.checkout = 2;
        m.mismatch = 2;
        m.concurrent_duplicate = 3;
    });
    // The provider's answers are drawn around the servers' timeout for it,
    // the pauses and clock offsets around the lease: the subject's settings.
    let (timeout_ms, lease_ms) = (config.protocol.downstream_timeout_ms, config.protocol.lease_ms);
    config.faults = FaultSettings::Pinned(FaultProfile {
        latency_ms: [1, 60],
        provider_slow_permille: 400,
        provider_slow_ms_max: 4 * timeout_ms,
        provider_unavailable_permille: 150,
        provider_retry_after_ms_max: 2 * timeout_ms,
        provider_decline_permille: 100,
        pauses: 4,
        pause_ms_max: 3 * lease_ms,
        skew_ms_max: 2 * lease_ms,
        ..FaultProfile::calm()
    });
    Scenario {
        name: "payment-timeout".into(),
        lesson: "The payment provider is slow, refuses for now (429 or 503 with Retry-After), and declines cards \
                 (402). A timeout tells the server nothing: the charge may have gone through. The record must stay \
                 in_progress with its recovery point, and whoever resumes it (the retry after the lease, or the \
                 reconciler) calls the provider again with the same key, which it collapses onto the charge; a \
                 decline is the operation's answer, stored and replayed like a success. Release the record on a \
                 timeout and the charge is forgotten: a retry with another body charges again, and a client that \
                 gives up leaves a charge no record knows of. Make up a new provider key per execution, saved in \
                 the recovery point, and a retry that read the record before the holder saved its key takes it \
                 over and charges again: the correct key is a pure function of the request."
            .into(),
        config,
        sometimes: names(&[
            Sometimes::ProviderAnsweredLate,
            Sometimes::ProviderRefused,
            Sometimes::Takeover,
            Sometimes::Replay,
        ]),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::ReleaseOnProviderTimeout, Expect::Violates(Property::AtMostOnce)),
            (Variant::ProviderKeyPerExecution, Expect::Violates(Property::AtMostOnce)),
            (Variant::TransientErrorStored, Expect::Violates(Property::Liveness)),
        ]),
        variants: Default::default(),
        reproduces: None,
    }
}

fn expect(pairs: &[(Variant, Expect)]) -> std::collections::BTreeMap<String, Expect> {
    pairs.iter().map(|(v, e)| (v.name().to_string(), *e)).collect()
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
        sometimes: names(&[Sometimes::InFlightRejected, Sometimes::Replay]),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::CheckThenInsert, Expect::Violates(Property::Fencing)),
            (Variant::LockAroundLookup, Expect::Violates(Property::Fencing)),
            (Variant::PerProcessLock, Expect::Violates(Property::Fencing)),
        ]),
        variants: Default::default(),
        reproduces: None,
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
        sometimes: names(&[Sometimes::CrashBetweenEffectAndCompletion, Sometimes::Takeover]),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::DownstreamKeyFromAttempt, Expect::Violates(Property::AtMostOnce)),
            (Variant::NoLease, Expect::Violates(Property::Liveness)),
        ]),
        variants: Default::default(),
        reproduces: None,
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
        sometimes: names(&[Sometimes::LeaseExpiredMidExecute, Sometimes::StaleHolderFenced]),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::TakeoverWithoutBump, Expect::Violates(Property::Fencing)),
            (Variant::UnfencedCompletion, Expect::Violates(Property::Fencing)),
            (Variant::TransientErrorStored, Expect::Violates(Property::Liveness)),
        ]),
        variants: Default::default(),
        reproduces: None,
    }
}

fn fingerprint_mismatch() -> Scenario {
    Scenario {
        name: "fingerprint-mismatch".into(),
        lesson: "A client reuses a key with another body. The record's fingerprint (method, path, canonical body) \
                 no longer matches, and the answer must be 422, never the old response and never a silent success."
            .into(),
        config: mix(|m| m.mismatch = 4),
        sometimes: names(&[Sometimes::MismatchRejected]),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::FingerprintNotCompared, Expect::Violates(Property::StatusRules)),
        ]),
        variants: Default::default(),
        reproduces: None,
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
        sometimes: names(&[Sometimes::Replay]),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::ValidationStored, Expect::Violates(Property::StatusRules)),
        ]),
        variants: Default::default(),
        reproduces: None,
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
        sometimes: names(&[Sometimes::Replay]),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::KeyNotScoped, Expect::Violates(Property::Isolation)),
        ]),
        variants: Default::default(),
        reproduces: None,
    }
}

/// A scenario by name.
pub fn find(name: &str) -> Option<Scenario> {
    all().into_iter().find(|s| s.name == name)
}

/// The main job: a small deployment under swarm faults.
/// The default run, with a short documented expiry window (35 s, longer
/// than the clients' 30 s retry deadline) so that its sweeps, late retries
/// inside the window and retries after it happen within the run, and with
/// keys reused on another endpoint.
fn default_config() -> SimConfig {
    let mut config = SimConfig::default();
    let p = &mut config.protocol;
    p.expiry_window_ms = 35_000;
    p.sweep_window_ms = 35_000;
    p.sweep_interval_ms = 2_000;
    let m = &mut config.workload.mix;
    m.other_endpoint = 1;
    m.late_retry = 1;
    m.after_window = 1;
    config
}

fn default() -> Scenario {
    Scenario {
        name: "default".into(),
        lesson: "Three API servers, four clients and one database under swarm faults: every seed draws its own mix \
                 of lost, duplicated and delayed messages, partitions, crashes (also between the payment call and \
                 the completion), pauses past the lease and skewed clocks. About fifty keyed requests (orders, \
                 charges, checkouts) with concurrent duplicates, reused keys with other bodies and on other \
                 endpoints, missing keys, invalid-then-corrected bodies, tenants sharing key strings, and retries \
                 late inside the 35 s expiry window and after it. The correct protocol keeps every property and \
                 finishes what it starts; each broken variant swaps one step and is caught, by what the clients \
                 saw."
            .into(),
        config: default_config(),
        sometimes: names(&[
            Sometimes::Takeover,
            Sometimes::LeaseExpiredMidExecute,
            Sometimes::StaleHolderFenced,
            Sometimes::DuplicateAfterCompletion,
            Sometimes::ResponseLostAfterCommit,
            Sometimes::CrashBetweenEffectAndCompletion,
            Sometimes::Replay,
            Sometimes::MismatchRejected,
            Sometimes::InFlightRejected,
            Sometimes::ReconcilerCompleted,
            Sometimes::CrashMidExecution,
            Sometimes::LateReplay,
            Sometimes::RecordSwept,
        ]),
        expect: expect(&[
            (Variant::Correct, Expect::Clean),
            (Variant::CheckThenInsert, Expect::Violates(Property::Fencing)),
            (Variant::TakeoverWithoutBump, Expect::Violates(Property::Fencing)),
            (Variant::UnfencedCompletion, Expect::Violates(Property::Fencing)),
            (Variant::StaleCache, Expect::Violates(Property::StatusRules)),
            (Variant::TransientErrorStored, Expect::Violates(Property::Liveness)),
            (Variant::KeyNotScoped, Expect::Violates(Property::Isolation)),
            (Variant::KeyIncludesBody, Expect::Violates(Property::AtMostOnce)),
            (Variant::FingerprintWithoutPath, Expect::Violates(Property::StatusRules)),
            (Variant::SweepWindowShort, Expect::Violates(Property::Expiry)),
            (Variant::LeaseShorterThanWork, Expect::Violates(Property::Progress)),
        ]),
        variants: Default::default(),
        reproduces: None,
    }
}

/// The names of counters, as a scenario's `sometimes` lists them.
fn names(counters: &[Sometimes]) -> Vec<String> {
    counters.iter().map(|s| s.name().to_string()).collect()
}
