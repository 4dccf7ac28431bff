//! A witness told as a short story a person can read.

use super::{Answer, Witness};
use crate::ids::Scope;
use crate::RefStore;
use std::fmt;

impl Witness {
    /// The witness as a story, for the key `scope` (the key the verdict
    /// names).
    pub fn story<'a>(&'a self, scope: &'a Scope) -> WitnessStory<'a> {
        WitnessStory { scope, witness: self }
    }
}

/// A witness told as a short story: where the record stood, then each
/// operation with its caller, interval and answer, then the operations
/// left out ([`Witness::story`]).
pub struct WitnessStory<'a> {
    scope: &'a Scope,
    witness: &'a Witness,
}

impl fmt::Display for WitnessStory<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Witness { before, starts, operations, as_answered, left_out } = self.witness;
        let callers = self.witness.callers();
        writeln!(
            f,
            "A witness: {} of {} that no order explains (times in µs from the first):",
            count(operations.len(), "operation", "operations"),
            count(callers.len(), "caller", "callers"),
        )?;
        let state = |s: &RefStore| match (s.read(self.scope), s.tombstone(self.scope)) {
            (Some(r), _) => Answer::Record(Some(r)).to_string(),
            (None, Some((a, _))) => format!("absent, released by attempt {a}"),
            (None, None) => "absent".to_string(),
        };
        let states: Vec<String> = starts.iter().map(state).collect();
        match *before {
            0 => writeln!(f, "  the record: absent (nothing came before)")?,
            n => writeln!(
                f,
                "  the record: {} (after the {n} operations before these, in any order)",
                states.join(" or ")
            )?,
        }
        let base = operations.first().map_or(0, |o| o.invoked_ns);
        let us = |ns: u64| (ns - base) / 1_000;
        for (n, (judged, real)) in operations.iter().zip(as_answered).enumerate() {
            let answer = match (&judged.answer, &real.answer, real.returned_ns) {
                (Some(a), _, Some(r)) => format!("[+{} .. +{}] -> {a}", us(judged.invoked_ns), us(r)),
                (None, Some(a), Some(r)) => format!(
                    "[+{} .. +{}, after the cut] -> {a} (judged as not yet answered)",
                    us(judged.invoked_ns),
                    us(r)
                ),
                _ => format!("[+{} .. never] -> answer lost", us(judged.invoked_ns)),
            };
            writeln!(f, "  {:>2}. caller {}: {} {answer}", n + 1, judged.caller, judged.call)?;
        }
        if !left_out.is_empty() {
            writeln!(
                f,
                "  left out: {} still running then or lost; with or without them, no order explains the above:",
                count(left_out.len(), "operation", "operations")
            )?;
            for op in left_out {
                let answer = op.answer.as_ref().map_or("answer lost".to_string(), |a| format!("later {a}"));
                let at = (op.invoked_ns as i64 - base as i64) / 1_000;
                writeln!(f, "      caller {}: {} [{at:+} ..] -> {answer}", op.caller, op.call)?;
            }
        }
        Ok(())
    }
}

/// `n` and the noun, singular or plural.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
