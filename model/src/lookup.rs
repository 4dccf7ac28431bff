//! Hash maps and sets with a fixed hasher, for state that is only looked
//! up by key (or folded order-independently, as a count or a maximum),
//! never iterated into a verdict or a history: the same hashes on every
//! run, so no hash order can reach one, and a look-up costs a fraction of
//! a B-tree's comparisons. Anything iterated in order stays a B-tree.

/// A look-up-only map; see the module doc.
pub(crate) type Lookup<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;

/// A look-up-only set; see the module doc.
pub(crate) type LookupSet<K> = std::collections::HashSet<K, foldhash::fast::FixedState>;

/// An empty map with room for `capacity` keys: sized from the index's
/// counts, a checker's map never grows (and rehashes) on the way.
pub(crate) fn lookup<K, V>(capacity: usize) -> Lookup<K, V> {
    Lookup::with_capacity_and_hasher(capacity, Default::default())
}

/// An empty set with room for `capacity` keys (see [`lookup`]).
pub(crate) fn lookup_set<K>(capacity: usize) -> LookupSet<K> {
    LookupSet::with_capacity_and_hasher(capacity, Default::default())
}
