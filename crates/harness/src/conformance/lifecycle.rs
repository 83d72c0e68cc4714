//! The store's life: versions, idempotent creation, the outbox and its leases, pagination
//! and cursors, expiry, cancellation, tenant isolation, all-or-nothing import.

use super::*;

pub(super) fn versions_grow_by_one(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let created = create_ok(
        &*store,
        &command(ALICE, "v1", None, "2026-06", 10),
        Decision::AcceptTask,
    )?;
    let record = created.record.ok_or("ACCEPT_TASK without a record")?;
    same(
        "initial status and version",
        (record.status, record.version),
        (TaskStatus::Working, 1),
    )?;
    let steps = [
        (1, TaskStatus::InputRequired, Decision::ApplyTransition),
        (1, TaskStatus::Working, Decision::BlockStaleVersion),
        (
            2,
            TaskStatus::InputRequired,
            Decision::BlockIllegalTransition,
        ),
        (2, TaskStatus::Working, Decision::ApplyTransition),
        (2, TaskStatus::Completed, Decision::BlockStaleVersion),
        (3, TaskStatus::Completed, Decision::ApplyTransition),
        (3, TaskStatus::Completed, Decision::IdempotentTerminal),
        (4, TaskStatus::Failed, Decision::BlockTerminalRewrite),
    ];
    let mut version = 1;
    for (at, (expected_version, next, decision)) in steps.into_iter().enumerate() {
        let now_ms = 20 + at as u64;
        let before = store.read("v1").map_err(store_err("read"))?;
        let answer = store
            .transition(&transition("v1", ALICE, expected_version, next, now_ms))
            .map_err(store_err("transition"))?;
        same(
            &format!("step {at}: {expected_version} -> {next}"),
            answer.decision,
            decision,
        )?;
        let after = store
            .read("v1")
            .map_err(store_err("read"))?
            .ok_or("task vanished")?;
        if decision == Decision::ApplyTransition {
            version += 1;
            same(&format!("step {at}: version"), after.version, version)?;
            same(
                &format!("step {at}: answer is the stored record"),
                answer.record.as_ref(),
                Some(&after),
            )?;
            same(
                &format!("step {at}: updated_at_ms"),
                after.updated_at_ms,
                now_ms,
            )?;
        } else {
            same(
                &format!("step {at}: a refused write changes nothing"),
                Some(after),
                before,
            )?;
        }
    }
    let stored = store
        .read("v1")
        .map_err(store_err("read"))?
        .ok_or("task vanished")?;
    same(
        "final outcome",
        stored.outcome,
        outcome_for(TaskStatus::Completed, "v1"),
    )?;
    Ok(format!("{} writes, final version {version}", steps.len()))
}

pub(super) fn idempotent_creation(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let first = create_ok(
        &*store,
        &command(ALICE, "i1", Some("k"), "2026-06", 10),
        Decision::AcceptTask,
    )?;
    let replay = create_ok(
        &*store,
        &command(ALICE, "i2", Some("k"), "2026-06", 11),
        Decision::ReplayTask,
    )?;
    same("replay returns the first task", replay.record, first.record)?;
    create_ok(
        &*store,
        &command(ALICE, "i3", Some("k"), "2026-07", 12),
        Decision::BlockIdempotencyCollision,
    )?;
    create_ok(
        &*store,
        &command(BOB, "i4", Some("k"), "2026-06", 13),
        Decision::AcceptTask,
    )?;
    create_ok(
        &*store,
        &command(ALICE, "i5", None, "2026-06", 14),
        Decision::AcceptTask,
    )?;
    create_ok(
        &*store,
        &command(ALICE, "i6", None, "2026-06", 15),
        Decision::AcceptTask,
    )?;
    let mut sync = command(ALICE, "i7", Some("k"), "2026-07", 16);
    sync.task_requested = false;
    create_ok(&*store, &sync, Decision::AcceptNormal)?;
    // Keys as clients write them: a tenant path and a counter.
    let hashed = create_ok(
        &*store,
        &command(ALICE, "i8", Some("tenant-a/alice#3"), "2026-06", 17),
        Decision::AcceptTask,
    )?;
    let hashed_replay = create_ok(
        &*store,
        &command(ALICE, "i9", Some("tenant-a/alice#3"), "2026-06", 18),
        Decision::ReplayTask,
    )?;
    same(
        "a key with '#' and '/' replays its task",
        hashed_replay.record,
        hashed.record,
    )?;
    for (id, exists) in [
        ("i1", true),
        ("i2", false),
        ("i3", false),
        ("i4", true),
        ("i5", true),
        ("i6", true),
        ("i7", false),
        ("i8", true),
        ("i9", false),
    ] {
        same(
            &format!("{id} stored"),
            store.read(id).map_err(store_err("read"))?.is_some(),
            exists,
        )?;
    }
    Ok(
        "replay, collision, per-caller keys, keys with '#' and '/', keyless and synchronous calls"
            .into(),
    )
}

