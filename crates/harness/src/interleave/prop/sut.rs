//! The system under test: a store driven step by step and compared, field by field, with
//! the model.

use super::*;

/// The system under test: a store and what its actors hold between steps.
pub struct Sut {
    store: Box<dyn TaskStore>,
    /// The effects finishing workers prepare, publish and discard.
    effects: MemoryEffects,
    /// Per tenant, the next-page cursor its last page returned.
    cursors: BTreeMap<u8, String>,
}

impl Sut {
    /// A fresh store from `factory`, its cursors bound with the machine's secret.
    pub fn open(factory: &dyn StoreFactory) -> Result<Sut, StoreError> {
        let options = StoreOptions {
            cursor_secret: Some(b"proptest cursor secret".to_vec()),
        };
        Ok(Sut {
            store: factory.open(&options)?,
            effects: MemoryEffects::default(),
            cursors: BTreeMap::new(),
        })
    }

    /// Runs `step` against the store and compares the answer with `model.expect`
    /// (`model` is the state after the step).
    pub fn step(&mut self, model: &Model, step: &Step) -> Result<(), String> {
        let failed = |error: StoreError| format!("{step:?}: store error: {error}");
        let now_ms = model.now_ms;
        let got = match *step {
            Step::Create(create) => self.create_step(model, create, &failed)?,
            Step::Get { tenant, task } | Step::Result { tenant, task } => {
                self.read_step(model, step, tenant, task, &failed)?
            }
            Step::Cancel {
                tenant,
                task,
                negotiated,
            } => {
                let answer = self
                    .store
                    .cancel(
                        negotiated_of(negotiated),
                        &caller_of(tenant),
                        &model.address(task),
                        now_ms,
                    )
                    .map_err(failed)?;
                Expect::Answer {
                    decision: answer.decision,
                    record: shown(&answer),
                }
            }
            Step::AnswerInput { tenant, task, keys } => {
                let answer = self
                    .store
                    .answer_input(&InputCommand {
                        task_id: model.address(task),
                        caller: caller_of(tenant),
                        responses: answered_keys(keys)
                            .into_iter()
                            .map(|key| (key.to_owned(), answer_of(key, now_ms)))
                            .collect(),
                        now_ms,
                    })
                    .map_err(failed)?;
                Expect::Answer {
                    decision: answer.decision,
                    record: shown(&answer),
                }
            }
            Step::List {
                tenant,
                negotiated,
                limit,
                ..
            } => self.list_step(model, tenant, negotiated, limit, &failed)?,
            Step::Claim { worker, max } => {
                let claims = self
                    .store
                    .claim(&format!("worker-{worker}"), now_ms, LEASE_MS, max)
                    .map_err(failed)?;
                Expect::Claim(claims)
            }
            Step::Write { .. } => self.write_step(model, step, &failed)?,
            Step::Declare { worker } => self.declare_step(model, worker, &failed)?,
            Step::Finish { worker, outcome } => {
                self.finish_step(model, worker, outcome, &failed)?
            }
            Step::Release => {
                Expect::Released(self.store.release_expired_leases(now_ms).map_err(failed)?)
            }
            Step::Sweep { max } => {
                Expect::Swept(self.store.sweep_expired(now_ms, max).map_err(failed)?)
            }
            Step::Crash { .. } | Step::Advance { .. } => Expect::Nothing,
        };
        if got != model.expect {
            return Err(format!(
                "{step:?} at {now_ms} ms: {}",
                mismatch(&got, &model.expect)
            ));
        }
        self.compare_state(model)
    }

