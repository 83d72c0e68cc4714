//! A finding's shortest sequence as a program in the store's own language: the user's
//! factory, each call as the shim made it, and each read printed. The check ran on the
//! shim's fake clock; the snippet waits real time instead, so it runs as it is.

use crate::driver::BAD_CURSOR;
use crate::ops::{self, Op};
use crate::spec::{Interface, Language, StoreSpec};
use serde_json::Value;
use std::fmt::Write as _;

/// The placeholder the calls carry for task `index`'s id.
fn placeholder(index: usize) -> String {
    format!("@@task{index}@@")
}

/// `ops` as a program that runs them against `spec`'s store.
pub fn render(spec: &StoreSpec, rule: &str, ops: &[Op]) -> String {
    match spec.language {
        Language::Node => node(spec, rule, ops),
        Language::Python => python(spec, rule, ops),
    }
}

/// The statements of `ops`: (what to bind or print, the call's method and arguments).
fn statements(interface: Interface, ops: &[Op]) -> Vec<Statement> {
    let mut created = 0;
    let mut out = Vec::new();
    for op in ops {
        match *op {
            Op::Advance { ms } => out.push(Statement::Sleep(ms)),
            Op::ListAll { session } => out.push(Statement::Print(
                format!("list ({})", session.name()),
                ops::list_call(interface, session, None),
            )),
            Op::BadCursor { session } => out.push(Statement::Print(
                "list from a made-up cursor".to_owned(),
                ops::list_call(interface, session, Some(BAD_CURSOR)),
            )),
            Op::Create { .. } => {
                let calls = ops::calls(interface, op, "", "").unwrap_or_default();
                out.push(Statement::Bind(created, calls[0].clone()));
                created += 1;
            }
            _ => {
                let task = op.task().unwrap_or(0);
                let status = last_status(ops, op);
                for call in
                    ops::calls(interface, op, &placeholder(task), &status).unwrap_or_default()
                {
                    out.push(Statement::Print(
                        format!("{} t{task}", crate::model::op_words(op)),
                        call,
                    ));
                }
            }
        }
    }
    out
}

/// The status a `Message` keeps: the one the TypeScript call must name (the last set
/// before it in the sequence, else `working`).
fn last_status(ops: &[Op], upto: &Op) -> String {
    let mut status = "working".to_owned();
    for op in ops {
        if std::ptr::eq(op, upto) {
            break;
        }
        status = match op {
            Op::Working { .. } | Op::Resume { .. } => "working",
            Op::AskInput { .. } => "input_required",
            _ => continue,
        }
        .to_owned();
    }
    status
}

enum Statement {
    Bind(usize, ops::Call),
    Print(String, ops::Call),
    Sleep(u64),
}

fn node(spec: &StoreSpec, rule: &str, ops: &[Op]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// tasklatch check-store: the shortest sequence found that breaks {rule}."
    );
    let _ = writeln!(
        out,
        "// Run: node snippet.mjs (the check's clock was fake; this one waits real time)."
    );
    out.push_str(&node_header(spec));
    let _ = writeln!(
        out,
        "const attempt = async (what, call) => {{\n  try {{ console.log(what, '->', JSON.stringify(await call())); }}\n  catch (error) {{ console.log(what, '-> threw', String(error?.message ?? error)); }}\n}};"
    );
    for statement in statements(spec.interface, ops) {
        match statement {
            Statement::Bind(index, call) => {
                let _ = writeln!(
                    out,
                    "const t{index} = await store.{}({});",
                    call.method,
                    js_args(&call.args)
                );
            }
            Statement::Print(what, call) => {
                let _ = writeln!(
                    out,
                    "await attempt({}, () => store.{}({}));",
                    js_string(&what),
                    call.method,
                    js_args(&call.args)
                );
            }
            Statement::Sleep(ms) => {
                let _ = writeln!(
                    out,
                    "await new Promise((resolve) => setTimeout(resolve, {ms}));"
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "await (store.cleanup ?? store.close ?? (() => {{}})).call(store);"
    );
    out
}

/// The import of the user's factory, and `store` made by it.
fn node_header(spec: &StoreSpec) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "import {{ {} }} from {};",
        spec.factory,
        js_string(&spec.module)
    );
    let _ = writeln!(out, "const make = {};", spec.factory);
    let _ = writeln!(
        out,
        "const store = /^class[\\s{{]/.test(Function.prototype.toString.call(make))\n  ? new make({{ dir: 'tasklatch-snippet' }})\n  : await make({{ dir: 'tasklatch-snippet' }});"
    );
    out
}

fn js_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

fn js_args(args: &[Value]) -> String {
    let rendered: Vec<String> = args
        .iter()
        .map(|arg| {
            let text = arg
                .to_string()
                .replace("{\"$undefined\":true}", "undefined");
            replace_ids(&text, |index| format!("t{index}.taskId"))
        })
        .collect();
    // Trailing `undefined`s are the optional parameters left out.
    let mut end = rendered.len();
    while end > 0 && rendered[end - 1] == "undefined" {
        end -= 1;
    }
    rendered[..end].join(", ")
}

