//! Fidelity: every field a store returns, through every view, equal to what the contract
//! constructs — after a create, each transition, an answer to input, an import.

use super::*;

/// The first field in which `got` differs from `expected`, named with both values.
pub(super) fn record_diff(expected: &TaskRecord, got: &TaskRecord) -> Option<String> {
    crate::check::record_differences(expected, got)
        .into_iter()
        .next()
        .map(|(field, expected, got)| format!("field {field}: expected {expected}, got {got}"))
}

/// `got` is `expected`, field by field; the failure names the task, the view and the field.
pub(super) fn same_record(
    what: &str,
    expected: &TaskRecord,
    got: Option<&TaskRecord>,
) -> Result<(), String> {
    match got {
        None => Err(format!(
            "task {}: {what}: expected the record, got none",
            expected.task_id
        )),
        Some(got) => match record_diff(expected, got) {
            None => Ok(()),
            Some(diff) => Err(format!("task {}: {what}: {diff}", expected.task_id)),
        },
    }
}

/// Every page of `caller`'s list at `now_ms`, followed to the end.
pub(super) fn list_everything(
    store: &dyn TaskStore,
    caller: &str,
    now_ms: u64,
) -> Result<Vec<TaskRecord>, String> {
    let mut tasks = Vec::new();
    let mut cursor = None;
    for _ in 0..10_000 {
        let page = store
            .list(&ListQuery {
                negotiated: Negotiated::FULL,
                caller: caller.into(),
                cursor: cursor.take(),
                limit: LIST_LIMIT_MAX,
                now_ms,
            })
            .map_err(store_err("list"))?;
        same(
            &format!("list of {caller}: decision"),
            page.decision,
            Decision::ListTenantFiltered,
        )?;
        tasks.extend(page.tasks);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(tasks),
        }
    }
    Err(format!("list of {caller}: the cursors never end"))
}

/// Compares every view of a task with `expected`: `read`, and for its owner at `now_ms`
/// `get`, `result` and `list` (decisions as the pure contract gives them for `expected`).
pub(super) fn every_view(
    store: &dyn TaskStore,
    expected: &TaskRecord,
    now_ms: u64,
    when: &str,
) -> Result<(), String> {
    let id = expected.task_id.as_str();
    let owner = expected.auth_key.as_str();
    let read = store.read(id).map_err(store_err("read"))?;
    same_record(&format!("{when}: read"), expected, read.as_ref())?;
    let get = store.get(owner, id, now_ms).map_err(store_err("get"))?;
    same(
        &format!("task {id}: {when}: get decision"),
        get.decision,
        contract::guard_get(owner, Some(expected), now_ms),
    )?;
    same_record(&format!("{when}: get"), expected, get.record.as_ref())?;
    let result = store
        .result(owner, id, now_ms)
        .map_err(store_err("result"))?;
    same(
        &format!("task {id}: {when}: result decision"),
        result.decision,
        contract::guard_result(owner, Some(expected), now_ms),
    )?;
    same_record(&format!("{when}: result"), expected, result.record.as_ref())?;
    let listed = list_everything(store, owner, now_ms)?;
    let found = listed.iter().find(|task| task.task_id == id);
    if expected.is_expired(now_ms) {
        if found.is_some() {
            return Err(format!(
                "task {id}: {when}: listed at {now_ms} although it expired at {:?}",
                expected.expires_at_ms
            ));
        }
    } else {
        same_record(&format!("{when}: list"), expected, found)?;
    }
    Ok(())
}

/// Arguments that punish a lossy encoding: nesting, nulls beside absent keys, unicode,
/// escapes, integers beyond 2^53 and at the edges of i64/u64, floats, a long string.
pub(super) fn hostile_arguments() -> Value {
    let mut deep = json!({ "bottom": [null, 0, "", {}] });
    for level in 0..40 {
        deep = json!({ format!("level{level}"): deep, "null_here": null });
    }
    json!({
        "month": "2026-06",
        "nested": { "a": { "b": [1, { "x": null, "y": [true, false, null] }, [], {}] } },
        "explicit_null": null,
        "unicode": "Grüße, 世界, 🚀 — \"quoted\" \\ back\nline\ttab \u{1b}",
        "ключ 🔑": "значение",
        "u64_max": u64::MAX,
        "i64_min": i64::MIN,
        "beyond_2_53": 9_007_199_254_740_993u64,
        "float": 0.1,
        "huge_float": 1.5e300,
        "tiny_float": 5e-324,
        "negative": -42,
        "empty_string": "",
        "empty_array": [],
        "empty_object": {},
        "long": "x".repeat(10_000),
        "deep": deep,
    })
}

