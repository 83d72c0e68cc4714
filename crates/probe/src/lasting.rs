//! Tasks that last. A cancel check proves something only when its cancel lands on a task
//! still working; arguments sampled from a schema (`delay_ms: 0`) often make a task end at
//! once, and every cancel check then quietly meets a finished task. Before each era's
//! checks the probe runs one task of the chosen tool to the end and times it. Too short,
//! and it looks in the tool's input schema for a duration-like number the user did not
//! give (`delay_ms`, `duration`, `sleep_seconds`…), raises it, and times again; what it
//! raised is used for the whole era and said in the summary. Where nothing helps, the
//! summary names the checks that were weakened and what `--args` would fix.

use super::hostile::poll_to_end;
use super::shapes::{Context, chosen_tool};
use serde_json::{Map, Value, json};

/// A task that ends sooner than this, in ms, leaves a cancel little room to land.
pub const LASTING_MS_MIN: u64 = 200;
/// How long a raised task may take, in ms, before the raise is too much.
const RAISED_MS_MAX: u64 = 10_000;
/// Duration-like properties tried, at most.
const CANDIDATES_MAX: usize = 3;
/// The checks a task that ends at once weakens.
const WEAKENED: &str = "shapes.cancel.answers-cancelled, hostile.cancelled-never-completes, \
    hostile.foreign-identity.cancel and the workload's cancels";

/// What calibration decided for an era.
#[derive(Debug, Default)]
pub struct Lasting {
    /// The `--args` to use instead (a duration-like argument raised), if any.
    pub args: Option<Value>,
    /// What to say in the summary, if anything.
    pub note: Option<String>,
}

/// A property name that reads as a duration, and the unit its name suggests: ms, s, or
/// unknown (`None`).
pub fn duration_like(name: &str) -> Option<Option<Unit>> {
    let lower = name.to_ascii_lowercase();
    let named = [
        "delay", "duration", "sleep", "wait", "seconds", "secs", "millis", "pause",
    ]
    .iter()
    .any(|word| lower.contains(word))
        || lower.ends_with("_ms")
        || name.ends_with("Ms")
        || lower.ends_with("_s");
    if !named {
        return None;
    }
    Some(if lower.contains("ms") || lower.contains("milli") {
        Some(Unit::Ms)
    } else if lower.contains("sec") || lower.ends_with("_s") {
        Some(Unit::S)
    } else {
        None
    })
}

/// A duration's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
}

/// The values to try for a property of `unit`, each clamped to the schema's maximum:
/// seconds first where the unit is unknown (2 ms ends at once and is tried next; 1,500 s
/// first would wait for ever).
fn values_to_try(unit: Option<Unit>, property: &Value) -> Vec<Value> {
    let maximum = property["maximum"].as_f64().unwrap_or(f64::MAX);
    let integer = property["type"] == "integer";
    let values: &[f64] = match unit {
        Some(Unit::Ms) => &[1_500.0],
        Some(Unit::S) => &[1.5],
        None => &[2.0, 1_500.0],
    };
    values
        .iter()
        .map(|value| {
            let value = value.min(maximum);
            if integer {
                json!(value.ceil() as i64)
            } else {
                json!(value)
            }
        })
        .collect()
}

/// Times one task of the chosen tool with `args`: ms until it ended, `None` if it could
/// not be created or did not end within `wait_ms` (a task left working is cancelled).
async fn time_one(context: &Context<'_>, args: Option<&Value>, wait_ms: u64) -> Option<u64> {
    let (tool, _) = chosen_tool(context).ok()?;
    let schema = &context
        .opened
        .tools
        .iter()
        .find(|known| known.name == tool)?
        .input_schema;
    let arguments = super::shapes::overlay(schema, args);
    let peer = &context.opened.peer;
    let create = peer.create(&tool, &arguments, None).await;
    let view = peer.created(&create)?;
    match poll_to_end(peer, &view.task_id, context, wait_ms).await {
        Some(end) => Some(end.invoked_ms.saturating_sub(create.invoked_ms)),
        None => {
            let _ = peer.cancel(&view.task_id).await;
            None
        }
    }
}

