//! Seeded randomness. Only this module turns a seed into random numbers.
//!
//! Every subsystem draws from its own child stream, derived from the seed
//! and the stream's name, so that drawing more in one subsystem (a new fault
//! knob, a longer workload) never shifts what another one draws.
//!
//! What happens during a run (a message's fate and delay, a client's server
//! and backoff, a server's work time and fault sites) is drawn by [`Keyed`]:
//! each draw is a pure function of the stream, the thing it decides (this
//! send of this request, this call of this handler) and a slot number, not
//! of how many draws came before. Removing one operation from a run
//! therefore leaves every other operation's draws as they were, which is
//! what lets a shrink cut a run down to the operations a failure needs.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The named child streams of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stream {
    /// The fault profile of a swarm run.
    Swarm,
    /// The timed fault plan (crashes, pauses, partitions, skews).
    Plan,
    /// Per-message network decisions (drop, duplicate, delay).
    Net,
    /// The workload (operations, bodies, start times).
    Workload,
    /// Client-side choices (server picked, backoff jitter).
    Clients,
    /// Server-side choices (work time, fault sites).
    Servers,
    /// madsim's own scheduler seed.
    Scheduler,
    /// The second service's probes of the store (when, which record, which
    /// operation).
    Meddler,
    /// The dependency's answers (refusals, declines, late answers).
    Dependency,
    /// The concurrent mode's callers (their plans, latencies and faults).
    Callers,
    /// The explorer's randomized (PCT) executions.
    Explore,
}

impl Stream {
    fn tag(self) -> &'static str {
        match self {
            Stream::Swarm => "swarm",
            Stream::Plan => "plan",
            Stream::Net => "net",
            Stream::Workload => "workload",
            Stream::Clients => "clients",
            Stream::Servers => "servers",
            Stream::Scheduler => "scheduler",
            Stream::Meddler => "meddler",
            Stream::Dependency => "dependency",
            Stream::Callers => "callers",
            Stream::Explore => "explore",
        }
    }
}

/// A deterministic random stream.
pub type SimRng = ChaCha8Rng;

/// The child stream `stream` of `seed`.
pub fn stream(seed: u64, stream: Stream) -> SimRng {
    SimRng::seed_from_u64(child_seed(seed, stream))
}

/// The 64-bit seed of a child stream: FNV-1a of the name, mixed with the
/// seed by SplitMix64 so nearby seeds give unrelated streams.
pub fn child_seed(seed: u64, stream: Stream) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in stream.tag().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    splitmix(seed ^ h)
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Draws keyed by what they decide: see the module doc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keyed(u64);

impl Keyed {
    /// The keyed draws of child stream `stream` of `seed`.
    pub fn new(seed: u64, stream: Stream) -> Keyed {
        Keyed(child_seed(seed, stream))
    }

    /// Draw number `slot` about `key`: uniform over `u64`.
    pub fn draw(self, key: u64, slot: u64) -> u64 {
        splitmix(self.0 ^ splitmix(key ^ slot.wrapping_mul(0xd1b5_4a32_d192_ed03)))
    }

    /// True with probability `permille / 1000`.
    pub fn chance(self, key: u64, slot: u64, permille: u32) -> bool {
        permille > 0 && self.draw(key, slot) % 1000 < u64::from(permille)
    }

    /// A uniform draw in `[lo, hi]` (Lemire's multiply, no modulo bias
    /// worth the name for ranges this small).
    pub fn between(self, key: u64, slot: u64, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi && hi < u64::MAX, "empty range {lo}..={hi}");
        let span = u128::from(hi - lo + 1);
        lo + ((u128::from(self.draw(key, slot)) * span) >> 64) as u64
    }
}

/// A key made of parts, for [`Keyed`] draws and stable ids.
pub fn key(parts: &[u64]) -> u64 {
    parts.iter().fold(0x6a09_e667_f3bc_c909, |h, &p| splitmix(h ^ p))
}

/// True with probability `permille / 1000` (integer ratios, no floats).
pub fn chance(rng: &mut SimRng, permille: u32) -> bool {
    permille > 0 && rng.gen_range(0..1000) < permille
}

/// A uniform draw in `[lo, hi]`.
pub fn between(rng: &mut SimRng, lo: u64, hi: u64) -> u64 {
    assert!(lo <= hi, "empty range {lo}..={hi}");
    rng.gen_range(lo..=hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let draw = |s: Stream| stream(7, s).gen::<u64>();
        assert_eq!(draw(Stream::Net), draw(Stream::Net));
        assert_ne!(draw(Stream::Net), draw(Stream::Plan));
        assert_ne!(stream(7, Stream::Net).gen::<u64>(), stream(8, Stream::Net).gen::<u64>());
    }

    #[test]
    fn keyed_draws_depend_on_their_key_and_slot_only() {
        let k = Keyed::new(7, Stream::Net);
        assert_eq!(k.draw(key(&[1, 2]), 0), Keyed::new(7, Stream::Net).draw(key(&[1, 2]), 0));
        assert_ne!(k.draw(key(&[1, 2]), 0), k.draw(key(&[2, 1]), 0));
        assert_ne!(k.draw(key(&[1, 2]), 0), k.draw(key(&[1, 2]), 1));
        assert_ne!(k.draw(5, 0), Keyed::new(8, Stream::Net).draw(5, 0));
        assert_ne!(k.draw(5, 0), Keyed::new(7, Stream::Clients).draw(5, 0));
        let draws: Vec<u64> = (0..10_000).map(|i| k.between(i, 0, 3, 5)).collect();
        assert!(draws.iter().all(|d| (3..=5).contains(d)));
        assert!((3..=5).all(|v| draws.iter().filter(|&&d| d == v).count() > 3_000));
        let hits = (0..10_000).filter(|&i| k.chance(i, 1, 250)).count();
        assert!((2_200..2_800).contains(&hits), "{hits}");
        assert!((0..1000).all(|i| !k.chance(i, 0, 0) && k.chance(i, 0, 1000)));
    }

    #[test]
    fn chance_respects_its_extremes() {
        let mut rng = stream(1, Stream::Net);
        assert!((0..1000).all(|_| !chance(&mut rng, 0)));
        assert!((0..1000).all(|_| chance(&mut rng, 1000)));
    }
}
