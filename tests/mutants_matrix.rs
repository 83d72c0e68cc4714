//! The kill matrix (`tasklatch mutants`) as a test: every engine against every named
//! mutant and the unmutated build. It fails when an engine misses a mutant it must kill
//! (the fixture: all; the simulation and proptest: every state, concurrency, expiry and
//! tenancy mutant; loom: the version check and the terminal latches; the probe, against
//! `tasklatch serve` of this build: the eleven mutants a client can see) or when any
//! engine fails without a mutant.
//!
//! One test only: the mutant selection is process-wide, so cells run one at a time (the
//! probe's cells, whose servers read `TASKLATCH_MUTANT` in their own processes, run five at
//! a time first).

mod support;

use tasklatch::matrix::{self, Plan};

#[test]
fn every_engine_kills_what_it_must_and_nothing_without_a_mutant() {
    // SQLite on tmpfs where there is one: the harness needs no durability, and the
    // simulation column opens a database per seed.
    let base = Some(std::path::Path::new("/dev/shm"))
        .filter(|shm| shm.is_dir())
        .map_or_else(std::env::temp_dir, std::path::Path::to_path_buf);
    let scratch = base.join(format!("tasklatch-matrix-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch directory");
    // The conformance engine covers PostgreSQL's predicate clauses too, when it can.
    #[cfg(feature = "postgres")]
    let postgres = support::Postgres::start("matrix");
    let plan = Plan {
        #[cfg(feature = "postgres")]
        postgres_url: postgres.as_ref().map(|pg| pg.url.clone()),
        // The probe column on the rows it must kill and the unmutated one (`tasklatch
        // mutants` runs it on every row).
        probe_server: Some(env!("CARGO_BIN_EXE_tasklatch").into()),
        probe_required_only: true,
        ..Plan::full(&scratch)
    };
    let matrix = matrix::run(&plan, &mut |_, _, _| {});
    let _ = std::fs::remove_dir_all(&scratch);
    let rendered = format!("{}\n{}", matrix.render_text(), matrix.render_details());
    println!("{rendered}");
    // CI prints this file rather than run the matrix a second time.
    let report = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("kill-matrix.txt");
    std::fs::write(&report, &rendered).expect("write the matrix report");
    assert_eq!(matrix.rows.len(), 27, "the unmutated build and 26 mutants");
    let shortfalls = matrix.shortfalls();
    assert!(
        shortfalls.is_empty(),
        "shortfalls:\n{}",
        shortfalls.join("\n")
    );
}
