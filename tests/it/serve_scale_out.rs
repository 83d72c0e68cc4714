//! Scale-out: three `tasklatch serve --http` processes on one PostgreSQL schema, each
//! running workers, one export folder, clients spread across them — the deployment of
//! several instances behind a load balancer. One instance is SIGKILLed while its worker
//! holds a prepared export (mid-export) and is restarted on a new port.
//!
//! Checked: every task completes exactly once (one export file each, nothing left
//! prepared); any instance serves any of the caller's tasks, and none serves another
//! caller's; a call blocked on one instance is woken by a worker on another (through
//! `LISTEN/NOTIFY`, well before the safety re-read); a session is per instance and the
//! refusal says so; nothing is lost.
// Once per CI run is enough: the plain command runs it, `--all-features` (mutants) skips it.
#![cfg(all(feature = "postgres", not(feature = "mutants")))]

use crate::support;

use support::serve_process;

use support::http_client;

use serde_json::{Value, json};
use serve_process::{ServeClient, ServeProcess};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

const ALICE: (&str, &str) = ("token-alice-scale", "tenant-a/alice");
const BOB: (&str, &str) = ("token-bob-scale01", "tenant-b/bob");
/// Tasks per caller.
const TASKS_PER_CALLER: usize = 24;
const LEASE_MS: u64 = 1_500;

/// A created task: its caller's index in `[ALICE, BOB]`, the caller, the task id.
type Created = (usize, (&'static str, &'static str), String);

fn start(store: &str, exports: &Path, folder: &Path, extra: &[&str]) -> ServeProcess {
    let lease_ms = LEASE_MS.to_string();
    let mut args = vec!["--workers", "2", "--lease-ms", &lease_ms];
    args.extend_from_slice(extra);
    ServeProcess::start(
        support::TASKLATCH,
        store,
        exports,
        folder,
        &[ALICE, BOB],
        &args,
    )
}

/// The store URL of a fresh schema on `pg` (created here), for every instance alike.
fn schema_url(pg: &support::Postgres) -> String {
    let schema = pg.schema();
    let mut client = postgres::Client::connect(&pg.url, postgres::NoTls).expect("connect");
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .expect("schema");
    let join = if pg.url.contains('?') { '&' } else { '?' };
    format!("{}{join}options=-csearch_path%3D{schema}", pg.url)
}

fn export_files(exports: &Path) -> (Vec<String>, Vec<String>) {
    let names: Vec<String> = std::fs::read_dir(exports)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let published = names
        .iter()
        .filter(|name| !name.starts_with('.') && name.ends_with(".json"))
        .cloned()
        .collect();
    let prepared = names
        .iter()
        .filter(|name| name.ends_with(".tmp"))
        .cloned()
        .collect();
    (published, prepared)
}

/// Every task `client` can list, following cursors.
fn listed(client: &ServeClient) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut cursor: Option<String> = None;
    for _ in 0..100 {
        let params = match &cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let page = client.call("tasks/list", params);
        for task in page["tasks"].as_array().expect("tasks") {
            ids.insert(task["taskId"].as_str().expect("id").to_owned());
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return ids,
        }
    }
    panic!("more than 100 pages");
}

#[test]
fn three_instances_on_one_postgresql_survive_a_kill_mid_export() {
    let Some(pg) = support::Postgres::start("scale_out") else {
        return;
    };
    let scratch = support::Scratch::new("scale-out");
    let store = schema_url(&pg);
    let exports = scratch.join("exports");
    let a = start(&store, &exports, &scratch.path, &[]);
    // Instance B's workers stop right after preparing an export, where it is killed.
    let b = start(
        &store,
        &exports,
        &scratch.path,
        &["--hold-at", "after-prepare:60000"],
    );
    let c = start(&store, &exports, &scratch.path, &[]);
    sessions_are_per_instance(&a, &c);
    let addresses = [a.address.clone(), b.address.clone(), c.address.clone()];
    let mut created = create_round_robin(&addresses);
    kill_b_mid_export(b, &exports);
    let b = start(&store, &exports, &scratch.path, &[]);
    let addresses = [a.address.clone(), b.address.clone(), c.address.clone()];
    every_task_completes_through_any_instance(&created, &addresses);
    let (late, woken) = a_blocked_call_is_woken_from_another_instance(&a, &c);
    created.push((0, ALICE, late));
    one_export_file_per_task(&exports, &created);
    tenants_stay_apart_on_every_instance(&created, &addresses);
    serve_process::report(
        "scale-out",
        &format!(
            "scale-out: 3 instances on one PostgreSQL, {} tasks from 2 callers, instance B SIGKILLed \
         holding a prepared export and restarted: every task completed once, one file each; a \
         call blocked on C for a task created on A answered after {woken:?}",
            created.len()
        ),
    );
    drop((a, b, c));
}

