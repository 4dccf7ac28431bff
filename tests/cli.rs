//! The command line: exit codes, messages, and the commands that reproduce.

use idemsim_cli::{run, EXIT_CLEAN, EXIT_USAGE, EXIT_VIOLATION};

pub(crate) fn idemsim(args: &[&str]) -> (i32, String, String) {
    let mut argv = vec!["idemsim".to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run(argv, &mut out, &mut err);
    (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

#[test]
fn a_clean_sweep_exits_0() {
    let (code, out, _) = idemsim(&["run", "--seeds", "0..10", "--jobs", "2"]);
    assert_eq!(code, EXIT_CLEAN, "{out}");
    assert!(out.contains("CLEAN: no property violated in 10 seeds"), "{out}");
}

#[test]
fn a_violation_exits_1_with_the_replay_command_that_reproduces_it() {
    let (code, out, _) = idemsim(&["run", "--variant", "takeover-without-bump", "--seeds", "0..20"]);
    assert_eq!(code, EXIT_VIOLATION, "{out}");
    assert!(out.contains("[fencing]"), "{out}");
    let command = out.lines().find_map(|l| l.strip_prefix("reproduce: ")).expect("a reproduce line");
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    let (code, replayed, _) = idemsim(&args);
    assert_eq!(code, EXIT_VIOLATION);
    assert!(replayed.contains("VIOLATION [fencing]"), "{replayed}");
}

/// The simulator's concurrent mode: the same seeds give the same
/// histories under one worker or two, a seed replays its history, and
/// another seed gives another.
#[test]
fn the_concurrent_mode_is_the_same_under_any_number_of_workers() {
    let hashes = |args: &[&str]| -> String {
        let (code, out, err) = idemsim(args);
        assert_eq!(code, EXIT_CLEAN, "{out}{err}");
        assert!(out.contains("LINEARIZABLE"), "{out}");
        let line = out.lines().find(|l| l.contains("histor")).unwrap_or_else(|| panic!("{out}"));
        line.rsplit(' ').next().unwrap().to_string()
    };
    for store in ["mem", "sqlite"] {
        let one = hashes(&["concurrent", "--store", store, "--seeds", "0..24", "--jobs", "1"]);
        let two = hashes(&["concurrent", "--store", store, "--seeds", "0..24", "--jobs", "2"]);
        assert_eq!(one, two, "{store}");
    }
    let seed = |n: &str| {
        let (_, out, _) = idemsim(&["concurrent", "--seed", n]);
        out.split("history ").nth(1).and_then(|r| r.split(|c: char| !c.is_ascii_hexdigit()).next()).unwrap().to_string()
    };
    assert_eq!(seed("3"), seed("3"));
    assert_ne!(seed("3"), seed("4"));
    let page = std::env::temp_dir().join(format!("idemsim-concurrent-{}.html", std::process::id()));
    let (code, out, err) = idemsim(&["concurrent", "--seed", "3", "--html", page.to_str().unwrap()]);
    assert_eq!(code, EXIT_CLEAN, "{out}{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(">caller 7<") && html.contains("class='op'"), "every caller a lane");
    std::fs::remove_file(&page).ok();
}

/// `check-store` on a bundled in-process store: every part, each with the
/// line that reruns it, and that line reruns only its part.
#[test]
fn check_store_gives_one_verdict_per_part_with_its_reproduce_line() {
    let base = ["check-store", "--store", "sqlite", "--cases", "16", "--operations", "400", "--seeds", "0..20"];
    let (code, out, err) = idemsim(&[&base[..], &["--requests", "100"]].concat());
    assert_eq!(code, EXIT_CLEAN, "{out}{err}");
    for line in [
        "conformance      PASS  16 cases",
        "linearizability  PASS  LINEARIZABLE: 400 operations of 8 callers",
        "simulation       PASS  20 seeds of `default` (correct): 0 failed",
        "stress           PASS  100 requests",
        "verdict: PASS",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    let rerun = out.lines().find_map(|l| l.trim().strip_prefix("reproduce: idemsim ")).expect("a reproduce line");
    assert_eq!(rerun, "check-store --store sqlite --part conformance --seed 0");
    let args: Vec<&str> = rerun.split_whitespace().chain(["--cases", "16"]).collect();
    let (code, again, _) = idemsim(&args);
    assert_eq!(code, EXIT_CLEAN, "{again}");
    assert!(again.contains("conformance") && !again.contains("linearizability"), "{again}");
}

#[test]
fn json_output_parses() {
    let (code, out, _) = idemsim(&["run", "--seeds", "0..4", "--json"]);
    assert_eq!(code, EXIT_CLEAN);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["seeds_run"], 4);
    assert_eq!(doc["clean"], true);
    let (_, out, _) = idemsim(&["replay", "--seed", "4", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(doc["events"].as_array().unwrap().len() > 100);
    let (_, out, _) = idemsim(&["list", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc[0]["name"], "default");
    assert_eq!(doc[0]["variants"]["correct"], "clean");
}

#[test]
fn replay_writes_a_trace_that_reads_back() {
    let path = std::env::temp_dir().join(format!("idemsim-cli-trace-{}.jsonl", std::process::id()));
    let (code, out, _) = idemsim(&["replay", "--seed", "8", "--trace", path.to_str().unwrap()]);
    assert_eq!(code, EXIT_CLEAN, "{out}");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).ok();
    let (header, history) = idemsim_sim::from_jsonl(&text).unwrap();
    assert_eq!(header.seed, 8);
    assert!(out.contains(&header.hash), "the printed hash is the file's");
    assert!(!history.entries.is_empty());
}

#[test]
fn bad_input_is_one_clear_line_and_exit_2() {
    let cases: [(&[&str], &str); 17] = [
        (&["concurrent", "--seed", "1", "--html", "/nonexistent-dir/h.html"], "cannot write the history page"),
        (&["concurrent", "--store", "pg"], "unknown store 'pg'"),
        (&["concurrent", "--operations", "0"], "--operations must be"),
        (&["check-store", "--store", "mem", "--part", "bogus"], "unknown part 'bogus'"),
        (&["check-store", "--store", "mem", "--callers", "0"], "--callers must be"),
        (&["check-store", "--store", "mem", "--scenario", "nope", "--part", "simulation"], "unknown scenario 'nope'"),
        (&["run", "--seeds", "9..1"], "not a seed range"),
        (&["run", "--seeds", "0..5", "--seed", "3"], "cannot be used with"),
        (&["run", "--variant", "nope"], "unknown variant 'nope'"),
        (&["run", "--store", "oracle"], "unknown store 'oracle'"),
        (&["run", "--scenario", "nope"], "unknown scenario 'nope'"),
        (&["run", "--jobs", "0", "--seeds", "0..2"], "--jobs must be"),
        (&["replay", "--seed", "1", "--trace", "/nonexistent-dir/x.jsonl"], "cannot write the trace"),
        (&["replay", "--scenario", "outbox"], "--seed is required"),
        (&["shrink", "--scenario", "outbox", "--seed", "0"], "does not fail"),
        (&["replay", "--seed", "1", "--html", "/nonexistent-dir/t.html"], "cannot write the timeline"),
        (&["run", "--shrink-out", "x.json"], "--shrink"),
    ];
    for (args, message) in cases {
        let (code, _, err) = idemsim(args);
        assert_eq!(code, EXIT_USAGE, "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn shards_merge_into_the_whole_sweep() {
    let dir = std::env::temp_dir().join(format!("idemsim-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for shard in ["1/3", "2/3", "3/3"] {
        let (code, out, _) =
            idemsim(&["run", "--seeds", "10..40", "--shard", shard, "--json", "--variant", "unfenced-completion"]);
        assert!(code == EXIT_CLEAN || code == EXIT_VIOLATION);
        let path = dir.join(shard.replace('/', "-"));
        std::fs::write(&path, out).unwrap();
        files.push(path.to_str().unwrap().to_string());
    }
    let (_, whole, _) = idemsim(&["run", "--seeds", "10..40", "--json", "--variant", "unfenced-completion"]);
    let mut args = vec!["merge", "--json"];
    args.extend(files.iter().map(String::as_str));
    let (code, merged, err) = idemsim(&args);
    std::fs::remove_dir_all(&dir).ok();
    let (whole, merged): (serde_json::Value, serde_json::Value) =
        (serde_json::from_str(&whole).unwrap(), serde_json::from_str(&merged).unwrap());
    assert_eq!(merged["seeds_run"], 30, "{err}");
    assert_eq!(merged["hashes"], whole["hashes"]);
    assert_eq!(merged["seeds_failed"], whole["seeds_failed"]);
    assert_eq!(merged["violations_by_property"], whole["violations_by_property"]);
    assert_eq!(merged["failures"][0]["seed"], whole["failures"][0]["seed"]);
    assert_eq!(code, if whole["clean"] == true { EXIT_CLEAN } else { EXIT_VIOLATION });
}

#[test]
fn merge_refuses_mixed_or_foreign_reports() {
    let dir = std::env::temp_dir().join(format!("idemsim-merge-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (_, a, _) = idemsim(&["run", "--seeds", "0..2", "--json"]);
    let (_, b, _) = idemsim(&["run", "--seeds", "0..2", "--json", "--variant", "takeover-without-bump"]);
    let (pa, pb, pc) = (dir.join("a.json"), dir.join("b.json"), dir.join("c.json"));
    std::fs::write(&pa, a).unwrap();
    std::fs::write(&pb, b).unwrap();
    std::fs::write(&pc, "{\"not\": \"a report\"}").unwrap();
    let (code, _, err) = idemsim(&["merge", pa.to_str().unwrap(), pb.to_str().unwrap()]);
    assert_eq!(code, EXIT_USAGE);
    assert!(err.contains("reports differ"), "{err}");
    let (code, _, err) = idemsim(&["merge", pc.to_str().unwrap()]);
    assert_eq!(code, EXIT_USAGE);
    assert!(err.contains("is not an `idemsim run --json` report"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bench_prints_every_figure_as_json() {
    let args = [
        "bench",
        "--seeds",
        "6",
        "--sweeps",
        "3",
        "--seeds-max",
        "300",
        "--scaling-seeds",
        "2",
        "--stress-store",
        "none",
        "--instruction-seeds",
        "2",
        "--repeats",
        "2",
        "--explore-max",
        "3000",
        "--json",
    ];
    let (code, out, err) = idemsim(&args);
    assert_eq!(code, EXIT_CLEAN, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    for key in [
        "seeds_per_sec",
        "events_per_sec",
        "sim_to_wall_ratio",
        "expiry_sim_to_wall_ratio",
        "expiry_ms_per_sim_day",
        "peak_rss_mib",
    ] {
        assert!(doc[key].as_f64().unwrap() > 0.0, "{key}: {doc}");
    }
    assert!(doc["jobs_scaling"]["ratio"].as_f64().unwrap() > 0.0);
    // Two sweeps of each kind, and the figure is their median.
    let runs: Vec<f64> = doc["seeds_per_sec_runs"].as_array().unwrap().iter().map(|r| r.as_f64().unwrap()).collect();
    assert_eq!(runs.len(), 2, "{doc}");
    assert_eq!(doc["seeds_per_sec_two_jobs_runs"].as_array().unwrap().len(), 2, "{doc}");
    assert!((doc["seeds_per_sec"].as_f64().unwrap() - (runs[0] + runs[1]) / 2.0).abs() < 1e-6, "{doc}");
    assert_eq!(doc["scaling"].as_array().unwrap().len(), 6);
    let ttff = doc["time_to_first_failure"].as_object().unwrap();
    for variant in ["check-then-insert", "takeover-without-bump", "unfenced-completion"] {
        assert!(ttff[&format!("default/{variant}")].as_f64().unwrap() > 0.0, "{variant}");
        assert_eq!(doc["time_to_first_failure_detail"][format!("default/{variant}")]["found"], 3, "{variant}");
    }
    // Seven wall-clock and memory targets, the instruction count, which
    // valgrind (on every machine of this kind) makes, and the time to check
    // a concurrent history of 10,000 operations.
    let targets = doc["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 9, "{}", doc["instructions_skipped"]);
    assert!(doc["linearizability_ms"].as_f64().unwrap() > 0.0, "{doc}");
    assert!(targets.iter().any(|t| t["name"].as_str().unwrap().starts_with("linearizability check")));
    let rss = targets.iter().find(|t| t["name"].as_str().unwrap().starts_with("peak RSS")).expect("an RSS target");
    assert_eq!(rss["goal"], "< 32 MiB");
    let i = &doc["instructions"];
    assert!(i["per_seed"].as_f64().unwrap() > i["floor_per_seed"].as_f64().unwrap(), "{i}");
    assert!(i["floor_per_seed"].as_f64().unwrap() > 0.0 && i["messages_per_seed"].as_f64().unwrap() > 100.0, "{i}");
    // The build counted is the one the test command built: the release profile.
    assert_eq!(i["build"], "release", "{i}");
    assert!(doc["side_by_side_skipped"].as_str().unwrap().contains("no real store"));
    // Explore versus sweeps: a row per broken variant; the unfenced
    // completion is found by both, with the figures to compare.
    let rows = doc["explore_vs_sweeps"].as_array().unwrap();
    assert_eq!(rows.len(), idemsim_sim::Variant::ALL.len() - 1, "{doc}");
    let unfenced = rows.iter().find(|r| r["variant"] == "unfenced-completion").unwrap();
    assert_eq!(unfenced["explore_config"], "paused-holder", "{unfenced}");
    assert!(unfenced["explore_executions"].as_u64().unwrap() > 0 && unfenced["sweep_seeds"].as_u64().unwrap() > 0);
    let (code, _, err) = idemsim(&["bench", "--stress-store", "oracle"]);
    assert_eq!(code, EXIT_USAGE, "{err}");
    let (code, _, err) = idemsim(&["bench", "--repeats", "0"]);
    assert_eq!(code, EXIT_USAGE, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (code, _, err) = idemsim(&["run", "--shard", "0/4"]);
    assert_eq!(code, EXIT_USAGE, "{err}");
}

#[test]
fn scenario_files_run_replay_and_explain() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/examples/my-paused-holder.json");
    let (code, out, _) = idemsim(&["run", "--file", example, "--seeds", "0..30"]);
    assert_eq!(code, EXIT_CLEAN, "{out}");
    // The file expects this variant to break fencing: a run that does is
    // the file's test passing.
    let (code, out, _) = idemsim(&["run", "--file", example, "--variant", "unfenced-completion", "--seeds", "0..30"]);
    assert_eq!(code, EXIT_CLEAN, "{out}");
    assert!(out.contains("FAIL") && out.contains("as expected"), "{out}");
    let replay = out.lines().find_map(|l| l.strip_prefix("reproduce: ")).expect("a reproduce line");
    assert!(replay.contains("--file"), "{replay}");
    let args: Vec<&str> = replay.split_whitespace().skip(1).collect();
    let (code, replayed, _) = idemsim(&args);
    assert_eq!(code, EXIT_VIOLATION);
    assert!(replayed.contains("VIOLATION [fencing]"));

    // explain --json writes a file that runs like the built-in scenario.
    let (code, json, _) = idemsim(&["explain", "tenant-collision", "--json"]);
    assert_eq!(code, EXIT_CLEAN);
    let path = std::env::temp_dir().join(format!("idemsim-explained-{}.json", std::process::id()));
    std::fs::write(&path, json).unwrap();
    let from_file = idemsim(&["run", "--file", path.to_str().unwrap(), "--seeds", "0..5", "--json", "--jobs", "1"]).1;
    let built_in = idemsim(&["run", "--scenario", "tenant-collision", "--seeds", "0..5", "--json", "--jobs", "1"]).1;
    std::fs::remove_file(&path).ok();
    let hashes = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap()["hashes"].clone();
    assert_eq!(hashes(&from_file), hashes(&built_in));
    let (_, text, _) = idemsim(&["explain", "paused-holder"]);
    assert!(text.contains("unfenced-completion") && text.contains("stale_holder_fenced"), "{text}");
}

#[test]
fn run_shrink_writes_a_smaller_file_that_replays_with_its_story() {
    let dir = std::env::temp_dir().join(format!("idemsim-cli-shrink-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("small.toml");
    let args = ["run", "--scenario", "tenant-collision", "--variant", "key-not-scoped", "--seeds", "0..50", "--shrink"];
    let (code, out, err) = idemsim(&[&args[..], &["--shrink-out", file.to_str().unwrap()]].concat());
    assert_eq!(code, EXIT_VIOLATION, "{out}{err}");
    assert!(out.contains("story of the isolation violation:"), "{out}");
    assert!(out.contains("shrinking seed") && out.contains("before:") && out.contains("after:"), "{out}");
    let reproduce = out.lines().rev().find_map(|l| l.strip_prefix("reproduce: ")).unwrap();
    assert_eq!(reproduce, format!("idemsim replay --file {}", file.display()));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("[reproduces]") && text.contains("variant = \"key-not-scoped\""), "TOML: {text}");
    let (code, replayed, err) = idemsim(&["replay", "--file", file.to_str().unwrap()]);
    assert_eq!(code, EXIT_VIOLATION, "{err}");
    assert!(replayed.contains("VIOLATION [isolation]"), "{replayed}");
    let story: Vec<&str> = replayed
        .lines()
        .skip_while(|l| !l.starts_with("story of the isolation"))
        .take_while(|l| !l.starts_with("FAIL"))
        .collect();
    assert!(story.len() > 3 && story.len() < 30, "a short story: {story:?}");
    assert!(story.iter().any(|l| l.starts_with("  1. at ")), "{story:?}");
    assert!(story.last().unwrap().contains("this breaks isolation"), "{story:?}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_shrunk_file_replays_on_its_own_store_and_refuses_another() {
    let dir = std::env::temp_dir().join(format!("idemsim-cli-store-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("small.json");
    let args = ["shrink", "--scenario", "paused-holder", "--variant", "unfenced-completion", "--seed", "0"];
    let (code, out, err) = idemsim(&[&args[..], &["--store", "sqlite", "--out", file.to_str().unwrap()]].concat());
    assert_eq!(code, EXIT_VIOLATION, "{out}{err}");
    assert!(std::fs::read_to_string(&file).unwrap().contains(r#""store": "sqlite""#));
    // Without --store, the file's store; with another, one line naming both.
    let (code, out, _) = idemsim(&["replay", "--file", file.to_str().unwrap()]);
    assert_eq!(code, EXIT_VIOLATION, "{out}");
    let (code, _, err) = idemsim(&["replay", "--file", file.to_str().unwrap(), "--store", "mem"]);
    assert_eq!(code, EXIT_USAGE, "{err}");
    assert!(err.contains("store 'sqlite'") && err.contains("store 'mem'") && err.lines().count() == 1, "{err}");
    // A file of a protocol of one's own: only the user's program can replay it.
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace(r#""store": "sqlite""#, r#""store": "sqlite", "protocol": "mine""#);
    std::fs::write(&file, text).unwrap();
    let (code, _, err) = idemsim(&["replay", "--file", file.to_str().unwrap()]);
    assert_eq!(code, EXIT_USAGE, "{err}");
    assert!(err.contains("protocol 'mine' (a protocol of your own)"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn toml_scenario_files_run_like_json_ones() {
    let (code, toml, _) = idemsim(&["explain", "retry-storm", "--toml"]);
    assert_eq!(code, EXIT_CLEAN);
    let path = std::env::temp_dir().join(format!("idemsim-explained-{}.toml", std::process::id()));
    std::fs::write(&path, &toml).unwrap();
    let args = ["--seeds", "0..4", "--json", "--jobs", "1", "--variant", "no-jitter"];
    let from_file = idemsim(&[&["run", "--file", path.to_str().unwrap()][..], &args[..]].concat()).1;
    let built_in = idemsim(&[&["run", "--scenario", "retry-storm"][..], &args[..]].concat()).1;
    let hashes = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap()["hashes"].clone();
    assert_eq!(hashes(&from_file), hashes(&built_in));
    std::fs::write(&path, toml.replace("[config.topology]", "[config.topology]\nsevers = 2")).unwrap();
    let (code, _, err) = idemsim(&["run", "--file", path.to_str().unwrap(), "--seeds", "0..2"]);
    std::fs::remove_file(&path).ok();
    assert_eq!(code, EXIT_USAGE, "{err}");
    assert!(err.contains("severs") && err.lines().count() == 1, "{err}");
}

#[test]
fn bad_scenario_files_are_one_line_and_exit_2() {
    let dir = std::env::temp_dir().join(format!("idemsim-bad-scenarios-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        (
            "typo.json",
            r#"{"name":"x","lesson":"y","expect":{},"config":{"topology":{"severs":2}}}"#,
            "unknown field `severs`",
        ),
        ("cut.json", r#"{"name":"x","#, "EOF while parsing"),
        (
            "invalid.json",
            r#"{"name":"x","lesson":"y","expect":{},"config":{"topology":{"servers":0}}}"#,
            "topology.servers",
        ),
        ("nameless.json", r#"{"name":" ","lesson":"y","expect":{}}"#, "needs a name"),
    ];
    for (file, text, message) in cases {
        let path = dir.join(file);
        std::fs::write(&path, text).unwrap();
        let (code, _, err) = idemsim(&["run", "--file", path.to_str().unwrap(), "--seeds", "0..2"]);
        assert_eq!(code, EXIT_USAGE, "{file}: {err}");
        assert!(err.contains(message) && err.contains(file), "{file}: {err}");
        assert_eq!(err.lines().count(), 1, "{file}: {err}");
    }
    let (code, _, err) = idemsim(&["replay", "--file", "/nonexistent/s.json", "--seed", "1"]);
    assert_eq!(code, EXIT_USAGE);
    assert!(err.contains("cannot read"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `explore`: a clean configuration exits 0 with its count; a broken
/// variant exits 1 with the command that replays its shortest execution,
/// and that command shows the same violation; bad input is one line.
#[test]
fn explore_counts_finds_the_shortest_and_replays_it() {
    let (code, out, _) = idemsim(&["explore", "--config", "pair"]);
    assert_eq!(code, EXIT_CLEAN, "{out}");
    assert!(out.contains("6 executions (every one)") && out.contains("no execution breaks a property"), "{out}");

    let (code, out, _) = idemsim(&["explore", "--config", "paused-holder", "--variant", "unfenced-completion"]);
    assert_eq!(code, EXIT_VIOLATION, "{out}");
    assert!(out.contains("1 of 3 executions break fencing"), "{out}");
    assert!(out.contains("the shortest breaks fencing in 18 steps (schedule 1.1)"), "{out}");
    let command = out.lines().find_map(|l| l.strip_prefix("reproduce: ")).expect("a reproduce line");
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    let (code, replayed, _) = idemsim(&args);
    assert_eq!(code, EXIT_VIOLATION, "{replayed}");
    assert!(replayed.contains("VIOLATION fencing"), "{replayed}");

    let dir = std::env::temp_dir().join(format!("idemsim-explore-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mine.toml");
    std::fs::write(&file, "operations = [{ key = \"k1\" }, { key = \"k1\", amount = 250 }]\nservers = 2\n").unwrap();
    let (code, out, err) =
        idemsim(&["explore", "--config-file", file.to_str().unwrap(), "--variant", "fingerprint-not-compared"]);
    assert_eq!(code, EXIT_VIOLATION, "{out}{err}");
    assert!(out.contains("explore mine with") && out.contains("break status-rules"), "{out}");
    std::fs::write(&file, "servers = 0\n").unwrap();
    let (code, _, err) = idemsim(&["explore", "--config-file", file.to_str().unwrap()]);
    assert_eq!(code, EXIT_USAGE);
    assert!(err.contains("servers: between 1 and 8"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);

    let cases: [(&[&str], &str); 5] = [
        (&["explore", "--config", "nope"], "unknown configuration 'nope'"),
        (&["explore", "--config", "pair", "--replay", "x.y"], "is not a schedule"),
        (&["explore", "--config", "lost-reply", "--replay", "7"], "not one of this configuration's"),
        (&["explore", "--replay", "0"], "--replay needs --config"),
        (&["explore", "--config-file", "/nonexistent/c.toml"], "cannot read /nonexistent/c.toml"),
    ];
    for (args, message) in cases {
        let (code, _, err) = idemsim(args);
        assert_eq!(code, EXIT_USAGE, "{args:?}: {err}");
        assert!(err.contains(message) && err.lines().count() == 1, "{args:?}: {err}");
    }
}
