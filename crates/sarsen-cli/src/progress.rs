//! Progress for long runs: a spinner with a count and rate on standard
//! error when it is a terminal, nothing otherwise (so piped and logged
//! output stays plain).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A spinner for one long step; hidden unless stderr is a terminal.
pub struct Progress(ProgressBar);

impl Progress {
    /// A spinner labelled `what`, counting `unit`s (for example "entries").
    pub fn new(what: &str, unit: &str) -> Progress {
        Progress::with_template(&format!(
            "{{spinner}} {what}: {{human_pos}} {unit} ({{per_sec}}) {{elapsed}}"
        ))
    }

    /// A spinner labelled `what` with the time elapsed, for a step that
    /// reports no count (a check, a copy).
    pub fn busy(what: &str) -> Progress {
        Progress::with_template(&format!("{{spinner}} {what} {{elapsed}}"))
    }

    fn with_template(template: &str) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress(ProgressBar::hidden());
        }
        let bar = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress(bar)
    }

    /// Counts one more unit.
    #[inline]
    pub fn inc(&self) {
        self.0.inc(1);
    }

    /// Removes the spinner from the terminal.
    pub fn finish(&self) {
        self.0.finish_and_clear();
    }
}
