//! Verdicts on code idemsim has never seen, each shown with the bug and
//! without it, through the public API only, as a user's crate would write
//! them: a store with a long lock, a protocol that keeps state, a shrunk
//! file replayed with another store.

use idemsim::model::Sometimes;
use idemsim::prelude::*;
use idemsim::sim::StoreKind;
use idemsim_examples::{LongLease, UnfencedComplete};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn sweep(sim: &mut Simulation) -> idemsim::sweep::SweepReport {
    sim.sweep().unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_store_with_a_90_s_lock_is_caught_by_fencing_in_a_catalogue_scenario() {
    let mut sim = Simulation::scenario("paused-holder").unwrap();
    sim.store("unfenced", || Ok(UnfencedComplete::default())).protocol(LongLease).seeds(0..200).jobs(2);
    let report = sweep(&mut sim);
    let first = report.failures.first().expect("the unfenced store is caught");
    assert!(first.violations.iter().any(|v| v.property == Property::Fencing), "{:?}", first.violations);

    // Without the bug, the same 90 s lease runs clean: the pauses, phases
    // and deadlines that follow the lease do not make a false alarm.
    sim.store_kind(StoreKind::Mem);
    let report = sweep(&mut sim);
    assert!(report.failures.is_empty(), "{:?}", report.failures.first().map(|f| &f.violations));
}

/// A protocol that keeps state between requests: it counts the claims it
/// made and stamps the count into nothing but its own name. If the same
/// instance ran two seeds, the second would see the first's count.
#[derive(Default)]
struct Counting {
    claims: AtomicU64,
}

#[async_trait]
impl Protocol for Counting {
    fn name(&self) -> String {
        "counting".into()
    }
    fn lease_ms(&self, configured_ms: u64) -> u64 {
        // Stateful on purpose: the lease grows with every run this instance
        // has seen, so shared state changes the run.
        configured_ms + 10 * self.claims.fetch_add(1, Ordering::Relaxed)
    }
}

#[test]
fn a_stateful_protocol_gets_fresh_state_in_every_run_under_any_jobs() {
    let run = |jobs: usize| {
        let mut sim = Simulation::scenario("default").unwrap();
        sim.protocol_with(Counting::default).seeds(0..16).jobs(jobs).check_determinism(true);
        let report = sweep(&mut sim);
        let hashes: Vec<String> = (0..16).map(|seed| sim.replay(seed).unwrap().hash()).collect();
        (report.seeds_run, hashes)
    };
    let (one, two) = (run(1), run(2));
    assert_eq!(one.0, 16);
    assert_eq!(one.1, two.1, "the same seeds, the same runs, whatever the workers");
    // A shared instance would not give this: the same seed twice in a row.
    let mut sim = Simulation::scenario("default").unwrap();
    let shared = Arc::new(Counting::default());
    sim.protocol(shared).seeds(0..1).jobs(1);
    let (a, b) = (sim.replay(3).unwrap().hash(), sim.replay(3).unwrap().hash());
    assert_ne!(a, b, "the control: state shared between runs does change them");
}

#[test]
fn a_shrunk_file_names_its_store_and_refuses_another() {
    let mut sim = Simulation::scenario("paused-holder").unwrap();
    sim.store("unfenced", || Ok(UnfencedComplete::default())).seeds(0..200).jobs(2);
    let report = sweep(&mut sim);
    let seed = report.failures.first().expect("caught").seed;
    let shrunk = sim.shrink(seed).unwrap();
    let path = std::env::temp_dir().join(format!("idemsim-verdicts-{}.json", std::process::id()));
    shrunk.write(&path).unwrap();

    let mut again = Simulation::file(&path).unwrap();
    again.store("unfenced", || Ok(UnfencedComplete::default()));
    let seed = again.reproduced_seed().unwrap();
    assert!(again.replay(seed).unwrap().violations.iter().any(|v| v.property == shrunk.property));

    let mut other = Simulation::file(&path).unwrap();
    other.store_kind(StoreKind::Mem);
    let Err(idemsim::Error::Mismatch(err)) = other.replay(seed) else { panic!("another store is refused") };
    std::fs::remove_file(&path).ok();
    assert!(err.contains("store 'unfenced'") && err.contains("'mem'"), "{err}");
}

/// A client that waits only its own backoff, ignoring the server's
/// `Retry-After` (a bug found in public retry libraries).
#[derive(Clone, Copy, Debug, Default)]
struct IgnoresRetryAfter;

impl Protocol for IgnoresRetryAfter {
    fn name(&self) -> String {
        "ignores-retry-after".into()
    }
    fn retry_wait_ms(&self, backoff_ms: u64, _retry_after_ms: Option<u64>) -> u64 {
        backoff_ms
    }
}

/// A client whose retry budget is per request (five retries each) instead
/// of one bucket shared by all of the client's requests: an outage is
/// amplified by every request at once.
#[derive(Default)]
struct BudgetPerRequest {
    spent: std::sync::Mutex<std::collections::BTreeMap<idemsim::model::OpId, u32>>,
}

impl Protocol for BudgetPerRequest {
    fn name(&self) -> String {
        "budget-per-request".into()
    }
    fn spend_retry(&self, _env: &dyn idemsim::protocol::ClientEnv, req: idemsim::model::RequestId) -> bool {
        let mut spent = self.spent.lock().unwrap();
        let n = spent.entry(req.op).or_insert(0);
        *n += 1;
        *n <= 5
    }
}

#[test]
fn client_retry_bugs_are_written_as_steps_and_caught_by_retry_discipline() {
    let mut sim = Simulation::scenario("retry-storm").unwrap();
    sim.seeds(0..200).jobs(2);
    sim.protocol(IgnoresRetryAfter);
    let first = sweep(&mut sim).failures.into_iter().next().expect("ignoring Retry-After is caught");
    assert!(first.violations.iter().any(|v| v.property == Property::RetryDiscipline), "{:?}", first.violations);
    sim.protocol_with(BudgetPerRequest::default);
    let first = sweep(&mut sim).failures.into_iter().next().expect("a budget per request is caught");
    assert!(first.violations.iter().any(|v| v.property == Property::RetryDiscipline), "{:?}", first.violations);
    // The same scenario with the correct steps is clean.
    sim.protocol(Correct);
    assert!(sweep(&mut sim).failures.is_empty());
}

/// A store whose takeover checks the attempt but not the lease: a second
/// service that asks early takes a live execution's record away.
#[derive(Default)]
struct TakeoverIgnoresLease(MemStore);

#[async_trait]
impl Delegate for TakeoverIgnoresLease {
    fn inner(&self) -> &dyn IdempotencyStore {
        &self.0
    }
    async fn take_over(
        &self,
        s: &Scope,
        expected: Attempt,
        now: SimTime,
        lease_ms: u64,
    ) -> Result<Takeover, StoreError> {
        Ok(self.0.with_model(|m| match m.record_mut(s).map(|r| &mut r.state) {
            Some(RecordState::InProgress { attempt, locked_until, .. }) if *attempt == expected => {
                *attempt = Attempt(attempt.0 + 1);
                *locked_until = SimTime(now.0 + lease_ms);
                Takeover::Granted(*attempt)
            }
            _ => Takeover::Refused(m.read(s)),
        }))
    }
}

/// A store whose completion checks the attempt but not the status: the
/// attempt that completed a record can complete it again, overwriting it.
#[derive(Default)]
struct CompleteAnyStatus(MemStore);

#[async_trait]
impl Delegate for CompleteAnyStatus {
    fn inner(&self) -> &dyn IdempotencyStore {
        &self.0
    }
    async fn complete(&self, s: &Scope, a: Attempt, c: &Completion) -> Result<WriteOutcome, StoreError> {
        let held = self.0.with_model(|m| m.record_mut(s).map(|r| r.attempt()));
        if held != Some(a) {
            return Ok(WriteOutcome::Fenced);
        }
        let completed = self.0.with_model(|m| m.read(s).is_some_and(|r| r.is_completed()));
        if !completed {
            return self.0.complete(s, a, c).await;
        }
        self.0.with_model(|m| {
            if let Some(record) = m.record_mut(s) {
                record.state = RecordState::Completed { response: c.response.clone(), attempt: a };
            }
        });
        Ok(WriteOutcome::Applied)
    }
}

/// The first failure of `store` over seeds 0..2000 of the default
/// scenario, which must break `store-contract`.
fn caught_by_store_contract<S: IdempotencyStore + Default + 'static>(name: &str) {
    let mut sim = Simulation::scenario("default").unwrap();
    sim.store(name, || Ok(S::default())).seeds(0..2000).jobs(4);
    let report = sweep(&mut sim);
    let first = report.failures.first().unwrap_or_else(|| panic!("{name} is not caught"));
    let v = first.violations.iter().find(|v| v.property == Property::StoreContract);
    let v = v.unwrap_or_else(|| panic!("{name}: {:?}", first.violations));
    assert!(v.explanation.contains("a second service"), "{}", v.explanation);
    let shrunk = sim.shrink(first.seed).unwrap();
    let story = sim.story(&shrunk.outcome).unwrap();
    assert!(story.lines().count() <= 15, "a short story:\n{story}");
    if std::env::var_os("SHOW").is_some() {
        println!("{story}");
    }
}

