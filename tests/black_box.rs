//! `idemsim http` against running services: `idemsim serve` (the known
//! answer: clean when correct, every outside-visible broken variant
//! caught) and two middleware packages nobody here wrote, installed from
//! the registries by `validation/setup.sh`. Also the bad targets.

use idemsim::model::outside::{reference_of, Seen};
use idemsim::model::{OpId, Request, StoredResponse};
use idemsim::protocol::Protocol;
use idemsim::serve::{start, Running, ServeSpec};
use idemsim::target::StoreTarget;
use idemsim_cli::{run, EXIT_USAGE, EXIT_VIOLATION};
use idemsim_sim::Variant;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn idemsim(args: &[&str]) -> (i32, String, String) {
    let argv = std::iter::once("idemsim").chain(args.iter().copied()).map(String::from).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run(argv, &mut out, &mut err);
    (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn serve(variant: Variant, store: StoreTarget, provider_port: u16) -> Running {
    start(&on_loopback(provider_port), &store, variant.protocol()).expect("serve starts")
}

/// A serve on a free loopback port that calls the provider on `provider_port`.
fn on_loopback(provider_port: u16) -> ServeSpec {
    ServeSpec {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        provider: Some(format!("http://127.0.0.1:{provider_port}")),
        ..ServeSpec::default()
    }
}

/// Runs `idemsim http --json` against `target`; exit code and report.
fn attack(target: &str, provider_port: u16, extra: &[&str]) -> (i32, Value, String) {
    let provider = format!("127.0.0.1:{provider_port}");
    let mut args = vec!["http", "--target", target, "--provider-listen", &provider, "--seed", "3", "--json"];
    args.extend_from_slice(extra);
    let (code, out, err) = idemsim(&args);
    let report = serde_json::from_str(&out).unwrap_or(Value::Null);
    (code, report, format!("{out}{err}"))
}

fn properties(report: &Value) -> Vec<String> {
    let mut found: Vec<String> = report["verdict"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["property"].as_str().unwrap().to_string())
        .collect();
    found.sort();
    found.dedup();
    found
}

fn judged(report: &Value, property: &str) -> bool {
    report["verdict"]["judged"]
        .as_array()
        .unwrap()
        .iter()
        .any(|j| j["property"] == property && j["not_judged"].is_null())
}

fn assert_clean_with_every_attack(code: i32, report: &Value, text: &str) {
    assert_eq!(code, 0, "{text}");
    for (attack, n) in report["attacks"].as_object().unwrap() {
        assert!(n.as_u64().unwrap() > 0, "attack {attack} never happened: {text}");
    }
    for p in ["at-most-once", "liveness", "replay-fidelity", "status-rules", "isolation", "fencing"] {
        assert!(judged(report, p), "{p} was not judged: {text}");
    }
}

#[test]
fn serve_correct_on_mem_is_clean_under_every_attack() {
    let provider = free_port();
    let service = serve(Variant::Correct, StoreTarget::Mem, provider);
    // serve's lease is 500 ms: with it, progress is judged too.
    let (code, report, text) = attack(&format!("http://{}", service.addr), provider, &["--lease-ms", "500"]);
    assert_clean_with_every_attack(code, &report, &text);
    assert!(judged(&report, "progress"), "{text}");
    assert_eq!(report["verdict"]["unjudged"], serde_json::json!({}), "serve answers only judged statuses");
    service.stop().unwrap();
}

#[test]
#[cfg_attr(idemsim_no_pg, ignore = "PostgreSQL not reachable when the tests were built (start it; see tests/build.rs)")]
fn serve_correct_on_postgres_is_clean_under_every_attack() {
    let url = std::env::var("IDEMSIM_PG_URL").unwrap_or("postgresql://postgres@127.0.0.1:5432/test".into());
    let provider = free_port();
    let service = serve(Variant::Correct, StoreTarget::Pg(url), provider);
    let (code, report, text) = attack(&format!("http://{}", service.addr), provider, &["--lease-ms", "500"]);
    assert_clean_with_every_attack(code, &report, &text);
}

#[test]
fn serve_variants_that_show_from_outside_are_caught_with_their_property() {
    let cases = [
        (Variant::CheckThenInsert, "fencing"),
        (Variant::PerProcessLock, "fencing"),
        (Variant::FingerprintNotCompared, "status-rules"),
        (Variant::ValidationStored, "status-rules"),
        (Variant::KeyNotScoped, "isolation"),
        (Variant::UnfencedCompletion, "fencing"),
        (Variant::TakeoverWithoutBump, "fencing"),
        (Variant::NoLease, "progress"),
    ];
    for (variant, property) in cases {
        let provider = free_port();
        let service = serve(variant, StoreTarget::Mem, provider);
        let target = format!("http://{}", service.addr);
        let (code, report, text) = attack(&target, provider, &["--requests", "150", "--lease-ms", "500"]);
        assert_eq!(code, EXIT_VIOLATION, "{}: {text}", variant.name());
        assert!(properties(&report).contains(&property.to_string()), "{}: {text}", variant.name());
        let story = report["verdict"]["violations"][0]["events"].as_array().unwrap();
        assert!(!story.is_empty(), "a violation names its observations");
        let told = report["stories"][0].as_array().unwrap();
        assert!(told.len() >= 2 && told[0].as_str().unwrap().contains(" 1. "), "{}: {told:?}", variant.name());
    }
}

/// A service of one's own, written as a user would over the public
/// `Protocol`: every replay of a completed key fails with 500 (a torn
/// read of the stored response, say).
struct TornReplay;

impl Protocol for TornReplay {
    fn name(&self) -> String {
        "torn-replay".into()
    }

    fn replay(&self, _stored: StoredResponse) -> StoredResponse {
        StoredResponse::new(500, r#"{"error":"internal"}"#)
    }
}

/// Every status is judged: a 500 for a key whose record completed (the
/// client retries it, as users' clients do), and a transient failure the
/// service stored and answers again without calling the provider.
#[test]
fn a_500_after_completion_and_a_stored_transient_error_are_caught() {
    let explanations = |report: &Value| -> Vec<(String, String)> {
        report["verdict"]["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["property"].as_str().unwrap().to_string(), v["explanation"].as_str().unwrap().to_string()))
            .collect()
    };
    let spec = on_loopback;

    let provider = free_port();
    let service = start(&spec(provider), &StoreTarget::Mem, Arc::new(TornReplay)).unwrap();
    let (code, report, text) = attack(&format!("http://{}", service.addr), provider, &["--requests", "80"]);
    service.stop().unwrap();
    assert_eq!(code, EXIT_VIOLATION, "{text}");
    let found = explanations(&report);
    assert!(found.iter().any(|(p, why)| p == "status-rules" && why.contains("never a 500")), "{found:?}");
    assert!(report["attacks"]["retries-after-5xx"].as_u64().unwrap_or(0) > 0, "500s are retried: {text}");

    let provider = free_port();
    let service = serve(Variant::TransientErrorStored, StoreTarget::Mem, provider);
    let (code, report, text) = attack(&format!("http://{}", service.addr), provider, &["--requests", "80"]);
    service.stop().unwrap();
    assert_eq!(code, EXIT_VIOLATION, "{text}");
    let found = explanations(&report);
    assert!(found.iter().any(|(p, why)| p == "liveness" && why.contains("transient failure was stored")), "{found:?}");
}

/// A service of one's own whose takeover never goes through (the store
/// call fails, say): after the provider's planned failure the record
/// stays `in_progress` and no one ever executes it again, so the key
/// answers 409 and 503 for as long as the client retries.
struct NeverTakesOver;

#[idemsim::prelude::async_trait]
impl Protocol for NeverTakesOver {
    fn name(&self) -> String {
        "never-takes-over".into()
    }

    async fn take_over(
        &self,
        _env: &dyn idemsim::protocol::Env,
        _scope: &idemsim::model::Scope,
        _expected: idemsim::model::Attempt,
        _now: idemsim::model::SimTime,
        _lease_ms: u64,
    ) -> Option<idemsim::model::Takeover> {
        None
    }
}

/// Progress from outside: judged only when the user says the service's
/// lease, and then a key refused for longer than twice it, with no call
/// to the provider, is caught with a story; the correct serve is clean.
#[test]
fn a_key_refused_past_any_lease_breaks_progress_given_the_lease() {
    let spec = on_loopback;
    let provider = free_port();
    let service = start(&spec(provider), &StoreTarget::Mem, Arc::new(NeverTakesOver)).unwrap();
    let target = format!("http://{}", service.addr);
    let (code, report, text) = attack(&target, provider, &["--requests", "40", "--lease-ms", "500"]);
    assert_eq!(code, EXIT_VIOLATION, "{text}");
    let stuck: Vec<&Value> =
        report["verdict"]["violations"].as_array().unwrap().iter().filter(|v| v["property"] == "progress").collect();
    assert!(!stuck.is_empty(), "{text}");
    assert!(stuck[0]["explanation"].as_str().unwrap().contains("no call to the dependency since"), "{text}");
    // Without the lease, progress is said not to be judged.
    let (_, report, text) = attack(&target, provider, &["--requests", "40"]);
    assert!(!judged(&report, "progress"), "{text}");
    assert!(!properties(&report).contains(&"progress".to_string()), "{text}");
    service.stop().unwrap();
}

/// Any lease is reachable: a service with a 60 s lease whose completion is
/// not fenced executes twice after the lease expires (the slow provider
/// answers after 90 s), and `--lease-ms 60000` alone sets the timings that
/// show it. About two and a half minutes of wall time.
#[test]
fn a_60_s_lease_without_fencing_is_caught_with_lease_ms_alone() {
    let provider = free_port();
    let spec = ServeSpec { lease_ms: 60_000, provider_timeout_ms: 300_000, ..on_loopback(provider) };
    let service = start(&spec, &StoreTarget::Mem, Variant::UnfencedCompletion.protocol()).unwrap();
    let (code, report, text) =
        attack(&format!("http://{}", service.addr), provider, &["--requests", "20", "--lease-ms", "60000"]);
    service.stop().unwrap();
    assert_eq!(code, EXIT_VIOLATION, "{text}");
    assert!(properties(&report).contains(&"fencing".to_string()), "{text}");
    assert!(judged(&report, "progress"), "{text}");
}

/// A service of one's own that stores its validation error (400) and
/// replays it re-encoded (another JSON serialiser on the way out): the
/// corrected request is refused with other bytes than the first 400.
struct StoredRefusalReencoded;

#[idemsim::prelude::async_trait]
impl Protocol for StoredRefusalReencoded {
    fn name(&self) -> String {
        "stored-refusal-reencoded".into()
    }

    async fn reject_invalid(
        &self,
        env: &dyn idemsim::protocol::Env,
        scope: &idemsim::model::Scope,
        attempt: idemsim::model::Attempt,
        reply: &idemsim::protocol::Reply,
    ) {
        idemsim::protocol::broken::ValidationStored.reject_invalid(env, scope, attempt, reply).await
    }

    fn replay(&self, stored: StoredResponse) -> StoredResponse {
        let body = stored.body.lossy().replace(':', ": ");
        StoredResponse::new(stored.status, &body)
    }
}

/// A stored 4xx replayed in other bytes is judged as the stored refusal it
/// is, not only a byte-for-byte copy of the first.
#[test]
fn a_stored_400_replayed_in_other_bytes_is_caught() {
    let provider = free_port();
    let spec = on_loopback(provider);
    let service = start(&spec, &StoreTarget::Mem, Arc::new(StoredRefusalReencoded)).unwrap();
    let (code, report, text) = attack(&format!("http://{}", service.addr), provider, &["--requests", "40"]);
    service.stop().unwrap();
    assert_eq!(code, EXIT_VIOLATION, "{text}");
    let found = report["verdict"]["violations"].as_array().unwrap();
    assert!(
        found
            .iter()
            .any(|v| v["property"] == "status-rules" && v["explanation"].as_str().unwrap().contains("got 400 again")),
        "{text}"
    );
}

/// The request whose record a success answer was: the request whose `ref`
/// the charge quoted in the answer was made for. Read from the trace alone,
/// as a person checking a verdict would.
fn record_of<'a>(seen: &'a [Seen], answer: &StoredResponse) -> Option<&'a Request> {
    let body = answer.body.lossy();
    let reference = seen.iter().find_map(|s| match s {
        Seen::Charged { reference: Some(r), charge, .. } if body.contains(&format!("\"{charge}\"")) => Some(r),
        _ => None,
    })?;
    seen.iter().find_map(|s| match s {
        Seen::Sent { request, .. } if reference_of(&request.body).as_ref() == Some(reference) => Some(request),
        _ => None,
    })
}

/// A service without a fingerprint replays one body's record to another
/// body: that answer is wrong (422 is due), but a later copy of the first
/// request getting the same record is right. Every "another body" verdict
/// must hold up when a reader checks the answer it cites as proof against
/// the trace: that answer's record was made for a request with another
/// body than the one the verdict is about.
#[test]
fn a_fingerprintless_service_gets_only_another_body_verdicts_a_reader_accepts() {
    let provider = free_port();
    let service = serve(Variant::FingerprintNotCompared, StoreTarget::Mem, provider);
    let trace = std::env::temp_dir().join(format!("idemsim-fingerprintless-{}.jsonl", std::process::id()));
    let trace_arg = trace.to_string_lossy().to_string();
    let (code, report, text) = attack(&format!("http://{}", service.addr), provider, &["--trace", &trace_arg]);
    service.stop().unwrap();
    assert_eq!(code, EXIT_VIOLATION, "{text}");
    let seen: Vec<Seen> =
        std::fs::read_to_string(&trace).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let _ = std::fs::remove_file(&trace);
    let mut checked = 0;
    for v in report["verdict"]["violations"].as_array().unwrap() {
        let why = v["explanation"].as_str().unwrap();
        let Some(proof_op) = why.split("another body (OpId(").nth(1) else { continue };
        let op_at = |text: &str| OpId(text[..text.find(')').unwrap()].parse().unwrap());
        let (flagged_op, proof_op) = (op_at(why.strip_prefix("OpId(").unwrap()), op_at(proof_op));
        let sent = |op: OpId| {
            seen.iter().enumerate().find_map(|(i, s)| match s {
                Seen::Sent { op: o, request, .. } if *o == op => Some((i, request)),
                _ => None,
            })
        };
        let (flagged_at, flagged) = sent(flagged_op).unwrap();
        let (proof_sent_at, _) = sent(proof_op).unwrap();
        // The proof: the other request's success, received before this one was sent.
        let proof = seen[..flagged_at]
            .iter()
            .filter_map(|s| match s {
                Seen::Answered { op, response, .. } if *op == proof_op && (200..300).contains(&response.status) => {
                    Some(response)
                }
                _ => None,
            })
            .next_back()
            .unwrap_or_else(|| panic!("{why}: no success of {proof_op:?} before {flagged_op:?} was sent"));
        match record_of(&seen, proof) {
            Some(record) => assert_ne!(record.body, flagged.body, "{why}: the proof replayed this request's record"),
            // No charge to go by: the record was this body's if a copy of
            // this request had succeeded before the proof's request was sent.
            None => {
                let copy_succeeded = seen[..proof_sent_at].iter().any(|s| match s {
                    Seen::Answered { op, response, .. } if (200..300).contains(&response.status) => {
                        sent(*op).is_some_and(|(_, request)| request == flagged)
                    }
                    _ => false,
                });
                assert!(!copy_succeeded, "{why}: a copy of this request had succeeded before the proof's was sent");
            }
        }
        checked += 1;
    }
    assert!(checked > 0, "the fingerprint bug itself must still be found: {text}");
}

/// The printed `reproduce:` line carries every flag that shaped the plan:
/// run it, and the plan (operations, attacks) is the one the first run
/// made.
#[test]
fn the_reproduce_line_carries_every_flag_that_shaped_the_plan() {
    let provider = free_port();
    let service = serve(Variant::Correct, StoreTarget::Mem, provider);
    let target = format!("http://{}", service.addr);
    let listen = format!("127.0.0.1:{provider}");
    let flags = [
        "--seed",
        "11",
        "--requests",
        "40",
        "--clients",
        "3",
        "--timeout-ms",
        "2500",
        "--slow-ms",
        "900",
        "--max-secs",
        "60",
        "--provider-listen",
        &listen,
    ];
    let mut first = vec!["http", "--target", &target];
    first.extend_from_slice(&flags);
    let (code, out, err) = idemsim(&first);
    assert_eq!(code, 0, "{out}{err}");
    let line =
        out.lines().find_map(|l| l.split_once("the same plan again (the interleaving is real): ").map(|(_, c)| c));
    let line = line.expect("a reproduce line");
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words[..2], ["idemsim", "http"], "{line}");
    for pair in flags.chunks(2) {
        assert!(words.windows(2).any(|w| w == pair), "{line} lacks {pair:?}");
    }
    let json = |args: &[&str]| {
        let mut args = args.to_vec();
        args.push("--json");
        let (code, out, err) = idemsim(&args);
        assert_eq!(code, 0, "{out}{err}");
        let mut report: Value = serde_json::from_str(&out).unwrap();
        // What the plan holds, without what the interleaving made of it.
        let attacks = report["attacks"].as_object_mut().unwrap();
        attacks.retain(|k, _| !k.starts_with("retries-after-") && k != "answers-dropped-by-proxy");
        (report["operations"].clone(), report["attacks"].clone())
    };
    assert_eq!(json(&first), json(&words[1..]), "the reproduce line makes the same plan");
    service.stop().unwrap();
}

#[test]
fn a_violation_prints_a_story_and_the_command_that_reruns_the_plan() {
    let provider = free_port();
    let service = serve(Variant::KeyNotScoped, StoreTarget::Mem, provider);
    let target = format!("http://{}", service.addr);
    let dir = std::env::temp_dir().join(format!("idemsim-black-box-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.jsonl");
    let provider_listen = format!("127.0.0.1:{provider}");
    let args = [
        "http",
        "--target",
        &target,
        "--provider-listen",
        &provider_listen,
        "--requests",
        "60",
        "--trace",
        trace.to_str().unwrap(),
    ];
    let (code, out, _) = idemsim(&args);
    assert_eq!(code, EXIT_VIOLATION, "{out}");
    assert!(out.contains("isolation        FAIL"), "{out}");
    assert!(out.contains("   1. "), "a numbered story: {out}");
    let reproduce =
        out.lines().find_map(|l| l.split_once("reproduce (same plan; the interleaving is real): ")).unwrap().1;
    let expected = format!("--target {target} --seed 0 --requests 60 ");
    assert!(
        reproduce.contains(&expected) && reproduce.contains(&format!("--provider-listen {provider_listen}")),
        "{reproduce}"
    );
    let lines = std::fs::read_to_string(&trace).unwrap();
    let first: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "sent");
    assert!(lines.lines().count() > 60);
    std::fs::remove_dir_all(&dir).ok();
}

/// A validation app, stopped when dropped.
struct App(Child);

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn validation() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../validation")
}

