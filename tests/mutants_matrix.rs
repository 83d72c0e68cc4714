//! The kill matrix (`tasklatch mutants`) as a test: every engine against every named
//! mutant and the unmutated build. It fails when an engine misses a mutant it must kill
//! (the fixture: all; the simulation and proptest: every state, concurrency, expiry and
//! tenancy mutant; loom: the version check and the terminal latches) or when any engine
//! fails without a mutant.
//!
//! One test only: the mutant selection is process-wide, so cells run one at a time.

mod support;

use tasklatch::mutants::matrix::{self, Plan};

#[test]
fn every_engine_kills_what_it_must_and_nothing_without_a_mutant() {
    let scratch = std::env::temp_dir().join(format!("tasklatch-matrix-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch directory");
    let mut plan = Plan::full(&scratch);
    // The conformance engine covers PostgreSQL's predicate clauses too, when it can.
    #[cfg(feature = "postgres")]
    let postgres = support::Postgres::start("matrix");
    #[cfg(feature = "postgres")]
    {
        plan.postgres_url = postgres.as_ref().map(|pg| pg.url.clone());
    }
    let matrix = matrix::run(&plan, &mut |_, _, _| {});
    let _ = std::fs::remove_dir_all(&scratch);
    println!("{}", matrix.render_text());
    println!("{}", matrix.render_details());
    assert_eq!(matrix.rows.len(), 14, "the unmutated build and 13 mutants");
    let shortfalls = matrix.shortfalls();
    assert!(
        shortfalls.is_empty(),
        "shortfalls:\n{}",
        shortfalls.join("\n")
    );
}
