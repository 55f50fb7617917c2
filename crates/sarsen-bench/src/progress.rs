//! A progress bar for long phases of a child process, drawn on stderr only when it
//! is a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress of one timed section, shared by its threads (cheap to clone).
#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
}

/// Below this many operations no bar is drawn.
const MIN_OPS: u64 = 1_000_000;

impl Progress {
    /// A bar for `total` operations labelled `label` (a spinner when the total is not
    /// known); hidden when stderr is not a terminal or the phase is short.
    pub fn new(label: &str, total: Option<u64>) -> Self {
        let visible = std::io::stderr().is_terminal() && total.is_none_or(|t| t >= MIN_OPS);
        if !visible {
            return Progress {
                bar: ProgressBar::hidden(),
            };
        }
        let bar = match total {
            Some(t) => ProgressBar::with_draw_target(Some(t), ProgressDrawTarget::stderr()),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
        };
        let template = match total {
            Some(_) => "{prefix:>28} [{bar:30}] {human_pos}/{human_len} {per_sec} eta {eta}",
            None => "{prefix:>28} {spinner} {human_pos} {per_sec}",
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(label.to_string());
        Progress { bar }
    }

    /// Counts `n` more operations done.
    #[inline]
    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
