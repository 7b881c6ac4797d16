//! `toolsmith stats`: the keep rate of proposals and the use of approved tools (runs by agent,
//! missed uses); `toolsmith export feedback`: every review decision as JSON Lines.

use std::io::Write;
use std::path::Path;

use super::output::{self, Style};
use super::registry::{Opened, open_for_reading};
use super::{Cli, Failure};
use crate::exit::ExitCode;
use crate::mine::miner::{MineOptions, UserShell};
use crate::stats::{self, Counts, Sources, Stats};

/// `75%`, or `-` before any decision.
fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "-".to_owned(), |r| format!("{:.0}%", r * 100.0))
}

/// `claude-code 2, codex 1`, or `-`.
fn by_agent(counts: &std::collections::BTreeMap<String, u32>) -> String {
    if counts.is_empty() {
        return "-".to_owned();
    }
    counts
        .iter()
        .map(|(agent, n)| format!("{agent} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The date of a Unix time in ms, UTC.
fn day(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_default()
}

/// `toolsmith stats [--json]`.
pub(super) fn stats(cli: &Cli, out: &mut impl Write, style: Style) -> Result<(), Failure> {
    let found = gather(cli)?;
    if cli.global.json {
        return output::json(out, &found);
    }
    render(&found, out, style)?;
    Ok(())
}

/// The keep rate and the use of approved tools, as `toolsmith stats` and the UI's page show
/// them.
pub(super) fn gather(cli: &Cli) -> Result<Stats, Failure> {
    let Opened {
        config,
        registry,
        store,
    } = open_for_reading(cli)?;
    let shell = UserShell::from_config(&config);
    let options = MineOptions::from_settings(&config.mine);
    let found = stats::stats(Sources {
        registry: &registry,
        conn: store.as_ref(),
        state_dir: &config.paths.state.value,
        shell: &shell,
        options: &options,
        now_s: jiff::Timestamp::now().as_second(),
    })
    .map_err(|e| Failure::new(ExitCode::Failure, e.to_string()))?;
    Ok(found)
}

fn counts_row(out: &mut impl Write, name: &str, c: &Counts) -> std::io::Result<()> {
    writeln!(
        out,
        "  {name:<16}  {:>4}  {:>8}  {:>8}  {:>7}  {:>6}  {:>4}",
        c.proposed,
        c.approved,
        c.rejected,
        c.waiting,
        c.failed,
        percent(c.keep_rate)
    )
}

/// The human report.
fn render(s: &Stats, out: &mut impl Write, style: Style) -> std::io::Result<()> {
    let t = &s.total;
    writeln!(
        out,
        "Keep rate: {} ({} approved of {} decided); {} proposals made, {} waiting, {} failed \
         before review",
        percent(t.keep_rate),
        t.approved,
        t.approved + t.rejected,
        t.proposed,
        t.waiting,
        t.failed
    )?;
    if !s.by_origin.is_empty() {
        writeln!(
            out,
            "  {:<16}  {:>4}  {:>8}  {:>8}  {:>7}  {:>6}  {:>4}",
            "ORIGIN", "MADE", "APPROVED", "REJECTED", "WAITING", "FAILED", "KEEP"
        )?;
        for (origin, c) in &s.by_origin {
            counts_row(out, origin, c)?;
        }
    }
    if !s.rejections.is_empty() {
        writeln!(out, "\nRejected ({}):", s.rejections.len())?;
        for r in &s.rejections {
            writeln!(
                out,
                "  {}  {} {}  {}: {}",
                r.candidate,
                r.tool,
                r.version.as_deref().unwrap_or("-"),
                r.origin,
                style.warn(&r.reason)
            )?;
        }
    }
    if !s.waiting.is_empty() {
        writeln!(
            out,
            "\nWaiting ({}): oldest {}, median {}",
            s.waiting.len(),
            output::duration(s.oldest_wait_s.unwrap_or(0).max(0) as u64),
            output::duration(s.median_wait_s.unwrap_or(0).max(0) as u64)
        )?;
        for w in &s.waiting {
            writeln!(
                out,
                "  {}  {} {}  {}  waiting {}",
                w.candidate,
                w.tool,
                w.version.as_deref().unwrap_or("-"),
                w.origin,
                output::duration(w.waited_s.max(0) as u64)
            )?;
        }
    }
    writeln!(out)?;
    if s.tools.is_empty() {
        writeln!(out, "No approved tools yet.")?;
        return Ok(());
    }
    writeln!(out, "Use since approval:")?;
    for u in &s.tools {
        writeln!(
            out,
            "  {} {} (approved {})",
            u.tool,
            u.version,
            day(u.approved_ms)
        )?;
        writeln!(
            out,
            "    runs          {}  ({})",
            u.runs,
            by_agent(&u.runs_by_agent)
        )?;
        if !u.missed_counted {
            let why = if u.habit.is_empty() {
                "no habit known for it"
            } else {
                "a recovery: runs by hand are not looked for"
            };
            writeln!(out, "    missed uses   -  ({why})")?;
            continue;
        }
        let missed = format!("{}", u.missed);
        writeln!(
            out,
            "    missed uses   {}  ({})",
            if u.missed > 0 {
                style.warn(&missed)
            } else {
                style.good(&missed)
            },
            by_agent(&u.missed_by_agent)
        )?;
        if u.missed > 0 {
            writeln!(
                out,
                "    by hand       {} steps, {} the tool would have saved",
                u.missed_steps,
                output::duration(u.missed_ms / 1000)
            )?;
        }
    }
    Ok(())
}

/// `toolsmith export feedback [--output FILE]`: one JSON object per line, to FILE (written
/// whole, then renamed over it) or stdout.
pub(super) fn export_feedback(
    cli: &Cli,
    output_file: Option<&Path>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let Opened {
        config,
        registry,
        store,
    } = open_for_reading(cli)?;
    let lines = stats::feedback(&registry, store.as_ref(), &config.paths.state.value)
        .map_err(|e| Failure::new(ExitCode::Failure, e.to_string()))?;
    let mut text = String::new();
    for line in &lines {
        text.push_str(&line.to_string());
        text.push('\n');
    }
    let Some(path) = output_file else {
        out.write_all(text.as_bytes())?;
        return Ok(());
    };
    let failed = |e: std::io::Error| {
        Failure::new(
            ExitCode::Failure,
            format!("cannot write {}: {e}", path.display()),
        )
    };
    // Written beside it and renamed over it: a reader never sees half a file.
    let mut partial = path.as_os_str().to_owned();
    partial.push(format!(".partial-{}", std::process::id()));
    let partial = std::path::PathBuf::from(partial);
    let written =
        std::fs::write(&partial, text.as_bytes()).and_then(|()| std::fs::rename(&partial, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&partial);
        return Err(failed(e));
    }
    if cli.global.json {
        return output::json(
            out,
            &serde_json::json!({"file": path, "decisions": lines.len()}),
        );
    }
    writeln!(
        out,
        "wrote {} review decisions to {}",
        lines.len(),
        path.display()
    )?;
    Ok(())
}
