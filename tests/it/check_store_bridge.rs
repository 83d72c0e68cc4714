//! The store bridge on bad input: a module that does not load, a factory that throws, a
//! store that lacks a method, a store that prints on stdout, a store that hangs. Each is a
//! [`BridgeError`] naming what went wrong (the command's exit 2), never a panic, and the
//! shim is gone afterwards. The stores here are a few lines each, written for the test:
//! Node only needs `node`, Python only `python3` (no SDK).

use crate::support;
use std::path::Path;
use std::time::Duration;
use tasklatch::bridge::driver::Driver;
use tasklatch::bridge::{Answer, BridgeError, Shim, StoreSpec};

const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// The Node store module `text`, written at `dir/name`.
fn node_store(dir: &Path, name: &str, text: &str) -> StoreSpec {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    StoreSpec::node(&path.display().to_string()).unwrap()
}

const METHODS: &str = "async createTask() { return { taskId: 't1', status: 'working', ttl: null, \
    createdAt: new Date().toISOString(), lastUpdatedAt: new Date().toISOString() }; }
  async getTask() { return null; }
  async storeTaskResult() {}
  async getTaskResult() { return {}; }
  async updateTaskStatus() {}
  async listTasks() { return { tasks: [] }; }";

/// The minimal store with its method `plain` replaced by `instead`.
fn store_with(plain: &str, instead: &str) -> String {
    assert!(METHODS.contains(plain), "{plain}");
    format!(
        "export class createStore {{\n  {}\n}}\n",
        METHODS.replace(plain, instead)
    )
}

fn start_error(spec: &StoreSpec) -> String {
    match Shim::start(spec) {
        Ok(_) => panic!("{} started", spec.describe()),
        Err(BridgeError(message)) => message,
    }
}

#[test]
fn a_module_that_does_not_load_is_named() {
    let scratch = support::Scratch::new("bridge-load");
    let spec = node_store(
        &scratch.path,
        "broken.mjs",
        "export const createStore = ;\n",
    );
    let message = start_error(&spec);
    assert!(message.contains("broken.mjs"), "{message}");
    assert!(message.contains("load failed"), "{message}");

    let missing = node_store(
        &scratch.path,
        "other.mjs",
        "export const somethingElse = 1;\n",
    );
    let message = start_error(&missing);
    assert!(
        message.contains("no function or class export `createStore`"),
        "{message}"
    );
    assert!(message.contains("somethingElse"), "{message}");

    let path = scratch.path.join("broken_store.py");
    std::fs::write(&path, "import no_such_module_anywhere\n").unwrap();
    let python = StoreSpec::python(&format!("{}:create_store", path.display())).unwrap();
    let message = start_error(&python);
    assert!(message.contains("load failed"), "{message}");
    assert!(message.contains("no_such_module_anywhere"), "{message}");
}

#[test]
fn a_factory_that_throws_or_makes_half_a_store_is_named() {
    let scratch = support::Scratch::new("bridge-factory");
    let throws = node_store(
        &scratch.path,
        "throws.mjs",
        "export function createStore() { throw new Error('no database configured'); }\n",
    );
    let mut shim = Shim::start(&throws).unwrap();
    let error = Driver::open(&mut shim, &scratch.path.join("case"), CALL_TIMEOUT)
        .err()
        .unwrap();
    assert!(error.0.contains("the factory threw"), "{error}");
    assert!(error.0.contains("no database configured"), "{error}");

    let half = node_store(
        &scratch.path,
        "half.mjs",
        "export class createStore { async getTask() { return null; } }\n",
    );
    let mut shim = Shim::start(&half).unwrap();
    let error = Driver::open(&mut shim, &scratch.path.join("case"), CALL_TIMEOUT)
        .err()
        .unwrap();
    assert!(error.0.contains("lacks createTask"), "{error}");
}

