//! Protocol variants: the correct protocol, and versions of it with exactly
//! one step swapped for a broken one.
//!
//! A variant is a [`Steps`] value: one enum per protocol step, each with the
//! correct choice as its default. The servers, clients and background jobs
//! run whatever the steps say, so a user can build a new broken variant in
//! their own crate (or in a scenario file) by changing fields of
//! `Steps::default()`, without touching the simulator. [`Variant`] names the
//! catalogue's built-in ones.
//!
//! ```
//! use idemsim_protocol::{ClaimStep, CompletionStep, Steps};
//! // Two broken steps at once: a racy claim and an unfenced completion.
//! let mine = Steps { claim: ClaimStep::CheckThenInsert, completion: CompletionStep::Unfenced, ..Steps::default() };
//! assert_eq!(mine.broken(), vec!["claim: check-then-insert", "completion: unfenced"]);
//! ```

use serde::{Deserialize, Serialize};

macro_rules! step {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $v:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum $name {
            #[default]
            $($(#[$vdoc])* $v),+
        }

        impl $name {
            /// The kebab-case name, as in scenario files.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$v => $text),+
                }
            }
        }
    };
}

step!(
    /// How a request claims its key.
    ClaimStep {
        /// Atomic insert-if-absent (correct).
        Atomic = "atomic",
        /// Read, and execute whenever the read found nothing, even if the
        /// insert then found a row.
        CheckThenInsert = "check-then-insert",
        /// A lock service serialises the lookup, but the lock is released
        /// before the insert: the race is only moved.
        LockAroundLookup = "lock-around-lookup",
        /// An in-process lock per key around read-then-insert: safe on one
        /// server, useless across several.
        PerProcessLock = "per-process-lock",
    }
);

step!(
    /// What bounds an `in_progress` claim.
    LeaseStep {
        /// A lease of `protocol.lease_ms` that a takeover may break (correct).
        Leased = "leased",
        /// No lease: a claim holds forever, so a crashed holder's record is
        /// never taken over.
        None = "none",
        /// A lease shorter than the handler's work and calls: executions
        /// lose it midway, are taken over and fenced, again and again.
        ShorterThanWork = "shorter-than-work",
    }
);

step!(
    /// What a record is keyed by.
    ScopeStep {
        /// `(caller, key)` (correct).
        CallerAndKey = "caller-and-key",
        /// The key string alone.
        KeyOnly = "key-only",
        /// `(caller, key, fingerprint)`: a reused key with another body
        /// gets a record of its own and executes again.
        KeyAndBody = "key-and-body",
    }
);

step!(
    /// Where a server reads a key's record from.
    ReadStep {
        /// The store, on every request (correct).
        Store = "store",
        /// A per-server cache of the records it has seen, filled from the
        /// store's answers and never invalidated: another server's
        /// completion or release is not seen.
        ServerCache = "server-cache",
    }
);

step!(
    /// Whether a found record's fingerprint is compared with the request's.
    FingerprintStep {
        /// Compared; a mismatch is 422 (correct).
        Compared = "compared",
        /// Not compared: a reused key with another body gets the old response.
        Ignored = "ignored",
        /// The fingerprint hashes the body alone: the same key and body on
        /// another endpoint replays the first endpoint's response.
        BodyOnly = "body-only",
    }
);

step!(
    /// What happens to a validation error raised before execution.
    ValidationStep {
        /// The claim is released, so a corrected retry executes (correct).
        Release = "release",
        /// The error is stored as the response.
        Store = "store",
    }
);

step!(
    /// How an expired lease is taken over.
    TakeoverStep {
        /// A fenced takeover that bumps the attempt (correct).
        BumpAttempt = "bump-attempt",
        /// Carry on with the old attempt.
        KeepAttempt = "keep-attempt",
    }
);

step!(
    /// The key sent to the dependency.
    DownstreamKeyStep {
        /// Derived from the scope and the fingerprint, kept in the recovery
        /// point (correct).
        Stable = "stable",
        /// Derived from the attempt, so a resumed execution charges again.
        PerAttempt = "per-attempt",
        /// Made up by each execution and saved in the recovery point, reused
        /// by a resumer that reads it there: a takeover decided on a read
        /// from before the recovery point charges again.
        PerExecution = "per-execution",
    }
);

step!(
    /// Where a local effect (a row in the same database) is committed.
    LocalEffectStep {
        /// In the completion's transaction (correct).
        WithCompletion = "with-completion",
        /// In its own transaction before the completion.
        OwnTransaction = "own-transaction",
    }
);

