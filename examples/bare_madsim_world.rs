//! The yardstick for the simulation's speed: a bare madsim world of `baseline`'s size,
//! with none of tasklatch in it.
//!
//! 21 tasks from 3 clients, one server node running 3 workers that take tasks from a
//! queue, change them by compare-and-swap on a shared map and log each run's effect
//! outside the node, and up to 3 kills of that node at random times (a restarted node
//! requeues what was not finished). Clients poll each task every 100 ms with jitter until
//! it is terminal. Each seed ends with a check that every task completed and every
//! version rose by one per change. It is what any madsim simulation of this shape pays:
//! the runtime per seed, task polls, timers, the generator, a little locking.
//!
//! `tasklatch sim` runs the same number of tasks, workers and kills with the real server,
//! wire, store and oracle; docs/measurements.md compares the two side by side, because on
//! this shared machine only ratios measured in one run mean anything:
//!
//! ```text
//! cargo build --release --features sim --bin tasklatch --example bare_madsim_world
//! taskset -c 0 target/release/examples/bare_madsim_world 0..5000
//! taskset -c 0 target/release/tasklatch sim --scenario baseline --seeds 0..2000
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use madsim::rand::Rng;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CLIENTS: u64 = 3;
const TASKS_PER_CLIENT: u64 = 7;
const WORKERS: usize = 3;
const KILLS_MAX: u64 = 3;
const IDLE_POLL_MS: u64 = 40;
const CLIENT_POLL_MS: u64 = 100;
const POLLS_MAX: u32 = 1_000;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Status {
    Queued,
    Working,
    Completed,
}

#[derive(Default)]
struct World {
    /// task → (status, version): the compare-and-swap store.
    rows: Mutex<BTreeMap<u64, (Status, u64)>>,
    queue: Mutex<VecDeque<u64>>,
    /// Each tool run's side effect, outside the node that ran it (kept across kills).
    effects: Mutex<Vec<u64>>,
}

impl World {
    /// Applies `from → to` only if the row is still at `version`.
    fn cas(&self, task: u64, version: u64, from: Status, to: Status) -> bool {
        let mut rows = self.rows.lock().unwrap();
        let row = rows.get_mut(&task).expect("task admitted");
        if *row != (from, version) {
            return false;
        }
        *row = (to, version + 1);
        true
    }

    fn status(&self, task: u64) -> Status {
        self.rows.lock().unwrap()[&task].0
    }
}

async fn worker(world: Arc<World>) {
    loop {
        let next = world.queue.lock().unwrap().pop_front();
        let Some(task) = next else {
            madsim::time::sleep(Duration::from_millis(IDLE_POLL_MS)).await;
            continue;
        };
        let (status, version) = world.rows.lock().unwrap()[&task];
        if status == Status::Completed || !world.cas(task, version, status, Status::Working) {
            continue;
        }
        let tool_ms = madsim::rand::thread_rng().gen_range(20..200);
        madsim::time::sleep(Duration::from_millis(tool_ms)).await;
        world.effects.lock().unwrap().push(task);
        world.cas(task, version + 1, Status::Working, Status::Completed);
    }
}

/// Puts every unfinished task back on the queue, as a restarted server's recovery does.
fn recover(world: &World) {
    let rows = world.rows.lock().unwrap();
    let mut queue = world.queue.lock().unwrap();
    queue.clear();
    queue.extend(
        rows.iter()
            .filter(|(_, (status, _))| *status != Status::Completed)
            .map(|(task, _)| *task),
    );
}

async fn client(world: Arc<World>, first_task: u64) {
    for task in first_task..first_task + TASKS_PER_CLIENT {
        world.rows.lock().unwrap().insert(task, (Status::Queued, 1));
        world.queue.lock().unwrap().push_back(task);
    }
    for task in first_task..first_task + TASKS_PER_CLIENT {
        for _ in 0..POLLS_MAX {
            if world.status(task) == Status::Completed {
                break;
            }
            let jitter_ms = madsim::rand::thread_rng().gen_range(0..=CLIENT_POLL_MS / 2);
            madsim::time::sleep(Duration::from_millis(CLIENT_POLL_MS + jitter_ms)).await;
        }
    }
}

async fn simulate() {
    let handle = madsim::runtime::Handle::current();
    let world = Arc::new(World::default());
    let init_world = world.clone();
    let server = handle
        .create_node()
        .name("server")
        .init(move || {
            let world = init_world.clone();
            async move {
                recover(&world);
                let workers: Vec<_> = (0..WORKERS)
                    .map(|_| madsim::task::spawn(worker(world.clone())))
                    .collect();
                for joined in workers {
                    let _ = joined.await;
                }
            }
        })
        .build();
    let clients = handle.create_node().name("clients").build();
    let killer = madsim::task::spawn(async move {
        let kills = madsim::rand::thread_rng().gen_range(0..=KILLS_MAX);
        for _ in 0..kills {
            let wait_ms = madsim::rand::thread_rng().gen_range(0..700);
            madsim::time::sleep(Duration::from_millis(wait_ms)).await;
            handle.kill(server.id());
            madsim::time::sleep(Duration::from_millis(50)).await;
            handle.restart(server.id());
        }
    });
    let runs: Vec<_> = (0..CLIENTS)
        .map(|index| clients.spawn(client(world.clone(), index * TASKS_PER_CLIENT)))
        .collect();
    for run in runs {
        run.await.expect("client");
    }
    killer.await.expect("killer");
    check(&world);
}

fn check(world: &World) {
    let rows = world.rows.lock().unwrap();
    assert_eq!(rows.len() as u64, CLIENTS * TASKS_PER_CLIENT);
    for (task, (status, version)) in rows.iter() {
        assert_eq!(*status, Status::Completed, "task {task} unfinished");
        assert!(*version >= 3, "task {task} skipped a change");
    }
    let effects = world.effects.lock().unwrap();
    for task in rows.keys() {
        assert!(
            effects.contains(task),
            "task {task} completed without its effect"
        );
    }
}

fn main() {
    let range = std::env::args().nth(1).unwrap_or_else(|| "0..5000".into());
    let Some((from, to)) = range
        .split_once("..")
        .and_then(|(from, to)| Some((from.parse::<u64>().ok()?, to.parse::<u64>().ok()?)))
    else {
        eprintln!("usage: bare_madsim_world FROM..TO (seeds, e.g. 0..5000); got {range:?}");
        std::process::exit(2);
    };
    let started = std::time::Instant::now();
    for seed in from..to {
        let runtime =
            madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
        runtime.block_on(simulate());
    }
    let seconds = started.elapsed().as_secs_f64();
    let seeds = to.saturating_sub(from);
    println!(
        "bare madsim world: {seeds} seeds, {:.0} seeds/s",
        seeds as f64 / seconds
    );
}
