//! The environment facade: time, sleeping, spawning and randomness, one trait with a
//! backend per world. The runtime's code is written once against [`Env`]; [`TokioEnv`]
//! runs it for real, and the simulation's backend (madsim) runs the very same code.
//!
//! The backend is chosen when the runtime is built, not by a cfg: a `--features sim`
//! build still runs real tokio servers in its other tests.

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future: what the facade's methods return, so it stays object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Time, sleep, spawn and randomness for runtime code.
pub trait Env: Send + Sync {
    /// Milliseconds since the Unix epoch, as this world tells time.
    fn now_ms(&self) -> u64;
    /// Sleeps `ms` milliseconds of this world's time.
    fn sleep(&self, ms: u64) -> BoxFuture<'static, ()>;
    /// Runs `task` concurrently; it ends when it returns (or its node is killed).
    fn spawn(&self, task: BoxFuture<'static, ()>);
    /// A random number from this world's generator (seeded in simulation).
    fn random_u64(&self) -> u64;
}

/// The real world: wall-clock time and the ambient tokio runtime.
///
/// `sleep` and `spawn` need a tokio runtime context (they panic outside one, as tokio does).
#[derive(Clone, Copy, Debug, Default)]
pub struct TokioEnv;

impl Env for TokioEnv {
    // The one real clock of the product (crates/server/clippy.toml disallows it elsewhere).
    #[allow(clippy::disallowed_methods)]
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as u64)
    }

    fn sleep(&self, ms: u64) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(std::time::Duration::from_millis(ms)))
    }

    fn spawn(&self, task: BoxFuture<'static, ()>) {
        drop(tokio::spawn(task));
    }

    fn random_u64(&self) -> u64 {
        os_random(getrandom::u64())
    }
}

/// A draw from the OS generator, or a panic. Task ids and HTTP session ids are drawn
/// here: a stand-in value on failure would hand out guessable ids, so the call that needed
/// one panics instead (the transports run each request in a task of its own: that request
/// goes unanswered or its connection ends). The OS generator does not fail on the
/// platforms tasklatch supports.
fn os_random(drawn: Result<u64, getrandom::Error>) -> u64 {
    match drawn {
        Ok(value) => value,
        Err(error) => panic!(
            "the OS random generator failed ({error}): no task or session id is drawn without it"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "the OS random generator failed")]
    fn a_failed_draw_fails_rather_than_answer_a_stand_in() {
        os_random(Err(getrandom::Error::UNEXPECTED));
    }

    #[test]
    fn draws_come_from_the_os_generator() {
        assert_eq!(os_random(Ok(7)), 7);
        let draws: std::collections::BTreeSet<u64> =
            (0..16).map(|_| TokioEnv.random_u64()).collect();
        assert_eq!(draws.len(), 16, "sixteen 64-bit draws collided");
    }
}