step!(
    /// Whether the completion is conditional on the attempt.
    CompletionStep {
        /// `... WHERE attempt = ?` (correct).
        Fenced = "fenced",
        /// Whoever holds the record, the completion lands.
        Unfenced = "unfenced",
    }
);

step!(
    /// What a handler does when the dependency fails or does not answer.
    DependencyFailureStep {
        /// Answer 503 and leave the record `in_progress` with its recovery
        /// point, so a retry or the reconciler finishes it (correct).
        LeaveInProgress = "leave-in-progress",
        /// Complete the record with the 503: every retry replays a
        /// transient error, though the charge may have gone through.
        StoreError = "store-error",
        /// Release the record so the retry executes at once: the charge
        /// may have gone through when the dependency did not answer.
        Release = "release",
    }
);

step!(
    /// How follow-on messages leave.
    PublishStep {
        /// Staged in the outbox with the completion, published by the relay
        /// (correct).
        Outbox = "outbox",
        /// Published by the handler before the completion commits.
        BeforeCommit = "before-commit",
    }
);

step!(
    /// What the sweeper deletes.
    SweepStep {
        /// Completed records older than the documented window (correct).
        Documented = "documented",
        /// Completed records older than an hour: shorter than the clients'
        /// retry deadline.
        ShortWindow = "short-window",
        /// Also `in_progress` records whose lease expired ("abandoned").
        DeletesUnfinished = "deletes-unfinished",
    }
);

step!(
    /// How clients retry.
    RetryStep {
        /// docs/protocol.md §7: transient failures only, same key, full
        /// jitter, caps and budget (correct).
        Disciplined = "disciplined",
        /// Any 4xx is retried too.
        On4xx = "on-4xx",
        /// Every retry carries a new key.
        NewKey = "new-key",
        /// The backoff is the bound itself, no jitter: clients that failed
        /// together retry together.
        NoJitter = "no-jitter",
        /// An SDK, a service client and a job runner each retry the layer
        /// below: budgets multiply.
        ThreeLayers = "three-layers",
    }
);

/// The protocol a run executes, one choice per step. The default is the
/// correct protocol; every field is optional in a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Steps {
    /// The claim.
    pub claim: ClaimStep,
    /// The lease on a claim.
    pub lease: LeaseStep,
    /// The record's key.
    pub scope: ScopeStep,
    /// Where records are read from.
    pub read: ReadStep,
    /// The fingerprint comparison.
    pub fingerprint: FingerprintStep,
    /// Validation errors.
    pub validation: ValidationStep,
    /// Takeover of an expired lease.
    pub takeover: TakeoverStep,
    /// The dependency's key.
    pub downstream_key: DownstreamKeyStep,
    /// The local effect's transaction.
    pub local_effect: LocalEffectStep,
    /// The completion's fencing.
    pub completion: CompletionStep,
    /// A failed dependency call.
    pub dependency_failure: DependencyFailureStep,
    /// Follow-on messages.
    pub publish: PublishStep,
    /// The sweeper.
    pub sweep: SweepStep,
    /// Client retries.
    pub retry: RetryStep,
}

impl Steps {
    /// The steps that differ from the correct protocol, as `step: choice`.
    pub fn broken(&self) -> Vec<String> {
        let c = Steps::default();
        let pairs = [
            ("claim", self.claim != c.claim, self.claim.name()),
            ("lease", self.lease != c.lease, self.lease.name()),
            ("scope", self.scope != c.scope, self.scope.name()),
            ("read", self.read != c.read, self.read.name()),
            ("fingerprint", self.fingerprint != c.fingerprint, self.fingerprint.name()),
            ("validation", self.validation != c.validation, self.validation.name()),
            ("takeover", self.takeover != c.takeover, self.takeover.name()),
            ("downstream_key", self.downstream_key != c.downstream_key, self.downstream_key.name()),
            ("local_effect", self.local_effect != c.local_effect, self.local_effect.name()),
            ("completion", self.completion != c.completion, self.completion.name()),
            ("dependency_failure", self.dependency_failure != c.dependency_failure, self.dependency_failure.name()),
            ("publish", self.publish != c.publish, self.publish.name()),
            ("sweep", self.sweep != c.sweep, self.sweep.name()),
            ("retry", self.retry != c.retry, self.retry.name()),
        ];
        pairs.into_iter().filter(|p| p.1).map(|(step, _, choice)| format!("{step}: {choice}")).collect()
    }
}