#[test]
fn guards_the_correct_protocol_never_exercises_are_judged_by_store_contract() {
    caught_by_store_contract::<TakeoverIgnoresLease>("takeover-ignores-lease");
    caught_by_store_contract::<CompleteAnyStatus>("complete-any-status");
    // The bundled store, probed the same way, keeps its contract.
    let mut sim = Simulation::scenario("default").unwrap();
    sim.seeds(0..300).jobs(4);
    let report = sweep(&mut sim);
    assert!(report.failures.is_empty());
    assert!(report.coverage_total[Sometimes::StoreProbed] > 0, "probes were sent: the pass is not vacuous");
}

/// A store whose completion is an unconditional update of the row: after a
/// release (a soft delete, the row kept as a tombstone) a completion by
/// the attempt that released revives the row as completed, where the
/// contract says the write is fenced.
#[derive(Default)]
struct RevivingComplete {
    inner: MemStore,
    /// The rows released, as they were: the tombstones an UPDATE still finds.
    released: std::sync::Mutex<std::collections::BTreeMap<Scope, Record>>,
}

#[async_trait]
impl Delegate for RevivingComplete {
    fn inner(&self) -> &dyn IdempotencyStore {
        &self.inner
    }
    async fn release(&self, s: &Scope, a: Attempt) -> Result<WriteOutcome, StoreError> {
        let before = self.inner.read(s).await?;
        let outcome = self.inner.release(s, a).await?;
        if let (WriteOutcome::Applied, Some(record)) = (outcome, before) {
            self.released.lock().unwrap().insert(s.clone(), record);
        }
        Ok(outcome)
    }
    async fn complete(&self, s: &Scope, a: Attempt, c: &Completion) -> Result<WriteOutcome, StoreError> {
        if self.inner.read(s).await?.is_some() {
            return self.inner.complete(s, a, c).await;
        }
        let Some(row) = self.released.lock().unwrap().remove(s) else { return Ok(WriteOutcome::Fenced) };
        if row.attempt() != a {
            return Ok(WriteOutcome::Fenced);
        }
        let revived = Record { state: RecordState::Completed { response: c.response.clone(), attempt: a }, ..row };
        self.inner.with_model(|m| m.put(s, revived));
        Ok(WriteOutcome::Applied)
    }
}