/// Times the chosen tool and raises a duration-like argument if its tasks end at once.
pub async fn calibrate(context: &Context<'_>) -> Lasting {
    let Ok((tool, _)) = chosen_tool(context) else {
        return Lasting::default();
    };
    let given = context.config.args.clone();
    let wait_ms = (context.config.task_timeout.as_millis() as u64).min(RAISED_MS_MAX);
    let Some(sampled_ms) = time_one(context, given.as_ref(), wait_ms).await else {
        return Lasting::default();
    };
    if sampled_ms >= LASTING_MS_MIN {
        return Lasting::default();
    }
    let schema = context
        .opened
        .tools
        .iter()
        .find(|known| known.name == tool)
        .map(|known| known.input_schema.clone())
        .unwrap_or(Value::Null);
    for (name, property, unit) in candidates(&schema, given.as_ref()) {
        for value in values_to_try(unit, &property) {
            let mut raised = given.clone().unwrap_or_else(|| Value::Object(Map::new()));
            raised[name.as_str()] = value.clone();
            if let Some(raised_ms) = time_one(context, Some(&raised), wait_ms).await
                && raised_ms >= LASTING_MS_MIN
            {
                return Lasting {
                    args: Some(raised),
                    note: Some(format!(
                        "`{tool}`'s tasks ended in {sampled_ms} ms with the sampled arguments, \
                         too soon for a cancel to land: the probe set `{name}` to {value} \
                         (they then took {raised_ms} ms); give --args to choose otherwise"
                    )),
                };
            }
        }
    }
    Lasting {
        args: None,
        note: Some(format!(
            "`{tool}`'s tasks end in {sampled_ms} ms with {}, too soon for a cancel to land, \
             and no duration-like argument in its schema made them last: {WEAKENED} mostly \
             meet a finished task; give --args (or --tool) that make a task run a second or more",
            if given.is_some() {
                "the given --args"
            } else {
                "the sampled arguments"
            }
        )),
    }
}

/// The schema's duration-like number properties `given` does not set, with their unit.
fn candidates(schema: &Value, given: Option<&Value>) -> Vec<(String, Value, Option<Unit>)> {
    let Some(properties) = schema["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .filter(|(name, property)| {
            matches!(property["type"].as_str(), Some("integer" | "number"))
                && given.is_none_or(|given| given.get(name.as_str()).is_none())
        })
        .filter_map(|(name, property)| {
            duration_like(name).map(|unit| (name.clone(), property.clone(), unit))
        })
        .take(CANDIDATES_MAX)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_known_by_their_names() {
        assert_eq!(duration_like("delay_ms"), Some(Some(Unit::Ms)));
        assert_eq!(duration_like("sleepMs"), Some(Some(Unit::Ms)));
        assert_eq!(duration_like("seconds"), Some(Some(Unit::S)));
        assert_eq!(duration_like("wait_s"), Some(Some(Unit::S)));
        assert_eq!(duration_like("duration"), Some(None));
        assert_eq!(duration_like("rows"), None);
        assert_eq!(duration_like("name"), None);
    }

    #[test]
    fn values_keep_to_the_schema() {
        let capped = json!({"type": "integer", "maximum": 1000});
        assert_eq!(values_to_try(Some(Unit::Ms), &capped), vec![json!(1000)]);
        let seconds = json!({"type": "integer"});
        assert_eq!(values_to_try(Some(Unit::S), &seconds), vec![json!(2)]);
        let unknown = json!({"type": "number"});
        assert_eq!(
            values_to_try(None, &unknown),
            vec![json!(2.0), json!(1500.0)]
        );
    }

    #[test]
    fn only_numbers_the_user_did_not_give_are_raised() {
        let schema = json!({"properties": {
            "delay_ms": {"type": "integer"},
            "sleep": {"type": "string"},
            "seconds": {"type": "number"},
            "rows": {"type": "integer"},
        }});
        let found: Vec<String> = candidates(&schema, Some(&json!({"seconds": 3})))
            .into_iter()
            .map(|(name, _, _)| name)
            .collect();
        assert_eq!(found, vec!["delay_ms".to_owned()]);
    }
}
