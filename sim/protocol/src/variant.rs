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
//! All of it comes from one table, below: each step, its choices (the
//! first is the correct one), and for each broken choice the catalogue
//! variant it is and the [`Protocol`] that implements it (a type in
//! [`crate::broken`] overriding the step's method). A new broken choice of
//! an existing step is that type and one row here; the step enums,
//! [`Variant`] with its names and [`Steps`]' dispatch follow from the row.
//!
//! ```
//! use idemsim_protocol::{ClaimStep, CompletionStep, Steps};
//! // Two broken steps at once: a racy claim and an unfenced completion.
//! let mine = Steps { claim: ClaimStep::CheckThenInsert, completion: CompletionStep::Unfenced, ..Steps::default() };
//! assert_eq!(mine.broken(), vec!["claim: check-then-insert", "completion: unfenced"]);
//! ```

use crate::broken::*;
use crate::{Correct, Protocol};
use serde::{Deserialize, Serialize};

/// Declares the steps, [`Steps`] and [`Variant`] from one table. A row is
/// `Choice = "name" => Implementation`, and for a broken choice
/// `Choice = "name" => Implementation as "variant-name"`, the type's name
/// being the variant's. A stateful implementation, made per run by
/// [`Steps::protocol`], is written `Wrapper(Inner)`: the dispatch runs
/// `Inner`'s method for the step.
macro_rules! steps_table {
    ($(
        $(#[$sdoc:meta])*
        $field:ident: $step:ident {
            $(#[$cdoc:meta])* $correct:ident = $ctext:literal => $cimp:ident,
            $($(#[$bdoc:meta])* $choice:ident = $text:literal => $imp:ident $(($inner:ident))? as $vtext:literal),+ $(,)?
        }
    )+) => {
        $(
            $(#[$sdoc])*
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
            pub enum $step {
                $(#[$cdoc])*
                #[default]
                #[serde(rename = $ctext)]
                $correct,
                $($(#[$bdoc])* #[serde(rename = $text)] $choice,)+
            }

            impl $step {
                /// The kebab-case name, as in scenario files.
                pub fn name(self) -> &'static str {
                    match self {
                        $step::$correct => $ctext,
                        $($step::$choice => $text,)+
                    }
                }

                /// The protocol that implements this choice: its step's
                /// method is the one [`Steps`] runs.
                pub fn implementation(self) -> &'static dyn Protocol {
                    match self {
                        $step::$correct => &$cimp,
                        $($step::$choice => &last!($imp $($inner)?),)+
                    }
                }
            }
        )+

        /// The protocol a run executes, one choice per step. The default is
        /// the correct protocol; every field is optional in a file.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct Steps {
            $($(#[$sdoc])* pub $field: $step,)+
        }

        impl Steps {
            /// The steps that differ from the correct protocol, as `step: choice`.
            pub fn broken(&self) -> Vec<String> {
                let mut broken = Vec::new();
                $(if self.$field != $step::$correct {
                    broken.push(format!("{}: {}", stringify!($field), self.$field.name()));
                })+
                broken
            }
        }

        /// The catalogue's named variants: the correct protocol and one
        /// broken step each.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum Variant {
            /// docs/protocol.md as written.
            #[default]
            #[serde(rename = "correct")]
            Correct,
            $($(
                #[doc = concat!("[`", stringify!($step), "::", stringify!($choice), "`], implemented by [`", stringify!($imp), "`].")]
                #[serde(rename = $vtext)]
                $imp,
            )+)+
        }

        impl Variant {
            /// Every variant, correct first, then the table's rows in order.
            pub const ALL: [Variant; 1 + [$($($vtext,)+)+].len()] = [Variant::Correct, $($(Variant::$imp,)+)+];

            /// The kebab-case name.
            pub fn name(self) -> &'static str {
                match self {
                    Variant::Correct => "correct",
                    $($(Variant::$imp => $vtext,)+)+
                }
            }

            /// The protocol that implements this variant's broken step
            /// (`Correct` for the correct variant).
            pub fn implementation(self) -> &'static dyn Protocol {
                match self {
                    Variant::Correct => &Correct,
                    $($(Variant::$imp => $step::$choice.implementation(),)+)+
                }
            }

            /// The steps this variant runs: the correct ones with at most
            /// one swapped.
            pub fn steps(self) -> Steps {
                match self {
                    Variant::Correct => Steps::default(),
                    $($(Variant::$imp => Steps { $field: $step::$choice, ..Steps::default() },)+)+
                }
            }
        }
    };
}

/// The last of one or two names: a row's implementation, or its inner one.
macro_rules! last {
    ($only:ident) => {
        $only
    };
    ($outer:ident $inner:ident) => {
        $inner
    };
}

steps_table! {
    /// How a request claims its key.
    claim: ClaimStep {
        /// Atomic insert-if-absent (correct).
        Atomic = "atomic" => Correct,
        /// Read, and execute whenever the read found nothing, even if the
        /// insert then found a row.
        CheckThenInsert = "check-then-insert" => CheckThenInsert as "check-then-insert",
        /// A lock service serialises the lookup, but the lock is released
        /// before the insert: the race is only moved.
        LockAroundLookup = "lock-around-lookup" => LockAroundLookup as "lock-around-lookup",
        /// An in-process lock per key around read-then-insert: safe on one
        /// server, useless across several.
        PerProcessLock = "per-process-lock" => PerProcessLock as "per-process-lock",
    }

    /// What bounds an `in_progress` claim.
    lease: LeaseStep {
        /// A lease of `protocol.lease_ms` that a takeover may break (correct).
        Leased = "leased" => Correct,
        /// No lease: a claim holds forever, so a crashed holder's record is
        /// never taken over.
        None = "none" => NoLease as "no-lease",
        /// A lease shorter than the handler's work and calls: executions
        /// lose it midway, are taken over and fenced, again and again.
        ShorterThanWork = "shorter-than-work" => LeaseShorterThanWork as "lease-shorter-than-work",
    }

    /// What a record is keyed by.
    scope: ScopeStep {
        /// `(caller, key)` (correct).
        CallerAndKey = "caller-and-key" => Correct,
        /// The key string alone.
        KeyOnly = "key-only" => KeyNotScoped as "key-not-scoped",
        /// `(caller, key, fingerprint)`: a reused key with another body
        /// gets a record of its own and executes again.
        KeyAndBody = "key-and-body" => KeyIncludesBody as "key-includes-body",
    }

    /// Where a server reads a key's record from.
    read: ReadStep {
        /// The store, on every request (correct).
        Store = "store" => Correct,
        /// A per-server cache of the records it has seen, filled from the
        /// store's answers and never invalidated: another server's
        /// completion or release is not seen. It keeps state, so
        /// [`Steps::protocol`] wraps the other steps in a [`StaleCache`]
        /// made for the run.
        ServerCache = "server-cache" => StaleCache(Correct) as "stale-cache",
    }

    /// Whether a found record's fingerprint is compared with the request's.
    fingerprint: FingerprintStep {
        /// Compared; a mismatch is 422 (correct).
        Compared = "compared" => Correct,
        /// Not compared: a reused key with another body gets the old response.
        Ignored = "ignored" => FingerprintNotCompared as "fingerprint-not-compared",
        /// The fingerprint hashes the body alone: the same key and body on
        /// another endpoint replays the first endpoint's response.
        BodyOnly = "body-only" => FingerprintWithoutPath as "fingerprint-without-path",
    }

    /// What happens to a validation error raised before execution.
    validation: ValidationStep {
        /// The claim is released, so a corrected retry executes (correct).
        Release = "release" => Correct,
        /// The error is stored as the response.
        Store = "store" => ValidationStored as "validation-stored",
    }

    /// How an expired lease is taken over.
    takeover: TakeoverStep {
        /// A fenced takeover that bumps the attempt (correct).
        BumpAttempt = "bump-attempt" => Correct,
        /// Carry on with the old attempt.
        KeepAttempt = "keep-attempt" => TakeoverWithoutBump as "takeover-without-bump",
    }

    /// The key sent to the dependency.
    downstream_key: DownstreamKeyStep {
        /// Derived from the scope and the fingerprint, kept in the recovery
        /// point (correct).
        Stable = "stable" => Correct,
        /// Derived from the attempt, so a resumed execution charges again.
        PerAttempt = "per-attempt" => DownstreamKeyFromAttempt as "downstream-key-from-attempt",
        /// Made up by each execution and saved in the recovery point, reused
        /// by a resumer that reads it there: a takeover decided on a read
        /// from before the recovery point charges again.
        PerExecution = "per-execution" => ProviderKeyPerExecution as "provider-key-per-execution",
    }

    /// Where a local effect (a row in the same database) is committed.
    local_effect: LocalEffectStep {
        /// In the completion's transaction (correct).
        WithCompletion = "with-completion" => Correct,
        /// In its own transaction before the completion.
        OwnTransaction = "own-transaction" => EffectOwnTransaction as "effect-own-transaction",
    }

    /// Whether the completion is conditional on the attempt.
    completion: CompletionStep {
        /// `... WHERE attempt = ?` (correct).
        Fenced = "fenced" => Correct,
        /// Whoever holds the record, the completion lands.
        Unfenced = "unfenced" => UnfencedCompletion as "unfenced-completion",
    }

    /// What a handler does when the dependency fails or does not answer.
    dependency_failure: DependencyFailureStep {
        /// Answer 503 and leave the record `in_progress` with its recovery
        /// point, so a retry or the reconciler finishes it (correct).
        LeaveInProgress = "leave-in-progress" => Correct,
        /// Complete the record with the 503: every retry replays a
        /// transient error, though the charge may have gone through.
        StoreError = "store-error" => TransientErrorStored as "transient-error-stored",
        /// Release the record so the retry executes at once: the charge
        /// may have gone through when the dependency did not answer.
        Release = "release" => ReleaseOnProviderTimeout as "release-on-provider-timeout",
    }

    /// How follow-on messages leave.
    publish: PublishStep {
        /// Staged in the outbox with the completion, published by the relay
        /// (correct).
        Outbox = "outbox" => Correct,
        /// Published by the handler before the completion commits.
        BeforeCommit = "before-commit" => PublishBeforeCommit as "publish-before-commit",
    }

    /// What the sweeper deletes.
    sweep: SweepStep {
        /// Completed records older than the documented window (correct).
        Documented = "documented" => Correct,
        /// Completed records older than an hour: shorter than the clients'
        /// retry deadline.
        ShortWindow = "short-window" => SweepWindowShort as "sweep-window-short",
        /// Also `in_progress` records whose lease expired ("abandoned").
        DeletesUnfinished = "deletes-unfinished" => SweepDeletesUnfinished as "sweep-deletes-unfinished",
    }

    /// How clients retry.
    retry: RetryStep {
        /// docs/protocol.md §7: transient failures only, same key, full
        /// jitter, caps and budget (correct).
        Disciplined = "disciplined" => Correct,
        /// Any 4xx is retried too.
        On4xx = "on-4xx" => RetryOn4xx as "retry-on-4xx",
        /// Every retry carries a new key.
        NewKey = "new-key" => NewKeyPerRetry as "new-key-per-retry",
        /// The backoff is the bound itself, no jitter: clients that failed
        /// together retry together.
        NoJitter = "no-jitter" => NoJitter as "no-jitter",
        /// An SDK, a service client and a job runner each retry the layer
        /// below: budgets multiply.
        ThreeLayers = "three-layers" => ThreeLayerRetries as "three-layer-retries",
    }
}

impl Variant {
    /// Parses a kebab-case name.
    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The variant as a protocol: its steps, run by [`Steps`]' dispatch
    /// onto the type that implements its broken one.
    pub fn protocol(self) -> std::sync::Arc<dyn Protocol> {
        self.steps().protocol()
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

    /// The table's rows agree: each variant's implementation is the type
    /// of its name (the stale cache's is wrapped around the correct one),
    /// and its protocol is named after it.
    #[test]
    fn each_row_names_its_implementation() {
        for v in Variant::ALL {
            let implemented = match v {
                Variant::StaleCache => "correct".to_string(),
                other => other.name().to_string(),
            };
            assert_eq!(v.implementation().name(), implemented, "{v}");
            assert_eq!(v.protocol().name(), v.name());
        }
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
