//! How long the runtime's loops sleep while nothing comes. With bells (a server rings its
//! dispatcher at each admission, the dispatcher its workers at each publish) a loop
//! doubles its sleep each idle round up to 8 × `idle_ms`, and the first work puts it back
//! to `idle_ms`; without bells (a runtime in another process than its server) every sleep
//! is `idle_ms`, since polling is then how it learns of new work.
// Plain builds only, as runtime_tokio.rs (whose task helpers this uses).
#![cfg(not(feature = "mutants"))]

use crate::runtime_tokio::{Export, create};
use std::sync::{Arc, Mutex};
use tasklatch::runtime::{BoxFuture, Env, MemoryQueue, NoNotify, NoProbe, Runtime, RuntimeConfig};
use tasklatch::store::{MemoryStore, StoreOptions, TaskStore};

const START_MS: u64 = 1_767_225_600_000;

/// Virtual time that records each sleep: a sleep ends at once (the clock moves by it),
/// `on_sleep` runs with its index first, and after `sleeps_max` sleeps every sleep parks
/// the loop for good, so the test reads a finished record.
struct RecordingEnv {
    slept_ms: Mutex<Vec<u64>>,
    sleeps_max: usize,
    on_sleep: Box<dyn Fn(usize, u64) + Send + Sync>,
}

impl RecordingEnv {
    fn now(&self) -> u64 {
        START_MS + self.slept_ms.lock().unwrap().iter().sum::<u64>()
    }
}

impl Env for RecordingEnv {
    fn now_ms(&self) -> u64 {
        self.now()
    }

    fn sleep(&self, ms: u64) -> BoxFuture<'static, ()> {
        let index = {
            let mut slept = self.slept_ms.lock().unwrap();
            if slept.len() >= self.sleeps_max {
                return Box::pin(std::future::pending());
            }
            slept.push(ms);
            slept.len() - 1
        };
        (self.on_sleep)(index, self.now());
        Box::pin(async {})
    }

    fn spawn(&self, task: BoxFuture<'static, ()>) {
        drop(tokio::spawn(task));
    }

    fn random_u64(&self) -> u64 {
        4
    }
}

enum Loop {
    Dispatcher,
    Worker,
}

/// Runs one loop of a runtime over a fresh memory store until it has slept `sleeps_max`
/// times; `admit_at` names the sleeps during which a task is admitted (and the dispatcher
/// rung, as the server would). Returns the sleeps in order.
async fn sleeps_of(which: Loop, bells: bool, sleeps_max: usize, admit_at: &[usize]) -> Vec<u64> {
    let store: Arc<dyn TaskStore> =
        Arc::new(MemoryStore::open(&StoreOptions::default()).expect("memory store"));
    let admitted = Arc::new(tokio::sync::Notify::new());
    let (hook_store, hook_bell, admit_at) = (store.clone(), admitted.clone(), admit_at.to_vec());
    let env = Arc::new(RecordingEnv {
        slept_ms: Mutex::default(),
        sleeps_max,
        on_sleep: Box::new(move |index, now_ms| {
            if admit_at.contains(&index) {
                create(&*hook_store, index, None, now_ms);
                hook_bell.notify_one();
            }
        }),
    });
    let runtime = Runtime::new(
        store,
        Arc::new(MemoryQueue::new(8)),
        Arc::new(Export::default()),
        env.clone(),
        Arc::new(NoProbe),
        Arc::new(NoNotify),
        RuntimeConfig::default(),
    );
    let runtime = Arc::new(if bells {
        runtime.with_bells(admitted)
    } else {
        runtime
    });
    drop(tokio::spawn(match which {
        Loop::Dispatcher => Box::pin(runtime.run_dispatcher("d".into())) as BoxFuture<'static, ()>,
        Loop::Worker => Box::pin(runtime.run_worker()),
    }));
    // Bounded: the loop parks after `sleeps_max` sleeps, each of which ends at once.
    for _ in 0..10_000 {
        if env.slept_ms.lock().unwrap().len() >= sleeps_max {
            break;
        }
        tokio::task::yield_now().await;
    }
    let slept = env.slept_ms.lock().unwrap().clone();
    assert_eq!(
        slept.len(),
        sleeps_max,
        "the loop stopped sleeping: {slept:?}"
    );
    slept
}

#[tokio::test(flavor = "current_thread")]
async fn a_dispatcher_with_a_bell_sleeps_longer_while_nothing_comes() {
    let idle_ms = RuntimeConfig::default().idle_ms;
    let slept = sleeps_of(Loop::Dispatcher, true, 10, &[]).await;
    let doubling = [1, 2, 4, 8, 8, 8, 8, 8, 8, 8].map(|times| times * idle_ms);
    assert_eq!(slept, doubling);
}

#[tokio::test(flavor = "current_thread")]
async fn work_puts_the_dispatcher_back_to_its_shortest_sleep() {
    let idle_ms = RuntimeConfig::default().idle_ms;
    // A task admitted during the fifth sleep is published after it: the next sleep is
    // the shortest again, and the doubling starts over.
    let slept = sleeps_of(Loop::Dispatcher, true, 10, &[4]).await;
    let expected = [1, 2, 4, 8, 8, 1, 2, 4, 8, 8].map(|times| times * idle_ms);
    assert_eq!(slept, expected);
}

#[tokio::test(flavor = "current_thread")]
async fn a_worker_with_a_bell_sleeps_longer_while_nothing_comes() {
    let idle_ms = RuntimeConfig::default().idle_ms;
    let slept = sleeps_of(Loop::Worker, true, 6, &[]).await;
    assert_eq!(slept, [1, 2, 4, 8, 8, 8].map(|times| times * idle_ms));
}

#[tokio::test(flavor = "current_thread")]
async fn loops_without_bells_poll_at_every_idle_interval() {
    let idle_ms = RuntimeConfig::default().idle_ms;
    for which in [Loop::Dispatcher, Loop::Worker] {
        let slept = sleeps_of(which, false, 6, &[2]).await;
        assert_eq!(slept, [idle_ms; 6]);
    }
}
