//! The whole catalogue: every broken variant is caught with its scenario's
//! expected property within 2000 seeds, and every correct variant is clean
//! on seeds 0..2000 with the scenario's interleavings reached.

use idemsim_scenarios::catalogue;
use idemsim_scenarios::sweep::{sweep, SweepSpec};
use idemsim_scenarios::Expect;
use idemsim_sim::{run_seed, StoreKind, Variant};

#[test]
fn every_correct_variant_is_clean_and_reaches_its_interleavings() {
    for scenario in catalogue::all() {
        assert_eq!(scenario.expect.get(&Variant::Correct), Some(&Expect::Clean), "{}", scenario.name);
        let spec = SweepSpec {
            config: scenario.config_for(Variant::Correct),
            store: StoreKind::Mem,
            seeds: 0..2000,
            jobs: 2,
            check_determinism: false,
            record_hashes: false,
            shard: None,
        };
        let report = sweep(&spec, &|_| {}).unwrap();
        assert_eq!(report.seeds_failed, 0, "{}: {:?}", scenario.name, report.failures.first());
        for name in &scenario.sometimes {
            let seeds = report.coverage_seeds.get(name).copied().unwrap_or(0);
            assert!(seeds > 0, "{}: {name} never happened in 2000 seeds", scenario.name);
        }
    }
}

#[test]
fn every_broken_variant_is_caught_with_its_expected_property() {
    for scenario in catalogue::all() {
        for (variant, expect) in &scenario.expect {
            let Expect::Violates(property) = *expect else { continue };
            let config = scenario.config_for(*variant);
            let found = (0..2000).map(|seed| run_seed(&config, StoreKind::Mem, seed).unwrap()).find(|o| o.failed());
            let found = found.unwrap_or_else(|| panic!("{}/{variant} not caught in 2000 seeds", scenario.name));
            assert!(
                found.violations.iter().any(|v| v.property == property),
                "{}/{variant} seed {}: expected {property}, got {:?}",
                scenario.name,
                found.seed,
                found.violations
            );
        }
    }
}
