//! Bounds at their edges: list pages, claims and sweeps, the point of no return.

use super::*;

/// One list call, failing on a store error or a decision other than `LIST_TENANT_FILTERED`.
pub(super) fn list_once(
    store: &dyn TaskStore,
    caller: &str,
    cursor: Option<String>,
    limit: usize,
    now_ms: u64,
) -> Result<crate::store::ListPage, String> {
    let page = store
        .list(&ListQuery {
            negotiated: Negotiated::FULL,
            caller: caller.into(),
            cursor,
            limit,
            now_ms,
        })
        .map_err(store_err("list"))?;
    same(
        &format!("list of {caller}, limit {limit}: decision"),
        page.decision,
        Decision::ListTenantFiltered,
    )?;
    Ok(page)
}

/// Walks `caller`'s list with `limit` and compares every page with `pages` (task ids),
/// every listed record with the stored one, and the cursors: one after every page but
/// the last, none after the last.
pub(super) fn pages_are(
    store: &dyn TaskStore,
    caller: &str,
    limit: usize,
    now_ms: u64,
    pages: &[&[&str]],
) -> Result<(), String> {
    let mut cursor = None;
    for (number, want) in pages.iter().enumerate() {
        let what = format!("list of {caller} at {now_ms}, limit {limit}, page {number}");
        let page = list_once(store, caller, cursor.take(), limit, now_ms)?;
        let got: Vec<&str> = page
            .tasks
            .iter()
            .map(|task| task.task_id.as_str())
            .collect();
        if got != *want {
            let at = got
                .iter()
                .zip(want.iter())
                .take_while(|(g, w)| g == w)
                .count();
            return Err(format!(
                "{what}: expected {} tasks, got {}; first difference at position {at}: \
                 expected {:?}, got {:?}",
                want.len(),
                got.len(),
                want.get(at),
                got.get(at)
            ));
        }
        for task in &page.tasks {
            let stored = store.read(&task.task_id).map_err(store_err("read"))?;
            match stored {
                Some(stored) => {
                    same_record(&format!("{what}: listed record"), &stored, Some(task))?
                }
                None => {
                    return Err(format!(
                        "{what}: lists {}, which is not stored",
                        task.task_id
                    ));
                }
            }
        }
        let last = number + 1 == pages.len();
        match (&page.next_cursor, last) {
            (Some(_), true) => {
                return Err(format!(
                    "{what}: the last page ({} tasks) has a next cursor",
                    page.tasks.len()
                ));
            }
            (None, false) => {
                return Err(format!(
                    "{what}: no next cursor, but {} more page(s) follow",
                    pages.len() - number - 1
                ));
            }
            _ => cursor = page.next_cursor,
        }
    }
    Ok(())
}