/// The sweep is judged by the records the store says it deleted, not by
/// a table the simulator keeps beside it: a revived row is swept as the
/// completed record it is (no "swept while in progress"), and the revival
/// itself is what breaks the contract.
#[test]
fn a_store_that_revives_released_rows_is_judged_by_what_it_swept() {
    let mut sim = Simulation::scenario("default").unwrap();
    sim.store("reviving-complete", || Ok(RevivingComplete::default())).seeds(0..2000).jobs(4);
    let report = sweep(&mut sim);
    assert!(!report.failures.is_empty(), "a completion after a release is probed and caught");
    for f in &report.failures {
        let props: Vec<Property> = f.violations.iter().map(|v| v.property).collect();
        assert!(props.contains(&Property::StoreContract), "seed {}: {props:?}", f.seed);
        assert!(!props.contains(&Property::Expiry), "seed {}: a revived row is not an unfinished one", f.seed);
    }
    assert!(report.coverage_total[Sometimes::RecordSwept] > 0, "records were swept: the expiry pass is not vacuous");
}

/// Releases the record whenever the payment provider did not charge,
/// timeouts included, "so the client's retry goes through at once".
#[derive(Clone, Copy, Debug, Default)]
struct ReleaseOnAnyProviderFailure;

/// Releases the record only when the provider said it charged nothing
/// (429, 503); on a timeout the record stays `in_progress`. A safe
/// refinement of the correct step.
#[derive(Clone, Copy, Debug, Default)]
struct ReleaseOnlyWhenRefused;

async fn release(env: &dyn Env, scope: &Scope, attempt: Attempt) {
    let _ = env.store(StoreOp::Release { scope: scope.clone(), attempt }).await;
}

