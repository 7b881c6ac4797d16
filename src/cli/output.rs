//! Human output helpers: aligned key/value tables, durations, colour only on a terminal.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use super::Failure;

/// Set once a write to stdout failed because its reader went away (`toolsmith … | head`).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Standard output, noting when its reader goes away: a command whose output is no longer
/// read then ends quietly and successfully, as `ripgrep` and the classic tools do, instead of
/// printing "Broken pipe" (see [`stdout_closed`]).
pub struct Stdout(std::io::StdoutLock<'static>);

/// Locks standard output for the command.
pub fn stdout() -> Stdout {
    Stdout(std::io::stdout().lock())
}

/// Whether a write to stdout found its reader gone.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Whether `err` is a reader having gone away.
fn is_closed(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::BrokenPipe
}

fn noted<T>(result: std::io::Result<T>) -> std::io::Result<T> {
    if let Err(e) = &result
        && is_closed(e)
    {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
    }
    result
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        noted(self.0.write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        noted(self.0.write_all(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        noted(self.0.flush())
    }
}

/// Whether to colour output.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Colour when stdout is a terminal and `NO_COLOR` is not set.
    pub fn for_stdout() -> Self {
        Style {
            color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    /// No colour (output that is not for a terminal).
    pub fn plain() -> Self {
        Style { color: false }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// Green.
    pub fn good(self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Yellow.
    pub fn warn(self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Red.
    pub fn bad(self, text: &str) -> String {
        self.paint("31", text)
    }
}

/// Writes a command's own output through, ignoring a reader that went away: what the command
/// did (its exit status, its stderr) is still reported.
pub fn pass_through(out: &mut Stdout, bytes: &[u8]) -> std::io::Result<()> {
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if is_closed(&e) => Ok(()),
        other => other,
    }
}

/// Pretty JSON on its own lines.
pub fn json<T: serde::Serialize + ?Sized>(out: &mut impl Write, value: &T) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Failure::new(crate::exit::ExitCode::Failure, e.to_string()))?;
    writeln!(out, "{text}")?;
    Ok(())
}

/// Two aligned columns.
pub fn table(out: &mut impl Write, rows: &[(&str, String)]) -> std::io::Result<()> {
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (key, value) in rows {
        writeln!(out, "  {key:<width$}  {value}")?;
    }
    Ok(())
}

/// `3d 4h`, `2h 5m`, `4m 10s`, `12s`.
pub fn duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_read_well() {
        assert_eq!(super::duration(12), "12s");
        assert_eq!(super::duration(250), "4m 10s");
        assert_eq!(super::duration(7500), "2h 5m");
        assert_eq!(super::duration(3 * 86_400 + 4 * 3600), "3d 4h");
    }
}
