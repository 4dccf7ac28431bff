//! Instructions per seed, counted by callgrind: unlike wall time, the same
//! on every run of the same binary, whatever else the machine is doing, so
//! a cost change is measured the same way everywhere. `idemsim bench` runs
//! this binary under `valgrind --tool=callgrind` twice for the default
//! scenario (n and 2n seeds, one worker: the difference cancels start-up)
//! and twice for bare madsim carrying the same number of messages
//! (`idemsim floor`, hidden), and reports both per seed.

use idemsim_sim::{run_seed, SimConfig, StoreKind};
use serde::Serialize;
use std::path::Path;
use std::process::{Command, Stdio};

/// The instruction figures.
#[derive(Clone, Debug, Serialize)]
pub struct Instructions {
    /// Seeds counted: the difference between runs of `2 * seeds` and `seeds`.
    pub seeds: u64,
    /// Instructions per default seed.
    pub per_seed: f64,
    /// Messages a default seed carries, on average over those seeds.
    pub messages_per_seed: f64,
    /// Instructions per seed of bare madsim carrying that many messages.
    pub floor_per_seed: f64,
    /// `per_seed / floor_per_seed`.
    pub ratio: f64,
    /// The build counted: the Cargo profile whose directory holds the
    /// binary (`release`, or `sweep` with whole-program LTO; see
    /// docs/performance.md).
    pub build: String,
}

/// Counts them; `Err` says why not (no valgrind, say).
pub fn count(config: &SimConfig, seeds: u64) -> Result<Instructions, String> {
    assert!(seeds > 0, "count at least one seed");
    let exe = idemsim_binary()?;
    let mut messages = 0;
    for seed in (0..seeds).take_while(|_| !idemsim::sweep::stopped()) {
        messages += run_seed(config, StoreKind::Mem, seed).map_err(|e| e.to_string())?.messages;
    }
    let messages_per_seed = messages as f64 / seeds as f64;
    // The text report, as the main job runs: `--json` also hashes every
    // seed's trace for the report (docs/performance.md says how much).
    let run = |n: u64| callgrind(&exe, &["run", "--seeds", &format!("0..{n}"), "--jobs", "1"]);
    let per_seed = (run(2 * seeds)? - run(seeds)?) as f64 / seeds as f64;
    let m = (messages_per_seed.round() as u64).to_string();
    let floor = |n: u64| callgrind(&exe, &["floor", "--seeds", &format!("0..{n}"), "--messages", &m]);
    let floor_per_seed = (floor(2 * seeds)? - floor(seeds)?) as f64 / seeds as f64;
    let ratio = per_seed / floor_per_seed;
    let build = exe.parent().and_then(Path::file_name).map_or("unknown".into(), |d| d.to_string_lossy().into_owned());
    Ok(Instructions { seeds, per_seed, messages_per_seed, floor_per_seed, ratio, build })
}

/// The `idemsim` binary: this program, or, when the CLI runs inside
/// another program (a test in `target/<profile>/deps/`), the one beside it.
fn idemsim_binary() -> Result<std::path::PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    if exe.file_stem().is_some_and(|n| n == "idemsim") {
        return Ok(exe);
    }
    let beside = exe.parent().and_then(Path::parent).map(|dir| dir.join("idemsim"));
    beside.filter(|p| p.is_file()).ok_or_else(|| format!("no idemsim binary to count beside {}", exe.display()))
}

/// Instructions `exe args` executes, by callgrind's own count. A Ctrl-C
/// stops the count at once (the child is killed, not waited for).
fn callgrind(exe: &Path, args: &[&str]) -> Result<u64, String> {
    if idemsim::sweep::stopped() {
        return Err("interrupted (Ctrl-C)".into());
    }
    let out_file = std::env::temp_dir().join(format!("idemsim-callgrind-{}.out", std::process::id()));
    let child = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let ran = child.and_then(wait_unless_stopped);
    let _ = std::fs::remove_file(&out_file);
    let ran = ran
        .map_err(|e| format!("cannot run valgrind ({e}); install it (Debian: valgrind) for the instruction figures"))?;
    let Some(ran) = ran else { return Err("interrupted (Ctrl-C)".into()) };
    let err = String::from_utf8_lossy(&ran.stderr);
    if ran.status.code() == Some(2) {
        return Err(format!("`idemsim {}` refused to run: {}", args.join(" "), err.lines().last().unwrap_or("")));
    }
    let collected = err.lines().find_map(|l| l.split("Collected :").nth(1)).map(str::trim);
    collected.and_then(|n| n.parse().ok()).ok_or_else(|| {
        let last = err.lines().last().unwrap_or("no output");
        format!("valgrind did not report a count for `{}`: {last}", args.join(" "))
    })
}

/// Waits for `child`, checking for a Ctrl-C every 20 ms: then it is killed
/// and `None` returned.
fn wait_unless_stopped(mut child: std::process::Child) -> std::io::Result<Option<std::process::Output>> {
    use std::io::Read;
    let mut stderr = child.stderr.take();
    let drain = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(pipe) = stderr.as_mut() {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    });
    loop {
        if let Some(status) = child.try_wait()? {
            let stderr = drain.join().unwrap_or_default();
            return Ok(Some(std::process::Output { status, stdout: Vec::new(), stderr }));
        }
        if idemsim::sweep::stopped() {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