#[test]
fn a_store_that_prints_on_stdout_is_refused() {
    let scratch = support::Scratch::new("bridge-prints");
    let text = store_with(
        "async getTaskResult() { return {}; }",
        "async getTaskResult() { process.stdout.write('debug: hello\\n'); return {}; }",
    );
    let spec = node_store(&scratch.path, "prints.mjs", &text);
    let mut shim = Shim::start(&spec).unwrap();
    let mut driver = Driver::open(&mut shim, &scratch.path.join("case"), CALL_TIMEOUT).unwrap();
    // console.log is routed to stderr: a store may log.
    let call = tasklatch::bridge::ops::Call {
        method: "getTaskResult",
        args: vec![serde_json::json!("t1")],
    };
    let error = driver.call(&call).err().unwrap();
    assert!(error.0.contains("not the bridge protocol"), "{error}");
    assert!(error.0.contains("debug: hello"), "{error}");
}

#[test]
fn a_store_that_hangs_times_out_and_nothing_is_left_running() {
    let scratch = support::Scratch::new("bridge-hangs");
    let text = store_with(
        "async getTask() { return null; }",
        "async getTask() { return new Promise(() => {}); }",
    );
    let spec = node_store(&scratch.path, "hangs.mjs", &text);
    let mut shim = Shim::start(&spec).unwrap();
    let pid = shim.pid();
    let mut driver = Driver::open(
        &mut shim,
        &scratch.path.join("case"),
        Duration::from_millis(500),
    )
    .unwrap();
    let answer = driver
        .call(&tasklatch::bridge::ops::Call {
            method: "createTask",
            args: vec![serde_json::json!({})],
        })
        .unwrap();
    assert!(matches!(answer, Answer::Returned(_)), "{answer:?}");
    let error = driver
        .call(&tasklatch::bridge::ops::Call {
            method: "getTask",
            args: vec![serde_json::json!("t1")],
        })
        .err()
        .unwrap();
    assert!(error.0.contains("no answer within 500ms"), "{error}");
    drop(shim);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the shim {pid} outlived its check"
    );
}

#[test]
fn the_command_exits_2_naming_the_module() {
    let scratch = support::Scratch::new("bridge-cli");
    let path = scratch.path.join("broken.mjs");
    std::fs::write(&path, "export const createStore = ;\n").unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tasklatch"))
        .args([
            "check-store",
            "--node",
            &path.display().to_string(),
            "--budget",
            "1s",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("broken.mjs") && stderr.contains("load failed"),
        "{stderr}"
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tasklatch"))
        .args(["check-store", "--node", "/no/such/store.mjs"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no such file"));
}

#[test]
fn the_command_writes_its_report_snippets_and_junit() {
    let scratch = support::Scratch::new("bridge-cli-out");
    // A store that forgets everything: every engine has something to say.
    let path = scratch.path.join("forgetful.mjs");
    std::fs::write(
        &path,
        format!("export class createStore {{\n  {METHODS}\n}}\n"),
    )
    .unwrap();
    let out = scratch.path.join("out");
    let junit = scratch.path.join("junit.xml");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tasklatch"))
        .args([
            "check-store",
            "--node",
            &path.display().to_string(),
            "--budget",
            "1s",
        ])
        .args(["--cases", "200", "--out", &out.display().to_string()])
        .args(["--junit", &junit.display().to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    for engine in ["fixture:", "explore:", "races:", "restart:"] {
        assert!(stdout.contains(engine), "{engine} missing from\n{stdout}");
    }
    assert!(
        stdout.contains("not run: the store does not claim"),
        "{stdout}"
    );
    // Its list never shows a task: a create raced by a list is not listed after.
    assert!(stdout.contains("race.create-list"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["format"], "tasklatch.check-store/v1");
    let snippets = std::fs::read_dir(out.join("findings")).unwrap().count();
    assert!(snippets > 0, "no snippet written");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testsuite name=\"explore\"") && xml.contains("<failure"),
        "{xml}"
    );
}
