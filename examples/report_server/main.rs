//! A durable MCP tasks server with tools of its own, built on `tasklatch-server`: the
//! [`ServerBuilder`] around a [`Toolbox`] of two tools (see `tools.rs`):
//!
//! - `publish_report` — an effect that can wait: the report file is prepared invisibly and
//!   published only once the task's completion is decided, so a cancelled report leaves
//!   no file. With `review: true` it first asks its requestor to approve.
//! - `call_webhook` — an effect that cannot wait (it stands for a POST to an outside
//!   service): it declares its point of no return first, and a cancel that wins before it
//!   leaves no call made.
//!
//! ```text
//! cargo run --example report_server -- --http 127.0.0.1:8931 --tokens tokens.json \
//!     --store sqlite:reports.db --dir reports
//! cargo run --example report_server -- --stdio --store sqlite:reports.db --dir reports
//! ```
//!
//! CI probes it with kills, as a user would (`tests/probe/report_server.sh`), and the
//! simulation runs its tools (`tests/it/report_server.rs`).

mod tools;

use std::path::PathBuf;
use std::process::ExitCode;
use tasklatch::builder::ServerBuilder;
use tasklatch::mcp::http::Tokens;
use tasklatch::tool::Toolbox;

#[derive(clap::Parser)]
#[command(about = "An MCP tasks server whose reports and webhooks survive crashes")]
struct Args {
    /// Serve one requestor over stdin/stdout.
    #[arg(long, conflicts_with = "http", required_unless_present = "http")]
    stdio: bool,
    /// Serve Streamable HTTP at ADDR, endpoint `/mcp`.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// With --http: the tokens file, `{"tokens": {"<token>": "<authorization key>"}}`.
    #[arg(long, requires = "http")]
    tokens: Option<PathBuf>,
    /// The task store URL.
    #[arg(long, default_value = "sqlite:reports.db")]
    store: String,
    /// Where reports are published and webhook calls logged.
    #[arg(long, default_value = "reports")]
    dir: PathBuf,
    /// How long a dispatched task stays leased before it is delivered again.
    #[arg(long, default_value_t = 30_000)]
    lease_ms: u64,
}

fn main() -> ExitCode {
    let args = <Args as clap::Parser>::parse();
    let toolbox = Toolbox::new()
        .with(tools::PublishReport::new(args.dir.clone()))
        .with(tools::CallWebhook::new(args.dir.clone()));
    let mut builder = ServerBuilder::new(&args.store)
        .name("report-server", env!("CARGO_PKG_VERSION"))
        .toolbox(toolbox)
        .lease_ms(args.lease_ms);
    if let Some(path) = &args.tokens {
        match Tokens::load(path) {
            Ok(tokens) => builder = builder.tokens(tokens),
            Err(error) => {
                eprintln!("error: --tokens {error}");
                return ExitCode::from(2);
            }
        }
    }
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let served = runtime.block_on(async move {
        let Some(address) = args.http else {
            return builder.serve_stdio().await;
        };
        let serving = builder.bind_http(&address).await?;
        println!("listening http://{}/mcp", serving.local_addr());
        serving.run().await
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(if error.is_bad_input() { 2 } else { 1 })
        }
    }
}