/// Sessions are per instance, and the refusal says so.
fn sessions_are_per_instance(a: &ServeProcess, c: &ServeProcess) {
    let alice_on_a = ServeClient::of(&a.address, ALICE.0);
    let foreign = http_client::rpc(
        &c.address,
        ALICE.0,
        Some(&alice_on_a.session),
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }),
    )
    .expect("answered");
    assert_eq!(foreign.status, 404, "{}", foreign.body);
    assert!(
        foreign.body.contains("sessions are per instance"),
        "{}",
        foreign.body
    );
}

/// Both callers create tasks round-robin over the three instances.
fn create_round_robin(addresses: &[String; 3]) -> Vec<Created> {
    let mut created: Vec<Created> = Vec::new();
    for (who, caller) in [ALICE, BOB].into_iter().enumerate() {
        let clients: Vec<ServeClient> = addresses
            .iter()
            .map(|address| ServeClient::of(address, caller.0))
            .collect();
        for n in 0..TASKS_PER_CALLER {
            let task_id = clients[n % 3].export(200);
            created.push((who, caller, task_id));
        }
    }
    created
}

/// Waits for a worker of B to hold a prepared export, kills B there, and checks the
/// export was left prepared.
fn kill_b_mid_export(b: ServeProcess, exports: &Path) {
    let held = b
        .line(Duration::from_secs(30), |line| {
            line.starts_with("hold after-prepare ")
        })
        .expect("a worker of B holds a prepared export");
    let held_task = held.rsplit(' ').next().expect("task id").to_owned();
    b.kill();
    let (_, prepared) = export_files(exports);
    assert!(
        prepared.contains(&format!(".{held_task}.json.tmp")),
        "B was killed mid-export: {prepared:?}"
    );
}

/// Every task completes, read through any instance.
fn every_task_completes_through_any_instance(created: &[Created], addresses: &[String; 3]) {
    let deadline = Instant::now() + Duration::from_secs(90);
    for (n, (_, caller, task_id)) in created.iter().enumerate() {
        let client = ServeClient::of(&addresses[(n + 1) % 3], caller.0);
        let left = deadline.saturating_duration_since(Instant::now());
        let status = client.terminal_within(task_id, Duration::from_millis(100), left);
        assert_eq!(status, "completed", "{task_id}");
    }
}

/// Once the backlog is done: a call blocked on one instance, for a task another
/// instance's worker may run. The task's id, and how long the call was blocked.
fn a_blocked_call_is_woken_from_another_instance(
    a: &ServeProcess,
    c: &ServeProcess,
) -> (String, Duration) {
    let alice_on_c = ServeClient::of(&c.address, ALICE.0);
    let late = ServeClient::of(&a.address, ALICE.0).export(300);
    let started = Instant::now();
    let result = alice_on_c.call("tasks/result", json!({ "taskId": late }));
    let woken = started.elapsed();
    assert!(result["content"].is_array(), "{result}");
    // The safety re-read is 5 s away: a wake from whichever instance completed it.
    assert!(woken < Duration::from_secs(4), "answered after {woken:?}");
    (late, woken)
}

/// Exactly one export file per task, nothing left prepared (the held one published
/// once after its redelivery).
fn one_export_file_per_task(exports: &Path, created: &[Created]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let (published, prepared) = loop {
        let (published, prepared) = export_files(exports);
        if prepared.is_empty() || Instant::now() > deadline {
            break (published, prepared);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(prepared.is_empty(), "left prepared: {prepared:?}");
    let expected: BTreeSet<String> = created
        .iter()
        .map(|(_, _, task_id)| format!("{task_id}.json"))
        .collect();
    assert_eq!(
        published.len(),
        expected.len(),
        "one file per task, no more"
    );
    assert_eq!(published.into_iter().collect::<BTreeSet<_>>(), expected);
}

/// Tenants stay apart on every instance; each lists exactly its own, wherever it asks.
fn tenants_stay_apart_on_every_instance(created: &[Created], addresses: &[String; 3]) {
    for (who, caller) in [ALICE, BOB].into_iter().enumerate() {
        let own: BTreeSet<String> = created
            .iter()
            .filter(|(owner, _, _)| *owner == who)
            .map(|(_, _, task_id)| task_id.clone())
            .collect();
        let theirs = created
            .iter()
            .find(|(owner, _, _)| *owner != who)
            .map(|(_, _, task_id)| task_id.clone())
            .expect("another's task");
        for address in addresses {
            let client = ServeClient::of(address, caller.0);
            assert_eq!(listed(&client), own, "{} on {address}", caller.1);
            let answer: Value = client.answer("tasks/get", json!({ "taskId": theirs }));
            assert_eq!(answer["error"]["code"], -32602, "{answer}");
        }
    }
}
