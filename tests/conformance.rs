//! The conformance kit passes the real stores and fails broken ones.

use idemsim_store::conformance::{Conformance, Op};
use idemsim_store::{IdempotencyStore, MemStore, SqliteStore};
use idemsim_tests::broken::{Broken, Flaw};
use std::time::Duration;

#[test]
fn mem_store_conforms() {
    let verdict =
        Conformance::new().cases(256).check(|| async { Ok(MemStore::new()) }).unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(verdict.cases, 256);
    // Not vacuous: the interesting paths were taken.
    let s = &verdict.stats;
    assert!(s.takeovers_granted > 0 && s.writes_fenced > 0 && s.completions > 0 && s.sweeps_deleting > 0, "{verdict}");
    assert!(s.recompleted_after_sweep > 0, "{verdict}");
}

#[test]
fn sqlite_store_conforms() {
    let verdict =
        Conformance::new().cases(256).check(|| async { SqliteStore::in_memory() }).unwrap_or_else(|f| panic!("{f}"));
    let s = &verdict.stats;
    assert!(s.takeovers_granted > 0 && s.stale_found > 0 && s.messages_published > 0, "{verdict}");
    // A key completed again after its record was swept, with new message ids
    // (the sequence that once broke `run --store sqlite`).
    assert!(s.recompleted_after_sweep > 0, "{verdict}");
}

