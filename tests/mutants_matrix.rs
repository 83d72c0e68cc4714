//! The kill matrix (`tasklatch mutants`) as a test: every engine against every named
//! mutant and the unmutated build. It fails when an engine misses a mutant it must kill
//! (the fixture: all; the simulation and proptest: every state, concurrency, expiry and
//! tenancy mutant; loom: the version check and the terminal latches; the probe, against
//! `tasklatch serve` of this build: the eleven mutants a client can see) or when any
//! engine fails without a mutant.
//!
//! One test only. The mutant selection is process-wide, so a process runs one cell at a
//! time: the rows are dealt among [`SHARDS`] processes (this one, and this test binary
//! started again for the others), which run side by side on one PostgreSQL and are joined
//! back in order. Each process probes its rows' servers first, a few at a time.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use tasklatch::matrix::{self, Matrix, Plan};

/// Processes the rows are dealt among: one per core of the 2-core CI machine.
const SHARDS: usize = 2;

const TEST_NAME: &str = "every_engine_kills_what_it_must_and_nothing_without_a_mutant";

/// Set by this test for the processes it starts, read here: run only shard N of
/// [`SHARDS`] (N ≥ 1) and write its rows as JSON to `TASKLATCH_MATRIX_OUT`, on the
/// PostgreSQL at `TASKLATCH_MATRIX_PG_URL` when set.
const SHARD_VAR: &str = "TASKLATCH_MATRIX_SHARD";
const OUT_VAR: &str = "TASKLATCH_MATRIX_OUT";
const PG_URL_VAR: &str = "TASKLATCH_MATRIX_PG_URL";

#[test]
fn every_engine_kills_what_it_must_and_nothing_without_a_mutant() {
    if let Ok(shard) = std::env::var(SHARD_VAR) {
        return run_shard(&shard);
    }
    let scratch = scratch("parent");
    // The conformance engine covers PostgreSQL's predicate clauses too, when it can.
    #[cfg(feature = "postgres")]
    let postgres = support::Postgres::start("matrix");
    #[cfg(feature = "postgres")]
    let postgres_url = postgres.as_ref().map(|pg| pg.url.clone());
    #[cfg(not(feature = "postgres"))]
    let postgres_url = None;
    let children: Vec<_> = (1..SHARDS)
        .map(|index| start_shard(index, &scratch, postgres_url.as_deref()))
        .collect();
    let plan = plan(&scratch, postgres_url);
    let mut shards = vec![matrix::run(&plan.shard(0, SHARDS), &mut |_, _, _| {})];
    for (index, child, out, log) in children {
        shards.push(finish_shard(index, child, &out, &log));
    }
    let matrix = Matrix::join(&plan, shards).expect("every row run once");
    let _ = std::fs::remove_dir_all(&scratch);
    let rendered = format!("{}\n{}", matrix.render_text(), matrix.render_details());
    println!("{rendered}");
    // CI prints this file rather than run the matrix a second time.
    let report = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kill-matrix.txt");
    std::fs::write(&report, &rendered).expect("write the matrix report");
    assert_eq!(matrix.rows.len(), 27, "the unmutated build and 26 mutants");
    let shortfalls = matrix.shortfalls();
    assert!(
        shortfalls.is_empty(),
        "shortfalls:\n{}",
        shortfalls.join("\n")
    );
}

/// What every shard runs a part of.
fn plan(scratch: &Path, postgres_url: Option<String>) -> Plan {
    let _ = &postgres_url; // read only with the adapter
    Plan {
        #[cfg(feature = "postgres")]
        postgres_url,
        // The probe column on the rows it must kill and the unmutated one (`tasklatch
        // mutants` runs it on every row).
        probe_server: Some(env!("CARGO_BIN_EXE_tasklatch").into()),
        probe_required_only: true,
        ..Plan::full(scratch)
    }
}

/// SQLite on tmpfs where there is one: the harness needs no durability, and the
/// simulation column opens a database per seed.
fn scratch(who: &str) -> PathBuf {
    let base = Some(Path::new("/dev/shm"))
        .filter(|shm| shm.is_dir())
        .map_or_else(std::env::temp_dir, Path::to_path_buf);
    let scratch = base.join(format!("tasklatch-matrix-{}-{who}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch directory");
    scratch
}

/// This test binary again, running only shard `index`: its rows go to `out`, what it
/// prints to `log` (a pipe could fill while this process runs its own shard).
fn start_shard(
    index: usize,
    scratch: &Path,
    postgres_url: Option<&str>,
) -> (usize, Child, PathBuf, PathBuf) {
    let (out, log) = (
        scratch.join(format!("shard-{index}.json")),
        scratch.join(format!("shard-{index}.log")),
    );
    let log_file = std::fs::File::create(&log).expect("shard log");
    let mut command = Command::new(std::env::current_exe().expect("this test binary"));
    command
        .args([TEST_NAME, "--exact", "--nocapture", "--test-threads", "1"])
        .env(SHARD_VAR, index.to_string())
        .env(OUT_VAR, &out)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().expect("shard log"))
        .stderr(log_file);
    match postgres_url {
        Some(url) => command.env(PG_URL_VAR, url),
        None => command.env_remove(PG_URL_VAR),
    };
    (index, command.spawn().expect("start a shard"), out, log)
}

/// The rows shard `index` wrote, once it has exited (a shard that failed or wrote no rows
/// is a failure, with its output).
fn finish_shard(index: usize, mut child: Child, out: &Path, log: &Path) -> Matrix {
    let status = child.wait().expect("wait for a shard");
    let text = std::fs::read_to_string(out)
        .ok()
        .filter(|_| status.success());
    let Some(text) = text else {
        let log = std::fs::read_to_string(log).unwrap_or_default();
        panic!("shard {index} ended {status} without its rows; its output:\n{log}")
    };
    Matrix::from_json(&text).unwrap_or_else(|error| panic!("shard {index}: {error}"))
}

fn run_shard(shard: &str) {
    let index: usize = shard
        .parse()
        .expect("TASKLATCH_MATRIX_SHARD: a shard number");
    assert!(
        (1..SHARDS).contains(&index),
        "{SHARD_VAR}={index}: 1..{SHARDS}"
    );
    let out = std::env::var_os(OUT_VAR).expect("TASKLATCH_MATRIX_OUT with the shard");
    let scratch = scratch(&format!("shard-{index}"));
    let plan = plan(&scratch, std::env::var(PG_URL_VAR).ok());
    let rows = matrix::run(&plan.shard(index, SHARDS), &mut |_, _, _| {});
    let _ = std::fs::remove_dir_all(&scratch);
    // Written whole, then renamed: the parent never reads half a file.
    let partial = PathBuf::from(&out).with_extension("partial");
    std::fs::write(&partial, rows.to_json()).expect("write the shard's rows");
    std::fs::rename(&partial, &out).expect("publish the shard's rows");
}
