//! Fresh stores on demand: what every engine of the harness takes.
//!
//! The conformance suite opens a store per check, the proptest machine one per case, the
//! simulation one per seed. Each must start empty and share nothing with the others, so
//! the engines take a [`StoreFactory`] rather than a store. Any store — yours included —
//! goes through every engine by implementing it (a closure will do; see
//! [`StoreFactory`]'s impls).

use super::{
    MemoryStore, SqliteOptions, SqliteStore, StoreError, StoreOptions, StoreUrl, Synchronous,
    TaskStore,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Opens fresh, empty stores.
///
/// Stores from one factory must not share state: every call to [`open`](Self::open)
/// answers a store no other call has touched. `options` carries the cursor secret the
/// engine wants the store to bind list cursors with.
pub trait StoreFactory: Send + Sync {
    /// A short name for reports: `memory`, `sqlite`, `postgres`, or your store's.
    fn name(&self) -> &str;

    /// A fresh, empty store.
    fn open(&self, options: &StoreOptions) -> Result<Box<dyn TaskStore>, StoreError>;

    /// The store URL that names this factory to [`factory_for`] (and to the CLI's
    /// `--store`), so a report can print a command that replays a run on the same kind of
    /// store. `None`: the default memory store, or a store the CLI cannot name.
    fn url(&self) -> Option<String> {
        None
    }
}

/// Any `Fn(&StoreOptions) -> Result<Box<dyn TaskStore>, StoreError>` is a factory named
/// `store`.
impl<F> StoreFactory for F
where
    F: Fn(&StoreOptions) -> Result<Box<dyn TaskStore>, StoreError> + Send + Sync,
{
    fn name(&self) -> &str {
        "store"
    }

    fn open(&self, options: &StoreOptions) -> Result<Box<dyn TaskStore>, StoreError> {
        self(options)
    }
}

/// Fresh [`MemoryStore`]s.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryFactory;

impl StoreFactory for MemoryFactory {
    fn name(&self) -> &str {
        "memory"
    }

    fn open(&self, options: &StoreOptions) -> Result<Box<dyn TaskStore>, StoreError> {
        Ok(Box::new(MemoryStore::open(options)?))
    }
}

/// Fresh SQLite databases, one file each in a directory; a store's files are removed
/// when the store is dropped.
#[derive(Debug)]
pub struct SqliteFactory {
    directory: PathBuf,
    synchronous: Synchronous,
    opened: AtomicU64,
}

impl SqliteFactory {
    /// Databases in `directory` (created when missing), `synchronous=normal`: a harness
    /// store need not survive power loss, and `full` would only slow the engines.
    pub fn new(directory: impl Into<PathBuf>) -> SqliteFactory {
        SqliteFactory {
            directory: directory.into(),
            synchronous: Synchronous::Normal,
            opened: AtomicU64::new(0),
        }
    }

    /// The same with another `synchronous` setting.
    pub fn with_synchronous(mut self, synchronous: Synchronous) -> SqliteFactory {
        self.synchronous = synchronous;
        self
    }
}

/// Databases in the system's temporary directory.
impl Default for SqliteFactory {
    fn default() -> SqliteFactory {
        SqliteFactory::new(std::env::temp_dir())
    }
}

impl StoreFactory for SqliteFactory {
    fn name(&self) -> &str {
        "sqlite"
    }

    fn url(&self) -> Option<String> {
        let synchronous = match self.synchronous {
            Synchronous::Normal => "",
            Synchronous::Full => "?synchronous=full",
        };
        Some(format!("sqlite:{}{synchronous}", self.directory.display()))
    }

    fn open(&self, options: &StoreOptions) -> Result<Box<dyn TaskStore>, StoreError> {
        std::fs::create_dir_all(&self.directory).map_err(|error| StoreError::Open {
            target: format!("directory {}", self.directory.display()),
            cause: error.to_string(),
        })?;
        // Unique across factories of one process and across processes.
        static OPENED_IN_PROCESS: AtomicU64 = AtomicU64::new(0);
        let path = self.directory.join(format!(
            "tasklatch-fresh-{}-{}-{}.db",
            std::process::id(),
            OPENED_IN_PROCESS.fetch_add(1, Ordering::Relaxed),
            self.opened.fetch_add(1, Ordering::Relaxed),
        ));
        let mut sqlite = SqliteOptions::new(&path);
        sqlite.synchronous = self.synchronous;
        let store = SqliteStore::open(&sqlite, options)?;
        Ok(Box::new(Scratch {
            store: Some(Box::new(store)),
            cleanup: Box::new(move || remove_database(&path)),
        }))
    }
}

fn remove_database(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// Fresh PostgreSQL schemas on one server: each store keeps its tables in a schema of its
/// own (`<prefix>_<pid>_<n>`), dropped when the store is dropped.
#[cfg(feature = "postgres")]
#[derive(Debug)]
pub struct PostgresFactory {
    url: String,
    prefix: String,
    opened: AtomicU64,
}

#[cfg(feature = "postgres")]
impl PostgresFactory {
    /// Schemas named `<prefix>_<pid>_<n>` on the server at `url`. `prefix`: 1-40 of
    /// `[a-z0-9_]`.
    pub fn new(url: impl Into<String>, prefix: &str) -> Result<PostgresFactory, StoreError> {
        let valid = !prefix.is_empty()
            && prefix.len() <= 40
            && prefix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid {
            return Err(StoreError::Invalid(format!(
                "schema prefix {prefix:?}: use 1-40 of [a-z0-9_]"
            )));
        }
        Ok(PostgresFactory {
            url: url.into(),
            prefix: prefix.to_owned(),
            opened: AtomicU64::new(0),
        })
    }
}

#[cfg(feature = "postgres")]
impl StoreFactory for PostgresFactory {
    fn name(&self) -> &str {
        "postgres"
    }

    fn open(&self, options: &StoreOptions) -> Result<Box<dyn TaskStore>, StoreError> {
        let schema = format!(
            "{}_{}_{}",
            self.prefix,
            std::process::id(),
            self.opened.fetch_add(1, Ordering::Relaxed)
        );
        let store = super::PostgresStore::open(&self.url, Some(&schema), options)?;
        let url = self.url.clone();
        Ok(Box::new(Scratch {
            store: Some(Box::new(store)),
            // Best effort: a schema left behind by a failed drop is named for its process.
            cleanup: Box::new(move || {
                if let Ok(mut client) = postgres::Client::connect(&url, postgres::NoTls) {
                    let _ =
                        client.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
                }
            }),
        }))
    }
}

/// The factory a store URL names: `memory:`; `sqlite:DIR` (a fresh database file per
/// store in `DIR`, `synchronous` as the URL says, `normal` by default); `postgres://…`
/// (a fresh schema per store on that server, feature `postgres`).
pub fn factory_for(url: &str) -> Result<Box<dyn StoreFactory>, StoreError> {
    match StoreUrl::parse(url)? {
        StoreUrl::Memory => Ok(Box::new(MemoryFactory)),
        StoreUrl::Sqlite(sqlite) => {
            let synchronous = if url.contains("synchronous=") {
                sqlite.synchronous
            } else {
                Synchronous::Normal
            };
            Ok(Box::new(
                SqliteFactory::new(sqlite.path).with_synchronous(synchronous),
            ))
        }
        #[cfg(feature = "postgres")]
        StoreUrl::Postgres(url) => Ok(Box::new(PostgresFactory::new(url, "tl_fresh")?)),
        #[cfg(not(feature = "postgres"))]
        StoreUrl::Postgres(_) => Err(StoreError::Url {
            url: url.to_owned(),
            reason: "this build has no PostgreSQL adapter (build with `--features postgres`)"
                .into(),
        }),
    }
}

/// A store that cleans up after itself when dropped (its file or schema).
struct Scratch {
    /// `Some` until dropped: the store must close before its file or schema goes.
    store: Option<Box<dyn TaskStore>>,
    cleanup: Box<dyn Fn() + Send + Sync>,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        drop(self.store.take());
        (self.cleanup)();
    }
}

impl Scratch {
    fn inner(&self) -> &dyn TaskStore {
        self.store
            .as_deref()
            .expect("a scratch store is present until dropped")
    }
}

super::delegate_task_store!(Scratch, |this| this.inner());
