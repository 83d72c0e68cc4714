//! The stores against the reference model: interleaved client, worker, sweeper and clock
//! steps, compared step by step (`tasklatch::interleave::prop`).
//!
//! Everyday runs use a fixed RNG seed, so every `cargo test` checks the same cases.
//! Nightly knobs (read by proptest): `PROPTEST_CASES` (default here 256),
//! `PROPTEST_RNG_SEED` (a different seed, different cases), `PROPTEST_MAX_SHRINK_ITERS`.
//! Failures are persisted to `proptest-regressions/prop_store.txt` and replayed first on
//! the next run: commit that file.

use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};
use proptest_state_machine::prop_state_machine;
use tasklatch::interleave::prop::{EVERYDAY_SEED, STEPS_MAX, StoreMachine};
use tasklatch::store::{MemoryFactory, SqliteFactory};

fn config() -> Config {
    // Reads PROPTEST_CASES (default 256), PROPTEST_RNG_SEED, …
    let defaults = Config::default();
    Config {
        rng_seed: match defaults.rng_seed {
            RngSeed::Random => RngSeed::Fixed(EVERYDAY_SEED),
            fixed => fixed,
        },
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/prop_store.txt",
        ))),
        ..defaults
    }
}

prop_state_machine! {
    #![proptest_config(config())]

    #[test]
    fn memory_store_matches_the_model(sequential 1..STEPS_MAX => StoreMachine<MemoryFactory>);

    #[test]
    fn sqlite_store_matches_the_model(sequential 1..STEPS_MAX => StoreMachine<SqliteFactory>);
}
