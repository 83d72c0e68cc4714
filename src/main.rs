//! The `tasklatch` command line.
//!
//! Exit status: 0 success; 1 a check ran and failed (a mismatch); 2 bad input (a malformed
//! fixture, an unreadable file, bad arguments).

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use tasklatch::fixture::{self, ContractEvaluator, Summary};

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
    Replay {
        /// Fixture files (format tasklatch.contract-fixture/v1).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print a machine-readable JSON report instead of the table.
        #[arg(long)]
        json: bool,
    },
}

const EXIT_MISMATCH: u8 = 1;
const EXIT_BAD_INPUT: u8 = 2;

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
        Command::Replay { files, json } => replay(&files, json),
    }
}

fn replay(files: &[PathBuf], json: bool) -> ExitCode {
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    for path in files {
        match fixture::load_fixture(path) {
            Ok(loaded) => reports.push(fixture::replay(&loaded, &mut ContractEvaluator)),
            Err(error) => errors.push(error),
        }
    }
    let mut total = Summary::default();
    for report in &reports {
        total.add(report.summary);
    }
    if json {
        let document = serde_json::json!({
            "files": reports,
            "errors": errors.iter().map(|error| serde_json::json!({
                "path": error.path.display().to_string(),
                "line": error.line,
                "column": error.column,
                "case_id": error.case_id,
                "field": error.field,
                "message": error.message,
                "display": error.to_string(),
            })).collect::<Vec<_>>(),
            "summary": total,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&document).expect("a JSON value always serialises")
        );
    } else {
        for (index, report) in reports.iter().enumerate() {
            if index > 0 {
                println!();
            }
            print!("{}", fixture::render_text(report));
        }
        if reports.len() > 1 {
            println!("\ntotal: {total}");
        }
    }
    for error in &errors {
        eprintln!("error: {error}");
    }
    if !errors.is_empty() {
        ExitCode::from(EXIT_BAD_INPUT)
    } else if total.mismatched > 0 {
        ExitCode::from(EXIT_MISMATCH)
    } else {
        ExitCode::SUCCESS
    }
}
