//! The command line's contract, through the real binary: every bad or
//! unusual input gets its documented exit code and one plain line, never a
//! backtrace or a hang; Ctrl-C keeps what was found; a closed stdout keeps
//! the exit code. Each case runs under a timeout.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_idemsim");

struct Ran {
    code: i32,
    out: String,
    err: String,
}

/// Runs idemsim to completion, failing the test if it takes over `limit`.
fn idemsim(args: &[&str], limit: Duration) -> Ran {
    let child = Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    finish(child, limit, args)
}

fn finish(mut child: Child, limit: Duration, args: &[&str]) -> Ran {
    let started = Instant::now();
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut s);
            }
            s
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("idemsim {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran { code: status.code().unwrap_or(-1), out: out.join().unwrap(), err: err.join().unwrap() }
}

/// The lines of stderr that are not progress.
fn messages(err: &str) -> Vec<&str> {
    err.lines()
        .filter(|l| !l.starts_with("swept ") && !l.starts_with("stressed ") && !l.starts_with("bench: "))
        .collect()
}

fn assert_usage(args: &[&str], message: &str) {
    let ran = idemsim(args, Duration::from_secs(60));
    assert_eq!(ran.code, 2, "{args:?}: {}{}", ran.out, ran.err);
    let lines = messages(&ran.err);
    assert_eq!(lines.len(), 1, "{args:?}: one line: {}", ran.err);
    assert!(lines[0].contains(message), "{args:?}: {}", ran.err);
    for bad in ["panicked", "backtrace", "RUST_BACKTRACE", "s3cret"] {
        assert!(!ran.err.contains(bad) && !ran.out.contains(bad), "{args:?}: {}", ran.err);
    }
}

fn interrupt(child: &Child) {
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
}

fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("idemsim-reliability-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn bad_inputs_are_one_line_and_exit_2() {
    let shrink_yaml = scratch("s.yaml");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", "--seeds", "0..10", "--shard", "11/20"], "has no seeds"),
        (vec!["stress", "--store", "mem", "--requests", "1000000000"], "--requests must be between 1 and 1000000"),
        (vec!["shrink", "--seed", "1", "--out", "/nonexistent/s.json"], "cannot write the shrunk scenario"),
        (vec!["shrink", "--seed", "1", "--out", shrink_yaml.to_str().unwrap()], "must end in .json or .toml"),
        (vec!["bench", "--out", "/nonexistent/b.json"], "cannot write the bench report"),
        (vec!["check-store", "--store", "mem", "--cases", "0"], "--cases must be between"),
        (vec!["stress", "--store", "mem", "--url", "x"], "--url applies to the pg, mysql and redis stores"),
        (vec!["stress", "--store", "pg", "--url", "postgres://u:s3cret@[::1/test"], "invalid PostgreSQL URL"),
        (
            vec!["stress", "--store", "mysql", "--url", "mysql://root:s3cret@127.0.0.1:1/test"],
            "cannot connect to MySQL",
        ),
        (vec!["run", "--seeds", "abc"], "not a seed range"),
        (vec!["run", "--jobs", "5000", "--seeds", "0..2"], "--jobs must be"),
        (vec!["run", "--file", "/nonexistent/scenario.json"], "cannot read"),
        (vec!["run", "--shard", "env", "--seeds", "0..10"], "--shard env needs"),
        (vec!["frobnicate"], "unrecognized subcommand"),
        // A negative number is refused by its own parser, saying what is
        // wrong, not taken for an unknown flag.
        (vec!["run", "--seeds", "-5..10"], "not a seed range"),
        (vec!["run", "--seed", "-1"], "invalid value '-1' for '--seed"),
        (vec!["run", "--jobs", "-1"], "invalid value '-1' for '--jobs"),
        // A sweep is a half-open range: the largest seed is replay's.
        (vec!["run", "--seed", "18446744073709551615"], "`idemsim replay --seed 18446744073709551615` runs this one"),
        // Checked before the kit runs.
        (vec!["check-store", "--store", "mem", "--clients", "0"], "--clients must be between 1 and 1024"),
        // A password is masked wherever a connection string carries it:
        // the user info, the query, a libpq key=value pair.
        (vec!["stress", "--store", "pg", "--url", "postgres://u@[::1/test?password=s3cret"], "password=***"),
        (vec!["stress", "--store", "mysql", "--url", "mysql://root@127.0.0.1:1/test?password=s3cret"], "password=***"),
        (vec!["stress", "--store", "pg", "--url", "host=127.0.0.1 password='s3cret' nonsense=1"], "password=***"),
        (vec!["stress", "--store", "redis", "--url", "redis://:s3cret@127.0.0.1:1/0"], "cannot connect to Redis"),
    ];
    for (args, message) in &cases {
        assert_usage(args, message);
    }
    // Each bound of `http` is said alone, with the value given.
    assert_usage(
        &["http", "--target", "http://127.0.0.1:1", "--requests", "0"],
        "--requests must be between 1 and 100000, not 0",
    );
    assert_usage(
        &["http", "--target", "http://127.0.0.1:1", "--clients", "300"],
        "--clients must be between 1 and 256, not 300",
    );
    // A value of 100,000 characters is not echoed whole.
    let long = "x".repeat(100_000);
    assert_usage(&["run", "--scenario", &long], " characters) ");
    let ran = idemsim(&["run", "--scenario", &long], Duration::from_secs(60));
    assert!(ran.err.len() < 1_000, "{} bytes of error", ran.err.len());
    // localhost is loopback for serve as for http.
    let ran = idemsim(&["serve", "--listen", "localhost:0", "--max-secs", "1"], Duration::from_secs(60));
    assert_eq!(ran.code, 0, "{}", ran.err);
    assert!(ran.out.contains("listening on http://127.0.0.1:"), "{}", ran.out);
}

