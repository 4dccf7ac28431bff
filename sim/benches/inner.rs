//! The inner loop, measured: one seed of the default scenario, the
//! checkers on a recorded history, and the floor that madsim itself sets
//! for a seed's worth of messages. `cargo bench -p idemsim-sim`.

use idemsim_model::{check_all, Coverage};
use idemsim_sim::{run_seed, SimConfig, StoreKind};

// mimalloc, as the `idemsim` binary uses (which asks it for small blocks
// directly, scenarios/src/allocator.rs), so figures compare.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

/// One whole seed: build, fault phase, heal phase, judgement.
#[divan::bench(sample_count = 50)]
fn one_seed(bencher: divan::Bencher) {
    let config = SimConfig::default();
    let mut seed = 0;
    bencher.bench_local(|| {
        seed += 1;
        run_seed(&config, StoreKind::Mem, seed).unwrap()
    });
}

/// The nine checkers and the coverage counters on one seed's history.
#[divan::bench(sample_count = 200)]
fn judge_a_history(bencher: divan::Bencher) {
    let history = run_seed(&SimConfig::default(), StoreKind::Mem, 7).unwrap().history;
    bencher.bench_local(|| (check_all(&history), Coverage::of(&history)));
}

/// What madsim alone costs for the traffic of one default seed, with none
/// of our code: a runtime, 13 nodes, and 940 messages (a default seed sends
/// about that many), each a spawned task that sleeps a random 1 to 10 ms
/// and hands the message to a receiving task on another node. A seed of
/// ours cannot cost less than this on madsim.
#[divan::bench(sample_count = 50)]
fn madsim_floor_940_messages(bencher: divan::Bencher) {
    let mut seed = 0;
    bencher.bench_local(|| {
        seed += 1;
        idemsim_sim::floor::madsim_floor(seed, 940);
    });
}
