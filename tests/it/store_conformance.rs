//! The public conformance suite (`tasklatch::conformance`) on every adapter this build has.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use tasklatch::conformance;
use tasklatch::store::{MemoryFactory, SqliteFactory, StoreFactory};

fn run(label: &str, factory: &dyn StoreFactory) {
    let outcomes = conformance::run_all(factory);
    let mut failures = Vec::new();
    for outcome in &outcomes {
        let verdict = if outcome.passed { "ok  " } else { "FAIL" };
        println!(
            "{label:<9} {verdict} {:<36} {}",
            outcome.name, outcome.detail
        );
        if !outcome.passed {
            failures.push(format!("{}: {}", outcome.name, outcome.detail));
        }
    }
    assert!(
        failures.is_empty(),
        "{label} fails conformance:\n{}",
        failures.join("\n")
    );
}

#[test]
fn memory_store_conforms() {
    run("memory", &MemoryFactory);
}

#[test]
fn sqlite_store_conforms() {
    let scratch = support::Scratch::new("conformance");
    run("sqlite", &SqliteFactory::new(scratch.join("stores")));
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_store_conforms() {
    let Some(pg) = support::Postgres::start("conformance") else {
        return;
    };
    let factory = tasklatch::store::PostgresFactory::new(&pg.url, &pg.schema())
        .expect("a valid schema prefix");
    run("postgres", &factory);
}

#[cfg(not(feature = "postgres"))]
#[test]
fn postgres_store_conforms() {
    println!(
        "postgres  SKIPPED: built without `--features postgres` (the README test command enables it)"
    );
}