/// The creates of the fidelity checks: every optional field both set and unset.
pub(super) fn varied_commands(base_ms: u64) -> Vec<CreateCommand> {
    let mut rich = command(ALICE, "f-rich", Some("key ü/1 🔑"), "2026-06", base_ms);
    rich.request.arguments = Some(hostile_arguments());
    rich.ttl_ms = Some(86_400_000);
    rich.poll_interval_ms = Some(1_234);
    rich.correlation_id = "corr-Ω-😀-…".into();
    let mut bare = command(BOB, "f-bare", None, "unused", base_ms + 1);
    bare.request = WrappedRequest {
        method: "tools/call".into(),
        name: "noop_tool-ä".into(),
        arguments: None,
    };
    bare.ttl_ms = None;
    bare.poll_interval_ms = None;
    let mut scalar = command(ALICE, "f-scalar", Some("k2"), "unused", base_ms + 2);
    scalar.request.arguments = Some(json!([1, "two", null, 3.5]));
    scalar.ttl_ms = Some(1);
    scalar.poll_interval_ms = Some(0);
    scalar.correlation_id = String::new();
    let mut empty = command(CAROL, "f-empty", Some("k3"), "unused", base_ms + 2);
    empty.request.arguments = Some(json!({}));
    empty.ttl_ms = Some(u64::from(u32::MAX) * 4);
    empty.poll_interval_ms = Some(u64::from(u32::MAX) + 1);
    // 2026-07-28: answers given at admission (multi round-trip input) are kept; an empty
    // set of answers is none.
    let mut modern = command(BOB, "f-modern", Some("m#1"), "2026-06", base_ms + 2);
    modern.era = crate::contract::Era::Extension2026;
    modern.ttl_ms = Some(1_234);
    modern.poll_interval_ms = Some(250);
    modern.input_responses =
        json!({ "confirm": { "action": "accept", "content": { "ok": true } } })
            .as_object()
            .cloned();
    let mut modern_empty = command(CAROL, "f-modern-empty", None, "2026-06", base_ms + 1);
    modern_empty.era = crate::contract::Era::Extension2026;
    modern_empty.poll_interval_ms = Some(7);
    modern_empty.input_responses = Some(serde_json::Map::new());
    vec![rich, bare, scalar, empty, modern, modern_empty]
}

pub(super) fn created_records_round_trip(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let base_ms = 1_700_000_000_000;
    let commands = varied_commands(base_ms);
    let mut expected = Vec::new();
    for cmd in &commands {
        let want = cmd.admission_record(cmd.request.digest());
        let answer = create_ok(&*store, cmd, Decision::AcceptTask)?;
        same_record("create answer", &want, answer.record.as_ref())?;
        expected.push(want);
    }
    let view_ms = base_ms + 2;
    for want in &expected {
        every_view(&*store, want, view_ms, "after create")?;
    }
    for (cmd, want) in commands.iter().zip(&expected) {
        if cmd.idempotency_key.is_none() {
            continue;
        }
        let mut again = cmd.clone();
        again.task_id = format!("{}-again", cmd.task_id);
        again.now_ms = view_ms;
        let replay = store.create(&again).map_err(store_err("replay"))?;
        same(
            &format!("task {}: replay decision", want.task_id),
            replay.decision,
            Decision::ReplayTask,
        )?;
        same_record("replay answer", want, replay.record.as_ref())?;
    }
    let claims = store
        .claim("w-fidelity", view_ms, 30_000, 10)
        .map_err(store_err("claim"))?;
    same("claimed entries", claims.len(), commands.len())?;
    for (cmd, want) in commands.iter().zip(&expected) {
        let claim = claims
            .iter()
            .find(|claim| claim.task_id == want.task_id)
            .ok_or_else(|| format!("task {}: no outbox claim after create", want.task_id))?;
        same_claim(
            claim,
            &OutboxClaim {
                task_id: want.task_id.clone(),
                auth_key: want.auth_key.clone(),
                request: cmd.request.clone(),
                attempt: 1,
                lease_expires_at_ms: view_ms + 30_000,
                task_version: 1,
                task_status: TaskStatus::Working,
            },
        )?;
    }
    Ok(format!(
        "{} creates: answer, read, get, result, list, replay and claim equal the admission record",
        commands.len()
    ))
}