pub(super) fn list_page_edges(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let admit = |caller: &str, id: &str, at: u64, ttl_ms: Option<u64>| {
        let mut cmd = command(caller, id, None, "2026-06", at);
        cmd.ttl_ms = ttl_ms;
        cmd.admission_record(cmd.request.digest())
    };
    // Listed order is (created_at_ms, task_id): a0 a1 a2 ax a3 a4; ax expires at 300.
    let mut records = vec![
        admit(ALICE, "a3", 102, None),
        admit(ALICE, "a1", 100, None),
        admit(ALICE, "ax", 101, Some(199)),
        admit(ALICE, "a0", 100, None),
        admit(ALICE, "a4", 103, None),
        admit(ALICE, "a2", 101, None),
        admit(BOB, "b0", 100, None),
        admit(BOB, "b1", 100, None),
        // Last in order, expires at 300: at 300 a page ending at b1 is the last one.
        admit(BOB, "bx", 101, Some(199)),
    ];
    // One more than a page can ever hold, for the clamp.
    records.extend((0..=LIST_LIMIT_MAX).map(|n| admit(CAROL, &format!("c{n:04}"), 50, None)));
    store.import(&records).map_err(store_err("import"))?;
    let alive: &[&str] = &["a0", "a1", "a2", "a3", "a4"];
    let with_ax: &[&str] = &["a0", "a1", "a2", "ax", "a3", "a4"];
    // At 300 ax has expired (now == expires_at); at 299 it has not.
    pages_are(
        &*store,
        ALICE,
        0,
        300,
        &[&["a0"], &["a1"], &["a2"], &["a3"], &["a4"]],
    )?;
    pages_are(
        &*store,
        ALICE,
        1,
        300,
        &[&["a0"], &["a1"], &["a2"], &["a3"], &["a4"]],
    )?;
    pages_are(
        &*store,
        ALICE,
        2,
        300,
        &[&["a0", "a1"], &["a2", "a3"], &["a4"]],
    )?;
    pages_are(
        &*store,
        ALICE,
        4,
        300,
        &[&["a0", "a1", "a2", "a3"], &["a4"]],
    )?;
    pages_are(&*store, ALICE, 5, 300, &[alive])?;
    pages_are(&*store, ALICE, 6, 300, &[alive])?;
    pages_are(&*store, ALICE, 6, 299, &[with_ax])?;
    pages_are(
        &*store,
        ALICE,
        3,
        299,
        &[&["a0", "a1", "a2"], &["ax", "a3", "a4"]],
    )?;
    pages_are(
        &*store,
        ALICE,
        2,
        299,
        &[&["a0", "a1"], &["a2", "ax"], &["a3", "a4"]],
    )?;
    pages_are(&*store, BOB, 2, 300, &[&["b0", "b1"]])?;
    pages_are(&*store, BOB, 1, 300, &[&["b0"], &["b1"]])?;
    pages_are(&*store, BOB, 2, 299, &[&["b0", "b1"], &["bx"]])?;
    pages_are(&*store, BOB, 3, 299, &[&["b0", "b1", "bx"]])?;
    pages_are(&*store, "tenant-d/dave", 10, 300, &[&[]])?;
    pages_are(&*store, "tenant-d/dave", 0, 300, &[&[]])?;
    // The clamp: LIST_LIMIT_MAX at most, whatever is asked; the one left over follows.
    let carol: Vec<String> = (0..=LIST_LIMIT_MAX).map(|n| format!("c{n:04}")).collect();
    let carol: Vec<&str> = carol.iter().map(String::as_str).collect();
    for limit in [LIST_LIMIT_MAX, LIST_LIMIT_MAX + 1, usize::MAX] {
        pages_are(
            &*store,
            CAROL,
            limit,
            300,
            &[&carol[..LIST_LIMIT_MAX], &carol[LIST_LIMIT_MAX..]],
        )?;
    }
    pages_are(
        &*store,
        CAROL,
        LIST_LIMIT_MAX - 1,
        300,
        &[&carol[..LIST_LIMIT_MAX - 1], &carol[LIST_LIMIT_MAX - 1..]],
    )?;
    Ok("limits 0, 1, 2, 4, N, N+1, MAX-1, MAX, MAX+1, usize::MAX; empty list; expiry at now == expires_at, mid-list and at a page's tail".into())
}

/// Four tasks with unusual requests (hostile arguments, no arguments, `null` arguments,
/// a non-ASCII tool name), one moved to `input_required` before its first claim: their
/// commands, the moved record, and every task as stored.
fn stored_for_claims(
    store: &dyn TaskStore,
    base_ms: u64,
) -> Result<([CreateCommand; 4], TaskRecord, Vec<TaskRecord>), String> {
    let mut rich = command(ALICE, "q-rich", Some("k"), "2026-06", base_ms);
    rich.request.arguments = Some(hostile_arguments());
    let mut other = command(BOB, "q-other", None, "2026-07", base_ms + 1);
    other.request.name = "другой-tool".into();
    other.request.arguments = None;
    let mut moved = command(ALICE, "q-moved", None, "2026-08", base_ms + 2);
    moved.request.arguments = Some(json!({ "list": [null, { "n": i64::MIN }], "s": "ü" }));
    // `arguments: null` is a request of its own (its digest differs from absent arguments):
    // a claim must carry it as null, not drop it.
    let mut null = command(CAROL, "q-null", None, "2026-09", base_ms + 3);
    null.request.arguments = Some(serde_json::Value::Null);
    let commands = [rich, other, moved, null];
    for cmd in &commands {
        create_ok(store, cmd, Decision::AcceptTask)?;
    }
    // q-moved changes before its first claim: a claim carries the task as it is now.
    let moved_record = store
        .read("q-moved")
        .map_err(store_err("read"))?
        .ok_or("task vanished")?;
    let moved_record = apply_exactly(
        store,
        &moved_record,
        &step(
            "q-moved",
            1,
            TaskStatus::InputRequired,
            None,
            None,
            base_ms + 3,
        ),
        base_ms + 3,
    )?;
    let mut stored: Vec<TaskRecord> = Vec::new();
    for cmd in &commands {
        stored.push(
            store
                .read(&cmd.task_id)
                .map_err(store_err("read"))?
                .ok_or("task vanished")?,
        );
    }
    Ok((commands, moved_record, stored))
}

