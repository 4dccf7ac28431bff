//! The `idemsim` binary: see `idemsim --help`.

// A run allocates for every task, message and event; mimalloc makes
// that about a fifth cheaper than glibc malloc, and asking it for small
// blocks directly cheaper again (docs/performance.md, the appendix).
#[global_allocator]
static ALLOC: idemsim_cli::allocator::Allocator = idemsim_cli::allocator::Allocator;

use std::io::Write;

fn main() {
    std::panic::set_hook(Box::new(|info| {
        // A seed's panic is reported with its seed by the sweep; anything
        // else is a bug in idemsim, said in one line.
        let seed_thread = std::thread::current().name().is_some_and(|n| n.starts_with("seed-"));
        if !seed_thread {
            idemsim_cli::note(format_args!(
                "idemsim: internal error: {info} (please report this with the command you ran)"
            ));
        }
    }));
    // The first Ctrl-C stops starting seeds (or requests), and the command
    // prints what it found, marked interrupted, and exits 130; a second
    // one exits at once.
    let _ = ctrlc::set_handler(|| {
        if idemsim::sweep::stopped() {
            std::process::exit(idemsim_cli::EXIT_INTERRUPTED);
        }
        idemsim::sweep::request_stop();
        idemsim_cli::note(format_args!("idemsim: stopping after the work in flight (Ctrl-C again to quit now)"));
    });
    idemsim_cli::tracing_setup::init();
    let args: Vec<String> = std::env::args().collect();
    // A closed stdout (`| head`) ends the output quietly: the exit code is
    // the command's own.
    let mut out = QuietPipe(std::io::stdout());
    // Unlocked handles: sweep workers print progress lines to stderr meanwhile.
    let code = idemsim_cli::run(args, &mut out, &mut QuietPipe(std::io::stderr()));
    std::process::exit(code);
}

/// A writer for which a closed pipe is not an error: what cannot be
/// written is dropped.
struct QuietPipe<W>(W);

impl<W: Write> Write for QuietPipe<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.0.write(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(buf.len()),
            other => other,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.0.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        }
    }
}