/// Bare `idemsim` says a command is missing and names them; clap's own
/// hints are not repeated after ours.
#[test]
fn a_missing_command_names_the_commands_and_hints_are_said_once() {
    let ran = idemsim(&[], Duration::from_secs(10));
    assert_eq!(ran.code, 2, "{}{}", ran.out, ran.err);
    let lines = messages(&ran.err);
    assert_eq!(lines.len(), 1, "{}", ran.err);
    assert!(lines[0].contains("a command is missing") && lines[0].contains("run, replay, shrink"), "{}", ran.err);
    let ran = idemsim(&["run", "--jobs", "x"], Duration::from_secs(10));
    assert_eq!(ran.code, 2);
    assert_eq!(ran.err.matches("--help").count(), 1, "{}", ran.err);
}

/// `run --json --shrink`: stdout stays one JSON document (the shrink's
/// account goes to stderr); a sharded text report names its shard.
#[test]
fn json_stays_json_with_shrink_and_a_shard_says_which_it_is() {
    let out = scratch("shrunk-json.json");
    let out_arg = out.to_string_lossy().to_string();
    let args = ["run", "--variant", "takeover-without-bump", "--seeds", "0..20", "--json", "--shrink", "--shrink-out"];
    let mut args = args.to_vec();
    args.push(&out_arg);
    let ran = idemsim(&args, Duration::from_secs(120));
    assert_eq!(ran.code, 1, "{}{}", ran.out, ran.err);
    let doc: serde_json::Value = serde_json::from_str(&ran.out).unwrap_or_else(|e| panic!("{e}: {}", ran.out));
    assert_eq!(doc["clean"], false);
    assert!(ran.err.contains("shrinking seed") && out.exists(), "{}", ran.err);

    let ran = idemsim(&["run", "--seeds", "0..40", "--shard", "2/4", "--jobs", "1"], Duration::from_secs(60));
    assert_eq!(ran.code, 0, "{}{}", ran.out, ran.err);
    assert!(ran.out.lines().next().unwrap().contains("seeds 0..40, shard 2 of 4 (1 job)"), "{}", ran.out);
}

