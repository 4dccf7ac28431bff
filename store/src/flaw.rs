//! Deliberately broken SQL, for showing what the stress mode catches.

/// One way to get the SQL wrong. The correct adapters use none. Each is
/// the store-level form of a catalogue step and carries that step's name
/// (`idemsim_sim::Variant`), so "check-then-insert" means the same bug in
/// a scenario, in `stress --variant` and in `stress --flaw`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlFlaw {
    /// The claim SELECTs, and if nothing is there, upserts the row without
    /// relying on the unique constraint: two racers both "win".
    CheckThenInsert,
    /// The completion's `UPDATE` has no `AND attempt = ?`: a stale holder's
    /// completion lands on a record someone else took over.
    UnfencedCompletion,
}

impl SqlFlaw {
    /// Every flaw.
    pub const ALL: [SqlFlaw; 2] = [SqlFlaw::CheckThenInsert, SqlFlaw::UnfencedCompletion];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SqlFlaw::CheckThenInsert => "check-then-insert",
            SqlFlaw::UnfencedCompletion => "unfenced-completion",
        }
    }

    /// Parses a name.
    pub fn from_name(name: &str) -> Option<SqlFlaw> {
        SqlFlaw::ALL.into_iter().find(|f| f.name() == name)
    }
}
