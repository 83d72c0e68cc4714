//! What names a task: an idempotency key's lifetime (bound per caller through terminal
//! states, released at expiry and by the sweep) and task id collisions (refused, whatever
//! the caller or key, by create and by import, changing nothing).

use super::*;

pub(super) fn idempotency_key_lifetime(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    keys_bound(&*store)?;
    keys_released(&*store)?;
    Ok(
        "keys bound through terminal states, per caller, released at expiry and by the sweep"
            .into(),
    )
}

fn keyed(caller: &str, id: &str, key: &str, month: &str, now_ms: u64) -> CreateCommand {
    let mut cmd = command(caller, id, Some(key), month, now_ms);
    cmd.ttl_ms = Some(1_000);
    cmd
}

/// `cmd` replays `holder`'s task, and stores nothing of its own.
fn replays(store: &dyn TaskStore, cmd: &CreateCommand, holder: &str) -> Result<(), String> {
    let answer = store.create(cmd).map_err(store_err("create"))?;
    let what = format!(
        "{} with key {:?} at {} (task {} holds it)",
        cmd.caller,
        cmd.idempotency_key.as_deref().unwrap_or_default(),
        cmd.now_ms,
        holder
    );
    same(
        &format!("{what}: decision"),
        answer.decision,
        Decision::ReplayTask,
    )?;
    let stored = store.read(holder).map_err(store_err("read"))?;
    same_record(
        &format!("{what}: replayed record"),
        stored.as_ref().ok_or(format!("{what}: holder vanished"))?,
        answer.record.as_ref(),
    )?;
    same(
        &format!("{what}: the replay stored nothing"),
        store.read(&cmd.task_id).map_err(store_err("read"))?,
        None,
    )
}

/// Keys stay bound while their task lives, terminal, cancelled or not, per caller.
fn keys_bound(store: &dyn TaskStore) -> Result<(), String> {
    // k1: bound while the task lives, terminal or not.
    create_ok(
        store,
        &keyed(ALICE, "k1-a", "k1", "m", 0),
        Decision::AcceptTask,
    )?;
    replays(store, &keyed(ALICE, "k1-r1", "k1", "m", 10), "k1-a")?;
    create_ok(
        store,
        &keyed(ALICE, "k1-x", "k1", "other", 11),
        Decision::BlockIdempotencyCollision,
    )?;
    store
        .transition(&transition("k1-a", ALICE, 1, TaskStatus::Completed, 20))
        .map_err(store_err("transition"))?;
    replays(store, &keyed(ALICE, "k1-r2", "k1", "m", 30), "k1-a")?;
    create_ok(
        store,
        &keyed(ALICE, "k1-x2", "k1", "other", 31),
        Decision::BlockIdempotencyCollision,
    )?;
    // Per caller: Bob's k1 is his own, with the same request or another.
    create_ok(
        store,
        &keyed(BOB, "k1-b", "k1", "m", 40),
        Decision::AcceptTask,
    )?;
    create_ok(
        store,
        &keyed(CAROL, "k1-c", "k1", "other", 41),
        Decision::AcceptTask,
    )?;
    replays(store, &keyed(BOB, "k1-b-r", "k1", "m", 50), "k1-b")?;
    replays(store, &keyed(ALICE, "k1-r3", "k1", "m", 51), "k1-a")?;
    replays(store, &keyed(CAROL, "k1-c-r", "k1", "other", 52), "k1-c")?;
    // k2: cancelled by the requestor, still bound.
    create_ok(
        store,
        &keyed(ALICE, "k2-a", "k2", "m", 100),
        Decision::AcceptTask,
    )?;
    store
        .cancel(Negotiated::FULL, ALICE, "k2-a", 110)
        .map_err(store_err("cancel"))?;
    replays(store, &keyed(ALICE, "k2-r", "k2", "m", 120), "k2-a")?;
    // The last millisecond of k1-a's life: still bound.
    replays(store, &keyed(ALICE, "k1-r4", "k1", "m", 999), "k1-a")?;
    Ok(())
}