/// `got` is `expected`, field by field.
pub(super) fn same_claim(got: &OutboxClaim, expected: &OutboxClaim) -> Result<(), String> {
    let id = &expected.task_id;
    same(&format!("claim of {id}: field task_id"), &got.task_id, id)?;
    same(
        &format!("claim of {id}: field auth_key"),
        &got.auth_key,
        &expected.auth_key,
    )?;
    same(
        &format!("claim of {id}: field request.method"),
        &got.request.method,
        &expected.request.method,
    )?;
    same(
        &format!("claim of {id}: field request.name"),
        &got.request.name,
        &expected.request.name,
    )?;
    if got.request.arguments != expected.request.arguments {
        return Err(format!(
            "claim of {id}: field request.arguments: {}",
            value_diff(
                "arguments",
                expected.request.arguments.as_ref(),
                got.request.arguments.as_ref()
            )
        ));
    }
    same(
        &format!("claim of {id}: field attempt"),
        got.attempt,
        expected.attempt,
    )?;
    same(
        &format!("claim of {id}: field lease_expires_at_ms"),
        got.lease_expires_at_ms,
        expected.lease_expires_at_ms,
    )?;
    same(
        &format!("claim of {id}: field task_version"),
        got.task_version,
        expected.task_version,
    )?;
    same(
        &format!("claim of {id}: field task_status"),
        got.task_status,
        expected.task_status,
    )
}

/// Where two JSON values first differ, as a path with both values (long values cut).
pub(super) fn value_diff(path: &str, expected: Option<&Value>, got: Option<&Value>) -> String {
    let cut = |value: Option<&Value>| {
        let text = value.map_or("(absent)".to_owned(), Value::to_string);
        if text.len() > 120 {
            format!("{}…", &text[..text.floor_char_boundary(120)])
        } else {
            text
        }
    };
    match (expected, got) {
        (Some(Value::Object(want)), Some(Value::Object(have))) => {
            for (key, value) in want {
                if have.get(key) != Some(value) {
                    return value_diff(&format!("{path}.{key}"), Some(value), have.get(key));
                }
            }
            for (key, value) in have {
                if !want.contains_key(key) {
                    return value_diff(&format!("{path}.{key}"), None, Some(value));
                }
            }
            format!("at {path}: objects differ")
        }
        (Some(Value::Array(want)), Some(Value::Array(have))) if want.len() == have.len() => {
            for (at, (want, have)) in want.iter().zip(have).enumerate() {
                if want != have {
                    return value_diff(&format!("{path}[{at}]"), Some(want), Some(have));
                }
            }
            format!("at {path}: arrays differ")
        }
        _ => format!("at {path}: expected {}, got {}", cut(expected), cut(got)),
    }
}

/// A transition command with an explicit outcome and status message.
pub(super) fn step(
    task_id: &str,
    expected_version: u64,
    next: TaskStatus,
    outcome: Option<TaskOutcome>,
    status_message: Option<&str>,
    now_ms: u64,
) -> TransitionCommand {
    TransitionCommand {
        irreversible_effect: None,
        task_id: task_id.into(),
        caller: ALICE.into(),
        expected_version,
        next,
        outcome,
        status_message: status_message.map(str::to_owned),
        now_ms,
        input_requests: None,
    }
}

/// Applies `command`, expecting `APPLY_TRANSITION` and exactly the record
/// [`store::applied_transition`](crate::store::applied_transition) constructs, in the
/// answer and in every view. Returns that record.
pub(super) fn apply_exactly(
    store: &dyn TaskStore,
    before: &TaskRecord,
    command: &TransitionCommand,
    view_ms: u64,
) -> Result<TaskRecord, String> {
    let want = applied_transition(before, command);
    let when = format!(
        "after {} -> {} (v{})",
        before.status, command.next, command.expected_version
    );
    let answer = store.transition(command).map_err(store_err("transition"))?;
    same(
        &format!("task {}: {when}: decision", before.task_id),
        answer.decision,
        Decision::ApplyTransition,
    )?;
    same_record(&format!("{when}: answer"), &want, answer.record.as_ref())?;
    every_view(store, &want, view_ms, &when)?;
    Ok(want)
}

