//! Side requests in 2025-11-25: the open questions of an `input_required` task, sent by
//! a blocked `tasks/result` of its owner as JSON-RPC requests on that call's stream (only
//! what the client declared in `initialize`), and the client's responses taken as the
//! answers. At most [`super::ASKS_PER_SESSION_MAX`] wait per session.

use super::*;

/// What a client declared it can be asked, in `initialize` (`capabilities`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ClientAbilities {
    /// `elicitation` (an empty object: form mode only, as before 2025-11-25) or
    /// `elicitation.form`.
    pub(super) elicitation_form: bool,
    /// `elicitation.url`.
    pub(super) elicitation_url: bool,
    /// `sampling`.
    pub(super) sampling: bool,
    /// `roots`.
    pub(super) roots: bool,
    /// When it was recorded, on the server's initialize counter (oldest forgotten first).
    pub(super) recorded: u64,
}

impl ClientAbilities {
    pub(super) fn declared(
        capabilities: Option<&Map<String, Value>>,
        recorded: u64,
    ) -> ClientAbilities {
        let object = |name: &str| {
            capabilities
                .and_then(|capabilities| capabilities.get(name))
                .and_then(Value::as_object)
        };
        let elicitation = object("elicitation");
        ClientAbilities {
            elicitation_form: elicitation.is_some_and(|modes| {
                modes.get("form").is_some_and(Value::is_object) || !modes.contains_key("url")
            }),
            elicitation_url: elicitation
                .is_some_and(|modes| modes.get("url").is_some_and(Value::is_object)),
            sampling: object("sampling").is_some(),
            roots: object("roots").is_some(),
            recorded,
        }
    }

    /// Whether a request of `method` with `params` may be sent to this client.
    pub(super) fn allows(&self, method: &str, params: &Map<String, Value>) -> bool {
        match method {
            "elicitation/create" => match params.get("mode").and_then(Value::as_str) {
                None | Some("form") => self.elicitation_form,
                Some("url") => self.elicitation_url,
                Some(_) => false,
            },
            "sampling/createMessage" => self.sampling,
            "roots/list" => self.roots,
            // A method whose capability is unknown here is never sent.
            _ => false,
        }
    }
}

/// A side request sent to a client on behalf of a task, waiting for the response.
#[derive(Clone, Debug)]
pub(super) struct PendingAsk {
    /// The session it was sent to; only a response on that session answers it.
    pub(super) session: String,
    /// The task's owner (the session's caller when it was sent).
    pub(super) auth_key: String,
    pub(super) task_id: String,
    /// The task's input request key the response answers.
    pub(super) key: String,
}

/// Every pending side request by request id, with a count per session (the bound).
#[derive(Default)]
pub(super) struct Asks {
    pub(super) by_id: BTreeMap<String, PendingAsk>,
    pub(super) per_session: BTreeMap<String, usize>,
}

impl Asks {
    /// Records a side request; `false` when its session already has
    /// [`ASKS_PER_SESSION_MAX`] pending.
    pub(super) fn insert(&mut self, id: String, ask: PendingAsk) -> bool {
        let count = self.per_session.entry(ask.session.clone()).or_insert(0);
        if *count >= ASKS_PER_SESSION_MAX {
            return false;
        }
        *count += 1;
        self.by_id.insert(id, ask);
        true
    }

    pub(super) fn remove(&mut self, id: &str) -> Option<PendingAsk> {
        let ask = self.by_id.remove(id)?;
        if let Some(count) = self.per_session.get_mut(&ask.session) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.per_session.remove(&ask.session);
            }
        }
        Some(ask)
    }

    pub(super) fn remove_session(&mut self, session: &str) {
        self.by_id.retain(|_, ask| ask.session != session);
        self.per_session.remove(session);
    }
}

/// The side requests one blocked `tasks/result` sent, by input key: each key is asked at
/// most once per call, and what is still pending is forgotten when the call ends.
pub(super) struct AskedHere<'s> {
    pub(super) server: &'s Server,
    pub(super) ids: BTreeMap<String, String>,
}

impl AskedHere<'_> {
    /// Forgets the side requests whose key is no longer open on `record`.
    pub(super) fn prune(&mut self, record: Option<&TaskRecord>) {
        let open = record
            .filter(|record| record.status == TaskStatus::InputRequired)
            .and_then(|record| record.input_requests.as_ref());
        let server = self.server;
        self.ids.retain(|key, id| {
            let keep = open.is_some_and(|open| open.contains_key(key));
            if !keep {
                server.asks.lock().expect("asks").remove(id);
            }
            keep
        });
    }
}

impl Drop for AskedHere<'_> {
    fn drop(&mut self) {
        let mut asks = self.server.asks.lock().expect("asks");
        for id in self.ids.values() {
            asks.remove(id);
        }
    }
}

