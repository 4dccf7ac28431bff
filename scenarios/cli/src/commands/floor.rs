//! `idemsim floor` (hidden): bare madsim with a seed's traffic and none of
//! our code, seed after seed on one thread: the floor `bench` counts
//! instructions of.

use crate::EXIT_CLEAN;
use idemsim::sweep::parse_seeds;
use std::ops::Range;

/// Bare madsim with a seed's traffic and none of our code.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Seeds, as A..B.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_seeds, default_value = "0..20")]
    seeds: Range<u64>,
    /// Messages per seed.
    #[arg(long, default_value_t = 940)]
    messages: u64,
}

/// Runs the floor for each seed.
pub fn exec(args: Args) -> Result<i32, String> {
    args.seeds.for_each(|seed| idemsim::sim::floor::madsim_floor(seed, args.messages));
    Ok(EXIT_CLEAN)
}