pub(super) fn rich_outcome() -> TaskOutcome {
    TaskOutcome::Result {
        result: json!({
            "content": [{ "type": "text", "text": "fertig ✓ — 完成" }],
            "structuredContent": hostile_arguments(),
            "isError": false,
        }),
    }
}

pub(super) fn transitions_round_trip(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let base_ms = 1_700_000_000_000;
    let admitted = admit_for_transitions(&*store, base_ms)?;
    let view_ms = base_ms + 1_000;
    let mut steps = lifecycle_writes(&*store, &admitted, base_ms, view_ms)?;
    for command in &terminal_writes(base_ms) {
        apply_exactly(
            &*store,
            &by_id(&admitted, &command.task_id),
            command,
            view_ms,
        )?;
        steps += 1;
    }
    steps += question_writes(&*store, &admitted, base_ms, view_ms)?;
    steps += cancel_writes(&*store, &admitted, base_ms, view_ms)?;
    Ok(format!(
        "{steps} applied writes: answer, read, get, result and list equal applied_transition / cancelled_record"
    ))
}

/// The tasks [`transitions_round_trip`] writes to, admitted with hostile arguments.
fn admit_for_transitions(store: &dyn TaskStore, base_ms: u64) -> Result<Vec<TaskRecord>, String> {
    let mut admitted = Vec::new();
    for (at, id) in [
        "t-complete",
        "t-rpc-data",
        "t-rpc-bare",
        "t-rpc-null",
        "t-failed-result",
        "t-worker-cancel",
        "t-completed-bare",
        "t-cancel",
        "t-cancel-input",
        "t-input-message",
        "t-failed-input",
        "t-completed-input",
    ]
    .into_iter()
    .enumerate()
    {
        let mut cmd = command(ALICE, id, Some(id), "2026-06", base_ms + at as u64);
        cmd.ttl_ms = Some(3_600_000);
        cmd.request.arguments = Some(hostile_arguments());
        let answer = create_ok(store, &cmd, Decision::AcceptTask)?;
        let record = answer.record.ok_or("ACCEPT_TASK without a record")?;
        admitted.push(record);
    }
    Ok(admitted)
}

/// The admitted record of `id`.
fn by_id(admitted: &[TaskRecord], id: &str) -> TaskRecord {
    admitted
        .iter()
        .find(|record| record.task_id == id)
        .cloned()
        .expect("admitted above")
}

/// working -> input_required (message) -> working (no message: kept; a clock running
/// backwards: updated_at stays) -> completed (rich outcome, new message).
fn lifecycle_writes(
    store: &dyn TaskStore,
    admitted: &[TaskRecord],
    base_ms: u64,
    view_ms: u64,
) -> Result<usize, String> {
    let (mut record, mut steps) = (by_id(admitted, "t-complete"), 0);
    for command in [
        step(
            "t-complete",
            1,
            TaskStatus::InputRequired,
            None,
            Some("waiting for the user: ✋ «ok?»"),
            base_ms + 500,
        ),
        step(
            "t-complete",
            2,
            TaskStatus::Working,
            None,
            None,
            base_ms + 400,
        ),
        step(
            "t-complete",
            3,
            TaskStatus::Completed,
            Some(rich_outcome()),
            Some("done"),
            base_ms + 600,
        ),
    ] {
        record = apply_exactly(store, &record, &command, view_ms)?;
        steps += 1;
    }
    Ok(steps)
}