fn expected_claim(
    command: &CreateCommand,
    attempt: u32,
    lease_expires_at_ms: u64,
    record: &TaskRecord,
) -> OutboxClaim {
    OutboxClaim {
        task_id: record.task_id.clone(),
        auth_key: command.caller.clone(),
        request: command.request.clone(),
        attempt,
        lease_expires_at_ms,
        task_version: record.version,
        task_status: record.status,
    }
}

/// The claims of one round are exactly `want`, field by field.
fn check_claim_round(claims: &[OutboxClaim], want: &[OutboxClaim]) -> Result<(), String> {
    let mut ids: Vec<_> = claims.iter().map(|c| c.task_id.as_str()).collect();
    ids.sort_unstable();
    let mut want_ids: Vec<_> = want.iter().map(|c| c.task_id.as_str()).collect();
    want_ids.sort_unstable();
    same("claimed task ids", ids, want_ids)?;
    for want in want {
        let got = claims
            .iter()
            .find(|claim| claim.task_id == want.task_id)
            .expect("ids compared above");
        same_claim(got, want)?;
    }
    Ok(())
}

pub(super) fn claims_carry_what_was_stored(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let base_ms = 1_700_000_000_000;
    let (commands, moved_record, mut stored) = stored_for_claims(&*store, base_ms)?;
    let expect = |at: usize, attempt: u32, now_ms: u64, lease_ms: u64, record: &TaskRecord| {
        expected_claim(&commands[at], attempt, now_ms + lease_ms, record)
    };
    let claim_all = |now_ms: u64, lease_ms: u64| {
        store
            .claim("w-data", now_ms, lease_ms, 10)
            .map_err(store_err("claim"))
    };
    // Attempt 1.
    let now_ms = base_ms + 10;
    let first = claim_all(now_ms, 50)?;
    check_claim_round(
        &first,
        &(0..commands.len())
            .map(|at| expect(at, 1, now_ms, 50, &stored[at]))
            .collect::<Vec<_>>(),
    )?;
    same(
        "a leased entry is not claimed one millisecond before its lease ends",
        claim_all(now_ms + 49, 50)?.len(),
        0,
    )?;
    // Attempt 2, at exactly the lease's end; q-rich completed meanwhile.
    let rich_done = apply_exactly(
        &*store,
        &stored[0],
        &step(
            "q-rich",
            1,
            TaskStatus::Completed,
            Some(rich_outcome()),
            None,
            now_ms + 20,
        ),
        now_ms + 20,
    )?;
    stored[0] = rich_done;
    let now_ms = now_ms + 50;
    let second = claim_all(now_ms, 1_000)?;
    check_claim_round(
        &second,
        &(0..commands.len())
            .map(|at| expect(at, 2, now_ms, 1_000, &stored[at]))
            .collect::<Vec<_>>(),
    )?;
    // Attempt 3 after release_expired_leases at exactly the lease's end; q-moved back to
    // working; q-other acked by its current attempt, so it is not redelivered (q-rich,
    // q-moved and q-null are).
    same(
        "ack q-other, attempt 2",
        store
            .ack("q-other", 2, now_ms + 1)
            .map_err(store_err("ack"))?,
        true,
    )?;
    stored[2] = apply_exactly(
        &*store,
        &moved_record,
        &step(
            "q-moved",
            2,
            TaskStatus::Working,
            None,
            Some("resumed"),
            now_ms + 2,
        ),
        now_ms + 2,
    )?;
    same(
        "leases released at exactly their end",
        store
            .release_expired_leases(now_ms + 1_000)
            .map_err(store_err("release"))?,
        3,
    )?;
    let now_ms = now_ms + 1_000;
    let third = claim_all(now_ms, 7)?;
    check_claim_round(
        &third,
        &[0, 2, 3]
            .into_iter()
            .map(|at| expect(at, 3, now_ms, 7, &stored[at]))
            .collect::<Vec<_>>(),
    )?;
    same(
        "an old attempt cannot ack",
        store
            .ack("q-rich", 2, now_ms + 1)
            .map_err(store_err("ack"))?,
        false,
    )?;
    Ok("every claim field over attempts 1, 2, 3, with transitions between claims".into())
}