#[test]
fn bad_scenario_files_name_the_field() {
    let huge = scratch("huge.json");
    std::fs::write(
        &huge,
        r#"{"name": "x", "lesson": "x", "expect": {}, "config": {"phases": {"fault_ms": 18446744073709551615}}}"#,
    )
    .unwrap();
    assert_usage(&["run", "--file", huge.to_str().unwrap()], "phases.fault_ms is 18446744073709551615");
    let unknown = scratch("unknown.json");
    std::fs::write(&unknown, r#"{"name": "x", "lesson": "x", "expect": {}, "sometimes": ["not_a_counter"]}"#).unwrap();
    assert_usage(&["run", "--file", unknown.to_str().unwrap()], "'not_a_counter' is not a coverage counter");
    let garbage = scratch("garbage.json");
    std::fs::write(&garbage, "{ not json").unwrap();
    assert_usage(&["run", "--file", garbage.to_str().unwrap()], "is not a valid scenario");
}

#[test]
fn a_scenario_file_is_a_test_of_its_expect() {
    let file = scratch("expects-fencing.json");
    let text = r#"{"name": "x", "lesson": "x", "expect": {"correct": {"violates": "fencing"}}}"#;
    std::fs::write(&file, text).unwrap();
    let ran = idemsim(&["run", "--file", file.to_str().unwrap(), "--seeds", "0..5"], Duration::from_secs(60));
    assert_eq!(ran.code, 1, "{}{}", ran.out, ran.err);
    assert!(ran.out.contains("NOT as expected"), "{}", ran.out);
    let met = scratch("expects-clean.json");
    std::fs::write(&met, r#"{"name": "x", "lesson": "x", "expect": {"correct": "clean"}}"#).unwrap();
    let ran = idemsim(&["run", "--file", met.to_str().unwrap(), "--seeds", "0..5"], Duration::from_secs(60));
    assert_eq!(ran.code, 0, "{}{}", ran.out, ran.err);
    // A clean run that never showed what the file exists for is vacuous:
    // it fails, naming the counter.
    let vacuous = scratch("expects-clean-and-a-takeover.json");
    let text = r#"{"name": "x", "lesson": "x", "config": {"faults": "none"}, "expect": {"correct": "clean"}, "sometimes": ["takeover"]}"#;
    std::fs::write(&vacuous, text).unwrap();
    let ran = idemsim(&["run", "--file", vacuous.to_str().unwrap(), "--seeds", "0..5"], Duration::from_secs(60));
    assert_eq!(ran.code, 1, "{}{}", ran.out, ran.err);
    assert!(
        ran.out.contains("<- never happened") && ran.out.contains("shows takeover, which never happened"),
        "{}",
        ran.out
    );
}

#[test]
fn ctrl_c_keeps_what_was_found_and_exits_130() {
    let args = ["run", "--variant", "unfenced-completion", "--seeds", "0..100000", "--jobs", "1"];
    let child = Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    interrupt(&child);
    let ran = finish(child, Duration::from_secs(60), &args);
    assert_eq!(ran.code, 130, "{}{}", ran.out, ran.err);
    assert!(ran.out.contains("INTERRUPTED (Ctrl-C)"), "{}", ran.out);
    assert!(ran.out.contains("reproduce: ") && ran.out.contains("replay --scenario default"), "{}", ran.out);
}

/// A closed stderr (`2>&1 | head -1`) drops progress lines; the report on
/// stdout and the exit code stay the command's own.
#[test]
fn a_closed_stderr_keeps_the_report_and_the_exit_code() {
    let args = ["run", "--variant", "unfenced-completion", "--seeds", "0..1000", "--jobs", "1"];
    let mut child = Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stderr.take());
    let ran = finish(child, Duration::from_secs(120), &args);
    assert_eq!(ran.code, 1, "{}", ran.out);
    assert!(ran.out.contains("reproduce: "), "{}", ran.out);
}

/// `check-store`, `serve` and `concurrent` stop on Ctrl-C with 130, and a stress cut
/// short is never a pass; SIGTERM (what `timeout` and Kubernetes send) is
/// Ctrl-C, so a `--json` report is whole.
#[test]
fn ctrl_c_and_sigterm_stop_every_long_command_with_130_and_its_report() {
    let args = ["check-store", "--store", "mem", "--cases", "16", "--requests", "1000000"];
    let child = Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(3));
    interrupt(&child);
    let ran = finish(child, Duration::from_secs(60), &args);
    assert_eq!(ran.code, 130, "{}{}", ran.out, ran.err);
    assert!(ran.out.contains("verdict: INTERRUPTED") && !ran.out.contains("verdict: PASS"), "{}", ran.out);

    let args = ["serve", "--listen", "127.0.0.1:0"];
    let mut child = Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.contains("listening on"), "{line}");
    interrupt(&child);
    let ran = finish(child, Duration::from_secs(30), &args);
    assert_eq!(ran.code, 130, "serve: {}", ran.err);

    let args = ["concurrent", "--seeds", "0..10000000", "--jobs", "1"];
    let child = Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    interrupt(&child);
    let ran = finish(child, Duration::from_secs(30), &args);
    assert_eq!(ran.code, 130, "concurrent: {}{}", ran.out, ran.err);
    assert!(ran.out.contains("INTERRUPTED (Ctrl-C) after") && !ran.out.contains("LINEARIZABLE: every"), "{}", ran.out);

    let args = ["run", "--seeds", "0..100000", "--jobs", "1", "--json"];
    let child = Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let ran = finish(child, Duration::from_secs(60), &args);
    assert_eq!(ran.code, 130, "{}", ran.err);
    let report: serde_json::Value = serde_json::from_str(&ran.out).expect("a whole JSON report after SIGTERM");
    assert_eq!(report["interrupted"], true);
}

