//! The command line: exit codes, messages, and the commands that reproduce.

use idemsim_scenarios::cli::{run, EXIT_CLEAN, EXIT_USAGE, EXIT_VIOLATION};

fn idemsim(args: &[&str]) -> (i32, String, String) {
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
    let cases: [(&[&str], &str); 7] = [
        (&["run", "--seeds", "9..1"], "not a seed range"),
        (&["run", "--seeds", "0..5", "--seed", "3"], "cannot be used with"),
        (&["run", "--variant", "nope"], "unknown variant 'nope'"),
        (&["run", "--store", "oracle"], "unknown store 'oracle'"),
        (&["run", "--scenario", "nope"], "unknown scenario 'nope'"),
        (&["run", "--jobs", "0", "--seeds", "0..2"], "--jobs must be"),
        (&["replay", "--seed", "1", "--trace", "/nonexistent-dir/x.jsonl"], "cannot write the trace"),
    ];
    for (args, message) in cases {
        let (code, _, err) = idemsim(args);
        assert_eq!(code, EXIT_USAGE, "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
