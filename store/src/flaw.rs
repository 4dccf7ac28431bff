//! Deliberately broken SQL, for showing what the stress mode catches.

/// One way to get the SQL wrong. The correct adapters use none.
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
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SqlFlaw::CheckThenInsert => "check-then-insert",
            SqlFlaw::UnfencedCompletion => "unfenced-completion",
        }
    }

    /// Parses a name.
    pub fn from_name(name: &str) -> Option<SqlFlaw> {
        [SqlFlaw::CheckThenInsert, SqlFlaw::UnfencedCompletion].into_iter().find(|f| f.name() == name)
    }
}