pub(super) fn outbox_written_with_task(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let accepted = command(ALICE, "o1", Some("k"), "2026-06", 10);
    create_ok(&*store, &accepted, Decision::AcceptTask)?;
    create_ok(
        &*store,
        &command(ALICE, "o2", Some("k"), "2026-06", 11),
        Decision::ReplayTask,
    )?;
    create_ok(
        &*store,
        &command(ALICE, "o3", Some("k"), "2026-07", 12),
        Decision::BlockIdempotencyCollision,
    )?;
    let mut forbidden = command(ALICE, "o4", None, "2026-06", 13);
    forbidden.task_support = TaskSupport::Forbidden;
    create_ok(&*store, &forbidden, Decision::BlockTaskForbidden)?;
    let mut no_capability = command(ALICE, "o5", None, "2026-06", 14);
    no_capability.negotiated.tools_call = false;
    create_ok(&*store, &no_capability, Decision::BlockCapability)?;
    let mut required_sync = command(ALICE, "o6", None, "2026-06", 15);
    required_sync.task_support = TaskSupport::Required;
    required_sync.task_requested = false;
    create_ok(&*store, &required_sync, Decision::BlockTaskRequired)?;
    let claims = store
        .claim("w1", 100, 1_000, 10)
        .map_err(store_err("claim"))?;
    same(
        "claimed entries",
        claims
            .iter()
            .map(|c| c.task_id.as_str())
            .collect::<Vec<_>>(),
        vec!["o1"],
    )?;
    let claim = &claims[0];
    same("claimed request", &claim.request, &accepted.request)?;
    same("claimed owner", claim.auth_key.as_str(), ALICE)?;
    same(
        "claimed attempt, version, status",
        (claim.attempt, claim.task_version, claim.task_status),
        (1, 1, TaskStatus::Working),
    )?;
    for id in ["o2", "o3", "o4", "o5", "o6"] {
        same(
            &format!("{id} stored"),
            store.read(id).map_err(store_err("read"))?,
            None,
        )?;
    }
    Ok("1 accepted task, 1 entry; 5 refusals and replays, none".into())
}

pub(super) fn leases_redeliver_and_fence_acks(
    factory: &dyn StoreFactory,
) -> Result<String, String> {
    let store = fresh(factory)?;
    lease_redelivers_and_fences(&*store)?;
    leases_released_at_their_end(&*store)?;
    claims_bounded_in_order(&*store)?;
    Ok("lease, redelivery, fenced ack, release, batch order".into())
}

/// A claimed entry is redelivered at its lease's end, and only the current attempt acks, once.
fn lease_redelivers_and_fences(store: &dyn TaskStore) -> Result<(), String> {
    create_ok(
        store,
        &command(ALICE, "l1", None, "2026-06", 10),
        Decision::AcceptTask,
    )?;
    let first = store.claim("w1", 100, 50, 10).map_err(store_err("claim"))?;
    same(
        "first delivery",
        first
            .iter()
            .map(|c| (c.task_id.as_str(), c.attempt, c.lease_expires_at_ms))
            .collect::<Vec<_>>(),
        vec![("l1", 1, 150)],
    )?;
    same(
        "leased entry is not redelivered early",
        store
            .claim("w2", 149, 50, 10)
            .map_err(store_err("claim"))?
            .len(),
        0,
    )?;
    let second = store.claim("w2", 150, 50, 10).map_err(store_err("claim"))?;
    same(
        "redelivery at lease expiry",
        second
            .iter()
            .map(|c| (c.task_id.as_str(), c.attempt))
            .collect::<Vec<_>>(),
        vec![("l1", 2)],
    )?;
    same(
        "stale attempt cannot ack",
        store.ack("l1", 1, 160).map_err(store_err("ack"))?,
        false,
    )?;
    same(
        "current attempt acks",
        store.ack("l1", 2, 161).map_err(store_err("ack"))?,
        true,
    )?;
    same(
        "ack is once",
        store.ack("l1", 2, 162).map_err(store_err("ack"))?,
        false,
    )?;
    same(
        "acked entry never returns",
        store
            .claim("w3", 10_000, 50, 10)
            .map_err(store_err("claim"))?
            .len(),
        0,
    )?;
    Ok(())
}

