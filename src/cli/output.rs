//! Human output helpers: aligned key/value tables, durations, colour only on a terminal.

use std::io::{IsTerminal, Write};

use super::Failure;

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
