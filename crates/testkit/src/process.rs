//! Child processes: killed and reaped on drop, and the one way a test waits for a server to
//! listen (its first stdout line says where).

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};

/// A child process, killed and reaped on drop.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawns `command` with stdout piped and reads its first line, which must be
/// `listening WHERE` (`tasklatch serve --http` says `listening http://ADDR/mcp`, the test
/// servers `listening PORT`); returns the process and `WHERE`. `Err` says what came instead
/// (a process that could not start, or another first line: a port still held, say), with
/// the process already killed.
pub fn spawn_listening(command: &mut Command) -> Result<(Killed, String), String> {
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|error| format!("{command:?}: {error}"))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let child = Killed(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|error| format!("{command:?}: its first line: {error}"))?;
    match line.trim().strip_prefix("listening ") {
        Some(place) => Ok((child, place.to_owned())),
        None => Err(format!(
            "{command:?}: expected `listening WHERE`, got {line:?}"
        )),
    }
}

/// `ADDR` of `http://ADDR/mcp`, as `tasklatch serve --http` announces it.
pub fn http_address(announced: &str) -> Option<&str> {
    announced
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix("/mcp"))
}

/// [`spawn_listening`] of the command `make` builds, again every 100 ms while it fails,
/// for at most `within`: a fixed port may still be held for a moment after a kill.
pub fn spawn_listening_within(
    mut make: impl FnMut() -> Command,
    within: std::time::Duration,
) -> Result<(Killed, String), String> {
    let deadline = std::time::Instant::now() + within;
    loop {
        match spawn_listening(&mut make()) {
            Ok(listening) => return Ok(listening),
            Err(error) if std::time::Instant::now() >= deadline => {
                return Err(format!("never listened within {within:?}: {error}"));
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    }
}

impl Killed {
    /// SIGKILL, and reaped; panics if the process could not be killed.
    pub fn kill_now(&mut self) {
        self.0.kill().expect("SIGKILL");
        self.0.wait().expect("reaped");
    }
}
