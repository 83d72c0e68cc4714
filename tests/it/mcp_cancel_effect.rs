//! Cancelled means no effect, with real processes: `tasklatch serve --http` over SQLite and
//! (with `--features postgres`, when a PostgreSQL is available) PostgreSQL, running the
//! `export` tool, whose file is prepared invisibly, published only once the task's
//! completion is decided, and discarded when a cancel won the latch.
//!
//! - A worker held right after preparing (`serve --hold-at after-prepare:MS`): the cancel
//!   sent then wins, and no export file appears, whether the worker goes on or the process
//!   is SIGKILLed there and restarted.
//! - A worker held right after deciding (`--hold-at after-decide:MS`) and SIGKILLed there:
//!   the task is stored completed with its file only prepared; the restarted server's
//!   redelivery publishes it, once.
//! - 300 cancels aimed at the completion moment of a 100-ms export (90–110 % of its
//!   measured duration): none ends cancelled with its file, and every completed one has it.
// Plain builds only: the README's second test command (`--all-features`) runs what the
// features add (the engines), not these again.
#![cfg(not(feature = "mutants"))]

use crate::support;

use support::serve_process;

use serde_json::json;
use serve_process::{ServeClient, ServeProcess, stored_status};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tasklatch::contract::TaskStatus;

const TOKEN: &str = "token-effect-0001";
/// How long a killed server's leased task waits before it is delivered again.
const LEASE_MS: u64 = 1_000;
/// Rounds of aimed cancels per store.
const AIMED_ROUNDS: usize = 300;
/// Clients sending them side by side.
const AIMED_CLIENTS: usize = 3;

/// The server, started with this test's token and lease.
fn start_serve(store: &str, exports: &Path, folder: &Path, extra: &[&str]) -> ServeProcess {
    let lease_ms = LEASE_MS.to_string();
    // Its clients poll every 5 ms to catch the end at once: far above a client following
    // pollInterval, so the poll budget is raised.
    let mut args = vec![
        "--lease-ms",
        &lease_ms,
        "--workers",
        "3",
        "--polls-per-second",
        "100000",
    ];
    args.extend_from_slice(extra);
    ServeProcess::start(
        support::TASKLATCH,
        store,
        exports,
        folder,
        &[(TOKEN, "tenant-a/alice")],
        &args,
    )
}

/// A client of one server: its session.
fn client_of(serve: &ServeProcess) -> ServeClient {
    ServeClient::of(&serve.address, TOKEN)
}

/// Polls every 5 ms until the task is terminal; its status.
fn terminal(client: &ServeClient, task_id: &str) -> String {
    client.terminal_within(task_id, Duration::from_millis(5), Duration::from_secs(30))
}

fn published(exports: &Path, task_id: &str) -> PathBuf {
    exports.join(format!("{task_id}.json"))
}

fn prepared(exports: &Path, task_id: &str) -> PathBuf {
    exports.join(format!(".{task_id}.json.tmp"))
}

/// Waits up to 5 s for `done`.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every part of the file's story on one store.
fn cancelled_means_no_effect(label: &str, store: &str, folder: &Path) {
    let exports = folder.join("exports");
    cancels_while_prepared_leave_no_file(label, store, &exports, folder);
    let (serve, client) = killed_after_decide_the_restart_publishes(label, store, &exports, folder);
    aimed_cancels_leave_no_file_and_miss_no_file(label, &serve, &client, &exports);
}

/// A cancel while the worker holds the prepared export, whether the worker goes on or is
/// killed there: the cancel wins and no file is published.
fn cancels_while_prepared_leave_no_file(label: &str, store: &str, exports: &Path, folder: &Path) {
    // A cancel while the worker holds the prepared export: the worker goes on and loses.
    let serve = start_serve(store, exports, folder, &["--hold-at", "after-prepare:300"]);
    let client = client_of(&serve);
    for round in 0..3 {
        let task_id = client.export(50);
        serve.held("after-prepare", &task_id);
        assert!(
            prepared(exports, &task_id).exists(),
            "{label} {round}: prepared"
        );
        assert_eq!(client.cancel(&task_id)["status"], "cancelled");
        eventually("the prepared export discarded", || {
            !prepared(exports, &task_id).exists()
        });
        assert_eq!(client.status(&task_id), "cancelled", "{label} {round}");
        assert!(
            !published(exports, &task_id).exists(),
            "{label} {round}: a cancelled export left its file"
        );
    }

    // The same, killed while it holds: the restarted server discards what it prepared.
    let task_id = client.export(50);
    serve.held("after-prepare", &task_id);
    assert_eq!(client.cancel(&task_id)["status"], "cancelled");
    serve.kill();
    assert!(
        prepared(exports, &task_id).exists(),
        "{label}: left prepared"
    );
    let serve = start_serve(store, exports, folder, &[]);
    eventually("the dead worker's prepared export discarded", || {
        !prepared(exports, &task_id).exists()
    });
    assert!(!published(exports, &task_id).exists(), "{label}: no export");
    assert_eq!(client_of(&serve).status(&task_id), "cancelled");
    serve.kill();
}

