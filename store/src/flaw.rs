//! Deliberately broken store statements (SQL or Redis scripts), for showing
//! what the stress mode and the conformance kit catch.

idemsim_model::named_enum! {
    /// One way to get a store's statements wrong (the PostgreSQL, MySQL and
    /// Redis adapters each have both). The correct adapters use none. Each is
    /// the store-level form of a catalogue step and carries that step's name
    /// (`idemsim_sim::Variant`), so "check-then-insert" means the same bug in
    /// a scenario, in `stress --variant` and in `stress --flaw`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum StoreFlaw {
        /// The claim SELECTs, and if nothing is there, upserts the row without
        /// relying on the unique constraint: two racers both "win".
        CheckThenInsert = "check-then-insert",
        /// The completion's `UPDATE` has no `AND attempt = ?`: a stale holder's
        /// completion lands on a record someone else took over.
        UnfencedCompletion = "unfenced-completion",
    }
}
