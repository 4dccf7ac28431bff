//! Runs one seed and prints its timeline and verdict (a development aid).
fn main() {
    let seed = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(42);
    let t = std::time::Instant::now();
    let out = idemsim_sim::run_seed(&idemsim_sim::SimConfig::default(), idemsim_sim::StoreKind::Mem, seed).unwrap();
    let wall = t.elapsed();
    print!("{}", idemsim_sim::timeline::render(&out.history));
    println!("profile: {:?}", out.profile.active());
    for v in &out.violations {
        println!("VIOLATION {v}");
    }
    println!("error: {:?}", out.error);
    println!("coverage: {:?}", out.coverage);
    println!("events {} hash {} wall {:?}", out.history.entries.len(), out.hash(), wall);
}