/// A stdout that cannot be written (a full disk) loses the report, not
/// what it found: one line naming stdout, with the reproduce line, and a
/// violation still exits 1; a clean sweep's lost report exits 2.
#[test]
fn an_unwritable_stdout_keeps_the_verdict_and_the_reproduce_line() {
    for (args, code) in
        [(vec!["run", "--variant", "unfenced-completion", "--seeds", "0..20"], 1), (vec!["run", "--seeds", "0..2"], 2)]
    {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let child = Command::new(BIN).args(&args).stdout(full).stderr(Stdio::piped()).spawn().unwrap();
        let ran = finish(child, Duration::from_secs(60), &args);
        assert_eq!(ran.code, code, "{args:?}: {}", ran.err);
        let lines = messages(&ran.err);
        assert_eq!(lines.len(), 1, "{args:?}: {}", ran.err);
        assert!(lines[0].contains("cannot write the report to stdout"), "{}", ran.err);
        assert_eq!(lines[0].contains("reproduce: "), code == 1, "{}", ran.err);
    }
}

/// The default step budget fits every valid workload: 100,000 requests
/// (the documented bound) run, not a 'livelock' after no operation.
#[test]
fn the_largest_valid_workload_runs_within_the_default_budget() {
    let explained = idemsim(&["explain", "default", "--json"], Duration::from_secs(60));
    let mut file: serde_json::Value = serde_json::from_str(&explained.out).unwrap();
    file["config"]["workload"]["requests"] = 100_000.into();
    let path = scratch("big.json");
    std::fs::write(&path, file.to_string()).unwrap();
    let ran = idemsim(&["run", "--file", path.to_str().unwrap(), "--seeds", "0..1"], Duration::from_secs(180));
    assert!(!ran.out.contains("step budget") && !ran.err.contains("step budget"), "{}{}", ran.out, ran.err);
    assert!(ran.out.contains("operations: 100000"), "{}", ran.out);
}

