//! A store written outside tasklatch, checked by every engine of the harness:
//!
//! ```sh
//! cargo run --example vec_store --features proptest,sim            # the store passes
//! cargo run --example vec_store --features proptest,sim -- broken  # a planted bug, reported
//! ```
//!
//! `store.rs` is the store (its own data structure, tasklatch's public API only); this file
//! is all a team needs to add to check theirs. `tests/it/example_store.rs` runs the same in CI.

mod store;

use std::process::ExitCode;
use store::{Bug, VecStoreFactory};
use tasklatch::verify::{Budget, check_store};

fn main() -> ExitCode {
    let broken = std::env::args().nth(1).as_deref() == Some("broken");
    let factory = VecStoreFactory {
        bug: broken.then_some(Bug::ListsEveryTenant),
    };
    let report = check_store(&factory, &Budget::quick());
    print!("{report}");
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
