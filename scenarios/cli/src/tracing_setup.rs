//! `RUST_LOG` logging, stamped with simulated time. Off (no subscriber at
//! all) unless `RUST_LOG` is set, so sweeps pay nothing for it.

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::EnvFilter;

/// Prints the simulated clock inside a simulation, `-` outside.
struct SimTime;

impl FormatTime for SimTime {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        match madsim::time::TimeHandle::try_current() {
            Some(t) => {
                let ms = t.elapsed().as_millis();
                write!(w, "{:>4}.{:03}s", ms / 1000, ms % 1000)
            }
            None => write!(w, "{:>9}", "-"),
        }
    }
}

/// Where madsim's warning about std's HashMap seed comes from.
const MADSIM_RAND: &str = "madsim::sim::rand";

/// Installs the logger if `RUST_LOG` is set. Each line carries the node
/// (`node=server-1`) and the event in plain words.
pub fn init() {
    let Ok(given) = std::env::var("RUST_LOG") else { return };
    let mut filter = EnvFilter::try_new(&given).unwrap_or_else(|e| {
        crate::note(format_args!("warning: RUST_LOG={given:?} is not a valid filter ({e}); logging at info"));
        EnvFilter::new("info")
    });
    // madsim warns, once per worker thread, that it could not seed std's
    // HashMap: nothing in a run iterates a std HashMap (the determinism
    // tests compare trace hashes), so the warning would only alarm. Kept
    // unless RUST_LOG names its target.
    if !given.contains(MADSIM_RAND) {
        filter = filter.add_directive(format!("{MADSIM_RAND}=error").parse().expect("a valid directive"));
    }
    use std::io::IsTerminal;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_timer(SimTime)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}