/// `text` with each quoted placeholder replaced by `id(index)`.
fn replace_ids(text: &str, id: impl Fn(usize) -> String) -> String {
    let mut text = text.to_owned();
    for index in 0..16 {
        text = text.replace(&format!("\"{}\"", placeholder(index)), &id(index));
    }
    text
}

fn python(spec: &StoreSpec, rule: &str, ops: &[Op]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# tasklatch check-store: the shortest sequence found that breaks {rule}."
    );
    let _ = writeln!(
        out,
        "# Run: python snippet.py (the check's clock was fake; this one waits real time)."
    );
    out.push_str(&python_header(spec));
    let _ = writeln!(
        out,
        "\n\nasync def attempt(what, call):\n    try:\n        value = await call()\n        print(what, \"->\", value)\n    except Exception as error:\n        print(what, \"-> raised\", type(error).__name__, error)\n"
    );
    let _ = writeln!(
        out,
        "\nasync def main():\n    store = store_module.{}()",
        spec.factory
    );
    for statement in statements(spec.interface, ops) {
        match statement {
            Statement::Bind(index, call) => {
                let _ = writeln!(
                    out,
                    "    t{index} = await store.{}({})",
                    call.method,
                    py_args(&call)
                );
            }
            Statement::Print(what, call) => {
                let _ = writeln!(
                    out,
                    "    await attempt({}, lambda: store.{}({}))",
                    py_literal(&Value::String(what)),
                    call.method,
                    py_args(&call)
                );
            }
            Statement::Sleep(ms) => {
                let _ = writeln!(out, "    await asyncio.sleep({})", ms as f64 / 1000.0);
            }
        }
    }
    let _ = writeln!(out, "\n\nasyncio.run(main())");
    out
}

/// The imports, and the user's module as `store_module`.
fn python_header(spec: &StoreSpec) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "import asyncio\nimport importlib.util\nimport sys\n");
    let _ = writeln!(out, "from mcp.types import Result, TaskMetadata\n");
    if spec.module.ends_with(".py") || spec.module.contains('/') {
        let _ = writeln!(
            out,
            "_spec = importlib.util.spec_from_file_location(\"store_module\", {})\nstore_module = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(store_module)",
            py_literal(&Value::String(spec.module.clone()))
        );
    } else {
        let _ = writeln!(
            out,
            "sys.path.insert(0, \".\")\nimport {} as store_module",
            spec.module
        );
    }
    out
}

