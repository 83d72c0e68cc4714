//! The `tasklatch` command line: parses and dispatches; each command is a module of
//! [`cmd`].
//!
//! Exit status: 0 success; 1 a check ran and failed (a mismatch); 2 bad input (a malformed
//! fixture, an unreadable file, bad arguments).

mod cmd;

use clap::{Parser, Subcommand};
use cmd::EXIT_BAD_INPUT;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "tasklatch",
    version,
    about = "The MCP 2025-11-25 task state contract and its proving harness"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay contract fixture files through the pure contract and compare decisions.
    Replay(cmd::replay::ReplayArgs),
    /// Run a simulation scenario over a seed range (needs `--features sim`).
    #[cfg(all(feature = "sim", madsim))]
    Sim(cmd::sim::SimArgs),
    /// Replay one seed deterministically and print its timeline and trace hash.
    #[cfg(all(feature = "sim", madsim))]
    Repro(cmd::sim::ReproArgs),
    /// Hunt races: run scenarios over fresh seeds until the budget or seed count is spent;
    /// write each failure's artifacts, minimise its fault schedule. Exit 1 on any failure.
    #[cfg(all(feature = "sim", madsim))]
    Hunt(cmd::hunt::HuntArgs),
    /// Add up the tallies of a sharded hunt (`hunt --tally FILE` per shard): runs per
    /// scenario per shard and the total, against a goal. Exit 1 on a failing run, 2 on a
    /// tally that cannot be read.
    #[cfg(all(feature = "sim", madsim))]
    HuntTotal(cmd::hunt::TotalArgs),
    /// Run every engine against every named mutant and print the kill matrix (needs
    /// `--features mutants`). Exit 1 when an engine misses a mutant it must kill or fails
    /// without one.
    #[cfg(feature = "mutants")]
    Mutants(cmd::mutants::MutantsArgs),
    /// Serve MCP 2025-11-25 tasks with the built-in example tools (`export`, `archive`,
    /// `echo`), running the outbox dispatcher, workers and sweeper in-process.
    Serve(cmd::serve::ServeArgs),
    /// Check a live MCP tasks server, in any language, from the outside: the wire shapes of
    /// each protocol era it advertises. Exit 1 on any finding, 2 when the server cannot be
    /// reached or initialized.
    Probe(Box<cmd::probe::ProbeArgs>),
    /// Check a task store written for an MCP SDK (TypeScript or Python), in its own
    /// language, through the store bridge: the model-based engine's rules, each finding
    /// with a runnable snippet. Exit 1 on any finding, 2 when the store cannot be loaded or
    /// hangs.
    CheckStore(Box<cmd::check_store::CheckStoreArgs>),
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        what: cmd::bench::BenchCommand,
    },
}

// A `sim` build (never shipped) spends a third of its time in glibc's allocator: each run
// builds and drops a whole world. mimalloc halves that; allocation order never reaches a
// run's behaviour, so traces are unchanged.
#[cfg(all(feature = "sim", madsim))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() {
                ExitCode::from(EXIT_BAD_INPUT)
            } else {
                ExitCode::SUCCESS // --help, --version
            };
        }
    };
    match cli.command {
        Command::Replay(args) => cmd::replay::run(args),
        Command::Serve(args) => cmd::serve::serve(args),
        Command::Probe(args) => cmd::probe::probe(*args),
        Command::CheckStore(args) => cmd::check_store::check_store(*args),
        #[cfg(all(feature = "sim", madsim))]
        Command::Sim(args) => cmd::sim::run(args),
        #[cfg(all(feature = "sim", madsim))]
        Command::Repro(args) => cmd::sim::repro(args),
        #[cfg(all(feature = "sim", madsim))]
        Command::Hunt(args) => cmd::hunt::hunt(args),
        #[cfg(all(feature = "sim", madsim))]
        Command::HuntTotal(args) => cmd::hunt::total(args),
        #[cfg(feature = "mutants")]
        Command::Mutants(args) => cmd::mutants::run(args),
        Command::Bench { what } => cmd::bench::run(what),
    }
}
