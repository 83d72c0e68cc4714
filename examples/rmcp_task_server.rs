//! The rmcp 3.11.0 task server (`tests/probe/rmcp_server.rs`: the official Rust SDK's
//! in-memory `TaskManager`, 2026-07-28 with the tasks extension) as a program of its own,
//! for `bench/compare.sh` to load beside tasklatch:
//!
//!     cargo run --release --example rmcp_task_server -- [127.0.0.1:PORT]
//!
//! It prints `listening http://ADDRESS/mcp` once bound and serves until killed.

#[path = "../tests/probe/rmcp_server.rs"]
mod rmcp_server;

fn main() {
    let bind = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let address = rmcp_server::start(&bind);
    println!("listening http://{address}/mcp");
    loop {
        std::thread::park();
    }
}
