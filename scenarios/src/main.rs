//! The `idemsim` binary: see `idemsim --help`.

// A run allocates for every task, message and event; mimalloc makes
// that about a fifth cheaper than glibc malloc (docs/performance.md).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::panic::set_hook(Box::new(|info| {
        // A seed's panic is reported with its seed by the sweep; anything
        // else is a bug in idemsim, said in one line.
        let seed_thread = std::thread::current().name().is_some_and(|n| n.starts_with("seed-"));
        if !seed_thread {
            eprintln!("idemsim: internal error: {info} (please report this with the command you ran)");
        }
    }));
    idemsim_scenarios::tracing_setup::init();
    let args: Vec<String> = std::env::args().collect();
    // Unlocked handles: sweep workers print progress lines to stderr meanwhile.
    let code = idemsim_scenarios::cli::run(args, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}