/// One write to a terminal status of each outcome shape.
fn terminal_writes(base_ms: u64) -> [TransitionCommand; 6] {
    [
        step(
            "t-rpc-data",
            1,
            TaskStatus::Failed,
            Some(TaskOutcome::RpcError {
                code: -32_603,
                message: "internal error: ünïcödé ⚠".into(),
                data: Some(json!({ "trace": ["a", "b"], "n": u64::MAX, "none": null })),
            }),
            Some("the tool crashed"),
            base_ms + 700,
        ),
        step(
            "t-rpc-bare",
            1,
            TaskStatus::Failed,
            Some(TaskOutcome::RpcError {
                code: i64::MIN,
                message: String::new(),
                data: None,
            }),
            None,
            base_ms + 701,
        ),
        // `data: null` is no data: written, answered and read back as none everywhere.
        step(
            "t-rpc-null",
            1,
            TaskStatus::Failed,
            Some(TaskOutcome::RpcError {
                code: -32_000,
                message: "no detail".into(),
                data: Some(Value::Null),
            }),
            None,
            base_ms + 701,
        ),
        step(
            "t-failed-result",
            1,
            TaskStatus::Failed,
            outcome_for(TaskStatus::Failed, "t-failed-result"),
            Some("isError"),
            base_ms + 702,
        ),
        step(
            "t-worker-cancel",
            1,
            TaskStatus::Cancelled,
            None,
            Some("the worker gave up"),
            base_ms + 703,
        ),
        step(
            "t-completed-bare",
            1,
            TaskStatus::Completed,
            Some(TaskOutcome::Result {
                result: Value::Null,
            }),
            None,
            base_ms + 704,
        ),
    ]
}

/// Questions: hostile ones asked, then working again with a new message (questions
/// cleared); failed from input_required; completed from input_required (questions kept).
fn question_writes(
    store: &dyn TaskStore,
    admitted: &[TaskRecord],
    base_ms: u64,
    view_ms: u64,
) -> Result<usize, String> {
    let mut steps = 0;
    let questions = |id: &str| {
        let mut ask = step(
            id,
            1,
            TaskStatus::InputRequired,
            None,
            Some("¿columnas? «\"ü\"»"),
            base_ms + 900,
        );
        ask.input_requests = json!({
            "columns": { "method": "elicitation/create", "params": hostile_arguments() },
            "ключ 🔑": { "method": "sampling/createMessage", "params": { "n": u64::MAX } },
        })
        .as_object()
        .cloned();
        ask
    };
    for (id, next, outcome, message) in [
        (
            "t-input-message",
            TaskStatus::Working,
            None,
            Some("answered: going on"),
        ),
        (
            "t-failed-input",
            TaskStatus::Failed,
            Some(TaskOutcome::RpcError {
                code: -32_000,
                message: "gave up waiting".into(),
                data: Some(json!({ "disk": "full", "n": 1_u64 << 60 })),
            }),
            None,
        ),
        (
            "t-completed-input",
            TaskStatus::Completed,
            Some(rich_outcome()),
            Some("finished without an answer"),
        ),
    ] {
        let asked = apply_exactly(store, &by_id(admitted, id), &questions(id), view_ms)?;
        apply_exactly(
            store,
            &asked,
            &step(id, 2, next, outcome, message, base_ms + 901),
            view_ms,
        )?;
        steps += 2;
    }
    Ok(steps)
}

/// Requestor cancels, from working and from input_required with a message.
fn cancel_writes(
    store: &dyn TaskStore,
    admitted: &[TaskRecord],
    base_ms: u64,
    view_ms: u64,
) -> Result<usize, String> {
    let mut steps = 0;
    let input = apply_exactly(
        store,
        &by_id(admitted, "t-cancel-input"),
        &step(
            "t-cancel-input",
            1,
            TaskStatus::InputRequired,
            None,
            Some("need a file"),
            base_ms + 800,
        ),
        view_ms,
    )?;
    for (before, now_ms) in [
        (by_id(admitted, "t-cancel"), base_ms + 801),
        (input, base_ms + 802),
    ] {
        let want = cancelled_record(&before, now_ms);
        let answer = store
            .cancel(Negotiated::FULL, ALICE, &before.task_id, now_ms)
            .map_err(store_err("cancel"))?;
        same(
            &format!("task {}: cancel decision", before.task_id),
            answer.decision,
            Decision::ApplyCancel,
        )?;
        same_record("cancel answer", &want, answer.record.as_ref())?;
        every_view(store, &want, view_ms, "after cancel")?;
        steps += 1;
    }
    Ok(steps)
}