#[test]
fn sqlite_file_store_conforms() {
    let dir = std::env::temp_dir().join(format!("idemsim-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let counter = std::cell::Cell::new(0u32);
    let result = Conformance::new().cases(32).check(|| {
        counter.set(counter.get() + 1);
        let path = dir.join(format!("case-{}.db", counter.get()));
        async move { SqliteStore::open(&path) }
    });
    std::fs::remove_dir_all(&dir).ok();
    result.unwrap_or_else(|f| panic!("{f}"));
}

#[test]
fn an_unfenced_completion_fails_and_shrinks_to_a_short_story() {
    let failure = Conformance::new()
        .cases(256)
        .check(|| async { Ok(Broken::new(Flaw::UnfencedCompletion)) })
        .expect_err("the broken store must fail");
    // The minimal story is a claim and a completion by an attempt that does
    // not hold the record (or a takeover in between): a handful of steps.
    assert!(failure.minimal.len() <= 5, "not shrunk enough:\n{failure}");
    assert!(matches!(failure.minimal.last(), Some(Op::Complete { .. })), "{failure}");
    assert!(failure.reason.contains("complete") && failure.reason.contains("Fenced"), "{failure}");
    let text = failure.to_string();
    assert!(text.contains("reproduce with seed 0"), "{text}");
}

#[test]
fn a_panicking_store_is_reported_not_propagated() {
    let failure = Conformance::new()
        .cases(64)
        .check(|| async { Ok(Broken::new(Flaw::PanicsOnTakeover)) })
        .expect_err("a panicking store fails");
    assert!(failure.reason.contains("panicked: deliberate panic in take_over"), "{failure}");
    assert_eq!(failure.minimal.len(), 1, "{failure}");
}

#[test]
fn a_hanging_store_is_reported_as_hung() {
    let failure = Conformance::new()
        .cases(8)
        .ops_max(3)
        .op_timeout(Duration::from_millis(50))
        .shrink_time(Duration::from_secs(2))
        .check(|| async { Ok(Broken::new(Flaw::HangsOnRead)) })
        .expect_err("a hanging store fails");
    assert!(failure.reason.contains("did not answer within 50 ms"), "{failure}");
}

#[test]
fn a_store_that_cannot_be_created_is_a_setup_failure() {
    let failure = Conformance::new()
        .check(|| async { SqliteStore::open(std::path::Path::new("/nonexistent/dir/x.db")) })
        .expect_err("setup fails");
    assert!(failure.reason.contains("could not create a fresh store"), "{failure}");
    assert!(failure.minimal.is_empty());
}

#[test]
fn the_same_seed_draws_the_same_failure() {
    let run = |seed| {
        Conformance::new().seed(seed).check(|| async { Ok(Broken::new(Flaw::UnfencedCompletion)) }).unwrap_err().minimal
    };
    assert_eq!(run(7), run(7));
}

/// `stage_outbox` (the outbox row written on its own, which only a broken
/// protocol asks for) queues its messages after the ones committed before
/// it, with their record, on every bundled store, as on the model. Real
/// servers skip visibly when absent (and fail under `CI=true`).
#[test]
fn every_bundled_store_stages_outbox_messages_as_the_model_does() {
    use idemsim::target::StoreTarget;
    use idemsim_model::{Bytes, Completion, Fingerprint, MessageId, OutboxMessage, RefStore, SimTime, StoredResponse};
    use idemsim_tests::real::{mysql_url, pg_url, redis_url, server_or_skip};
    let message = |id: &str| OutboxMessage { id: MessageId(id.into()), topic: "t".into(), payload: Bytes::text("{}") };
    let (done, alone) = (idemsim_model::Scope::new("alice", "k1"), idemsim_model::Scope::new("bob", "k1"));
    let fp = Fingerprint::of("POST", "/checkout", b"{}");
    let completion =
        Completion { response: StoredResponse::new(201, "{}"), local_effect: None, outbox: vec![message("m-a")] };
    let mut model = RefStore::new();
    model.claim(&done, &fp, SimTime(0), 1_000);
    model.complete(&done, idemsim_model::Attempt(1), &completion);
    model.stage_outbox(&alone, &[message("m-b"), message("m-c")]);
    let expected = model.outbox_pending(10);
    let mut targets = vec![StoreTarget::Mem, StoreTarget::Sqlite];
    targets.extend(server_or_skip("PostgreSQL", pg_url()).map(StoreTarget::Pg));
    targets.extend(server_or_skip("MariaDB", mysql_url()).map(StoreTarget::MySql));
    targets.extend(server_or_skip("Redis", redis_url()).map(StoreTarget::Redis));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for target in targets {
        let pending = rt.block_on(async {
            let (store, _) = target.open("idemsim_stage_outbox", 1, None).await.unwrap();
            store.claim(&done, &fp, SimTime(0), 1_000).await.unwrap();
            store.complete(&done, idemsim_model::Attempt(1), &completion).await.unwrap();
            store.stage_outbox(&alone, &[message("m-b"), message("m-c")]).await.unwrap();
            store.outbox_pending(10).await.unwrap()
        });
        assert_eq!(pending, expected, "{target:?}");
    }
}

/// A claim that reads first and inserts after a pause (a read-then-insert
/// without a transaction): two callers can both be told they own the key.
#[derive(Default)]
struct RacyClaim(MemStore);

#[async_trait::async_trait]
impl idemsim_store::Delegate for RacyClaim {
    fn inner(&self) -> &dyn idemsim_store::IdempotencyStore {
        &self.0
    }
    async fn claim(
        &self,
        s: &idemsim_model::Scope,
        f: &idemsim_model::Fingerprint,
        now: idemsim_model::SimTime,
        lease_ms: u64,
    ) -> Result<idemsim_model::Claim, idemsim_store::StoreError> {
        if let Some(found) = self.0.read(s).await? {
            return Ok(idemsim_model::Claim::Existing(found));
        }
        // The window between the read and the insert (a round trip to a
        // database), wide enough that callers meet in it.
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        let attempt = self.0.with_model(|m| {
            let attempt = m.tombstone(s).map_or(idemsim_model::Attempt(1), |(a, _)| a.next());
            let state = idemsim_model::RecordState::InProgress {
                attempt,
                locked_until: now.plus_ms(lease_ms),
                recovery_point: None,
            };
            m.put(s, idemsim_model::Record { fingerprint: f.clone(), created_at: now, state });
            attempt
        });
        Ok(idemsim_model::Claim::Owned(attempt))
    }
}

/// The servers this machine has, as store targets (each absent one skips
/// visibly, and fails under `CI=true`).
fn servers() -> Vec<idemsim::target::StoreTarget> {
    use idemsim::target::StoreTarget;
    use idemsim_tests::real::{mysql_url, pg_url, redis_url, server_or_skip};
    let mut targets = Vec::new();
    targets.extend(server_or_skip("PostgreSQL", pg_url()).map(StoreTarget::Pg));
    targets.extend(server_or_skip("MariaDB", mysql_url()).map(StoreTarget::MySql));
    targets.extend(server_or_skip("Redis", redis_url()).map(StoreTarget::Redis));
    targets
}

/// A witness's size, checked: at most 10 operations, and the failure
/// told as a story.
fn assert_short_witness(what: &str, verdict: &idemsim_store::conformance::ConcurrentVerdict, names: &str) {
    assert!(!verdict.linearizable(), "{what}: {verdict}");
    let witness = verdict.witness.as_ref().unwrap_or_else(|| panic!("{what}: no witness: {verdict}"));
    assert!((1..=10).contains(&witness.operations.len()), "{what}: {verdict}");
    let text = verdict.to_string();
    assert!(
        text.starts_with("NOT LINEARIZABLE") && text.contains(names) && text.contains("the record:"),
        "{what}: {text}"
    );
}

/// The concurrent mode: the bundled stores are linearizable over 2,000
/// operations of 8 callers each, and the server stores stay so with
/// connections killed from the server side while the callers run (each
/// cut-off operation may or may not have happened).
#[test]
fn bundled_stores_are_linearizable_with_connections_killed() {
    use idemsim::target::StoreTarget;
    use idemsim_store::conformance::Concurrent;
    let mut targets = vec![StoreTarget::Mem, StoreTarget::Sqlite];
    targets.extend(servers());
    let mut kit = Concurrent::new();
    kit.kill_connections(8);
    let mut killed_somewhere = false;
    for target in targets {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let verdict = rt.block_on(async {
            let (store, terminator) = target.open("idemsim_linearizable", 8, None).await.unwrap();
            kit.check_store(store, terminator).await
        });
        assert!(verdict.linearizable(), "{target:?}: {verdict}");
        assert!(verdict.operations >= 1_900, "{target:?}: {verdict}");
        killed_somewhere |= verdict.killed > 0;
    }
    // Not vacuous: where a server ran, connections died mid-run.
    assert!(killed_somewhere || servers().is_empty(), "no connection was killed");
}

/// Every store flaw of the catalogue, on every server store, and a racy
/// claim written as a user would, are not linearizable, each shown by a
/// history of at most 10 operations. A race needs callers to meet in its
/// window (a Redis round trip is tens of microseconds): each gets up to
/// five runs of 2,000 operations, with other seeds.
#[test]
fn every_store_flaw_and_a_racy_claim_shrink_to_short_histories() {
    use idemsim_store::conformance::{Concurrent, ConcurrentVerdict};
    use idemsim_store::StoreFlaw;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let caught = |open: &dyn Fn() -> std::sync::Arc<dyn IdempotencyStore>| -> ConcurrentVerdict {
        let mut last = None;
        for seed in 0..5 {
            let verdict = rt.block_on(Concurrent::new().seed(seed).check_store(open(), None));
            if !verdict.linearizable() {
                return verdict;
            }
            last = Some(verdict);
        }
        last.unwrap()
    };
    for target in servers() {
        for flaw in StoreFlaw::ALL {
            let open = || rt.block_on(target.open("idemsim_linearizable_flawed", 8, Some(flaw))).unwrap().0;
            let verdict = caught(&open);
            let names = match flaw {
                StoreFlaw::CheckThenInsert => "claim",
                StoreFlaw::UnfencedCompletion => "complete",
            };
            assert_short_witness(&format!("{target:?} with {}", flaw.name()), &verdict, names);
        }
    }
    let verdict = caught(&|| std::sync::Arc::new(RacyClaim::default()));
    assert_short_witness("the racy claim", &verdict, "owned");
}
