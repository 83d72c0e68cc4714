//! Store URLs: `memory:`, `sqlite:PATH[?synchronous=full|normal&busy_timeout_ms=N]`,
//! `postgres://…` (or `postgresql://…`, any libpq-style URL).

use super::StoreError;
use super::sqlite::Synchronous;
use std::path::PathBuf;

/// A parsed store address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreUrl {
    /// `memory:`: in-process, lost on exit.
    Memory,
    /// `sqlite:PATH…`: a SQLite file.
    Sqlite(SqliteOptions),
    /// Passed to the driver as written.
    Postgres(String),
}

/// Where and how to open a SQLite store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    /// The database file; created with its schema if absent.
    pub path: PathBuf,
    /// `full` (default) survives power loss; `normal` survives process crashes only.
    pub synchronous: Synchronous,
    /// How long a writer waits for the write lock before failing.
    pub busy_timeout_ms: u64,
}

impl SqliteOptions {
    /// `path` with the defaults: `synchronous=full`, a busy timeout of 10 s.
    pub fn new(path: impl Into<PathBuf>) -> SqliteOptions {
        SqliteOptions {
            path: path.into(),
            synchronous: Synchronous::Full,
            busy_timeout_ms: BUSY_TIMEOUT_MS_DEFAULT,
        }
    }
}

/// Long enough for a burst of contended writers; short enough to surface a stuck lock.
pub const BUSY_TIMEOUT_MS_DEFAULT: u64 = 10_000;
const BUSY_TIMEOUT_MS_MAX: u64 = 600_000;

impl StoreUrl {
    /// Parses `memory:`, `sqlite:PATH[?synchronous=full|normal&busy_timeout_ms=N]` or a
    /// `postgres://`/`postgresql://` URL; anything else is [`StoreError::Url`].
    pub fn parse(url: &str) -> Result<StoreUrl, StoreError> {
        let bad = |reason: String| StoreError::Url {
            url: url.to_owned(),
            reason,
        };
        if url == "memory:" {
            return Ok(StoreUrl::Memory);
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(StoreUrl::Postgres(url.to_owned()));
        }
        let Some(rest) = url.strip_prefix("sqlite:") else {
            return Err(bad(
                "expected `memory:`, `sqlite:PATH` or `postgres://…`".into()
            ));
        };
        let (path, query) = match rest.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (rest, None),
        };
        // Accept `sqlite://PATH` too, the form several tools write.
        let path = path.strip_prefix("//").unwrap_or(path);
        if path.is_empty() {
            return Err(bad("the SQLite path is empty (write `sqlite:PATH`)".into()));
        }
        let mut options = SqliteOptions::new(path);
        for pair in query.into_iter().flat_map(|query| query.split('&')) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| bad(format!("query parameter {pair:?} has no `=`")))?;
            match key {
                "synchronous" => {
                    options.synchronous = match value {
                        "full" => Synchronous::Full,
                        "normal" => Synchronous::Normal,
                        _ => return Err(bad(format!("synchronous={value:?}: use full or normal"))),
                    }
                }
                "busy_timeout_ms" => {
                    options.busy_timeout_ms = value
                        .parse()
                        .ok()
                        .filter(|ms| *ms <= BUSY_TIMEOUT_MS_MAX)
                        .ok_or_else(|| {
                            bad(format!(
                                "busy_timeout_ms={value:?}: expected 0..={BUSY_TIMEOUT_MS_MAX}"
                            ))
                        })?
                }
                _ => {
                    return Err(bad(format!(
                        "unknown parameter {key:?} (known: synchronous, busy_timeout_ms)"
                    )));
                }
            }
        }
        Ok(StoreUrl::Sqlite(options))
    }
}