/// A call's arguments as Python: the model-typed ones built as the shim builds them.
fn py_args(call: &ops::Call) -> String {
    call.args
        .iter()
        .enumerate()
        .map(|(index, arg)| {
            let literal = replace_ids(&py_literal(arg), |task| format!("t{task}.taskId"));
            match (call.method, index) {
                ("create_task", 0) => format!("TaskMetadata.model_validate({literal})"),
                ("store_result", 1) => format!("Result.model_validate({literal})"),
                _ => literal,
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `value` as a Python literal.
fn py_literal(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(number) => number.to_string(),
        Value::String(_) => value.to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(py_literal).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(members) => format!(
            "{{{}}}",
            members
                .iter()
                .map(|(name, item)| format!(
                    "{}: {}",
                    Value::String(name.clone()),
                    py_literal(item)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A race as a program: rounds of the two writers' calls run together on a fresh task,
/// and what each round left, printed when a rule breaks (`rule`, as the check found it).
pub fn race(spec: &StoreSpec, rule: &str, writers: &[Op; 2]) -> String {
    let scripts: Vec<Vec<ops::Call>> = writers
        .iter()
        .map(|op| crate::races::script_of(spec.interface, op, &placeholder(0)))
        .collect();
    let create = Op::Create {
        session: writers[0].session(),
        ttl_ms: None,
    };
    let create = ops::calls(spec.interface, &create, "", "").unwrap_or_default();
    match spec.language {
        Language::Node => node_race(spec, rule, &create[0], &scripts),
        Language::Python => python_race(spec, rule, &create[0], &scripts),
    }
}

/// Each writer's calls, right-aligned over `steps` (a writer with fewer calls waits).
fn aligned<T: Clone>(scripts: &[Vec<T>]) -> (usize, Vec<Vec<Option<T>>>) {
    let steps = scripts.iter().map(Vec::len).max().unwrap_or(0);
    let rows = scripts
        .iter()
        .map(|script| {
            let mut row = vec![None; steps - script.len()];
            row.extend(script.iter().cloned().map(Some));
            row
        })
        .collect();
    (steps, rows)
}

/// A race snippet's opening comment, in the language's `comment` syntax.
fn race_intro(comment: &str, rule: &str, run: &str) -> String {
    format!(
        "{comment} tasklatch check-store: a race that breaks {rule}; run: {run}\n\
         {comment} Each round runs the writers' calls step by step, each step's calls started\n\
         {comment} together (the first writer first on even rounds, the second on odd ones).\n"
    )
}

fn node_race(
    spec: &StoreSpec,
    rule: &str,
    create: &ops::Call,
    scripts: &[Vec<ops::Call>],
) -> String {
    let mut out = String::new();
    out.push_str(&race_intro("//", rule, "node snippet.mjs"));
    out.push_str(&node_header(spec));
    let (steps, rows) = aligned(scripts);
    let _ = writeln!(out, "for (let round = 0; round < 200; round++) {{");
    let _ = writeln!(
        out,
        "  const t0 = await store.{}({});",
        create.method,
        js_args(&create.args)
    );
    let _ = writeln!(out, "  const scripts = [");
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .map(|cell| match cell {
                Some(call) => format!("() => store.{}({})", call.method, js_args(&call.args)),
                None => "null".to_owned(),
            })
            .collect();
        let _ = writeln!(out, "    [{}],", cells.join(", "));
    }
    let _ = writeln!(out, "  ];\n  const alive = [true, true];");
    let _ = writeln!(out, "  for (let step = 0; step < {steps}; step++) {{");
    let _ = writeln!(out, "    const order = round % 2 === 1 ? [1, 0] : [0, 1];");
    let _ = writeln!(
        out,
        "    await Promise.all(order.filter((w) => alive[w] && scripts[w][step])"
    );
    let _ = writeln!(
        out,
        "      .map((w) => scripts[w][step]().then(() => {{}}, () => {{ alive[w] = false; }})));"
    );
    let _ = writeln!(out, "  }}\n  const won = alive.filter(Boolean).length;");
    let session = match create.args.get(3) {
        Some(Value::String(session)) => format!(", {}", js_string(session)),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "  const task = await store.getTask(t0.taskId{session});"
    );
    let _ = writeln!(out, "  let result = null;");
    let _ = writeln!(
        out,
        "  try {{ result = await store.getTaskResult(t0.taskId{session}); }} catch {{}}"
    );
    let _ = writeln!(
        out,
        "  const leaked = task?.status !== 'completed' && JSON.stringify(result ?? '').includes('payload-');\n  if (won !== 1 || leaked) console.log('round', round, ':', won, 'writers succeeded; status', task?.status, 'result', JSON.stringify(result));"
    );
    let _ = writeln!(out, "}}");
    let _ = writeln!(
        out,
        "await (store.cleanup ?? store.close ?? (() => {{}})).call(store);"
    );
    out
}

fn python_race(
    spec: &StoreSpec,
    rule: &str,
    create: &ops::Call,
    scripts: &[Vec<ops::Call>],
) -> String {
    let mut out = String::new();
    out.push_str(&race_intro("#", rule, "python snippet.py"));
    out.push_str(&python_header(spec));
    let (steps, rows) = aligned(scripts);
    let _ = writeln!(
        out,
        "\nasync def main():\n    store = store_module.{}()",
        spec.factory
    );
    let _ = writeln!(out, "    for round in range(200):");
    let _ = writeln!(
        out,
        "        t0 = await store.{}({})",
        create.method,
        py_args(create)
    );
    let _ = writeln!(out, "        scripts = [");
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .map(|cell| match cell {
                Some(call) => format!("lambda: store.{}({})", call.method, py_args(call)),
                None => "None".to_owned(),
            })
            .collect();
        let _ = writeln!(out, "            [{}],", cells.join(", "));
    }
    let _ = writeln!(out, "        ]\n        alive = [True, True]\n");
    let _ = writeln!(
        out,
        "        async def run(writer, call):\n            try:\n                await call()\n            except Exception:\n                alive[writer] = False\n"
    );
    let _ = writeln!(out, "        for step in range({steps}):");
    let _ = writeln!(out, "            order = [1, 0] if round % 2 else [0, 1]");
    let _ = writeln!(
        out,
        "            await asyncio.gather(*[run(w, scripts[w][step]) for w in order if alive[w] and scripts[w][step]])"
    );
    let _ = writeln!(out, "        won = sum(alive)");
    let _ = writeln!(out, "        task = await store.get_task(t0.taskId)");
    let _ = writeln!(out, "        result = await store.get_result(t0.taskId)");
    let _ = writeln!(
        out,
        "        leaked = task is not None and task.status != \"completed\" and \"payload-\" in str(result)"
    );
    let _ = writeln!(out, "        if won != 1 or leaked:");
    let _ = writeln!(
        out,
        "            print(\"round\", round, \":\", won, \"writers succeeded; status\", task.status if task else None, \"result\", result)"
    );
    let _ = writeln!(out, "\n\nasyncio.run(main())");
    out
}
