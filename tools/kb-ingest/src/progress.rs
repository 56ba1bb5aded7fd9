//! Progress output: a bar on a terminal, one plain line per step otherwise (CI logs, pipes),
//! nothing in tests.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress {
    mode: Mode,
}

enum Mode {
    Bar(ProgressBar),
    Lines,
    Silent,
}

impl Progress {
    /// A bar when stdout is a terminal, else plain lines on stdout.
    pub fn for_stdout() -> Self {
        if std::io::stdout().is_terminal() {
            let bar = ProgressBar::hidden();
            bar.set_draw_target(indicatif::ProgressDrawTarget::stdout());
            Self {
                mode: Mode::Bar(bar),
            }
        } else {
            Self { mode: Mode::Lines }
        }
    }

    pub fn lines() -> Self {
        Self { mode: Mode::Lines }
    }

    pub fn silent() -> Self {
        Self { mode: Mode::Silent }
    }

    /// Starts counting `total` steps (documents to write or remove).
    pub fn start(&self, total: u64) {
        if let Mode::Bar(bar) = &self.mode {
            bar.set_length(total);
            bar.set_position(0);
            let style = ProgressStyle::with_template(
                "{spinner} [{bar:30}] {pos}/{len} documents {elapsed} {wide_msg}",
            )
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
        }
    }

    /// What is going on right now (e.g. waiting for embeddings).
    pub fn status(&self, message: String) {
        if let Mode::Bar(bar) = &self.mode {
            bar.set_message(message);
        }
    }

    /// One step done.
    pub fn step(&self, line: String) {
        match &self.mode {
            Mode::Bar(bar) => {
                bar.set_message(line);
                bar.inc(1);
            }
            Mode::Lines => println!("{line}"),
            Mode::Silent => {}
        }
    }

    /// A line to keep on screen above the bar (explanations, warnings).
    pub fn note(&self, line: &str) {
        match &self.mode {
            Mode::Bar(bar) => bar.println(line),
            Mode::Lines => println!("{line}"),
            Mode::Silent => {}
        }
    }

    pub fn finish(&self) {
        if let Mode::Bar(bar) = &self.mode {
            bar.finish_and_clear();
        }
    }
}
