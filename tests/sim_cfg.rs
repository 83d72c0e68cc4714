//! Proves `cargo test --features sim` builds madsim in simulation mode: `cfg(madsim)` is on,
//! time is virtual (an hour of sleep costs nothing), and a seed fixes the randomness.
//!
//! Only built with the `sim` feature (`required-features` in Cargo.toml).

use madsim::runtime::Runtime;
use std::time::Duration;

#[test]
fn cfg_madsim_is_active_under_the_sim_feature() {
    // black_box: the value is a compile-time constant, and the point is to see it at run time.
    assert!(
        std::hint::black_box(cfg!(madsim)),
        "the sim feature must compile with --cfg madsim"
    );
}

fn run(seed: u64) -> (Duration, Vec<u64>) {
    // One seed per fresh OS thread: madsim keeps per-thread runtime state.
    std::thread::spawn(move || {
        Runtime::with_seed_and_config(seed, madsim::Config::default()).block_on(async {
            let start = madsim::time::Instant::now();
            madsim::time::sleep(Duration::from_secs(3_600)).await;
            let draws = (0..4).map(|_| madsim::rand::random::<u64>()).collect();
            (start.elapsed(), draws)
        })
    })
    .join()
    .expect("simulation thread")
}

#[test]
fn time_is_virtual_and_seeds_are_deterministic() {
    let wall = std::time::Instant::now();
    let (slept, draws) = run(7);
    assert!(
        slept >= Duration::from_secs(3_600),
        "virtual hour elapsed: {slept:?}"
    );
    assert!(
        wall.elapsed() < Duration::from_secs(60),
        "no real hour was spent"
    );
    assert_eq!(run(7).1, draws, "same seed, same draws");
    assert_ne!(run(8).1, draws, "another seed, other draws");
}
