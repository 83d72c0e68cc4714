//! `tasklatch replay`: contract fixture files through the pure contract, decisions
//! compared.

use super::{EXIT_BAD_INPUT, EXIT_MISMATCH};
use std::path::PathBuf;
use std::process::ExitCode;
use tasklatch::fixture::{self, ContractEvaluator, Summary};

#[derive(clap::Args)]
pub struct ReplayArgs {
    /// Fixture files (format tasklatch.contract-fixture/v1).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print a machine-readable JSON report instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: ReplayArgs) -> ExitCode {
    let (files, json) = (&args.files, args.json);
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