    /// `tasks/get` or `tasks/result` of `task` as `tenant`.
    pub(super) fn read_step(
        &mut self,
        model: &Model,
        step: &Step,
        tenant: u8,
        task: u8,
        failed: &dyn Fn(StoreError) -> String,
    ) -> Result<Expect, String> {
        let now_ms = model.now_ms;
        let task_id = model.address(task);
        let answer = if matches!(step, Step::Get { .. }) {
            self.store.get(&caller_of(tenant), &task_id, now_ms)
        } else {
            self.store.result(&caller_of(tenant), &task_id, now_ms)
        }
        .map_err(failed)?;
        let decision = answer.decision;
        // A refused read carries no record, whatever the store attached.
        let record = match decision {
            Decision::ReturnStatus
            | Decision::WaitTerminal
            | Decision::WaitInput
            | Decision::ReturnResult
            | Decision::ReturnCancelled => shown(&answer),
            _ => None,
        };
        Ok(Expect::Answer { decision, record })
    }

    pub(super) fn create_step(
        &mut self,
        model: &Model,
        create: CreateStep,
        failed: &dyn Fn(StoreError) -> String,
    ) -> Result<Expect, String> {
        let now_ms = model.now_ms;
        let created = self.store.create(&CreateCommand {
            caller: caller_of(create.tenant),
            negotiated: negotiated_of(create.negotiated),
            task_support: support_of(create.support),
            task_requested: create.task,
            idempotency_key: create.key.map(key_of),
            request: request_of(create.args),
            ttl_ms: ttl_of(create.ttl),
            poll_interval_ms: poll_of(create.poll),
            task_id: model.next_task_id.clone(),
            correlation_id: model.next_correlation_id.clone(),
            now_ms,
            era: create.era,
            input_responses: admission_answers(create.responses).as_ref().map(input_map),
        });
        Ok(match created {
            Ok(answer) => Expect::Answer {
                decision: answer.decision,
                record: shown(&answer),
            },
            Err(StoreError::Duplicate { task_id }) => Expect::Duplicate { task_id },
            Err(error) => return Err(failed(error)),
        })
    }

    pub(super) fn list_step(
        &mut self,
        model: &Model,
        tenant: u8,
        negotiated: u8,
        limit: usize,
        failed: &dyn Fn(StoreError) -> String,
    ) -> Result<Expect, String> {
        let now_ms = model.now_ms;
        let cursor = model
            .sent_cursor_of
            .and_then(|holder| self.cursors.get(&holder).cloned());
        let page = self
            .store
            .list(&ListQuery {
                negotiated: negotiated_of(negotiated),
                caller: caller_of(tenant),
                cursor,
                limit,
                now_ms,
            })
            .map_err(failed)?;
        if page.decision == Decision::ListTenantFiltered {
            match &page.next_cursor {
                Some(next) => self.cursors.insert(tenant, next.clone()),
                None => self.cursors.remove(&tenant),
            };
        }
        Ok(Expect::Page {
            decision: page.decision,
            tasks: page.tasks,
            more: page.next_cursor.is_some(),
        })
    }

    /// A worker's write ([`Step::Write`]) at the version it holds.
    pub(super) fn write_step(
        &mut self,
        model: &Model,
        step: &Step,
        failed: &dyn Fn(StoreError) -> String,
    ) -> Result<Expect, String> {
        let Step::Write {
            worker,
            next,
            foreign,
            message,
            outcome,
        } = *step
        else {
            unreachable!("write_step is called for Step::Write only");
        };
        let now_ms = model.now_ms;
        let held = model
            .wrote_with
            .clone()
            .ok_or_else(|| format!("worker-{worker} writes without a claim"))?;
        let next = write_target(next);
        let caller = if foreign {
            (held.owner + 1) % TENANTS
        } else {
            held.owner
        };
        let answer = self
            .store
            .transition(&TransitionCommand {
                irreversible_effect: None,
                task_id: held.task_id.clone(),
                caller: caller_of(caller),
                expected_version: held.version,
                next,
                outcome: next.is_terminal().then(|| outcome_of(outcome)),
                status_message: message.map(str::to_owned),
                now_ms,
                input_requests: model.asked.as_ref().map(input_map),
            })
            .map_err(failed)?;
        let acked = if matches!(
            answer.decision,
            Decision::ApplyTransition | Decision::IdempotentTerminal
        ) && next.is_terminal()
        {
            Some(
                self.store
                    .ack(&held.task_id, held.attempt, now_ms)
                    .map_err(failed)?,
            )
        } else {
            None
        };
        Ok(Expect::Write {
            decision: answer.decision,
            record: shown(&answer),
            acked,
        })
    }

