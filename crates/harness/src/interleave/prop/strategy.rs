//! The steps' strategies: aimed where they tell something, creates the most frequent.

use super::*;

/// The reference state machine.
pub struct ModelMachine;

pub(super) fn negotiated_strategy() -> impl Strategy<Value = u8> {
    prop_oneof![4 => Just(7u8), 1 => 0u8..8]
}

pub(super) fn create_strategy() -> impl Strategy<Value = Step> {
    (
        0..TENANTS,
        prop::option::weighted(0.7, 0u8..3),
        0u8..2,
        prop_oneof![4 => Just(0u8), 1 => 1u8..3],
        prop::bool::weighted(0.85),
        negotiated_strategy(),
        // None, 0, 300, 1234, 3000 ms
        prop_oneof![3 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8), 2 => Just(3u8), 2 => Just(4u8)],
        0u8..4,
        prop_oneof![Just(Era::Core2025), Just(Era::Extension2026)],
        0u8..4,
        prop::option::weighted(0.15, 0u8..7),
    )
        .prop_map(
            |(tenant, key, args, support, task, negotiated, ttl, poll, era, responses, collide)| {
                Step::Create(CreateStep {
                    tenant,
                    key,
                    args,
                    support,
                    task,
                    negotiated,
                    ttl,
                    poll,
                    era,
                    responses,
                    collide,
                })
            },
        )
}

/// `(tenant, task)` for a step on one task: `tasks` picks the task (as `Model::address`
/// reads it); the tenant is mostly its owner (`owners`, by task index), else any.
pub(super) fn aimed(
    tasks: BoxedStrategy<u8>,
    owners: [Option<u8>; 8],
) -> impl Strategy<Value = (u8, u8)> {
    (tasks, prop::bool::weighted(0.75), 0..TENANTS).prop_map(
        move |(task, own, tenant)| match owners[usize::from(task % 8)] {
            Some(owner) if own => (owner, task),
            _ => (tenant, task),
        },
    )
}

impl ReferenceStateMachine for ModelMachine {
    type State = Model;
    type Transition = Step;

    fn init_state() -> BoxedStrategy<Model> {
        Just(Model::default()).boxed()
    }

    fn transitions(state: &Model) -> BoxedStrategy<Step> {
        // Steps on one task mostly come from its owner, and answers mostly go to tasks that
        // ask: a step that is refused at once tells little.
        let owners: [Option<u8>; 8] = std::array::from_fn(|task| {
            let task_id = state.address(task as u8);
            state.tasks.get(&task_id).map(|task| task.owner)
        });
        let picking = |wanted: fn(&ModelTask) -> bool| -> Vec<u8> {
            (0u8..7)
                .filter(|task| state.tasks.get(&state.address(*task)).is_some_and(wanted))
                .collect()
        };
        let live = picking(|_| true);
        let asking = picking(|task| task.status == TaskStatus::InputRequired);
        // Mostly a task that is there (or asks), sometimes any address.
        let among = |preferred: &[u8]| -> BoxedStrategy<u8> {
            if preferred.is_empty() {
                (0u8..8).boxed()
            } else {
                prop_oneof![3 => prop::sample::select(preferred.to_vec()), 1 => 0u8..8].boxed()
            }
        };
        let answered = among(if asking.is_empty() { &live } else { &asking });
        // Answers come often while a task asks.
        let answer_weight = if asking.is_empty() { 2 } else { 16 };
        // Per worker: the task it holds asks, at the version the worker knows.
        let held_asking: [bool; WORKERS as usize] = std::array::from_fn(|worker| {
            state.held.get(&(worker as u8)).is_some_and(|held| {
                state.tasks.get(&held.task_id).is_some_and(|task| {
                    task.status == TaskStatus::InputRequired && task.version == held.version
                })
            })
        });
        let worker = 0..WORKERS;
        prop_oneof![
            12 => create_strategy(),
            4 => aimed(among(&live), owners).prop_map(|(tenant, task)| Step::Get { tenant, task }),
            2 => aimed(among(&live), owners).prop_map(|(tenant, task)| Step::Result { tenant, task }),
            2 => (aimed(among(&live), owners), negotiated_strategy())
                .prop_map(|((tenant, task), negotiated)| Step::Cancel { tenant, task, negotiated }),
            // Mostly open keys (q0, q1, both), sometimes any mix with the unasked key.
            answer_weight => (aimed(answered, owners), prop_oneof![2 => 1u8..4, 1 => 0u8..8])
                .prop_map(|((tenant, task), keys)| Step::AnswerInput { tenant, task, keys }),
            3 => (
                0..TENANTS,
                negotiated_strategy(),
                prop_oneof![Just(CursorUse::First), Just(CursorUse::Resume), Just(CursorUse::Foreign)],
                prop_oneof![
                    1 => Just(LIST_LIMITS[0]),
                    3 => Just(LIST_LIMITS[1]),
                    3 => Just(LIST_LIMITS[2]),
                    1 => Just(LIST_LIMITS[3]),
                    1 => Just(LIST_LIMITS[4]),
                    1 => Just(LIST_LIMITS[5]),
                ],
            )
                .prop_map(|(tenant, negotiated, cursor, limit)| Step::List {
                    tenant,
                    negotiated,
                    cursor,
                    limit,
                }),
            6 => (worker.clone(), prop_oneof![1 => Just(0usize), 5 => Just(1usize)])
                .prop_map(|(worker, max)| Step::Claim { worker, max }),
            8 => (
                worker.clone(),
                // completed, failed, input_required, working, cancelled
                prop_oneof![3 => Just(0u8), 1 => Just(1u8), 3 => Just(2u8), 1 => Just(3u8), 1 => Just(4u8)],
                prop::bool::weighted(0.5),
                prop::bool::weighted(0.15),
                prop::sample::select(MESSAGE_CHOICES.to_vec()),
                0u8..4,
            )
                .prop_map(move |(worker, next, resume, foreign, message, outcome)| {
                    // A worker whose task asks often goes back to work without the answers.
                    let next = if resume && held_asking[usize::from(worker)] { 3 } else { next };
                    Step::Write {
                        worker,
                        next,
                        foreign,
                        message,
                        outcome,
                    }
                }),
            4 => (worker.clone(), 0u8..4).prop_map(|(worker, outcome)| Step::Finish { worker, outcome }),
            5 => worker.clone().prop_map(|worker| Step::Declare { worker }),
            1 => worker.prop_map(|worker| Step::Crash { worker }),
            1 => Just(Step::Release),
            2 => prop::sample::select(SWEEP_MAXES.to_vec()).prop_map(|max| Step::Sweep { max }),
            3 => (1u16..700).prop_map(|ms| Step::Advance { ms }),
        ]
        .boxed()
    }

