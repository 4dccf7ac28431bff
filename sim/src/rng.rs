//! Seeded randomness. Only this module turns a seed into random numbers.
//!
//! Every subsystem draws from its own child stream, derived from the seed
//! and the stream's name, so that drawing more in one subsystem (a new fault
//! knob, a longer workload) never shifts what another one draws.

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
    fn chance_respects_its_extremes() {
        let mut rng = stream(1, Stream::Net);
        assert!((0..1000).all(|_| !chance(&mut rng, 0)));
        assert!((0..1000).all(|_| chance(&mut rng, 1000)));
    }
}
