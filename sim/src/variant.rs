//! Protocol variants: the correct protocol, and versions of it with exactly
//! one step swapped for a broken one.
//!
//! The broken variants exist to prove the simulator catches what it claims
//! to catch; the scenario catalogue names them and says what each breaks.

use serde::{Deserialize, Serialize};

/// Which protocol the servers (and the database) run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// PROTOCOL.md as written.
    #[default]
    Correct,
    /// The claim reads first and executes whenever the read found nothing,
    /// even if the insert then found a row (check-then-insert).
    CheckThenInsert,
    /// An expired lease is taken over by carrying on with the old attempt
    /// instead of a fenced takeover that bumps it.
    TakeoverWithoutBump,
    /// The completion is not conditional on the attempt: a stale holder's
    /// completion lands on a record someone else took over.
    UnfencedCompletion,
    /// The fingerprint is not compared: a reused key with another body gets
    /// the old response (or a 409) instead of 422.
    FingerprintNotCompared,
    /// A validation error raised before execution is stored as the
    /// response instead of releasing the record.
    ValidationStored,
    /// The record is keyed by the key alone, not by `(caller, key)`.
    KeyNotScoped,
    /// The downstream key is derived from the attempt, so a resumed
    /// execution calls the dependency with a new key.
    DownstreamKeyFromAttempt,
}

impl Variant {
    /// Every variant, correct first.
    pub const ALL: [Variant; 8] = [
        Variant::Correct,
        Variant::CheckThenInsert,
        Variant::TakeoverWithoutBump,
        Variant::UnfencedCompletion,
        Variant::FingerprintNotCompared,
        Variant::ValidationStored,
        Variant::KeyNotScoped,
        Variant::DownstreamKeyFromAttempt,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Correct => "correct",
            Variant::CheckThenInsert => "check-then-insert",
            Variant::TakeoverWithoutBump => "takeover-without-bump",
            Variant::UnfencedCompletion => "unfenced-completion",
            Variant::FingerprintNotCompared => "fingerprint-not-compared",
            Variant::ValidationStored => "validation-stored",
            Variant::KeyNotScoped => "key-not-scoped",
            Variant::DownstreamKeyFromAttempt => "downstream-key-from-attempt",
        }
    }

    /// Parses a kebab-case name.
    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
