//! A PostgreSQL server for one test: `TASKLATCH_PG_URL`, or a throwaway cluster.

use crate::scratch::SCRATCH;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;

/// A PostgreSQL server for one test: either `TASKLATCH_PG_URL`, or a cluster started with
/// initdb and pg_ctl on a free loopback port in a temporary directory, stopped on drop.
pub struct Postgres {
    pub url: String,
    cluster: Option<(PathBuf, PathBuf)>, // (bin dir, data dir)
    schema_prefix: String,
}

fn pg_bin_dir() -> Option<PathBuf> {
    let from_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
    });
    from_path.or_else(|| {
        let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|entry| entry.ok().map(|entry| entry.path().join("bin")))
            .filter(|bin| bin.join("initdb").is_file())
            .collect();
        versions.sort();
        versions.pop()
    })
}

fn is_root() -> bool {
    // The uid of /proc/self is the effective uid; avoids a libc dependency.
    std::fs::metadata("/proc/self")
        .map(|meta| std::os::unix::fs::MetadataExt::uid(&meta) == 0)
        .unwrap_or(false)
}

/// Runs a PostgreSQL tool, as the `postgres` user when we are root (initdb refuses root).
fn run_pg_tool(bin: &Path, tool: &str, args: &[&str]) -> Result<(), String> {
    let program = bin.join(tool);
    let mut command = if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(&program);
        command
    } else {
        Command::new(&program)
    };
    let output = command
        .args(args)
        .output()
        .map_err(|error| format!("{tool}: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{tool} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

impl Postgres {
    /// `None` (after saying so loudly) when no PostgreSQL is available and none is required.
    pub fn start(label: &str) -> Option<Postgres> {
        let schema_prefix = format!("tl_{}_{}", label, std::process::id());
        if let Ok(url) = std::env::var("TASKLATCH_PG_URL") {
            eprintln!("postgres: using TASKLATCH_PG_URL");
            return Some(Postgres {
                url,
                cluster: None,
                schema_prefix,
            });
        }
        match Self::start_cluster(label) {
            Ok((url, bin, data)) => Some(Postgres {
                url,
                cluster: Some((bin, data)),
                schema_prefix,
            }),
            Err(reason) => {
                let banner = format!(
                    "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
                     !!! PostgreSQL tests NOT RUN: {reason}\n\
                     !!! Install PostgreSQL (apt-get install postgresql) or set TASKLATCH_PG_URL.\n\
                     !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
                );
                eprintln!("{banner}");
                println!("{banner}");
                if std::env::var("TASKLATCH_REQUIRE_PG").is_ok_and(|v| v == "1") {
                    panic!("TASKLATCH_REQUIRE_PG=1 but PostgreSQL is unavailable: {reason}");
                }
                None
            }
        }
    }

    fn start_cluster(label: &str) -> Result<(String, PathBuf, PathBuf), String> {
        let bin = pg_bin_dir().ok_or("no initdb/pg_ctl on PATH or under /usr/lib/postgresql")?;
        let data =
            std::env::temp_dir().join(format!("tasklatch-pg-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&data)
                .status()
                .map_err(|e| e.to_string())?;
            if !status.success() {
                return Err("chown of the data directory failed".into());
            }
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let data_str = data.to_str().ok_or("temp path is not UTF-8")?;
        let cluster = format!("{data_str}/cluster");
        run_pg_tool(
            &bin,
            "initdb",
            &[
                "-D",
                &cluster,
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        )?;
        // A throwaway cluster: durability settings off, since no test kills PostgreSQL.
        let options = format!(
            "-p {port} -k {data_str} -c listen_addresses=127.0.0.1 -c fsync=off \
             -c synchronous_commit=off -c full_page_writes=off -c max_connections=60"
        );
        run_pg_tool(
            &bin,
            "pg_ctl",
            &[
                "-D",
                &cluster,
                "-l",
                &format!("{data_str}/log"),
                "-o",
                &options,
                "-w",
                "start",
            ],
        )?;
        eprintln!(
            "postgres: started a throwaway cluster on 127.0.0.1:{port} ({})",
            bin.display()
        );
        Ok((
            format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            bin,
            data,
        ))
    }

    /// A fresh schema name for one store.
    pub fn schema(&self) -> String {
        let n = SCRATCH.fetch_add(1, Ordering::Relaxed);
        format!("{}_{n}", self.schema_prefix)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        match &self.cluster {
            Some((bin, data)) => {
                let cluster = data.join("cluster");
                let _ = run_pg_tool(
                    bin,
                    "pg_ctl",
                    &[
                        "-D",
                        cluster.to_str().unwrap_or(""),
                        "-m",
                        "immediate",
                        "-w",
                        "stop",
                    ],
                );
                let _ = std::fs::remove_dir_all(data);
            }
            None => {
                // A shared server: drop the schemas this test made.
                if let Ok(mut client) = postgres::Client::connect(&self.url, postgres::NoTls) {
                    let like = format!("{}\\_%", self.schema_prefix.replace('_', "\\_"));
                    if let Ok(rows) = client.query(
                        "SELECT nspname FROM pg_namespace WHERE nspname LIKE $1",
                        &[&like],
                    ) {
                        for row in rows {
                            let name: String = row.get(0);
                            let _ = client.batch_execute(&format!("DROP SCHEMA {name} CASCADE"));
                        }
                    }
                }
            }
        }
    }
}