/// Installs the apps' packages (once per machine; the script skips what
/// is there).
fn setup() {
    static ONCE: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let mut done = ONCE.lock().unwrap_or_else(|p| p.into_inner());
    if !*done {
        let status = Command::new("bash").arg(validation().join("setup.sh")).status().expect("bash runs");
        assert!(status.success(), "validation/setup.sh failed (npm and python3 with pip and venv are needed)");
        *done = true;
    }
}

fn launch(program: &str, script: &str, dir: &str, provider: u16) -> (App, String) {
    setup();
    let port = free_port();
    let child = Command::new(program)
        .arg(script)
        .current_dir(validation().join(dir))
        .env("PORT", port.to_string())
        .env("PROVIDER_URL", format!("http://127.0.0.1:{provider}"))
        .env("DATABASE", std::env::temp_dir().join(format!("idemsim-django-{port}.sqlite3")))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    let app = App(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{dir} app did not listen within 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    (app, format!("http://127.0.0.1:{port}"))
}

#[test]
fn express_idempotency_is_caught_executing_keyless_requests_and_mixing_tenants() {
    let provider = free_port();
    let (_app, target) = launch("node", "app.js", "express", provider);
    let config = validation().join("express/idemsim.toml");
    let (code, report, text) = attack(&target, provider, &["--config", config.to_str().unwrap(), "--requests", "150"]);
    assert_eq!(code, EXIT_VIOLATION, "{text}");
    let found = properties(&report);
    assert!(found.contains(&"status-rules".to_string()), "{text}");
    assert!(found.contains(&"isolation".to_string()), "{text}");
}

#[test]
fn django_idempotency_key_is_caught_executing_duplicates_twice() {
    let provider = free_port();
    let python = validation().join("django/.venv/bin/python");
    setup();
    let (_app, target) = launch(python.to_str().unwrap(), "app.py", "django", provider);
    let config = validation().join("django/idemsim.toml");
    let (code, report, text) = attack(&target, provider, &["--config", config.to_str().unwrap(), "--requests", "100"]);
    assert_eq!(code, EXIT_VIOLATION, "{text}");
    let found = properties(&report);
    for p in ["at-most-once", "replay-fidelity", "status-rules"] {
        assert!(found.contains(&p.to_string()), "{p}: {text}");
    }
}

/// A loopback server that answers every connection with `reply` (or never
/// answers, for `None`), until the test ends.
fn fake_target(reply: Option<&'static [u8]>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = stream.read(&mut [0; 4096]);
            match reply {
                Some(bytes) => {
                    let _ = stream.write_all(bytes);
                }
                None => held.push(stream),
            }
        }
    });
    format!("http://{addr}")
}

