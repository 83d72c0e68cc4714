//! `tasklatch mutants`: every engine against every named mutant, the kill matrix.

use super::EXIT_BAD_INPUT;
use std::process::ExitCode;
use tasklatch::matrix::{self, Engine, Plan};
use tasklatch::mutants::Mutant;

#[derive(clap::Args)]
pub struct MutantsArgs {
    /// Only these mutants (repeatable; default: all, plus the unmutated build).
    #[arg(long = "mutant")]
    mutants: Vec<String>,
    /// Only these engines (repeatable): fixture, conformance, simulation, proptest, loom,
    /// probe (`tasklatch serve` of this binary with each mutant, probed from outside).
    #[arg(long = "engine")]
    engines: Vec<String>,
    /// Print the matrix as a Markdown table too.
    #[arg(long)]
    markdown: bool,
    /// Also run the conformance engine on PostgreSQL at this URL (with
    /// `--features postgres`). Every store is a fresh schema `tl_matrix_<pid>_<n>`, left
    /// behind: use a throwaway database.
    #[arg(long)]
    postgres: Option<String>,
}

pub fn run(args: MutantsArgs) -> ExitCode {
    let MutantsArgs {
        mutants,
        engines,
        markdown,
        postgres,
    } = args;
    if postgres.is_some() && !cfg!(feature = "postgres") {
        eprintln!("error: --postgres needs a build with `--features postgres`");
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let scratch = std::env::temp_dir().join(format!("tasklatch-mutants-{}", std::process::id()));
    if let Err(error) = std::fs::create_dir_all(&scratch) {
        eprintln!("error: {}: {error}", scratch.display());
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let mut plan = Plan::full(&scratch);
    plan.postgres_url = postgres;
    // The probe column serves each mutant with this very binary.
    plan.probe_server = std::env::current_exe().ok();
    if !mutants.is_empty() {
        match mutants
            .iter()
            .map(|name| match name.as_str() {
                "none" | "unmutated" => Ok(None),
                name => Mutant::parse(name).map(Some),
            })
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(chosen) => plan.mutants = chosen,
            Err(error) => {
                eprintln!("error: --mutant: {error}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        }
    }
    if !engines.is_empty() {
        let mut chosen = Vec::new();
        for name in engines {
            match Engine::parse(&name) {
                Ok(engine) => chosen.push(engine),
                Err(error) => {
                    eprintln!("error: --engine: {error}");
                    return ExitCode::from(EXIT_BAD_INPUT);
                }
            }
        }
        plan.engines = chosen;
    }
    let matrix = matrix::run(&plan, &mut |mutant, column, cell| {
        eprintln!(
            "{mutant:<28} {:<22} {}",
            column.name(),
            if cell.killed { "killed" } else { "survived" }
        );
    });
    let _ = std::fs::remove_dir_all(&scratch);
    println!("{}", matrix.render_text());
    println!("first failures:\n{}", matrix.render_details());
    if markdown {
        println!("{}", matrix.render_markdown());
    }
    let shortfalls = matrix.shortfalls();
    if shortfalls.is_empty() {
        println!("every engine kills what it must; the unmutated build passes every engine");
        ExitCode::SUCCESS
    } else {
        for shortfall in &shortfalls {
            println!("SHORTFALL: {shortfall}");
        }
        ExitCode::FAILURE
    }
}