impl Server {
    /// Sends the open questions of `record` not yet asked by this call to the client, as
    /// requests with the related-task `_meta` and fresh ids; what the client did not
    /// declare it can answer is not sent (the task stays `input_required`).
    pub(super) fn ask_open(
        &self,
        session: &Session,
        record: &TaskRecord,
        stream: &Outbound,
        asked: &mut AskedHere<'_>,
    ) {
        // A 2026-07-28 task's questions are read in tasks/get and answered by tasks/update.
        if record.era != Era::Core2025 || stream.is_closed() {
            return;
        }
        let Some(open) = &record.input_requests else {
            return;
        };
        let Some(abilities) = self
            .clients
            .lock()
            .expect("clients")
            .get(&session.id)
            .copied()
        else {
            return;
        };
        for (key, question) in open {
            if asked.ids.contains_key(key) {
                continue;
            }
            let Some((method, params)) = side_request(question) else {
                continue;
            };
            if !abilities.allows(method, params) {
                continue;
            }
            let id = format!("{ASK_ID_PREFIX}{}", self.new_id());
            let pending = PendingAsk {
                session: session.id.clone(),
                auth_key: session.auth_key.clone(),
                task_id: record.task_id.clone(),
                key: key.clone(),
            };
            // Recorded before it is sent, so a quick response finds it.
            if !self.asks.lock().expect("asks").insert(id.clone(), pending) {
                // The session's budget is spent: asked again once some is answered.
                return;
            }
            let message = side_request_message(&id, method, params, &record.task_id);
            if stream.try_send(message).is_err() {
                // Full or closed: not sent, so not asked; tried again on the next look.
                self.asks.lock().expect("asks").remove(&id);
                return;
            }
            asked.ids.insert(key.clone(), id);
        }
    }

    /// A client's response to a side request: stored as the answer to its task's question
    /// (an error response, or a result that is not an object, as `{action: "decline"}`).
    /// A response nobody on this session is waiting for is ignored.
    pub(super) fn take_answer(&self, session: &Session, id: &Value, outcome: Result<Value, Value>) {
        let Some(id) = id.as_str() else {
            return;
        };
        let pending = {
            let mut asks = self.asks.lock().expect("asks");
            match asks.by_id.get(id) {
                Some(ask) if ask.session == session.id && ask.auth_key == session.auth_key => {
                    asks.remove(id)
                }
                _ => None,
            }
        };
        let Some(pending) = pending else {
            return;
        };
        let answer = match outcome {
            Ok(Value::Object(result)) => Value::Object(result),
            _ => json!({ "action": "decline" }),
        };
        let mut responses = Map::new();
        responses.insert(pending.key, answer);
        let record_task_id = pending.task_id.clone();
        let answered = self.store.answer_input(&InputCommand {
            task_id: pending.task_id,
            caller: pending.auth_key,
            responses,
            now_ms: self.env.now_ms(),
        });
        match answered {
            Ok(answer) if answer.decision == Decision::ApplyInput => match &answer.record {
                Some(record) if record.status == TaskStatus::Working => {
                    self.status_changed(record);
                }
                // Other questions are still open: the blocked calls look again.
                _ => self.waits.wake(&record_task_id),
            },
            // Answered meanwhile, cancelled, expired: nothing to store.
            Ok(_) => {}
            Err(error) => {
                // Logged; the client may ask again with another tasks/result.
                self.internal(error);
            }
        }
    }

    /// Records what a session's client declared it can be asked.
    pub(super) fn remember_client(
        &self,
        session_id: &str,
        capabilities: Option<&Map<String, Value>>,
    ) {
        let recorded = self
            .initialized
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut clients = self.clients.lock().expect("clients");
        if clients.len() >= CLIENTS_REMEMBERED_MAX
            && !clients.contains_key(session_id)
            && let Some(oldest) = clients
                .iter()
                .min_by_key(|(_, client)| client.recorded)
                .map(|(id, _)| id.clone())
        {
            clients.remove(&oldest);
        }
        clients.insert(
            session_id.to_owned(),
            ClientAbilities::declared(capabilities, recorded),
        );
    }
}

/// A stored input request's method and params (`{method, params}`); `None` if malformed.
pub(super) fn side_request(question: &Value) -> Option<(&str, &Map<String, Value>)> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    let method = question.get("method")?.as_str()?;
    let params = match question.get("params") {
        None | Some(Value::Null) => EMPTY.get_or_init(Map::new),
        Some(Value::Object(params)) => params,
        Some(_) => return None,
    };
    Some((method, params))
}