#[test]
fn bad_targets_get_one_line_and_exit_2_in_bounded_time() {
    let closed = format!("http://127.0.0.1:{}", free_port());
    let hangs = fake_target(None);
    let html = fake_target(Some(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 26\r\nconnection: close\r\n\r\n<html><p>Welcome</p></html>",
    ));
    let garbage = fake_target(Some(b"\x00\x01garbage, not HTTP\r\n\r\n"));
    let tls = closed.replace("http://", "https://");
    let cases = [
        (closed.as_str(), "cannot be reached"),
        (hangs.as_str(), "cannot be reached: no answer within the timeout"),
        (html.as_str(), "with HTML, not the API"),
        (garbage.as_str(), "cannot be reached"),
        (tls.as_str(), "asks for TLS"),
        ("http://192.0.2.1:80", "not on loopback"),
        ("not a url", "is not a URL"),
    ];
    for (target, expected) in cases {
        let started = Instant::now();
        let provider = format!("127.0.0.1:{}", free_port());
        let (code, out, err) = idemsim(&["http", "--target", target, "--provider-listen", &provider]);
        assert_eq!(code, EXIT_USAGE, "{target}: {out}{err}");
        assert!(err.contains(expected), "{target}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{target}: {err}");
        assert!(out.is_empty(), "{target}: {out}");
        assert!(started.elapsed() < Duration::from_secs(20), "{target} took {:?}", started.elapsed());
    }
    let (code, _, err) = idemsim(&["http"]);
    assert_eq!((code, err.contains("no target")), (EXIT_USAGE, true), "{err}");
}