#[async_trait]
impl Protocol for ReleaseOnAnyProviderFailure {
    fn name(&self) -> String {
        "release-on-any-provider-failure".into()
    }
    async fn dependency_failed(&self, env: &dyn Env, s: &Scope, a: Attempt, _: &ChargeAnswer, r: Reply) -> Reply {
        release(env, s, a).await;
        r
    }
}

#[async_trait]
impl Protocol for ReleaseOnlyWhenRefused {
    fn name(&self) -> String {
        "release-only-when-refused".into()
    }
    async fn dependency_failed(&self, env: &dyn Env, s: &Scope, a: Attempt, answer: &ChargeAnswer, r: Reply) -> Reply {
        if matches!(answer, ChargeAnswer::Unavailable { .. }) {
            release(env, s, a).await;
        }
        r
    }
}

/// Makes up a provider key per execution (from its attempt, as a UUID
/// would be) and reuses one it finds saved in the recovery point.
#[derive(Clone, Copy, Debug, Default)]
struct SavedKeyPerExecution;

impl Protocol for SavedKeyPerExecution {
    fn name(&self) -> String {
        "saved-key-per-execution".into()
    }
    fn downstream_key(&self, s: &Scope, _: &Fingerprint, a: Attempt, saved: Option<&DownstreamKey>) -> DownstreamKey {
        saved.cloned().unwrap_or_else(|| DownstreamKey(format!("uuid:{s}:{}", a.0).into()))
    }
}

#[test]
fn payment_timeouts_judge_what_the_provider_did_not_what_the_server_assumed() {
    let mut sim = Simulation::scenario("payment-timeout").unwrap();
    sim.seeds(0..300).jobs(2);
    // A release on a timeout forgets a charge that went through.
    sim.protocol(ReleaseOnAnyProviderFailure);
    let report = sweep(&mut sim);
    let first = report.failures.first().expect("releasing on a timeout is caught");
    let by = |p: Property| report.failures.iter().any(|f| f.violations.iter().any(|v| v.property == p));
    assert!(by(Property::AtMostOnce), "a retry with another body charges again: {:?}", first.violations);
    assert!(by(Property::Liveness), "a client that gives up leaves an orphaned charge");
    // A key made up per execution charges twice after a stale read.
    sim.protocol(SavedKeyPerExecution);
    let first = sweep(&mut sim).failures.into_iter().next().expect("a key per execution is caught");
    assert!(first.violations.iter().any(|v| v.property == Property::AtMostOnce), "{:?}", first.violations);
    // Without the bugs: releasing only on a refusal that charged nothing is
    // safe, and so is the correct step; both run clean, with the provider's
    // late answers and refusals reached.
    for protocol in [Arc::new(ReleaseOnlyWhenRefused) as Arc<dyn Protocol>, Arc::new(Correct)] {
        let name = protocol.name();
        sim.protocol(protocol);
        let report = sweep(&mut sim);
        assert!(report.failures.is_empty(), "{name}: {:?}", report.failures.first().map(|f| &f.violations));
        let c = &report.coverage_total;
        assert!(
            c[Sometimes::ProviderAnsweredLate] > 0 && c[Sometimes::ProviderRefused] > 0,
            "{name}: the provider misbehaved"
        );
    }
}

/// Writes the outbox row in a transaction of its own, after the
/// completion committed: a crash or a lost store call in between loses the
/// message the checkout promised.
#[derive(Clone, Copy, Debug, Default)]
struct OutboxAfterCommit;

#[async_trait]
impl Protocol for OutboxAfterCommit {
    fn name(&self) -> String {
        "outbox-after-commit".into()
    }
    async fn complete(&self, env: &dyn Env, s: &Scope, a: Attempt, mut c: Completion) -> Option<StoreReply> {
        let messages = std::mem::take(&mut c.outbox);
        let reply = Correct.complete(env, s, a, c).await;
        if matches!(reply, Some(StoreReply::Write(WriteOutcome::Applied))) && !messages.is_empty() {
            let _ = env.store(StoreOp::StageOutbox { scope: s.clone(), attempt: a, messages }).await;
        }
        reply
    }
}