/// `RUST_LOG` logs the run without madsim's warning that std's HashMap is
/// not deterministic (nothing in a run iterates one); naming its target
/// shows it.
#[test]
fn rust_log_does_not_raise_a_false_alarm_about_determinism() {
    let run = |filter: &str| {
        let out =
            Command::new(BIN).args(["run", "--seeds", "0..3", "--jobs", "2"]).env("RUST_LOG", filter).output().unwrap();
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    assert!(!run("warn").contains("will not be deterministic"));
    assert!(run("warn,madsim::sim::rand=warn").contains("will not be deterministic"), "the target named shows it");
}

/// Counts agree with their nouns: "1 seed", never "1 seeds".
#[test]
fn one_of_a_thing_is_said_in_the_singular() {
    let ran = idemsim(&["run", "--seeds", "0..1", "--jobs", "1"], Duration::from_secs(60));
    assert_eq!(ran.code, 0, "{}", ran.err);
    assert!(ran.out.contains("(1 job)") && ran.out.contains("no property violated in 1 seed\n"), "{}", ran.out);
    let ran = idemsim(&["replay", "--variant", "unfenced-completion", "--seed", "15"], Duration::from_secs(60));
    for wrong in ["1 seeds", "1 jobs", "1 violations", "1 clients", "1 events"] {
        assert!(!ran.out.contains(wrong), "{wrong}: {}", ran.out);
    }
}

#[test]
fn the_whole_seed_range_starts_at_once_in_constant_memory() {
    let args = ["run", "--seeds", "0..18446744073709551615", "--shard", "1/1000000000000", "--jobs", "1"];
    let mut child = Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Progress shows within seconds (a line every 5 s on a long sweep).
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    let started = Instant::now();
    err.read_line(&mut first).unwrap();
    // Keep draining stderr, so progress lines never block the run.
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    assert!(first.starts_with("swept "), "{first}");
    assert!(started.elapsed() < Duration::from_secs(20), "progress took {:?}", started.elapsed());
    let rss = rss_mib(child.id());
    assert!(rss > 0.0 && rss < 100.0, "RSS {rss} MiB");
    interrupt(&child);
    let ran = finish(child, Duration::from_secs(60), &args);
    assert_eq!(ran.code, 130, "{}", ran.out);
    assert!(ran.out.contains("INTERRUPTED"), "{}", ran.out);
}

#[test]
fn a_closed_stdout_keeps_the_exit_code() {
    for (args, code) in [
        (vec!["run", "--variant", "unfenced-completion", "--seeds", "0..20"], 1),
        (vec!["replay", "--variant", "unfenced-completion", "--seed", "15"], 1),
        (vec!["run", "--seeds", "0..3"], 0),
    ] {
        let mut child = Command::new(BIN).args(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        drop(out); // `| head -1`
        let ran = finish(child, Duration::from_secs(60), &args);
        assert_eq!(ran.code, code, "{args:?}: {}", ran.err);
        assert!(!ran.err.contains("Broken pipe"), "{args:?}: {}", ran.err);
    }
}

#[test]
fn reports_say_what_they_checked_and_what_they_cut() {
    let ran = idemsim(&["run", "--seeds", "0..3", "--check-determinism"], Duration::from_secs(60));
    assert_eq!(ran.code, 0);
    assert!(ran.out.contains("determinism: 3 seeds run twice, identical"), "{}", ran.out);
    let ran = idemsim(&["run", "--seeds", "0..3", "--json"], Duration::from_secs(60));
    let doc: serde_json::Value = serde_json::from_str(&ran.out).unwrap();
    assert_eq!(doc["determinism"]["checked"], false);
    let ran =
        idemsim(&["run", "--variant", "check-then-insert", "--seeds", "0..40", "--json"], Duration::from_secs(60));
    let doc: serde_json::Value = serde_json::from_str(&ran.out).unwrap();
    assert!(
        doc["failures_total"].as_u64().unwrap() > doc["failures_shown"].as_u64().unwrap(),
        "{}",
        doc["failures_total"]
    );
    assert_eq!(doc["failures_shown"], 20);
    // The binary ran from a cargo target directory: commands say so.
    let ran = idemsim(&["run", "--variant", "unfenced-completion", "--seeds", "0..20"], Duration::from_secs(60));
    assert!(ran.out.contains("reproduce: cargo run"), "{}", ran.out);
}

#[test]
fn merge_refuses_duplicates_and_says_what_is_missing() {
    let shard = |k: u32| {
        let ran = idemsim(
            &["run", "--seeds", "0..40", "--shard", &format!("{k}/4"), "--json", "--jobs", "1"],
            Duration::from_secs(60),
        );
        assert_eq!(ran.code, 0, "{}", ran.err);
        let path = scratch(&format!("shard{k}.json"));
        std::fs::write(&path, ran.out).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (one, two, three) = (shard(1), shard(2), shard(3));
    assert_usage(&["merge", &one, &one, &two], "shard 1/4 appears twice");
    let ran = idemsim(&["merge", &one, &two, &three], Duration::from_secs(60));
    assert!(ran.out.contains("INCOMPLETE: covers 3 of 4 shards of seeds 0..40; missing: 4/4"), "{}", ran.out);
    assert!(ran.out.contains("coverage"), "{}", ran.out);
    // A gate never passes with a shard missing: the report, then one line
    // and exit 2.
    assert_eq!(ran.code, 2, "{}", ran.err);
    assert_eq!(messages(&ran.err).len(), 1, "{}", ran.err);
    assert!(ran.err.contains("incomplete"), "{}", ran.err);
    // An incomplete merged report stays incomplete when merged again, and
    // a merged JSON says how many failures it had and shows.
    let partial = idemsim(&["merge", &one, &two, &three, "--json"], Duration::from_secs(60));
    let partial_path = scratch("partial.json");
    std::fs::write(&partial_path, &partial.out).unwrap();
    let merged: serde_json::Value = serde_json::from_str(&partial.out).unwrap();
    assert!(merged["failures_total"].is_u64() && merged["failures_shown"].is_u64(), "{}", partial.out);
    let more = idemsim(&["run", "--seeds", "40..50", "--json", "--jobs", "1"], Duration::from_secs(60));
    let more_path = scratch("more.json");
    std::fs::write(&more_path, more.out).unwrap();
    let again =
        idemsim(&["merge", partial_path.to_str().unwrap(), more_path.to_str().unwrap()], Duration::from_secs(60));
    assert_eq!(again.code, 2, "{}{}", again.out, again.err);
    assert!(again.out.contains("is an incomplete merge"), "{}", again.out);
    // Every interrupted input is named.
    let interrupted = |path: &str| {
        let mut r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        r["interrupted"] = serde_json::Value::Bool(true);
        let to = format!("{path}.interrupted.json");
        std::fs::write(&to, r.to_string()).unwrap();
        to
    };
    let four = shard(4);
    let (a, b) = (interrupted(&one), interrupted(&two));
    let ran = idemsim(&["merge", &a, &b, &three, &four], Duration::from_secs(60));
    assert_eq!(ran.code, 2, "{}{}", ran.out, ran.err);
    assert!(
        ran.out.contains(&format!("{a} was interrupted")) && ran.out.contains(&format!("{b} was interrupted")),
        "{}",
        ran.out
    );
    let whole = idemsim(&["merge", &one, &two, &three, &four], Duration::from_secs(60));
    assert_eq!(whole.code, 0, "{}{}", whole.out, whole.err);
    let other =
        idemsim(&["run", "--seeds", "0..80", "--shard", "4/4", "--json", "--jobs", "1"], Duration::from_secs(60));
    let other_path = scratch("other.json");
    std::fs::write(&other_path, other.out).unwrap();
    assert_usage(&["merge", &one, other_path.to_str().unwrap()], "not one sweep");
}

#[test]
fn bench_strict_exits_1_when_a_target_fails() {
    let args = [
        "bench",
        "--seeds",
        "5",
        "--sweeps",
        "1",
        "--seeds-max",
        "30",
        "--scaling-seeds",
        "2",
        "--instruction-seeds",
        "2",
    ];
    let ran = idemsim(&[&args[..], &["--stress-store", "none", "--strict"]].concat(), Duration::from_secs(300));
    let failed = ran.out.contains("FAIL");
    assert_eq!(ran.code, if failed { 1 } else { 0 }, "{}{}", ran.out, ran.err);
    // valgrind is on this machine kind: the instruction figures are there.
    assert!(ran.out.contains("M per default seed; bare madsim with the same"), "{}{}", ran.out, ran.err);
    assert!(ran.out.contains("instructions per default seed (callgrind)"), "{}", ran.out);
}

/// Row 12: a bench stopped by Ctrl-C prints only what it measured (no
/// `NaN`, no rate made up from seeds that never ran), judges no target,
/// and stops a callgrind child at once instead of waiting for it.
#[test]
fn an_interrupted_bench_prints_what_it_measured_and_stops_callgrind_at_once() {
    let args = [
        "bench",
        "--seeds",
        "100",
        "--sweeps",
        "2",
        "--seeds-max",
        "50",
        "--scaling-seeds",
        "3",
        "--instruction-seeds",
        "2",
        "--stress-store",
        "none",
    ];
    let mut child = Command::new(BIN).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    while err.read_line(&mut line).unwrap() > 0 {
        seen.push_str(&line);
        if line.contains("under callgrind") {
            break;
        }
        line.clear();
    }
    assert!(seen.contains("under callgrind"), "the bench reached callgrind: {seen}");
    std::thread::sleep(Duration::from_secs(1));
    interrupt(&child);
    let stopped = Instant::now();
    let ran = finish(child, Duration::from_secs(60), &args);
    assert!(stopped.elapsed() < Duration::from_secs(5), "callgrind went on for {:?}", stopped.elapsed());
    assert_eq!(ran.code, 130, "{}", ran.out);
    assert!(ran.out.contains("INTERRUPTED") && ran.out.contains("skipped: interrupted (Ctrl-C)"), "{}", ran.out);
    assert!(ran.out.contains("time to first failure: not measured"), "{}", ran.out);
    for bad in ["NaN", "inf", "[PASS]", "[FAIL]"] {
        assert!(!ran.out.contains(bad), "{bad}: {}", ran.out);
    }
}

/// Row 21: a stress run shows its progress, and every event a violation
/// cites (`#N`) is told under it and is event N of the `--trace` file.
#[test]
fn stress_shows_progress_and_tells_every_event_it_cites() {
    let trace = scratch("stress.jsonl");
    let path = trace.to_str().unwrap();
    let args = [
        "stress",
        "--store",
        "mem",
        "--requests",
        "1000",
        "--seed",
        "2",
        "--variant",
        "unfenced-completion",
        "--trace",
        path,
    ];
    let ran = idemsim(&args, Duration::from_secs(300));
    assert_eq!(ran.code, 1, "unfenced completions are caught: {}{}", ran.out, ran.err);
    assert!(ran.err.contains("stressed 1000/1000 requests"), "{}", ran.err);
    let events: Vec<serde_json::Value> =
        std::fs::read_to_string(&trace).unwrap().lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut cited = 0;
    for v in ran.out.lines().filter(|l| l.trim_start().starts_with('[')) {
        let list = v.rsplit_once("(events ").map(|x| x.1.trim_end_matches(')')).unwrap_or("");
        for n in list.split(", ").filter_map(|e| e.strip_prefix('#')?.parse::<usize>().ok()) {
            let told = ran.out.lines().find(|l| l.trim_start().starts_with(&format!("#{n} ")));
            let told = told.unwrap_or_else(|| panic!("#{n} is not told: {}", ran.out));
            assert!(n < events.len(), "#{n} is an event of the trace");
            let at = events[n]["at"].as_u64().unwrap();
            assert!(told.contains(&format!(" {}.{:03}s ", at / 1000, at % 1000)), "{told} / {}", events[n]);
            cited += 1;
        }
    }
    assert!(cited > 0, "{}", ran.out);
    assert!(ran.out.contains(&format!("events written to {path}")), "{}", ran.out);
}
