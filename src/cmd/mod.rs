//! One module per command: each owns its arguments (`clap::Args`) and turns them into a
//! call of the library and an exit status.

pub mod bench;
pub mod check_store;
#[cfg(all(feature = "sim", madsim))]
pub mod hunt;
#[cfg(feature = "mutants")]
pub mod mutants;
pub mod probe;
pub mod replay;
pub mod serve;
#[cfg(all(feature = "sim", madsim))]
pub mod sim;

use std::process::ExitCode;

/// A check ran and found a mismatch, a violation or a finding.
pub const EXIT_MISMATCH: u8 = 1;
/// Bad input: a malformed file, bad arguments, a server that cannot be reached.
pub const EXIT_BAD_INPUT: u8 = 2;

/// A multi-threaded tokio runtime, or the exit code after saying why there is none.
pub fn async_runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| {
            eprintln!("error: cannot start the async runtime: {error}");
            ExitCode::FAILURE
        })
}