/// Keys are released at their task's expiry and by the sweep.
fn keys_released(store: &dyn TaskStore) -> Result<(), String> {
    // At expiry (now == expires_at) the key is released: a new task, and the expired
    // record, still stored until swept, no longer claims the key.
    let old = store
        .read("k1-a")
        .map_err(store_err("read"))?
        .ok_or("k1-a vanished before its sweep")?;
    let renewed = keyed(ALICE, "k1-new", "k1", "other", 1_000);
    let answer = create_ok(store, &renewed, Decision::AcceptTask)?;
    same_record(
        "the create after the key's task expired",
        &renewed.admission_record(renewed.request.digest()),
        answer.record.as_ref(),
    )?;
    let mut released = old.clone();
    released.idempotency_key = None;
    same_record(
        "the expired holder after its key was taken",
        &released,
        store.read("k1-a").map_err(store_err("read"))?.as_ref(),
    )?;
    replays(
        store,
        &keyed(ALICE, "k1-r5", "k1", "other", 1_001),
        "k1-new",
    )?;
    // Bob's k1 (expires at 1040) is untouched by Alice's release.
    replays(store, &keyed(BOB, "k1-b-r2", "k1", "m", 1_001), "k1-b")?;
    // k2-a expires at 1100 and is swept: its key is free, the new task owns it.
    same(
        "sweep at 1100",
        store
            .sweep_expired(1_100, usize::MAX)
            .map_err(store_err("sweep"))?,
        4,
    )?;
    same(
        "k2-a swept",
        store.read("k2-a").map_err(store_err("read"))?,
        None,
    )?;
    let after_sweep = keyed(ALICE, "k2-new", "k2", "another", 1_200);
    let answer = create_ok(store, &after_sweep, Decision::AcceptTask)?;
    same_record(
        "the create after the key's task was swept",
        &after_sweep.admission_record(after_sweep.request.digest()),
        answer.record.as_ref(),
    )?;
    replays(
        store,
        &keyed(ALICE, "k2-r2", "k2", "another", 1_201),
        "k2-new",
    )?;
    // Bob's k1 was swept too: his key is free again, for a different request.
    create_ok(
        store,
        &keyed(BOB, "k1-b2", "k1", "changed", 1_202),
        Decision::AcceptTask,
    )?;
    Ok(())
}

pub(super) fn task_id_collisions(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let original_record = creates_of_existing_ids(&*store)?;
    imports_of_existing_ids(&*store, &original_record)?;
    Ok("creates (any caller, with or without a key) and imports of existing ids refused; nothing changed".into())
}

