//! What the probe tells the user watching it, on stderr: on a terminal a bar (the phase,
//! and through the workload its budget filling up with the operations, tasks and kills so
//! far); elsewhere (CI logs) a line as each phase starts and every 10 s of the workload.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal as _;
use std::time::Duration;

/// How often a workload line is printed where there is no terminal.
pub const LINE_EVERY: Duration = Duration::from_secs(10);
/// How often the bar is redrawn through the workload.
pub const BAR_EVERY: Duration = Duration::from_millis(250);

/// The probe's progress display; silent when the run asked for none.
pub struct Progress {
    on: bool,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A display: a bar when `on` and stderr is a terminal, lines when `on` otherwise,
    /// nothing when not `on`.
    pub fn new(on: bool) -> Progress {
        let bar = (on && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(1), ProgressDrawTarget::stderr());
            bar.set_style(spinner_style());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Progress { on, bar }
    }

    /// Whether it draws a bar (else lines, if on).
    pub fn is_bar(&self) -> bool {
        self.bar.is_some()
    }

    /// How often the workload should report.
    pub fn every(&self) -> Duration {
        if self.is_bar() { BAR_EVERY } else { LINE_EVERY }
    }

    /// A phase starts, `at_s` seconds into the run.
    pub fn phase(&self, at_s: f64, era: &str, what: &str) {
        match &self.bar {
            Some(bar) => {
                bar.set_style(spinner_style());
                bar.set_message(format!("{era}: {what}"));
            }
            None if self.on => eprintln!("[{at_s:>6.1} s] {era}: {what}"),
            None => {}
        }
    }

    /// The workload so far: `elapsed_ms` of `budget_ms`, with its counts.
    pub fn workload(&self, at_s: f64, elapsed_ms: u64, budget_ms: u64, counts: &str) {
        match &self.bar {
            Some(bar) => {
                bar.set_style(
                    ProgressStyle::with_template(
                        "{spinner} {elapsed_precise} [{bar:30}] {wide_msg}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                bar.set_length(budget_ms.max(1));
                bar.set_position(elapsed_ms.min(budget_ms));
                bar.set_message(format!("workload: {counts}"));
            }
            None if self.on => eprintln!("[{at_s:>6.1} s] workload: {counts}"),
            None => {}
        }
    }

    /// A line that must stay on screen (a rerun starting, say).
    pub fn note(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None if self.on => eprintln!("{line}"),
            None => {}
        }
    }

    /// The run is over: the bar leaves the screen.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {elapsed_precise} {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}