    pub(super) fn declare_step(
        &mut self,
        model: &Model,
        worker: u8,
        failed: &dyn Fn(StoreError) -> String,
    ) -> Result<Expect, String> {
        let now_ms = model.now_ms;
        let held = model
            .wrote_with
            .clone()
            .ok_or_else(|| format!("worker-{worker} declares without a claim"))?;
        let effect = declared_effect(&held.task_id);
        let answer = self
            .store
            .transition(&TransitionCommand {
                status_message: Some(crate::store::point_of_no_return_message(&effect)),
                irreversible_effect: Some(effect),
                task_id: held.task_id.clone(),
                caller: caller_of(held.owner),
                expected_version: held.version,
                next: TaskStatus::Working,
                outcome: None,
                now_ms,
                input_requests: None,
            })
            .map_err(failed)?;
        Ok(Expect::Write {
            decision: answer.decision,
            record: shown(&answer),
            acked: None,
        })
    }

    pub(super) fn finish_step(
        &mut self,
        model: &Model,
        worker: u8,
        outcome: u8,
        failed: &dyn Fn(StoreError) -> String,
    ) -> Result<Expect, String> {
        let now_ms = model.now_ms;
        let held = model
            .wrote_with
            .clone()
            .ok_or_else(|| format!("worker-{worker} finishes without a claim"))?;
        self.effects.prepare(&held.task_id);
        let answer = effect::decide(
            &*self.store,
            &self.effects,
            &TransitionCommand {
                irreversible_effect: None,
                task_id: held.task_id.clone(),
                caller: caller_of(held.owner),
                expected_version: held.version,
                next: TaskStatus::Completed,
                outcome: Some(outcome_of(outcome)),
                status_message: None,
                now_ms,
                input_requests: None,
            },
        )
        .map_err(failed)?;
        let settled = match answer.decision {
            Decision::BlockStaleVersion | Decision::BlockIllegalTransition => None,
            _ => Some(
                effect::settle(
                    &self.effects,
                    &held.task_id,
                    effect::status_to_settle(answer.record.as_ref(), now_ms),
                )
                .map_err(failed)?,
            ),
        };
        let acked = match answer.decision {
            Decision::ApplyTransition
            | Decision::IdempotentTerminal
            | Decision::BlockTerminalRewrite => Some(
                self.store
                    .ack(&held.task_id, held.attempt, now_ms)
                    .map_err(failed)?,
            ),
            _ => None,
        };
        Ok(Expect::Finish {
            decision: answer.decision,
            record: shown(&answer),
            settled,
            acked,
        })
    }

    /// The whole store read back: every live model task in full (every record field), and
    /// no swept task left behind.
    pub(super) fn compare_state(&self, model: &Model) -> Result<(), String> {
        for (task_id, task) in &model.tasks {
            let stored = self
                .store
                .read(task_id)
                .map_err(|error| format!("read {task_id}: {error}"))?;
            let Some(stored) = stored else {
                return Err(format!("{task_id} is missing from the store"));
            };
            let want = task.view(task_id);
            if stored != want {
                return Err(format!(
                    "{task_id} is stored otherwise than the model has it: {}",
                    record_differences(&stored, &want)
                ));
            }
        }
        let (prepared, published) = self.effects.sets();
        if (&prepared, &published) != (&model.prepared, &model.published) {
            return Err(format!(
                "effects: prepared {prepared:?} and published {published:?}, the model has \
                 {:?} and {:?}",
                model.prepared, model.published
            ));
        }
        if let Some(extra) = model
            .ids
            .iter()
            .filter(|id| !model.tasks.contains_key(*id))
            .find(|id| matches!(self.store.read(id), Ok(Some(_))))
        {
            return Err(format!(
                "{extra} was swept in the model but the store kept it"
            ));
        }
        Ok(())
    }
}