/// The catalogue's named variants: the correct protocol and one broken step
/// each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// docs/protocol.md as written.
    #[default]
    Correct,
    /// [`ClaimStep::CheckThenInsert`].
    CheckThenInsert,
    /// [`ClaimStep::LockAroundLookup`].
    LockAroundLookup,
    /// [`ClaimStep::PerProcessLock`].
    PerProcessLock,
    /// [`LeaseStep::None`].
    NoLease,
    /// [`TakeoverStep::KeepAttempt`].
    TakeoverWithoutBump,
    /// [`CompletionStep::Unfenced`].
    UnfencedCompletion,
    /// [`DependencyFailureStep::StoreError`].
    TransientErrorStored,
    /// [`FingerprintStep::Ignored`].
    FingerprintNotCompared,
    /// [`ValidationStep::Store`].
    ValidationStored,
    /// [`ScopeStep::KeyOnly`].
    KeyNotScoped,
    /// [`ScopeStep::KeyAndBody`].
    KeyIncludesBody,
    /// [`FingerprintStep::BodyOnly`].
    FingerprintWithoutPath,
    /// [`ReadStep::ServerCache`].
    StaleCache,
    /// [`LeaseStep::ShorterThanWork`].
    LeaseShorterThanWork,
    /// [`DownstreamKeyStep::PerAttempt`].
    DownstreamKeyFromAttempt,
    /// [`LocalEffectStep::OwnTransaction`].
    EffectOwnTransaction,
    /// [`PublishStep::BeforeCommit`].
    PublishBeforeCommit,
    /// [`SweepStep::ShortWindow`].
    SweepWindowShort,
    /// [`SweepStep::DeletesUnfinished`].
    SweepDeletesUnfinished,
    /// [`DependencyFailureStep::Release`].
    ReleaseOnProviderTimeout,
    /// [`DownstreamKeyStep::PerExecution`].
    ProviderKeyPerExecution,
    /// [`RetryStep::On4xx`].
    RetryOn4xx,
    /// [`RetryStep::NewKey`].
    NewKeyPerRetry,
    /// [`RetryStep::NoJitter`].
    NoJitter,
    /// [`RetryStep::ThreeLayers`].
    ThreeLayerRetries,
}