#[test]
fn serve_refuses_bad_addresses_and_busy_ports_in_one_line() {
    let busy = TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = busy.local_addr().unwrap().to_string();
    let cases = [
        (vec!["serve", "--listen", "0.0.0.0:7400"], "not a loopback address"),
        (vec!["serve", "--listen", busy.as_str()], "cannot listen on"),
        (vec!["serve", "--listen", "nope"], "is not an IP:port"),
        (vec!["serve", "--provider", "http://192.0.2.1/"], "not on loopback"),
        (vec!["serve", "--variant", "nope"], "unknown variant"),
    ];
    for (args, expected) in cases {
        let (code, out, err) = idemsim(&args);
        assert_eq!(code, EXIT_USAGE, "{args:?}: {out}{err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn a_target_that_goes_away_mid_run_ends_it_with_what_was_found_and_exit_2() {
    let provider = free_port();
    let service = serve(Variant::Correct, StoreTarget::Mem, provider);
    let target = format!("http://{}", service.addr);
    let started = Instant::now();
    let run = std::thread::spawn(move || {
        let provider = format!("127.0.0.1:{provider}");
        idemsim(&["http", "--target", &target, "--provider-listen", &provider, "--requests", "3000"])
    });
    std::thread::sleep(Duration::from_millis(1500));
    service.stop().unwrap();
    let (code, out, err) = run.join().unwrap();
    assert_eq!(code, EXIT_USAGE, "{out}{err}");
    assert!(out.contains("stopped early: the target stopped answering"), "{out}");
    assert!(out.contains("answers:  201 x"), "what was found before is kept: {out}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("stopped answering"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
}
