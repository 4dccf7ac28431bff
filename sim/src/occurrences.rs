//! How many times each key base has been used in a run, for
//! [`crate::runtime::draws::Draws::fresh_key`]: asked about once per message, call
//! and handler. The bases are hashes already (see [`crate::rng::key`]), so a
//! base's low bits are its slot, and an open-addressing table of
//! `(base, count, generation)` slots does in a few instructions what a
//! general hash map did in about sixty.
//!
//! A worker thread keeps one table for all the runs it makes (as it keeps
//! its fingerprint memo, see `worker_memo`): each run has its own
//! generation, and a slot stamped with an older one is empty, so a run
//! starts with an empty table without clearing (or allocating) one. Nothing
//! iterates the table, so neither its order nor what earlier runs left in
//! it can reach a run.

use std::cell::RefCell;

/// Use counts by key base, for one run; see the module doc.
pub(crate) struct Occurrences {
    /// A power of two of slots: `(base, count, generation)`.
    slots: Vec<(u64, u32, u32)>,
    /// This run's generation (never 0, the stamp of a slot never used).
    generation: u32,
    /// This run's bases.
    len: usize,
}

thread_local! {
    static TABLE: RefCell<Option<Occurrences>> = const { RefCell::new(None) };
}

/// Above this many slots a table is not kept for the next run, so one
/// huge run cannot hold a worker's memory.
const SLOTS_KEPT_MAX: usize = 1 << 20;

impl Occurrences {
    /// An empty table for a run: this thread's last one, under a new
    /// generation, or a new one.
    pub fn take() -> Occurrences {
        match TABLE.with(|t| t.borrow_mut().take()) {
            Some(mut table) if table.generation < u32::MAX => {
                table.generation += 1;
                table.len = 0;
                table
            }
            _ => Occurrences { slots: vec![(0, 0, 0); 4096], generation: 1, len: 0 },
        }
    }

    /// Gives the table back to this thread for its next run, leaving a
    /// spent one in its place (counting with it is a programmer's error).
    pub fn put_back(&mut self) {
        let table = std::mem::replace(self, Occurrences { slots: Vec::new(), generation: 0, len: 0 });
        if table.slots.len() <= SLOTS_KEPT_MAX {
            TABLE.with(|t| *t.borrow_mut() = Some(table));
        }
    }

    /// Counts one more use of `base` in this run, and returns the count: 1
    /// for its first use, 2 for its second, and so on.
    #[inline]
    pub fn bump(&mut self, base: u64) -> u32 {
        assert!(!self.slots.is_empty(), "a key drawn after its run gave its table back");
        let mask = self.slots.len() - 1;
        let mut i = base as usize & mask;
        loop {
            let (key, count, generation) = &mut self.slots[i];
            if *generation != self.generation {
                break;
            }
            if *key == base {
                *count += 1;
                return *count;
            }
            i = (i + 1) & mask;
        }
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
            return self.bump(base);
        }
        self.slots[i] = (base, 1, self.generation);
        self.len += 1;
        1
    }

    /// Doubles the slots, keeping this run's counts: at most half are full.
    #[cold]
    fn grow(&mut self) {
        let doubled = vec![(0, 0, 0); self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        let mask = self.slots.len() - 1;
        for slot in old.into_iter().filter(|slot| slot.2 == self.generation) {
            let mut i = slot.0 as usize & mask;
            while self.slots[i].2 == self.generation {
                i = (i + 1) & mask;
            }
            self.slots[i] = slot;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Bases whose low bits collide on purpose (multiples of 2^16), with 0,
    /// all ones and well-mixed ones among them.
    fn bases(n: u64) -> Vec<u64> {
        (0..n)
            .map(|i| match i % 4 {
                0 => i << 16,
                1 => crate::rng::key(&[i]),
                2 => u64::MAX - (i % 3),
                _ => i % 5,
            })
            .collect()
    }

    #[test]
    fn counts_every_base_apart_through_growth_and_collisions() {
        let mut table = Occurrences::take();
        let mut model: HashMap<u64, u32> = HashMap::new();
        let bases = bases(6_000);
        for round in 0..3 {
            for &base in &bases {
                let expected = model.entry(base).and_modify(|n| *n += 1).or_insert(1);
                assert_eq!(table.bump(base), *expected, "base {base} in round {round}");
            }
        }
        assert!(table.slots.len() > 4096, "it grew");
        assert!(table.slots.len() >= 2 * table.len, "at most half full");
        assert_eq!(table.len, model.len());
    }

    #[test]
    fn a_table_taken_again_starts_empty() {
        let mut first = Occurrences::take();
        for base in bases(100) {
            first.bump(base);
        }
        let generation = first.generation;
        first.put_back();
        let mut second = Occurrences::take();
        assert_eq!(second.generation, generation + 1, "the thread's table, reused");
        let mut model: HashMap<u64, u32> = HashMap::new();
        for base in bases(100) {
            let expected = model.entry(base).and_modify(|n| *n += 1).or_insert(1);
            assert_eq!(second.bump(base), *expected, "as if the first run never counted {base}");
        }
    }
}