/// Answers to a task's questions (`answer_input`), each compared with the contract's
/// [`input_decision`] through every view: partial then full answers (merged with the
/// answers given at admission), an unknown key ignored, a clock running backwards, a
/// task no longer waiting, a terminal task, another caller's and an expired task.
pub(super) fn input_round_trip(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let base_ms = 1_700_000_000_000;
    let admitted = admit_with_answers(&*store, base_ms)?;
    let mut answering = Answering {
        store: &*store,
        view_ms: base_ms + 1_000,
        answers: 0,
    };
    let main = answering.ask(&admitted[0], base_ms + 100)?;
    let main = answering.answer(
        &main,
        ALICE,
        json!({ "zz": accept("?") }),
        base_ms + 110,
        Decision::IgnoreInput,
    )?;
    let main = answering.answer(
        &main,
        ALICE,
        json!({ "q0": accept("erste ✓"), "zz": accept("ignored") }),
        base_ms + 120,
        Decision::ApplyInput,
    )?;
    same(
        "after a partial answer, status",
        main.status,
        TaskStatus::InputRequired,
    )?;
    // The clock runs backwards: lastUpdatedAt stays; the last answer moves to working.
    let main = answering.answer(
        &main,
        ALICE,
        json!({ "q1": accept("zweite") }),
        base_ms + 50,
        Decision::ApplyInput,
    )?;
    same(
        "after every answer, status",
        main.status,
        TaskStatus::Working,
    )?;
    answering.answer(
        &main,
        ALICE,
        json!({ "q0": accept("again") }),
        base_ms + 130,
        Decision::IgnoreInput,
    )?;
    answering.answer(
        &main,
        BOB,
        json!({ "q0": accept("stolen") }),
        base_ms + 140,
        Decision::BlockAuth,
    )?;
    // A terminal task keeps its open questions and takes no answer.
    let done = answering.ask(&admitted[1], base_ms + 100)?;
    let done = apply_exactly(
        &*store,
        &done,
        &step(
            "u-done",
            done.version,
            TaskStatus::Completed,
            outcome_for(TaskStatus::Completed, "u-done"),
            None,
            base_ms + 150,
        ),
        answering.view_ms,
    )?;
    answering.answer(
        &done,
        ALICE,
        json!({ "q0": accept("late") }),
        base_ms + 160,
        Decision::AlreadyTerminal,
    )?;
    // An expired task takes no answer either (it expires at base + 2 + 500).
    let short = answering.ask(&admitted[2], base_ms + 100)?;
    answering.answer(
        &short,
        ALICE,
        json!({ "q0": accept("late") }),
        base_ms + 502,
        Decision::BlockExpired,
    )?;
    Ok(format!(
        "{} answers: partial, full, unknown key, backwards clock, not waiting, foreign, terminal, expired; answer, read, get, result and list equal input_decision",
        answering.answers
    ))
}

fn object(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().expect("an object")
}

fn accept(text: &str) -> Value {
    json!({ "action": "accept", "content": { "text": text } })
}

/// Three 2026-07-28 tasks admitted with an answer given up front; `u-short` expires at
/// base + 2 + 500.
fn admit_with_answers(store: &dyn TaskStore, base_ms: u64) -> Result<Vec<TaskRecord>, String> {
    let mut admitted = Vec::new();
    for (at, id) in ["u-main", "u-done", "u-short"].into_iter().enumerate() {
        let mut cmd = command(ALICE, id, Some(id), "2026-06", base_ms + at as u64);
        cmd.era = crate::contract::Era::Extension2026;
        cmd.ttl_ms = Some(if id == "u-short" { 500 } else { 3_600_000 });
        cmd.input_responses = Some(object(json!({ "given": { "action": "accept" } })));
        let answer = create_ok(store, &cmd, Decision::AcceptTask)?;
        admitted.push(answer.record.ok_or("ACCEPT_TASK without a record")?);
    }
    Ok(admitted)
}

/// Asks a task two questions and answers them, every answer judged against the contract's
/// [`input_decision`] and through every view.
struct Answering<'a> {
    store: &'a dyn TaskStore,
    view_ms: u64,
    answers: usize,
}

