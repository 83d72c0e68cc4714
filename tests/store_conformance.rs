//! The public conformance suite (`tasklatch::conformance`) on every adapter this build has.

mod support;

use tasklatch::conformance::{self, StoreFactory};
use tasklatch::store::{MemoryStore, SqliteOptions, SqliteStore, Synchronous, TaskStore};

fn run(label: &str, factory: &StoreFactory<'_>) {
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
    run("memory", &|options| {
        Ok(Box::new(MemoryStore::open(options)?) as Box<dyn TaskStore>)
    });
}

#[test]
fn sqlite_store_conforms() {
    let scratch = support::Scratch::new("conformance");
    let counter = std::sync::atomic::AtomicU64::new(0);
    run("sqlite", &|options| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut sqlite = SqliteOptions::new(scratch.join(&format!("store-{n}.db")));
        sqlite.synchronous = Synchronous::Normal;
        Ok(Box::new(SqliteStore::open(&sqlite, options)?) as Box<dyn TaskStore>)
    });
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_store_conforms() {
    let Some(pg) = support::Postgres::start("conformance") else {
        return;
    };
    run("postgres", &|options| {
        let store = tasklatch::store::PostgresStore::open(&pg.url, Some(&pg.schema()), options)?;
        Ok(Box::new(store) as Box<dyn TaskStore>)
    });
}

#[cfg(not(feature = "postgres"))]
#[test]
fn postgres_store_conforms() {
    println!(
        "postgres  SKIPPED: built without `--features postgres` (the README test command enables it)"
    );
}
