//! The Redis store against the server this machine runs (`IDEMSIM_REDIS_URL`,
//! default redis://127.0.0.1:6379): the conformance kit, stress with
//! server-side connection kills, both deliberately broken variants caught,
//! and bad connection settings as one line. Skipped with a message without
//! a server, except under `CI=true`.

use crate::cli::idemsim;
use idemsim::stress::{stress, StressSpec};
use idemsim::target::StoreTarget;
use idemsim_cli::{EXIT_CLEAN, EXIT_USAGE};
use idemsim_model::{Fingerprint, Property, Scope, SimTime};
use idemsim_sim::Variant;
use idemsim_store::conformance::Conformance;
use idemsim_store::{IdempotencyStore, RedisStore, StoreFlaw};
use idemsim_tests::real::{redis_url, server_or_skip};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn fresh(
    url: &str,
    prefix: &'static str,
    flaw: Option<StoreFlaw>,
) -> impl Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<RedisStore, idemsim_store::StoreError>>>> {
    let url = url.to_string();
    move || {
        let url = url.clone();
        Box::pin(async move {
            let store = RedisStore::connect(&url, prefix, 1).await?;
            store.reset().await?;
            Ok(match flaw {
                Some(f) => store.with_flaw(f),
                None => store,
            })
        })
    }
}

#[test]
#[cfg_attr(idemsim_no_redis, ignore = "Redis not reachable when the tests were built (start it; see tests/build.rs)")]
fn redis_store_conforms() {
    let Some(url) = server_or_skip("Redis", redis_url()) else { return };
    let verdict = Conformance::new().cases(256).check(fresh(&url, "idemsim_t_conform", None));
    let verdict = verdict.unwrap_or_else(|f| panic!("{f}"));
    let s = &verdict.stats;
    assert!(s.takeovers_granted > 0 && s.writes_fenced > 0 && s.sweeps_deleting > 0 && s.messages_published > 0);
}

#[test]
#[cfg_attr(idemsim_no_redis, ignore = "Redis not reachable when the tests were built (start it; see tests/build.rs)")]
fn an_unfenced_redis_completion_fails_the_kit() {
    let Some(url) = server_or_skip("Redis", redis_url()) else { return };
    let flawed = fresh(&url, "idemsim_t_conform_flawed", Some(StoreFlaw::UnfencedCompletion));
    let failure = Conformance::new().cases(256).check(flawed).expect_err("an unfenced SET must not conform");
    assert!(failure.reason.contains("complete"), "{failure}");
}

#[test]
#[cfg_attr(idemsim_no_redis, ignore = "Redis not reachable when the tests were built (start it; see tests/build.rs)")]
fn redis_passes_stress_with_connections_killed() {
    let Some(url) = server_or_skip("Redis", redis_url()) else { return };
    let target = StoreTarget::parse("redis", Some(&url)).unwrap();
    let spec = StressSpec { schema: "idemsim_t_stress".into(), ..StressSpec::default() };
    assert!(spec.requests >= 2000 && spec.clients >= 16);
    let report = stress(&spec, &target, None, Variant::Correct.protocol()).unwrap();
    assert_eq!(report.violations, vec![], "{:?}", report.violations.first());
    assert!(report.terminated > 0, "connections must be killed: {report:?}");
    assert!(report.pauses > 0 && report.abandoned > 0, "{report:?}");
}

#[test]
#[cfg_attr(idemsim_no_redis, ignore = "Redis not reachable when the tests were built (start it; see tests/build.rs)")]
fn both_broken_redis_variants_are_caught_by_stress() {
    let Some(url) = server_or_skip("Redis", redis_url()) else { return };
    let target = StoreTarget::parse("redis", Some(&url)).unwrap();
    for (flaw, property) in
        [(StoreFlaw::CheckThenInsert, Property::Fencing), (StoreFlaw::UnfencedCompletion, Property::Fencing)]
    {
        let schema = format!("idemsim_t_{}", flaw.name());
        let report =
            stress(&StressSpec { schema, ..StressSpec::default() }, &target, Some(flaw), Variant::Correct.protocol());
        let report = report.unwrap();
        assert!(report.violations.iter().any(|v| v.property == property), "{flaw:?} not caught: {report:?}");
    }
}

#[test]
#[cfg_attr(idemsim_no_redis, ignore = "Redis not reachable when the tests were built (start it; see tests/build.rs)")]
fn reset_deletes_only_its_own_prefix() {
    let Some(url) = server_or_skip("Redis", redis_url()) else { return };
    runtime().block_on(async {
        let (mine, other) = (
            RedisStore::connect(&url, "idemsim_t_reset_a", 1).await.unwrap(),
            RedisStore::connect(&url, "idemsim_t_reset_b", 1).await.unwrap(),
        );
        let (scope, fp) = (Scope::new("acme", "k"), Fingerprint::of("POST", "/orders", b"{}"));
        for store in [&mine, &other] {
            store.reset().await.unwrap();
            store.claim(&scope, &fp, SimTime(0), 1000).await.unwrap();
        }
        mine.reset().await.unwrap();
        assert!(mine.read(&scope).await.unwrap().is_none());
        assert!(other.read(&scope).await.unwrap().is_some(), "another prefix's keys survive");
        // A killed connection is replaced: at most one call per pooled
        // connection fails as it notices.
        assert!(other.terminate_a_connection(0).await.unwrap());
        let _ = other.read(&scope).await;
        assert!(other.read(&scope).await.unwrap().is_some());
    });
}

#[test]
#[cfg_attr(idemsim_no_redis, ignore = "Redis not reachable when the tests were built (start it; see tests/build.rs)")]
fn check_store_on_redis_prints_a_verdict() {
    let Some(url) = server_or_skip("Redis", redis_url()) else { return };
    let (code, out, err) = idemsim(&["check-store", "--store", "redis", "--url", &url, "--requests", "300"]);
    assert_eq!(code, EXIT_CLEAN, "{out}{err}");
    assert!(out.contains("conformance      PASS  256 cases") && out.contains("verdict: PASS"), "{out}");
    assert!(out.contains("linearizability  PASS"), "{out}");
}

#[test]
#[cfg_attr(idemsim_no_redis, ignore = "Redis not reachable when the tests were built (start it; see tests/build.rs)")]
fn bad_redis_settings_are_one_line_exit_2_and_never_show_the_password() {
    let Some(_) = server_or_skip("Redis", redis_url()) else { return };
    let cases: [(&str, &str); 3] = [
        ("rediss//nope", "is not a Redis URL"),
        ("redis://127.0.0.1:1", "cannot connect to Redis at redis://127.0.0.1:1"),
        ("redis://idemsim:s3cret-pw@127.0.0.1:6379", "cannot connect to Redis at redis://idemsim:***@127.0.0.1:6379"),
    ];
    for (url, message) in cases {
        for command in ["stress", "check-store"] {
            let (code, out, err) = idemsim(&[command, "--store", "redis", "--url", url]);
            assert_eq!(code, EXIT_USAGE, "{command} {url}: {out}{err}");
            assert!(err.contains(message), "{command} {url}: {err}");
            assert_eq!(err.lines().count(), 1, "{command} {url}: one line: {err}");
            assert!(!format!("{out}{err}").contains("s3cret"), "{command} {url} shows the password: {err}");
        }
    }
}
