//! tasklatch's own test support, one way of each: a scratch directory ([`Scratch`]), a
//! throwaway PostgreSQL ([`Postgres`]), a server process spawned and waited for
//! ([`process`], [`serve`]), and a raw HTTP/1.1 client ([`http`]). Not published: the
//! root package's tests take it as a dev-dependency; nothing else depends on it.
//!
//! Environment variables read here:
//! - `TASKLATCH_PG_URL` — use this PostgreSQL server instead of starting one. Tests
//!   create their own uniquely named schemas in it and drop them afterwards.
//! - `TASKLATCH_REQUIRE_PG=1` — fail, instead of skipping loudly, when no PostgreSQL is
//!   reachable. `.ci/run` sets it, so CI never skips the PostgreSQL tests.

pub mod http;
mod postgres_cluster;
pub mod process;
mod scratch;
pub mod serve;

pub use postgres_cluster::Postgres;
pub use process::{Killed, spawn_listening};
pub use scratch::Scratch;