#[test]
fn an_outbox_row_written_after_the_completion_is_written_without_workarounds_and_caught() {
    let mut sim = Simulation::scenario("outbox").unwrap();
    sim.seeds(0..300).jobs(2).protocol(OutboxAfterCommit);
    let report = sweep(&mut sim);
    let first = report.failures.first().expect("a message lost between the two transactions is caught");
    let lost = |v: &Violation| v.property == Property::Outbox && v.explanation.contains("message is lost");
    assert!(first.violations.iter().any(lost), "{:?}", first.violations);
    // Its messages do reach the consumer when nothing comes between the
    // two writes: the seeds that pass staged and applied them.
    assert!(report.seeds_failed < 300, "most seeds pass: the protocol works when nothing fails");
    // The correct protocol, with the message in the completion's
    // transaction, is clean in the same seeds.
    sim.protocol(Correct);
    assert!(sweep(&mut sim).failures.is_empty());
}

/// The store bugs the correct protocol never leans on are not linearizable
/// either: under concurrent callers that ask for takeovers before the lease
/// ends and for writes by attempts that do not hold the record, the
/// concurrent mode finds answers no order explains; the bundled store, under
/// the same callers, is linearizable.
#[test]
fn guards_the_protocol_never_exercises_break_linearizability() {
    let mut kit = Concurrent::new();
    kit.operations(1_000);
    let verdict = kit.check(|| async { Ok(TakeoverIgnoresLease::default()) }).unwrap();
    assert!(!verdict.linearizable(), "a takeover of a live lease: {verdict}");
    assert!(verdict.to_string().contains("take_over"), "{verdict}");
    let verdict = kit.check(|| async { Ok(CompleteAnyStatus::default()) }).unwrap();
    assert!(!verdict.linearizable(), "a completion of a completed record: {verdict}");
    assert!(verdict.to_string().contains("complete"), "{verdict}");
    let verdict = kit.check(|| async { Ok(MemStore::new()) }).unwrap();
    assert!(verdict.linearizable(), "{verdict}");
    // The sequential kit sees both too, one operation at a time, each
    // shrunk to a short sequence.
    let failure = Conformance::new().check(|| async { Ok(TakeoverIgnoresLease::default()) }).unwrap_err();
    assert!(failure.minimal.len() <= 6 && failure.reason.contains("take_over"), "{failure}");
    let failure = Conformance::new().check(|| async { Ok(CompleteAnyStatus::default()) }).unwrap_err();
    assert!(failure.minimal.len() <= 6 && failure.reason.contains("complete"), "{failure}");
}

/// The same stores in the simulator's concurrent mode: every seed replays
/// its history exactly, so a failure is a seed; each bug is caught within
/// a few seeds with a witness of a handful of operations, and the bundled
/// store is clean over the same seeds.
#[test]
fn the_simulated_concurrent_mode_catches_them_by_seed() {
    use idemsim::sim::concurrent::ConcurrentSim;
    use idemsim::sim::Subject;
    let sim = ConcurrentSim::new();
    let first_failure = |subject: &Subject| {
        let sweep = sim.sweep(0..20, 2, subject);
        assert!(sweep.errors.is_empty(), "{:?}", sweep.errors);
        sweep.failures.into_iter().next()
    };
    for (name, subject, call) in [
        ("takeover-ignores-lease", Subject::store("t", || Ok(TakeoverIgnoresLease::default())), "take_over"),
        ("complete-any-status", Subject::store("c", || Ok(CompleteAnyStatus::default())), "complete"),
        ("racy", Subject::store("racy", || Ok(idemsim_examples::RacyStore::new())), "claim"),
    ] {
        let failure = first_failure(&subject).unwrap_or_else(|| panic!("{name}: not caught in 20 seeds"));
        let witness = failure.witness.as_ref().expect("a witness");
        assert!((1..=10).contains(&witness.operations.len()), "{name}: {failure}");
        assert!(failure.to_string().contains(call), "{name}: {failure}");
        // Drawn with callers as lanes, the witness marked.
        let page = failure.html();
        assert!(page.contains("class='op witness'") && page.contains(">caller "), "{name}");
        // The seed replays the same history.
        let again = sim.run_seed(failure.seed, &subject).unwrap();
        assert_eq!(again.hash, failure.hash, "{name}");
        assert!(!again.linearizable());
    }
    let clean = sim.sweep(0..20, 2, &Subject::store("mine", || Ok(MemStore::new())));
    assert!(clean.failures.is_empty() && clean.unknown.is_empty() && clean.errors.is_empty(), "{clean:?}");
    // Not vacuous: replies were lost (operations that may or may not have
    // happened) in the clean run too.
    assert!(clean.lost > 0 && clean.operations >= 20 * 400, "{clean:?}");
}