/// Killed between decide and publish: completed, unpublished; the restart publishes. The
/// restarted server and a client of it.
fn killed_after_decide_the_restart_publishes(
    label: &str,
    store: &str,
    exports: &Path,
    folder: &Path,
) -> (ServeProcess, ServeClient) {
    let serve = start_serve(store, exports, folder, &["--hold-at", "after-decide:60000"]);
    let task_id = client_of(&serve).export(50);
    serve.held("after-decide", &task_id);
    serve.kill();
    assert_eq!(stored_status(store, &task_id), TaskStatus::Completed);
    assert!(
        !published(exports, &task_id).exists() && prepared(exports, &task_id).exists(),
        "{label}: killed after decide, the export is prepared, not published"
    );
    let serve = start_serve(store, exports, folder, &[]);
    eventually("the redelivery publishes the export", || {
        published(exports, &task_id).exists()
    });
    assert!(
        !prepared(exports, &task_id).exists(),
        "{label}: published once"
    );
    let client = client_of(&serve);
    let result = client.call("tasks/result", json!({ "taskId": task_id }));
    assert!(
        result["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains(&format!("export-{task_id}"))),
        "{label}: {result}"
    );
    (serve, client)
}

/// Aimed cancels: learn how long an export takes, then cancel at 90–110 % of it from
/// `AIMED_CLIENTS` clients side by side; none ends cancelled with its file, and every
/// completed one has it.
fn aimed_cancels_leave_no_file_and_miss_no_file(
    label: &str,
    serve: &ServeProcess,
    client: &ServeClient,
    exports: &Path,
) {
    let duration_ms = median_export_ms(client);
    let tallies: Vec<[usize; 4]> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..AIMED_CLIENTS)
            .map(|lane| {
                scope.spawn(move || {
                    aim_cancels_in_one_lane(label, serve, exports, lane, duration_ms)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("a client"))
            .collect()
    });
    let total = tallies.iter().fold([0; 4], |mut sum, tally| {
        for (sum, count) in sum.iter_mut().zip(tally) {
            *sum += count;
        }
        sum
    });
    println!(
        "{label}: {AIMED_ROUNDS} cancels aimed at 90-110 % of a {duration_ms:.0}-ms export: \
         {} ended cancelled ({} with an export file), {} completed ({} without one)",
        total[0], total[2], total[1], total[3]
    );
    assert_eq!(total[0] + total[1], AIMED_ROUNDS);
    assert_eq!(total[2], 0, "{label}: cancelled tasks left export files");
    assert_eq!(total[3], 0, "{label}: completed tasks without export files");
    assert!(
        total[0] > 0 && total[1] > 0,
        "{label}: the aim must land on both sides of the completion"
    );
}

/// The median time of 5 exports of 100 ms, start to completed, in ms.
fn median_export_ms(client: &ServeClient) -> f64 {
    let mut durations_ms = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let task_id = client.export(100);
        assert_eq!(terminal(client, &task_id), "completed");
        durations_ms.push(started.elapsed().as_secs_f64() * 1_000.0);
    }
    durations_ms.sort_by(f64::total_cmp);
    durations_ms[durations_ms.len() / 2]
}

/// One client's share of the aimed rounds, on its own session: its tally of
/// [cancelled, completed, cancelled with its file, completed without].
fn aim_cancels_in_one_lane(
    label: &str,
    serve: &ServeProcess,
    exports: &Path,
    lane: usize,
    duration_ms: f64,
) -> [usize; 4] {
    let client = client_of(serve);
    let mut tally = [0usize; 4];
    for round in (lane..AIMED_ROUNDS).step_by(AIMED_CLIENTS) {
        let aim = 0.9 + 0.2 * (round as f64 / AIMED_ROUNDS as f64);
        let started = Instant::now();
        let task_id = client.export(100);
        let at = Duration::from_secs_f64(duration_ms * aim / 1_000.0);
        std::thread::sleep(at.saturating_sub(started.elapsed()));
        // Refused (`-32602`) when the completion won: that is the other side.
        client.answer("tasks/cancel", json!({ "taskId": task_id }));
        match terminal(&client, &task_id).as_str() {
            "cancelled" => {
                tally[0] += 1;
                eventually("a cancelled export's prepared file discarded", || {
                    !prepared(exports, &task_id).exists()
                });
                if published(exports, &task_id).exists() {
                    tally[2] += 1;
                }
            }
            "completed" => {
                tally[1] += 1;
                let deadline = Instant::now() + Duration::from_secs(2);
                while !published(exports, &task_id).exists() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                if !published(exports, &task_id).exists() {
                    tally[3] += 1;
                }
            }
            other => panic!("{label}: {task_id} ended {other}"),
        }
    }
    tally
}

#[test]
fn sqlite_cancelled_means_no_effect() {
    let scratch = support::Scratch::new("cancel-effect-sqlite");
    let store = format!("sqlite:{}", scratch.join("tasks.db").display());
    cancelled_means_no_effect("sqlite", &store, &scratch.path);
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_cancelled_means_no_effect() {
    let Some(pg) = support::Postgres::start("cancel_effect") else {
        return;
    };
    let scratch = support::Scratch::new("cancel-effect-postgres");
    cancelled_means_no_effect("postgres", &pg.url, &scratch.path);
}
