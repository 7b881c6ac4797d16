//! Progress of long steps (a first ingest of a large history, mining, validation in the
//! sandbox), on stderr and only when it is a terminal: piped or `--json` output never carries it.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress line, hidden when stderr is not a terminal.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    fn target(json: bool) -> ProgressDrawTarget {
        if json || !std::io::stderr().is_terminal() {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        }
    }

    /// A spinner saying what is under way.
    pub fn spinner(json: bool, message: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(None, Self::target(json));
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(message.to_owned());
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress { bar }
    }

    /// A bar over `total` bytes.
    pub fn bytes(json: bool, total: u64, message: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), Self::target(json));
        bar.set_style(
            ProgressStyle::with_template("{bar:20} {binary_bytes}/{binary_total_bytes} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(message.to_owned());
        Progress { bar }
    }

    /// Says what is under way now.
    pub fn say(&self, message: String) {
        self.bar.set_message(message);
    }

    /// Sets a bar's total.
    pub fn bar_len(&self, total: u64) {
        if self.bar.length() != Some(total) {
            self.bar.set_length(total);
        }
    }

    /// Moves a bar to `done`.
    pub fn at(&self, done: u64) {
        self.bar.set_position(done);
    }

    /// Clears the line: the step is over (its result is printed next).
    pub fn done(&self) {
        self.bar.finish_and_clear();
    }

    /// A clone that can be moved to another thread.
    pub fn handle(&self) -> Progress {
        Progress {
            bar: self.bar.clone(),
        }
    }
}