/// Creates of an existing id, by any caller with or without a key, are refused and change
/// nothing; returns the original record.
fn creates_of_existing_ids(store: &dyn TaskStore) -> Result<TaskRecord, String> {
    let original = command(ALICE, "dup", None, "2026-06", 10);
    let original_record = create_ok(store, &original, Decision::AcceptTask)?
        .record
        .ok_or("ACCEPT_TASK without a record")?;
    let mut expiring = command(ALICE, "holder", Some("ke"), "2026-06", 0);
    expiring.ttl_ms = Some(100);
    let holder = create_ok(store, &expiring, Decision::AcceptTask)?
        .record
        .ok_or("ACCEPT_TASK without a record")?;
    let mut colliding = Vec::new();
    let mut same_caller = command(ALICE, "dup", None, "2026-07", 20);
    same_caller.request.name = "other-tool".into();
    colliding.push(("Alice, no key", same_caller));
    colliding.push(("Bob, no key", command(BOB, "dup", None, "2026-06", 21)));
    colliding.push((
        "Bob, new key",
        command(BOB, "dup", Some("kx"), "2026-06", 22),
    ));
    // An expired holder's key would be released by an admission: not by a refused one.
    colliding.push((
        "Alice, expired holder's key",
        command(ALICE, "dup", Some("ke"), "2026-07", 200),
    ));
    for (who, cmd) in &colliding {
        match store.create(cmd) {
            Err(StoreError::Duplicate { task_id }) => same(
                &format!("create of an existing id ({who}): Duplicate names"),
                task_id.as_str(),
                "dup",
            )?,
            other => {
                return Err(format!(
                    "create of existing task id dup ({who}): expected Err(Duplicate), got {other:?}"
                ));
            }
        }
        same_record(
            &format!("after a colliding create ({who})"),
            &original_record,
            store.read("dup").map_err(store_err("read"))?.as_ref(),
        )?;
    }
    same_record(
        "the expired holder after a refused create with its key",
        &holder,
        store.read("holder").map_err(store_err("read"))?.as_ref(),
    )?;
    // The refused creates bound no key: Bob's kx is free for any request.
    create_ok(
        store,
        &command(BOB, "kx-task", Some("kx"), "2026-12", 30),
        Decision::AcceptTask,
    )?;
    // The original's outbox entry is intact, with its own request.
    let claims = store.claim("w", 300, 100, 10).map_err(store_err("claim"))?;
    let claim = claims
        .iter()
        .find(|claim| claim.task_id == "dup")
        .ok_or("task dup: its outbox entry is gone after colliding creates")?;
    same_claim(
        claim,
        &OutboxClaim {
            task_id: "dup".into(),
            auth_key: ALICE.into(),
            request: original.request.clone(),
            attempt: 1,
            lease_expires_at_ms: 400,
            task_version: 1,
            task_status: TaskStatus::Working,
        },
    )?;
    same(
        "one outbox entry per task",
        claims.iter().filter(|claim| claim.task_id == "dup").count(),
        1,
    )?;
    Ok(original_record)
}

/// A colliding id anywhere in an import batch refuses all of it.
fn imports_of_existing_ids(
    store: &dyn TaskStore,
    original_record: &TaskRecord,
) -> Result<(), String> {
    let fresh_one = command(CAROL, "imp-1", None, "2026-06", 40).admission_record(
        crate::contract::request_digest("tools/call", "export", None),
    );
    let fresh_two = command(CAROL, "imp-2", Some("ki"), "2026-06", 41).admission_record(
        crate::contract::request_digest("tools/call", "export", None),
    );
    let mut impostor = original_record.clone();
    impostor.auth_key = CAROL.into();
    impostor.status_message = Some("overwritten".into());
    let batches: [(&str, Vec<TaskRecord>); 3] = [
        (
            "existing id last",
            vec![fresh_one.clone(), fresh_two.clone(), impostor.clone()],
        ),
        (
            "existing id first",
            vec![impostor.clone(), fresh_one.clone(), fresh_two.clone()],
        ),
        (
            "the same id twice",
            vec![fresh_one.clone(), fresh_two.clone(), fresh_one.clone()],
        ),
    ];
    for (what, batch) in &batches {
        if store.import(batch).is_ok() {
            return Err(format!("import ({what}): accepted a colliding task id"));
        }
        for id in ["imp-1", "imp-2"] {
            if let Some(written) = store.read(id).map_err(store_err("read"))? {
                return Err(format!(
                    "import ({what}) refused, yet task {id} was written: {written:?}"
                ));
            }
        }
        same_record(
            &format!("after a refused import ({what})"),
            original_record,
            store.read("dup").map_err(store_err("read"))?.as_ref(),
        )?;
    }
    // Nothing of the refused batches lingers: the same records import cleanly, and the
    // key they carry was not left bound.
    store
        .import(&[fresh_one.clone(), fresh_two.clone()])
        .map_err(store_err("import after refusals"))?;
    same_record(
        "imported after refusals",
        &fresh_two,
        store.read("imp-2").map_err(store_err("read"))?.as_ref(),
    )?;
    Ok(())
}