pub(super) fn claim_and_sweep_bounds(factory: &dyn StoreFactory) -> Result<String, String> {
    let count = claim_bounds(factory)?;
    sweep_in_expiry_order(factory)?;
    sweep_crowded(factory)?;
    Ok(format!(
        "claim max 0, 1, {}, usize::MAX over {count} entries; leases at their end; sweep max 0, 1, 2 (3 due), usize::MAX in expiry order",
        CLAIM_BATCH_MAX + 10
    ))
}

/// Claims with max 0, 1, more than [`CLAIM_BATCH_MAX`] and `usize::MAX`, and redelivery
/// at a lease's end; returns how many entries it claimed over.
fn claim_bounds(factory: &dyn StoreFactory) -> Result<usize, String> {
    let store = fresh(factory)?;
    let count = CLAIM_BATCH_MAX + 1;
    let ids: Vec<String> = (0..count).map(|n| format!("cb{n:03}")).collect();
    for (n, id) in ids.iter().enumerate() {
        create_ok(
            &*store,
            &command(ALICE, id, None, "2026-06", 1_000 + n as u64),
            Decision::AcceptTask,
        )?;
    }
    same(
        "claim with max 0",
        claimed_ids(
            &store
                .claim("w", 2_000, 100, 0)
                .map_err(store_err("claim"))?,
        ),
        Vec::<String>::new(),
    )?;
    let one = store
        .claim("w", 2_000, 100, 1)
        .map_err(store_err("claim"))?;
    same(
        "claim with max 1: the oldest entry, first attempt (max 0 consumed nothing)",
        one.iter()
            .map(|c| (c.task_id.as_str(), c.attempt))
            .collect::<Vec<_>>(),
        vec![("cb000", 1)],
    )?;
    let batch = store
        .claim("w", 2_000, 100, CLAIM_BATCH_MAX + 10)
        .map_err(store_err("claim"))?;
    same(
        &format!(
            "claim with max {} (CLAIM_BATCH_MAX + 10)",
            CLAIM_BATCH_MAX + 10
        ),
        claimed_ids(&batch),
        ids[1..].to_vec(),
    )?;
    same(
        "every entry leased: claim with max usize::MAX",
        store
            .claim("w", 2_099, 100, usize::MAX)
            .map_err(store_err("claim"))?
            .len(),
        0,
    )?;
    same(
        "release one millisecond before the leases end",
        store
            .release_expired_leases(2_099)
            .map_err(store_err("release"))?,
        0,
    )?;
    let again = store
        .claim("w", 2_100, 100, usize::MAX)
        .map_err(store_err("claim"))?;
    same(
        "redelivery at the lease's end with max usize::MAX: capped at CLAIM_BATCH_MAX",
        again.len(),
        CLAIM_BATCH_MAX,
    )?;
    if let Some(claim) = again.iter().find(|claim| claim.attempt != 2) {
        return Err(format!(
            "claim of {}: field attempt: expected 2, got {}",
            claim.task_id, claim.attempt
        ));
    }

    Ok(count)
}

fn claimed_ids(claims: &[OutboxClaim]) -> Vec<String> {
    let mut ids: Vec<String> = claims.iter().map(|c| c.task_id.clone()).collect();
    ids.sort_unstable();
    ids
}