    fn preconditions(state: &Model, step: &Step) -> bool {
        match step {
            // A worker asks only questions its task holds no answer to (never none).
            Step::Write { worker, next, .. }
                if write_target(*next) == TaskStatus::InputRequired =>
            {
                state
                    .questions_for(*worker)
                    .is_some_and(|asked| !asked.is_empty())
            }
            Step::Write { worker, .. }
            | Step::Finish { worker, .. }
            | Step::Declare { worker }
            | Step::Crash { worker } => state.held.contains_key(worker),
            _ => true,
        }
    }

    fn apply(mut state: Model, step: &Step) -> Model {
        state.sent_cursor_of = None;
        state.wrote_with = None;
        state.asked = None;
        state.expect = match *step {
            Step::Create(create) => state.create(&create),
            Step::Get { tenant, task } => state.read(tenant, task, |_| Decision::ReturnStatus),
            Step::Result { tenant, task } => state.read(tenant, task, |task| match task.status {
                TaskStatus::Working => Decision::WaitTerminal,
                TaskStatus::InputRequired => Decision::WaitInput,
                TaskStatus::Cancelled => Decision::ReturnCancelled,
                TaskStatus::Completed | TaskStatus::Failed => Decision::ReturnResult,
            }),
            Step::Cancel {
                tenant,
                task,
                negotiated,
            } => state.cancel(tenant, task, negotiated),
            Step::AnswerInput { tenant, task, keys } => state.answer_input(tenant, task, keys),
            Step::List {
                tenant,
                negotiated,
                cursor,
                limit,
            } => state.list(tenant, negotiated, cursor, limit),
            Step::Claim { worker, max } => state.claim(worker, max),
            Step::Write {
                worker,
                next,
                foreign,
                message,
                outcome,
            } => state.write(worker, write_target(next), foreign, message, outcome),
            Step::Finish { worker, outcome } => state.finish(worker, outcome),
            Step::Declare { worker } => state.declare(worker),
            Step::Crash { worker } => {
                state.held.remove(&worker);
                Expect::Nothing
            }
            Step::Release => state.release(),
            Step::Sweep { max } => state.sweep(max),
            Step::Advance { ms } => {
                state.now_ms += u64::from(ms);
                Expect::Nothing
            }
        };
        state
    }
}
