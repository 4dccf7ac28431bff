//! PostgreSQL and MariaDB adapters against the servers this machine runs.
//!
//! Settings: `IDEMSIM_PG_URL` (default postgresql://postgres@127.0.0.1:5432/test)
//! and `IDEMSIM_MYSQL_URL` (default mysql://root@127.0.0.1:3306/test). Without
//! a server these tests skip with a message, except under `CI=true`, where a
//! missing server fails the run.

use idemsim_store::conformance::Conformance;
use idemsim_store::{IdempotencyStore, MySqlStore, PgStore, StoreError};
use idemsim_tests::real::{mysql_url, pg_url, server_or_skip};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[test]
fn pg_store_conforms() {
    let Some(url) = server_or_skip("PostgreSQL", pg_url()) else { return };
    let fresh = || {
        let url = url.clone();
        async move {
            let store = PgStore::connect(&url, "idemsim_conformance", 1).await?;
            store.reset().await?;
            Ok(store)
        }
    };
    let verdict = Conformance::new().cases(256).check(fresh).unwrap_or_else(|f| panic!("{f}"));
    assert!(verdict.stats.takeovers_granted > 0 && verdict.stats.completions > 0, "{verdict}");
    eprintln!("{verdict}");
}

#[test]
fn mysql_store_conforms() {
    let Some(url) = server_or_skip("MariaDB", mysql_url()) else { return };
    let fresh = || {
        let url = url.clone();
        async move {
            let store = MySqlStore::connect(&url, "idemsim_conformance", 1).await?;
            store.reset().await?;
            Ok(store)
        }
    };
    let verdict = Conformance::new().cases(256).check(fresh).unwrap_or_else(|f| panic!("{f}"));
    assert!(verdict.stats.takeovers_granted > 0 && verdict.stats.completions > 0, "{verdict}");
    eprintln!("{verdict}");
}

#[test]
fn bad_connection_settings_are_clear_errors() {
    let rt = runtime();
    let refused = rt.block_on(PgStore::connect("postgresql://postgres@127.0.0.1:1/test", "x", 1)).err().unwrap();
    assert!(matches!(&refused, StoreError::Unavailable(m) if m.contains("cannot connect to PostgreSQL")), "{refused}");
    let malformed = rt.block_on(PgStore::connect("postgresql://[::1", "x", 1)).err().unwrap();
    assert!(malformed.to_string().contains("invalid PostgreSQL URL"), "{malformed}");
    let bad_schema = rt.block_on(PgStore::connect("postgresql://postgres@127.0.0.1/test", "x; drop", 1)).err().unwrap();
    assert!(bad_schema.to_string().contains("not a valid schema name"), "{bad_schema}");
    let refused = rt.block_on(MySqlStore::connect("mysql://root@127.0.0.1:1/test", "x", 1)).err().unwrap();
    assert!(refused.to_string().contains("cannot connect to MySQL"), "{refused}");
    let malformed = rt.block_on(MySqlStore::connect("mysql//nope", "x", 1)).err().unwrap();
    assert!(malformed.to_string().contains("invalid MySQL URL"), "{malformed}");
}

#[test]
fn a_terminated_pg_connection_is_replaced() {
    let Some(url) = server_or_skip("PostgreSQL", pg_url()) else { return };
    runtime().block_on(async {
        let store = PgStore::connect(&url, "idemsim_terminate", 2).await.unwrap();
        store.reset().await.unwrap();
        let scope = idemsim_model::Scope::new("acme", "k");
        let fp = idemsim_model::Fingerprint::of("POST", "/orders", b"{}");
        store.claim(&scope, &fp, idemsim_model::SimTime(0), 1000).await.unwrap();
        store.read(&scope).await.unwrap();
        assert!(store.terminate_a_connection(0).await.unwrap());
        // Each pooled connection may fail once as it notices; then it reconnects.
        for _ in 0..4 {
            let _ = store.read(&scope).await;
        }
        assert!(store.read(&scope).await.unwrap().is_some());
    });
}

#[test]
fn broken_sql_fails_the_kit_on_real_servers() {
    use idemsim_store::SqlFlaw;
    if let Some(url) = server_or_skip("PostgreSQL", pg_url()) {
        let fresh = || {
            let url = url.clone();
            async move {
                let store = PgStore::connect(&url, "idemsim_conformance_flawed", 1).await?;
                store.reset().await?;
                Ok(store.with_flaw(SqlFlaw::UnfencedCompletion))
            }
        };
        let failure = Conformance::new().cases(256).check(fresh).expect_err("unfenced SQL must not conform");
        assert!(failure.reason.contains("complete"), "{failure}");
        eprintln!("{failure}");
    }
    if let Some(url) = server_or_skip("MariaDB", mysql_url()) {
        let fresh = || {
            let url = url.clone();
            async move {
                let store = MySqlStore::connect(&url, "idemsim_conformance_flawed", 1).await?;
                store.reset().await?;
                Ok(store.with_flaw(SqlFlaw::UnfencedCompletion))
            }
        };
        let failure = Conformance::new().cases(256).check(fresh).expect_err("unfenced SQL must not conform");
        assert!(failure.reason.contains("complete"), "{failure}");
    }
}
