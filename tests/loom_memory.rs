//! loom models of the in-memory store's own source (`tasklatch::interleave::models`):
//! every interleaving of each model's threads, up to `LOOM_MAX_PREEMPTIONS` (default 2).

use tasklatch::interleave::models::{Model, run};

fn explore(model: Model) {
    let run = run(model);
    assert!(
        run.iterations > 1,
        "{}: loom explored one interleaving only",
        model.name()
    );
    if let Some(failure) = run.failure {
        panic!(
            "{} failed after {} interleavings: {failure}",
            model.name(),
            run.iterations
        );
    }
    eprintln!(
        "{}: {} interleavings, all hold",
        model.name(),
        run.iterations
    );
}

#[test]
fn complete_cancel_and_stale_complete_on_one_task() {
    explore(Model::CompleteCancelStale);
}

#[test]
fn two_creates_with_one_idempotency_key() {
    explore(Model::SameKeyCreates);
}

#[test]
fn create_versus_list_across_two_tenants() {
    explore(Model::CreateVersusList);
}