/// `release_expired_leases` frees a lease at exactly its end.
fn leases_released_at_their_end(store: &dyn TaskStore) -> Result<(), String> {
    create_ok(
        store,
        &command(ALICE, "l2", None, "2026-07", 200),
        Decision::AcceptTask,
    )?;
    store.claim("w1", 200, 10, 10).map_err(store_err("claim"))?;
    same(
        "release before expiry",
        store
            .release_expired_leases(209)
            .map_err(store_err("release"))?,
        0,
    )?;
    same(
        "release at expiry",
        store
            .release_expired_leases(210)
            .map_err(store_err("release"))?,
        1,
    )?;
    let third = store.claim("w2", 205, 10, 10).map_err(store_err("claim"))?;
    same(
        "released entry is claimable",
        third
            .iter()
            .map(|c| (c.task_id.as_str(), c.attempt))
            .collect::<Vec<_>>(),
        vec![("l2", 2)],
    )?;
    same(
        "ack l2",
        store.ack("l2", 2, 206).map_err(store_err("ack"))?,
        true,
    )?;
    Ok(())
}

/// A claim takes at most its bound, oldest first.
fn claims_bounded_in_order(store: &dyn TaskStore) -> Result<(), String> {
    let batch: Vec<_> = (0..5)
        .map(|i| command(BOB, &format!("b{i}"), None, &format!("m{i}"), 300 + i))
        .collect();
    for cmd in &batch {
        create_ok(store, cmd, Decision::AcceptTask)?;
    }
    let claims = store.claim("w4", 400, 100, 3).map_err(store_err("claim"))?;
    same(
        "batch bound and order",
        claims
            .iter()
            .map(|c| c.task_id.as_str())
            .collect::<Vec<_>>(),
        vec!["b0", "b1", "b2"],
    )?;
    Ok(())
}