impl Answering<'_> {
    fn ask(&self, record: &TaskRecord, now_ms: u64) -> Result<TaskRecord, String> {
        let mut ask = step(
            &record.task_id,
            record.version,
            TaskStatus::InputRequired,
            None,
            Some("two questions"),
            now_ms,
        );
        ask.input_requests = Some(object(json!({
            "q0": { "method": "elicitation/create", "params": { "message": "ü?" } },
            "q1": { "method": "elicitation/create", "params": hostile_arguments() },
        })));
        apply_exactly(self.store, record, &ask, self.view_ms)
    }

    fn answer(
        &mut self,
        record: &TaskRecord,
        caller: &str,
        responses: Value,
        now_ms: u64,
        decision: Decision,
    ) -> Result<TaskRecord, String> {
        let command = InputCommand {
            task_id: record.task_id.clone(),
            caller: caller.into(),
            responses: object(responses),
            now_ms,
        };
        let keys: Vec<&String> = command.responses.keys().collect();
        let when = format!("answer {keys:?} by {caller} at {now_ms}");
        let (want_decision, want) = input_decision(&command, Some(record));
        same(
            &format!("task {}: {when}: the contract decides", record.task_id),
            want_decision,
            decision,
        )?;
        let got = self
            .store
            .answer_input(&command)
            .map_err(store_err("answer_input"))?;
        same(
            &format!("task {}: {when}: decision", record.task_id),
            got.decision,
            decision,
        )?;
        self.answers += 1;
        match want {
            Some(after) => {
                same_record(&format!("{when}: answer"), &after, got.record.as_ref())?;
                every_view(self.store, &after, self.view_ms, &when)?;
                Ok(after)
            }
            None => {
                let stored = self
                    .store
                    .read(&record.task_id)
                    .map_err(store_err("read"))?;
                same_record(&format!("{when}: unchanged"), record, stored.as_ref())?;
                Ok(record.clone())
            }
        }
    }
}

/// Records as a backup holds them: every status, outcomes of each kind, odd versions.
pub(super) fn imported_records(base_ms: u64) -> Vec<TaskRecord> {
    let admit = |caller: &str, id: &str, key: Option<&str>, at: u64| {
        let mut cmd = command(caller, id, key, "2026-06", at);
        cmd.request.arguments = Some(hostile_arguments());
        cmd.ttl_ms = Some(3_600_000);
        cmd.admission_record(cmd.request.digest())
    };
    let mut input = admit(ALICE, "r-input", Some("rk1"), base_ms);
    input = input.with_status(TaskStatus::InputRequired, base_ms + 5);
    input.status_message = Some("waiting ✋".into());
    let mut completed = admit(ALICE, "r-completed", None, base_ms + 1);
    completed = completed.with_status(TaskStatus::Completed, base_ms + 9);
    completed.version = 7;
    completed.outcome = Some(rich_outcome());
    completed.status_message = Some("done".into());
    let cancelled = cancelled_record(
        &admit(BOB, "r-cancelled", Some("rk2"), base_ms + 2),
        base_ms + 3,
    );
    let mut failed = admit(BOB, "r-failed", None, base_ms + 2);
    failed = failed.with_status(TaskStatus::Failed, base_ms + 4);
    failed.outcome = Some(TaskOutcome::RpcError {
        code: 42,
        message: "nope".into(),
        data: Some(json!([null, { "k": "ü" }])),
    });
    let mut plain = admit(CAROL, "r-plain", Some("rk3"), base_ms + 3);
    plain.ttl_ms = None;
    plain.expires_at_ms = None;
    plain.poll_interval_ms = None;
    let mut expired = admit(CAROL, "r-expired", None, base_ms);
    expired.ttl_ms = Some(10);
    expired.expires_at_ms = Some(base_ms + 10);
    vec![input, completed, cancelled, failed, plain, expired]
}

pub(super) fn imports_round_trip(factory: &dyn StoreFactory) -> Result<String, String> {
    let store = fresh(factory)?;
    let base_ms = 1_700_000_000_000;
    let records = imported_records(base_ms);
    store.import(&records).map_err(store_err("import"))?;
    store.import(&[]).map_err(store_err("import of nothing"))?;
    let view_ms = base_ms + 100;
    for record in &records {
        every_view(&*store, record, view_ms, "after import")?;
    }
    same(
        "an import writes no outbox entries",
        store
            .claim("w", view_ms, 100, 100)
            .map_err(store_err("claim"))?
            .len(),
        0,
    )?;
    // An imported record holds its idempotency key.
    let mut replay = command(ALICE, "r-input-again", Some("rk1"), "2026-06", view_ms);
    replay.request.arguments = Some(hostile_arguments());
    replay.ttl_ms = Some(3_600_000);
    let answer = create_ok(&*store, &replay, Decision::ReplayTask)?;
    same_record(
        "replay of an imported key",
        &records[0],
        answer.record.as_ref(),
    )?;
    Ok(format!(
        "{} records of every status: read, get, result and list equal what was imported",
        records.len()
    ))
}
