//! The inner loop, measured: one seed of the default scenario, and the
//! checkers on a recorded history. `cargo bench -p idemsim-sim`.

use idemsim_model::{check_all, Coverage};
use idemsim_sim::{run_seed, SimConfig, StoreKind};

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