impl Variant {
    /// Every variant, correct first.
    pub const ALL: [Variant; 26] = [
        Variant::Correct,
        Variant::CheckThenInsert,
        Variant::LockAroundLookup,
        Variant::PerProcessLock,
        Variant::NoLease,
        Variant::TakeoverWithoutBump,
        Variant::UnfencedCompletion,
        Variant::TransientErrorStored,
        Variant::FingerprintNotCompared,
        Variant::ValidationStored,
        Variant::KeyNotScoped,
        Variant::KeyIncludesBody,
        Variant::FingerprintWithoutPath,
        Variant::StaleCache,
        Variant::LeaseShorterThanWork,
        Variant::DownstreamKeyFromAttempt,
        Variant::EffectOwnTransaction,
        Variant::PublishBeforeCommit,
        Variant::SweepWindowShort,
        Variant::SweepDeletesUnfinished,
        Variant::ReleaseOnProviderTimeout,
        Variant::ProviderKeyPerExecution,
        Variant::RetryOn4xx,
        Variant::NewKeyPerRetry,
        Variant::NoJitter,
        Variant::ThreeLayerRetries,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Correct => "correct",
            Variant::CheckThenInsert => "check-then-insert",
            Variant::LockAroundLookup => "lock-around-lookup",
            Variant::PerProcessLock => "per-process-lock",
            Variant::NoLease => "no-lease",
            Variant::TakeoverWithoutBump => "takeover-without-bump",
            Variant::UnfencedCompletion => "unfenced-completion",
            Variant::TransientErrorStored => "transient-error-stored",
            Variant::FingerprintNotCompared => "fingerprint-not-compared",
            Variant::ValidationStored => "validation-stored",
            Variant::KeyNotScoped => "key-not-scoped",
            Variant::KeyIncludesBody => "key-includes-body",
            Variant::FingerprintWithoutPath => "fingerprint-without-path",
            Variant::StaleCache => "stale-cache",
            Variant::LeaseShorterThanWork => "lease-shorter-than-work",
            Variant::DownstreamKeyFromAttempt => "downstream-key-from-attempt",
            Variant::EffectOwnTransaction => "effect-own-transaction",
            Variant::PublishBeforeCommit => "publish-before-commit",
            Variant::SweepWindowShort => "sweep-window-short",
            Variant::SweepDeletesUnfinished => "sweep-deletes-unfinished",
            Variant::ReleaseOnProviderTimeout => "release-on-provider-timeout",
            Variant::ProviderKeyPerExecution => "provider-key-per-execution",
            Variant::RetryOn4xx => "retry-on-4xx",
            Variant::NewKeyPerRetry => "new-key-per-retry",
            Variant::NoJitter => "no-jitter",
            Variant::ThreeLayerRetries => "three-layer-retries",
        }
    }

    /// Parses a kebab-case name.
    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The steps this variant runs: the correct ones with at most one swapped.
    pub fn steps(self) -> Steps {
        let c = Steps::default();
        match self {
            Variant::Correct => c,
            Variant::CheckThenInsert => Steps { claim: ClaimStep::CheckThenInsert, ..c },
            Variant::LockAroundLookup => Steps { claim: ClaimStep::LockAroundLookup, ..c },
            Variant::PerProcessLock => Steps { claim: ClaimStep::PerProcessLock, ..c },
            Variant::NoLease => Steps { lease: LeaseStep::None, ..c },
            Variant::TakeoverWithoutBump => Steps { takeover: TakeoverStep::KeepAttempt, ..c },
            Variant::UnfencedCompletion => Steps { completion: CompletionStep::Unfenced, ..c },
            Variant::TransientErrorStored => Steps { dependency_failure: DependencyFailureStep::StoreError, ..c },
            Variant::FingerprintNotCompared => Steps { fingerprint: FingerprintStep::Ignored, ..c },
            Variant::ValidationStored => Steps { validation: ValidationStep::Store, ..c },
            Variant::KeyNotScoped => Steps { scope: ScopeStep::KeyOnly, ..c },
            Variant::KeyIncludesBody => Steps { scope: ScopeStep::KeyAndBody, ..c },
            Variant::FingerprintWithoutPath => Steps { fingerprint: FingerprintStep::BodyOnly, ..c },
            Variant::StaleCache => Steps { read: ReadStep::ServerCache, ..c },
            Variant::LeaseShorterThanWork => Steps { lease: LeaseStep::ShorterThanWork, ..c },
            Variant::DownstreamKeyFromAttempt => Steps { downstream_key: DownstreamKeyStep::PerAttempt, ..c },
            Variant::EffectOwnTransaction => Steps { local_effect: LocalEffectStep::OwnTransaction, ..c },
            Variant::PublishBeforeCommit => Steps { publish: PublishStep::BeforeCommit, ..c },
            Variant::SweepWindowShort => Steps { sweep: SweepStep::ShortWindow, ..c },
            Variant::SweepDeletesUnfinished => Steps { sweep: SweepStep::DeletesUnfinished, ..c },
            Variant::ReleaseOnProviderTimeout => Steps { dependency_failure: DependencyFailureStep::Release, ..c },
            Variant::ProviderKeyPerExecution => Steps { downstream_key: DownstreamKeyStep::PerExecution, ..c },
            Variant::RetryOn4xx => Steps { retry: RetryStep::On4xx, ..c },
            Variant::NewKeyPerRetry => Steps { retry: RetryStep::NewKey, ..c },
            Variant::NoJitter => Steps { retry: RetryStep::NoJitter, ..c },
            Variant::ThreeLayerRetries => Steps { retry: RetryStep::ThreeLayers, ..c },
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_broken_variant_swaps_exactly_one_step() {
        assert!(Variant::Correct.steps().broken().is_empty());
        for v in &Variant::ALL[1..] {
            assert_eq!(v.steps().broken().len(), 1, "{v}");
            assert_eq!(Variant::from_name(v.name()), Some(*v));
        }
        let distinct: std::collections::BTreeSet<Steps> = Variant::ALL.iter().map(|v| v.steps()).collect();
        assert_eq!(distinct.len(), Variant::ALL.len());
    }

    /// One vocabulary: a broken SQL adapter is named after the step it
    /// breaks.
    #[test]
    fn sql_flaws_are_named_after_their_steps() {
        for flaw in idemsim_store::StoreFlaw::ALL {
            let variant = Variant::from_name(flaw.name()).expect("a catalogue variant of the same name");
            assert_eq!(variant.steps().broken().len(), 1, "{flaw:?}");
        }
    }

    #[test]
    fn a_partial_steps_file_fills_in_the_correct_steps() {
        let s: Steps = serde_json::from_str(r#"{"claim": "per-process-lock"}"#).unwrap();
        assert_eq!(s, Steps { claim: ClaimStep::PerProcessLock, ..Steps::default() });
        assert!(serde_json::from_str::<Steps>(r#"{"claim": "optimistic"}"#).is_err());
    }
}