/// Sweeping: bounds, order and the expiry edge.
fn sweep_in_expiry_order(factory: &dyn StoreFactory) -> Result<(), String> {
    let sweep = fresh(factory)?;
    for (id, at, ttl_ms) in [
        ("s2", 0, Some(600)),
        ("s0", 0, Some(500)),
        ("s1", 10, Some(490)),
        ("s3", 0, None),
        ("s4", 0, Some(700)),
    ] {
        let mut cmd = command(ALICE, id, None, "2026-06", at);
        cmd.ttl_ms = ttl_ms;
        create_ok(&*sweep, &cmd, Decision::AcceptTask)?;
    }
    let expiry = |id: &str| match id {
        "s0" | "s1" => Some(500),
        "s2" => Some(600),
        "s4" => Some(700),
        _ => None,
    };
    let present = |sweep: &dyn TaskStore| -> Result<BTreeSet<&'static str>, String> {
        let mut left = BTreeSet::new();
        for id in ["s0", "s1", "s2", "s3", "s4"] {
            if sweep.read(id).map_err(store_err("read"))?.is_some() {
                left.insert(id);
            }
        }
        Ok(left)
    };
    // (now, max, how many it must sweep); which of two equally due tasks goes first is
    // the store's choice.
    let steps: [(u64, usize, usize); 6] = [
        (499, 10, 0),
        (500, 0, 0),
        (500, 1, 1),
        (600, 1, 1),
        (600, usize::MAX, 1),
        (u64::from(u32::MAX), usize::MAX, 1),
    ];
    let mut before = present(&*sweep)?;
    for (now_ms, max, swept) in steps {
        let what = format!("sweep_expired({now_ms}, {max})");
        same(
            &format!("{what}: swept"),
            sweep
                .sweep_expired(now_ms, max)
                .map_err(store_err("sweep"))?,
            swept,
        )?;
        let after = present(&*sweep)?;
        let removed: Vec<_> = before.difference(&after).copied().collect();
        same(&format!("{what}: tasks removed"), removed.len(), swept)?;
        if let Some(live) = removed
            .iter()
            .find(|id| expiry(id).is_none_or(|at| at > now_ms))
        {
            return Err(format!(
                "{what}: removed task {live}, which expires at {:?}",
                expiry(live)
            ));
        }
        before = after;
    }
    same(
        "after every sweep, tasks left",
        before.into_iter().collect::<Vec<_>>(),
        vec!["s3"],
    )?;
    same(
        "only the unexpired task's outbox entry is left",
        claimed_ids(
            &sweep
                .claim("w", 10_000, 10, 10)
                .map_err(store_err("claim"))?,
        ),
        vec!["s3".to_owned()],
    )?;
    Ok(())
}

/// A bounded sweep with more due than it may take: exactly its bound, then the rest.
fn sweep_crowded(factory: &dyn StoreFactory) -> Result<(), String> {
    let crowded = fresh(factory)?;
    for id in ["d0", "d1", "d2"] {
        let mut cmd = command(ALICE, id, None, "2026-06", 0);
        cmd.ttl_ms = Some(100);
        create_ok(&*crowded, &cmd, Decision::AcceptTask)?;
    }
    for (max, swept) in [(2, 2), (2, 1), (2, 0)] {
        same(
            &format!("sweep_expired(200, {max}) with 3 due at first"),
            crowded
                .sweep_expired(200, max)
                .map_err(store_err("sweep"))?,
            swept,
        )?;
    }
    Ok(())
}

/// A declaration of the point of no return, as the runtime writes it.
pub(super) fn declare(
    task_id: &str,
    expected_version: u64,
    effect: &str,
    now_ms: u64,
) -> TransitionCommand {
    TransitionCommand {
        irreversible_effect: Some(effect.into()),
        status_message: Some(crate::store::point_of_no_return_message(effect)),
        ..transition(
            task_id,
            ALICE,
            expected_version,
            TaskStatus::Working,
            now_ms,
        )
    }
}

/// The point of no return: declared once, on a working task, at its version, and a cancel
/// after it acknowledged (2026-07-28, the task then completes at the next version) or
/// applied with a message naming the effect (2025-11-25); a cancel before it wins.
pub(super) fn point_of_no_return(factory: &dyn StoreFactory) -> Result<String, String> {
    use crate::contract::Era;
    let store = fresh(factory)?;
    let effect = "POST https://hooks.example/notify";
    for (task_id, era) in [("p-core", Era::Core2025), ("p-ext", Era::Extension2026)] {
        declare_then_cancel(&*store, task_id, era, effect)?;
    }
    declarations_refused(&*store, effect)?;
    Ok("declared once at its version; 2026-07-28 cancel acknowledged, 2025-11-25 cancel names the effect".into())
}