pub(super) fn pagination_1000_tasks_3_callers(
    factory: &dyn StoreFactory,
) -> Result<String, String> {
    let store = fresh(factory)?;
    let callers = [ALICE, BOB, CAROL];
    let mut expected: [Vec<String>; 3] = Default::default();
    for index in 0..1_000u64 {
        let owner = (index % 3) as usize;
        // Several tasks share a creation time: the task id must break ties.
        let id = format!("p{:04}", (index * 7919) % 1_000);
        create_ok(
            &*store,
            &command(callers[owner], &id, None, "2026-06", index / 5),
            Decision::AcceptTask,
        )?;
        expected[owner].push(id);
    }
    let mut pages = 0;
    for (owner, caller) in callers.iter().enumerate() {
        let mut want: Vec<(u64, String)> = Vec::new();
        for id in &expected[owner] {
            let record = store
                .read(id)
                .map_err(store_err("read"))?
                .ok_or("task vanished")?;
            want.push((record.created_at_ms, id.clone()));
        }
        want.sort();
        let mut seen = Vec::new();
        let mut cursor = None;
        for _ in 0..1_000 {
            let page = store
                .list(&ListQuery {
                    negotiated: Negotiated::FULL,
                    caller: (*caller).into(),
                    cursor: cursor.clone(),
                    limit: 37,
                    now_ms: 500,
                })
                .map_err(store_err("list"))?;
            same("list decision", page.decision, Decision::ListTenantFiltered)?;
            pages += 1;
            if let Some(foreign) = page.tasks.iter().find(|task| task.auth_key != *caller) {
                return Err(format!(
                    "{caller}'s page holds {}'s task {}",
                    foreign.auth_key, foreign.task_id
                ));
            }
            seen.extend(page.tasks.iter().map(|task| task.task_id.clone()));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let unique: BTreeSet<&String> = seen.iter().collect();
        same(
            &format!("{caller}: no duplicates"),
            unique.len(),
            seen.len(),
        )?;
        same(
            &format!("{caller}: every task once, in order"),
            seen,
            want.into_iter().map(|(_, id)| id).collect::<Vec<_>>(),
        )?;
    }
    Ok(format!("1000 tasks, 3 callers, {pages} pages of 37"))
}

pub(super) fn cursors_bound_to_caller(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    for index in 0..5 {
        create_ok(
            &*store,
            &command(ALICE, &format!("c{index}"), None, "2026-06", index),
            Decision::AcceptTask,
        )?;
        create_ok(
            &*store,
            &command(BOB, &format!("d{index}"), None, "2026-06", index),
            Decision::AcceptTask,
        )?;
    }
    let list = |caller: &str, cursor: Option<String>, negotiated: Negotiated| {
        store.list(&ListQuery {
            negotiated,
            caller: caller.into(),
            cursor,
            limit: 2,
            now_ms: 100,
        })
    };
    let first = list(ALICE, None, Negotiated::FULL).map_err(store_err("list"))?;
    let cursor = first
        .next_cursor
        .ok_or("a 2-task page of 5 must have a next cursor")?;
    let own = list(ALICE, Some(cursor.clone()), Negotiated::FULL).map_err(store_err("list"))?;
    same(
        "own cursor",
        own.tasks
            .iter()
            .map(|t| t.task_id.as_str())
            .collect::<Vec<_>>(),
        vec!["c2", "c3"],
    )?;
    let stolen = list(BOB, Some(cursor.clone()), Negotiated::FULL).map_err(store_err("list"))?;
    same(
        "another caller's cursor",
        (stolen.decision, stolen.tasks.len()),
        (Decision::BlockBadCursor, 0),
    )?;
    let tampered = cursor.replacen(".1.", ".0.", 1);
    let edited = list(ALICE, Some(tampered), Negotiated::FULL).map_err(store_err("list"))?;
    same("tampered cursor", edited.decision, Decision::BlockBadCursor)?;
    let garbage =
        list(ALICE, Some("garbage".into()), Negotiated::FULL).map_err(store_err("list"))?;
    same("garbage cursor", garbage.decision, Decision::BlockBadCursor)?;
    let no_list = Negotiated {
        list: false,
        ..Negotiated::FULL
    };
    let refused = list(ALICE, Some("garbage".into()), no_list).map_err(store_err("list"))?;
    same(
        "capability before cursor",
        (refused.decision, refused.tasks.len()),
        (Decision::BlockCapability, 0),
    )?;
    Ok("stolen, tampered and garbage cursors refused".into())
}

pub(super) fn expiry_blocks_late_work_and_sweeps(
    factory: &dyn StoreFactory,
) -> Result<String, String> {
    let store = fresh(factory)?;
    late_work_refused_at_expiry(&*store)?;
    expired_key_released_and_swept(&*store)?;
    Ok("late work refused at expires_at; key released; swept with outbox".into())
}

/// At `expires_at` a task is neither read, completed, cancelled nor listed.
fn late_work_refused_at_expiry(store: &dyn TaskStore) -> Result<(), String> {
    let mut short = command(ALICE, "e1", Some("k"), "2026-06", 0);
    short.ttl_ms = Some(1_000);
    let created = create_ok(store, &short, Decision::AcceptTask)?;
    same(
        "expires_at_ms",
        created.record.and_then(|r| r.expires_at_ms),
        Some(1_000),
    )?;
    create_ok(
        store,
        &command(ALICE, "e0", None, "keep", 0),
        Decision::AcceptTask,
    )?;
    same(
        "get before expiry",
        store
            .get(ALICE, "e1", 999)
            .map_err(store_err("get"))?
            .decision,
        Decision::ReturnStatus,
    )?;
    same(
        "get at expiry",
        store
            .get(ALICE, "e1", 1_000)
            .map_err(store_err("get"))?
            .decision,
        Decision::BlockExpired,
    )?;
    same(
        "result at expiry",
        store
            .result(ALICE, "e1", 1_000)
            .map_err(store_err("result"))?
            .decision,
        Decision::BlockExpired,
    )?;
    let late = store
        .transition(&transition("e1", ALICE, 1, TaskStatus::Completed, 1_000))
        .map_err(store_err("transition"))?;
    same("late completion", late.decision, Decision::BlockExpired)?;
    same(
        "cancel at expiry",
        store
            .cancel(Negotiated::FULL, ALICE, "e1", 1_000)
            .map_err(store_err("cancel"))?
            .decision,
        Decision::BlockExpired,
    )?;
    let page = store
        .list(&ListQuery {
            negotiated: Negotiated::FULL,
            caller: ALICE.into(),
            cursor: None,
            limit: 10,
            now_ms: 1_000,
        })
        .map_err(store_err("list"))?;
    same(
        "expired task not listed",
        page.tasks
            .iter()
            .map(|t| t.task_id.as_str())
            .collect::<Vec<_>>(),
        vec!["e0"],
    )?;
    Ok(())
}

/// An expired task releases its key, and the sweep removes it with its outbox entry.
fn expired_key_released_and_swept(store: &dyn TaskStore) -> Result<(), String> {
    let mut again = command(ALICE, "e2", Some("k"), "2026-06", 1_000);
    again.ttl_ms = Some(1_000);
    create_ok(store, &again, Decision::AcceptTask)?;
    create_ok(
        store,
        &command(ALICE, "e3", Some("k"), "2026-06", 1_001),
        Decision::ReplayTask,
    )?;
    let stored = store
        .read("e1")
        .map_err(store_err("read"))?
        .ok_or("expired task swept too early")?;
    same(
        "expired task unchanged",
        (stored.status, stored.version),
        (TaskStatus::Working, 1),
    )?;
    same(
        "sweep",
        store
            .sweep_expired(1_000, 100)
            .map_err(store_err("sweep"))?,
        1,
    )?;
    same(
        "swept task gone",
        store.read("e1").map_err(store_err("read"))?,
        None,
    )?;
    let claims = store
        .claim("w", 1_500, 100, 10)
        .map_err(store_err("claim"))?;
    let mut claimed: Vec<_> = claims.iter().map(|c| c.task_id.as_str()).collect();
    claimed.sort_unstable();
    same("swept task's outbox entry gone", claimed, vec!["e0", "e2"])?;
    same(
        "second sweep at 2000",
        store
            .sweep_expired(2_000, 100)
            .map_err(store_err("sweep"))?,
        1,
    )?;
    Ok(())
}

pub(super) fn cancel_is_atomic_and_wins(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    cancel_latches(&*store)?;
    worker_cancel(&*store)?;
    Ok("cancel applied atomically, late completions refused".into())
}

/// A cancel is one atomic write that latches: late completions, results and a second cancel see it.
fn cancel_latches(store: &dyn TaskStore) -> Result<(), String> {
    create_ok(
        store,
        &command(ALICE, "x1", None, "2026-06", 10),
        Decision::AcceptTask,
    )?;
    store
        .transition(&transition("x1", ALICE, 1, TaskStatus::InputRequired, 11))
        .map_err(store_err("transition"))?;
    let cancelled = store
        .cancel(Negotiated::FULL, ALICE, "x1", 20)
        .map_err(store_err("cancel"))?;
    same("cancel decision", cancelled.decision, Decision::ApplyCancel)?;
    let record = cancelled
        .record
        .ok_or("APPLY_CANCEL without the record after it")?;
    same(
        "after cancel",
        (
            record.status,
            record.version,
            record.cancel_requested,
            record.updated_at_ms,
        ),
        (TaskStatus::Cancelled, 3, true, 20),
    )?;
    same(
        "the reply is the stored record",
        store.read("x1").map_err(store_err("read"))?,
        Some(record),
    )?;
    for expected_version in [2, 3] {
        let late = store
            .transition(&transition(
                "x1",
                ALICE,
                expected_version,
                TaskStatus::Completed,
                30,
            ))
            .map_err(store_err("transition"))?;
        same(
            "late completion after cancel",
            late.decision,
            Decision::BlockTerminalRewrite,
        )?;
    }
    same(
        "result after cancel",
        store
            .result(ALICE, "x1", 40)
            .map_err(store_err("result"))?
            .decision,
        Decision::ReturnCancelled,
    )?;
    same(
        "second cancel",
        store
            .cancel(Negotiated::FULL, ALICE, "x1", 41)
            .map_err(store_err("cancel"))?
            .decision,
        Decision::AlreadyTerminal,
    )?;
    Ok(())
}

/// A worker may write `cancelled` itself; a cancel needs the capability.
fn worker_cancel(store: &dyn TaskStore) -> Result<(), String> {
    // A worker may write `cancelled` itself: no requestor intent, and the answer is still
    // exactly the stored record.
    create_ok(
        store,
        &command(ALICE, "x2", None, "2026-07", 50),
        Decision::AcceptTask,
    )?;
    let by_worker = store
        .transition(&transition("x2", ALICE, 1, TaskStatus::Cancelled, 51))
        .map_err(store_err("transition"))?;
    same(
        "worker cancel",
        by_worker.decision,
        Decision::ApplyTransition,
    )?;
    let stored = store.read("x2").map_err(store_err("read"))?;
    same(
        "worker cancel: answer is the stored record",
        by_worker.record.as_ref(),
        stored.as_ref(),
    )?;
    same(
        "worker cancel: no requestor intent",
        stored.map(|r| r.cancel_requested),
        Some(false),
    )?;
    let no_cancel = Negotiated {
        cancel: false,
        ..Negotiated::FULL
    };
    same(
        "cancel without capability",
        store
            .cancel(no_cancel, ALICE, "x1", 42)
            .map_err(store_err("cancel"))?
            .decision,
        Decision::BlockCapability,
    )?;
    Ok(())
}

pub(super) fn tenants_are_isolated(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    create_ok(
        &*store,
        &command(ALICE, "a1", Some("k"), "2026-06", 10),
        Decision::AcceptTask,
    )?;
    let answers = [
        ("get", store.get(BOB, "a1", 20).map_err(store_err("get"))?),
        (
            "result",
            store.result(BOB, "a1", 20).map_err(store_err("result"))?,
        ),
        (
            "cancel",
            store
                .cancel(Negotiated::FULL, BOB, "a1", 20)
                .map_err(store_err("cancel"))?,
        ),
        (
            "transition",
            store
                .transition(&transition("a1", BOB, 1, TaskStatus::Completed, 20))
                .map_err(store_err("transition"))?,
        ),
    ];
    for (what, answer) in answers {
        same(
            &format!("{what} by another tenant"),
            (answer.decision, answer.record),
            (Decision::BlockAuth, None),
        )?;
    }
    let missing = store
        .get(BOB, "no-such-task", 20)
        .map_err(store_err("get"))?;
    same(
        "unknown task",
        (missing.decision, missing.record),
        (Decision::BlockNotFound, None),
    )?;
    let page = store
        .list(&ListQuery {
            negotiated: Negotiated::FULL,
            caller: BOB.into(),
            cursor: None,
            limit: 10,
            now_ms: 20,
        })
        .map_err(store_err("list"))?;
    same("another tenant's list", page.tasks.len(), 0)?;
    let stored = store
        .read("a1")
        .map_err(store_err("read"))?
        .ok_or("task vanished")?;
    same(
        "task untouched",
        (stored.status, stored.version),
        (TaskStatus::Working, 1),
    )?;
    Ok("get, result, cancel, transition and list refused across tenants".into())
}

pub(super) fn import_is_all_or_nothing(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let one = command(ALICE, "m1", None, "2026-06", 10).admission_record(
        crate::contract::request_digest("tools/call", "export", None),
    );
    let two = command(ALICE, "m2", None, "2026-06", 10).admission_record(
        crate::contract::request_digest("tools/call", "export", None),
    );
    store
        .import(std::slice::from_ref(&one))
        .map_err(store_err("import"))?;
    match store.import(&[two.clone(), one.clone()]) {
        Err(StoreError::Duplicate { task_id }) => same("duplicate named", task_id.as_str(), "m1")?,
        other => {
            return Err(format!(
                "importing an existing id: expected Duplicate, got {other:?}"
            ));
        }
    }
    same(
        "nothing half-written",
        store.read("m2").map_err(store_err("read"))?,
        None,
    )?;
    Ok("duplicate refused, batch rolled back".into())
}

// ---------------------------------------------------------------------------------------
// Fidelity and edges: every field a store returns is compared with what the contract
// itself constructs (`CreateCommand::admission_record`, `store::applied_transition`,
// `store::cancelled_record`, imported records), at every edge of the store's bounds.
// ---------------------------------------------------------------------------------------