/// The JSON-RPC request asking a task's question: its params with the related-task `_meta`.
pub(super) fn side_request_message(
    id: &str,
    method: &str,
    params: &Map<String, Value>,
    task_id: &str,
) -> Value {
    let mut params = params.clone();
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        meta.insert(wire::RELATED_TASK.into(), json!({ "taskId": task_id }));
    }
    let mut message = Map::new();
    message.insert("jsonrpc".into(), json!("2.0"));
    message.insert("id".into(), json!(id));
    message.insert("method".into(), json!(method));
    message.insert("params".into(), Value::Object(params));
    Value::Object(message)
}

/// A result with the related-task `_meta` merged in.
pub(super) fn with_related_task(result: Value, task_id: &str) -> Value {
    let mut result = match result {
        Value::Object(object) => object,
        other => {
            let mut object = Map::new();
            object.insert("result".into(), other);
            object
        }
    };
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(wire::RELATED_TASK.into(), json!({ "taskId": task_id }));
    }
    Value::Object(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(capabilities: Value) -> ClientAbilities {
        ClientAbilities::declared(capabilities.as_object(), 0)
    }

    #[test]
    fn only_what_a_client_declared_is_asked() {
        let form = Map::new();
        let mut url = Map::new();
        url.insert("mode".into(), json!("url"));
        let elicit = |abilities: ClientAbilities| {
            (
                abilities.allows("elicitation/create", &form),
                abilities.allows("elicitation/create", &url),
            )
        };
        assert_eq!(elicit(declared(json!({}))), (false, false));
        assert_eq!(
            elicit(declared(json!({ "elicitation": true }))),
            (false, false)
        );
        assert_eq!(
            elicit(declared(json!({ "elicitation": {} }))),
            (true, false)
        );
        assert_eq!(
            elicit(declared(json!({ "elicitation": { "url": {} } }))),
            (false, true)
        );
        assert_eq!(
            elicit(declared(
                json!({ "elicitation": { "form": {}, "url": {} } })
            )),
            (true, true)
        );
        let everything = declared(json!({ "elicitation": {}, "sampling": {}, "roots": {} }));
        assert!(everything.allows("sampling/createMessage", &form));
        assert!(everything.allows("roots/list", &form));
        assert!(
            !everything.allows("tools/call", &form),
            "unknown methods are never sent"
        );
        let mut odd = Map::new();
        odd.insert("mode".into(), json!("telepathy"));
        assert!(!everything.allows("elicitation/create", &odd));
    }

    #[test]
    fn pending_side_requests_are_bounded_per_session() {
        let ask = |session: &str, key: usize| PendingAsk {
            session: session.into(),
            auth_key: "a".into(),
            task_id: "t".into(),
            key: format!("k{key}"),
        };
        let mut asks = Asks::default();
        for n in 0..ASKS_PER_SESSION_MAX {
            assert!(asks.insert(format!("s1-{n}"), ask("s1", n)));
        }
        assert!(!asks.insert("s1-over".into(), ask("s1", 999)), "the bound");
        assert!(asks.insert("s2-0".into(), ask("s2", 0)), "per session");
        assert_eq!(asks.remove("s1-0").map(|ask| ask.key), Some("k0".into()));
        assert!(asks.remove("s1-0").is_none(), "answered once");
        assert!(asks.insert("s1-again".into(), ask("s1", 0)));
        asks.remove_session("s1");
        assert_eq!(asks.by_id.len(), 1);
        assert!(!asks.per_session.contains_key("s1"));
        assert!(asks.remove("s2-0").is_some());
        assert!(asks.per_session.is_empty() && asks.by_id.is_empty());
    }

    #[test]
    fn a_side_request_carries_the_related_task() {
        let question = json!({ "method": "elicitation/create", "params": { "message": "ok?", "_meta": { "x": 1 } } });
        let (method, params) = side_request(&question).expect("well formed");
        let message = side_request_message("tasklatch-ask-1", method, params, "task-1");
        assert_eq!(message["id"], "tasklatch-ask-1");
        assert_eq!(message["method"], "elicitation/create");
        assert_eq!(message["params"]["message"], "ok?");
        assert_eq!(message["params"]["_meta"]["x"], 1);
        assert_eq!(
            message["params"]["_meta"][wire::RELATED_TASK]["taskId"],
            "task-1"
        );
        let odd = json!({ "method": "roots/list", "params": { "_meta": 5 } });
        let (method, params) = side_request(&odd).expect("well formed");
        let message = side_request_message("id", method, params, "task-2");
        assert_eq!(
            message["params"]["_meta"][wire::RELATED_TASK]["taskId"],
            "task-2"
        );
        assert!(side_request(&json!({ "method": 5 })).is_none());
        assert!(side_request(&json!({ "method": "m", "params": [] })).is_none());
        assert!(side_request(&json!("elicitation/create")).is_none());
        assert!(side_request(&json!({ "method": "m" })).is_some());
    }
}