/// Declared once at its version, then cancelled: acknowledged in 2026-07-28 (the task
/// completes), a cancel naming the effect in 2025-11-25.
fn declare_then_cancel(
    store: &dyn TaskStore,
    task_id: &str,
    era: crate::contract::Era,
    effect: &str,
) -> Result<(), String> {
    use crate::contract::Era;
    create_ok(
        store,
        &CreateCommand {
            era,
            ..command(ALICE, task_id, None, "2026-06", 10)
        },
        Decision::AcceptTask,
    )?;
    let write =
        |command: &TransitionCommand| store.transition(command).map_err(store_err("declare"));
    same(
        "stale declaration",
        write(&declare(task_id, 2, effect, 11))?.decision,
        Decision::BlockStaleVersion,
    )?;
    let declared = write(&declare(task_id, 1, effect, 12))?;
    same("declaration", declared.decision, Decision::ApplyTransition)?;
    let record = declared
        .record
        .ok_or("APPLY_TRANSITION without the record after it")?;
    same(
        "after the declaration",
        (
            record.status,
            record.version,
            record.irreversible_effect.as_deref(),
            record.updated_at_ms,
        ),
        (TaskStatus::Working, 2, Some(effect), 12),
    )?;
    same(
        "its status message",
        record.status_message.clone(),
        Some(crate::store::point_of_no_return_message(effect)),
    )?;
    same(
        "the reply is the stored record",
        store.read(task_id).map_err(store_err("read"))?,
        Some(record),
    )?;
    same(
        "a second declaration",
        write(&declare(task_id, 2, effect, 13))?.decision,
        Decision::BlockIllegalTransition,
    )?;
    let cancelled = store
        .cancel(Negotiated::FULL, ALICE, task_id, 14)
        .map_err(store_err("cancel"))?;
    let stored = store
        .read(task_id)
        .map_err(store_err("read"))?
        .ok_or("the task vanished")?;
    match era {
        Era::Extension2026 => {
            same(
                "cancel past the point",
                cancelled.decision,
                Decision::PastPointOfNoReturn,
            )?;
            same(
                "still working at version 2",
                (stored.status, stored.version),
                (TaskStatus::Working, 2),
            )?;
            let done = store
                .transition(&transition(task_id, ALICE, 2, TaskStatus::Completed, 15))
                .map_err(store_err("complete"))?;
            same(
                "completion after the acknowledged cancel",
                done.decision,
                Decision::ApplyTransition,
            )?;
        }
        Era::Core2025 => {
            same(
                "cancel past the point",
                cancelled.decision,
                Decision::ApplyCancel,
            )?;
            same(
                "the cancelled task says what was started",
                stored.status_message.as_deref(),
                Some(format!("cancelled by the requestor past its point of no return: {effect} was started and is not undone").as_str()),
            )?;
            same(
                "the reply is the stored record",
                cancelled.record.as_ref(),
                Some(&stored),
            )?;
        }
    }
    Ok(())
}

/// A cancel before the point wins it; only a working task declares; another caller's
/// declaration is refused.
fn declarations_refused(store: &dyn TaskStore, effect: &str) -> Result<(), String> {
    // A cancel before the point wins it: the declaration finds the latch.
    create_ok(
        store,
        &command(ALICE, "p-late", None, "2026-06", 20),
        Decision::AcceptTask,
    )?;
    store
        .cancel(Negotiated::FULL, ALICE, "p-late", 21)
        .map_err(store_err("cancel"))?;
    let late = store
        .transition(&declare("p-late", 1, effect, 22))
        .map_err(store_err("declare"))?;
    same(
        "declaration after a cancel",
        late.decision,
        Decision::BlockTerminalRewrite,
    )?;
    // Only a working task declares; another caller's declaration is refused.
    create_ok(
        store,
        &command(ALICE, "p-ask", None, "2026-06", 30),
        Decision::AcceptTask,
    )?;
    store
        .transition(&TransitionCommand {
            status_message: Some("which columns?".into()),
            input_requests: Some(
                serde_json::from_value(json!({ "columns": { "method": "elicitation/create" } }))
                    .expect("a map"),
            ),
            ..transition("p-ask", ALICE, 1, TaskStatus::InputRequired, 31)
        })
        .map_err(store_err("ask"))?;
    let asked = store
        .transition(&declare("p-ask", 2, effect, 32))
        .map_err(store_err("declare"))?;
    same(
        "declaration while input_required",
        asked.decision,
        Decision::BlockIllegalTransition,
    )?;
    let foreign = store
        .transition(&TransitionCommand {
            caller: BOB.into(),
            ..declare("p-late", 1, effect, 33)
        })
        .map_err(store_err("declare"))?;
    same(
        "another caller's declaration",
        foreign.decision,
        Decision::BlockAuth,
    )?;
    Ok(())
}
