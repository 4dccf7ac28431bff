//! One seed fully determines a run, whatever the thread count.

use idemsim::sweep::{sweep, SweepSpec};
use idemsim_sim::{from_jsonl, run_seed, to_jsonl, SimConfig, StoreKind, Variant};

fn trace(seed: u64) -> String {
    let out = run_seed(&SimConfig::default(), StoreKind::Mem, seed).unwrap();
    to_jsonl(seed, "default", "correct", &out.history)
}

#[test]
fn the_same_seed_gives_the_same_trace_byte_for_byte() {
    for seed in [0, 1, 17, 123_456_789] {
        assert_eq!(trace(seed), trace(seed), "seed {seed}");
    }
}

#[test]
fn different_seeds_give_different_traces() {
    let traces: std::collections::BTreeSet<String> = (0..20).map(trace).collect();
    assert_eq!(traces.len(), 20);
}

#[test]
fn a_trace_reads_back_to_the_same_history() {
    let out = run_seed(&SimConfig::default(), StoreKind::Mem, 5).unwrap();
    let (header, history) = from_jsonl(&to_jsonl(5, "default", "correct", &out.history)).unwrap();
    assert_eq!(header.seed, 5);
    assert_eq!(history, out.history);
}

#[test]
fn results_do_not_depend_on_jobs() {
    let spec = |jobs| SweepSpec {
        config: SimConfig { steps: Variant::UnfencedCompletion.steps(), ..SimConfig::default() },
        subject: StoreKind::Mem.into(),
        seeds: 0..60,
        jobs,
        check_determinism: false,
        record_hashes: true,
        shard: None,
    };
    let one = sweep(&spec(1), &|_| {}).unwrap();
    let two = sweep(&spec(2), &|_| {}).unwrap();
    let four = sweep(&spec(4), &|_| {}).unwrap();
    assert_eq!(one.hashes.len(), 60);
    assert_eq!(one.hashes, two.hashes);
    assert_eq!(one.hashes, four.hashes);
    assert_eq!(one.coverage_total, two.coverage_total);
    assert_eq!(one.violations_by_property, four.violations_by_property);
    let seeds = |r: &idemsim::sweep::SweepReport| r.failures.iter().map(|f| f.seed).collect::<Vec<_>>();
    assert_eq!(seeds(&one), seeds(&two));
    assert!(one.seeds_failed > 0, "the broken variant should fail somewhere in 60 seeds");
}

#[test]
fn the_determinism_check_finds_no_divergence() {
    let spec = SweepSpec {
        config: SimConfig::default(),
        subject: StoreKind::Mem.into(),
        seeds: 0..20,
        jobs: 2,
        check_determinism: true,
        record_hashes: false,
        shard: None,
    };
    let report = sweep(&spec, &|_| {}).unwrap();
    assert!(report.divergence.is_none(), "{:?}", report.divergence);
}

#[test]
fn seeds_run_in_turn_on_one_thread_match_seeds_run_alone() {
    // A sweep worker reuses its thread; a seed's run must not depend on the
    // seeds that ran before it there.
    let config = SimConfig::default();
    let spec = SweepSpec {
        config: config.clone(),
        subject: StoreKind::Mem.into(),
        seeds: 0..40,
        jobs: 1,
        check_determinism: false,
        record_hashes: true,
        shard: None,
    };
    let report = sweep(&spec, &|_| {}).unwrap();
    for seed in [0u64, 7, 21, 39] {
        let alone = run_seed(&config, StoreKind::Mem, seed).unwrap().hash();
        assert_eq!(report.hashes.get(&seed), Some(&alone), "seed {seed}");
    }
    // And the same in reverse order on one thread.
    let backwards: Vec<String> =
        (0..40u64).rev().map(|s| idemsim_sim::run_seed_here(&config, StoreKind::Mem, s).unwrap().hash()).collect();
    assert_eq!(backwards[39 - 7], run_seed(&config, StoreKind::Mem, 7).unwrap().hash());
}
