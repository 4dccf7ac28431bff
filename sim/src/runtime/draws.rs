//! [`Draws`]: the keyed random draws of a run, one stream per subsystem,
//! and the keys they are drawn by.

use crate::occurrences::Occurrences;
use crate::rng::{Keyed, Stream};

/// The run's keyed draws, one child stream of the seed per subsystem (so
/// a knob added to one shifts none of the others), and the use counts
/// that make a key unique within the run.
///
/// **Invariant:** a draw is a function of the seed, its subsystem's
/// stream, and a key made by [`Draws::fresh_key`]: never of how many other
/// things drew before it.
pub(crate) struct Draws {
    /// The network's (loss, duplicates, delays; which server a request reaches).
    pub net: Keyed,
    /// The clients' (server picked, backoff jitter).
    pub clients: Keyed,
    /// The servers' (work time, fault sites).
    pub servers: Keyed,
    /// The second service's (`background::meddler`).
    pub meddler: Keyed,
    /// The dependency's (`downstream::handle_dependency`).
    pub dependency: Keyed,
    /// How often each key base was taken, this run.
    occurrences: Occurrences,
}

impl Draws {
    /// The draws of `seed`, with this thread's use-count table (kept
    /// across its runs, see `occurrences`).
    pub fn new(seed: u64) -> Draws {
        Draws {
            net: Keyed::new(seed, Stream::Net),
            clients: Keyed::new(seed, Stream::Clients),
            servers: Keyed::new(seed, Stream::Servers),
            meddler: Keyed::new(seed, Stream::Meddler),
            dependency: Keyed::new(seed, Stream::Dependency),
            occurrences: Occurrences::take(),
        }
    }

    /// `base` made unique within the run: its n-th use gives the n-th key.
    /// Keyed draws and call ids use it, so that what one thing draws never
    /// depends on how many other things drew before it.
    pub fn fresh_key(&mut self, base: u64) -> u64 {
        let n = self.occurrences.bump(base);
        crate::rng::key(&[base, u64::from(n)])
    }

    /// The run is over: its use-count table goes back to the thread.
    pub fn finish(&mut self) {
        self.occurrences.put_back();
    }
}
