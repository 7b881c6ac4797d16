//! `toolsmith ingest`, `toolsmith actions`, `toolsmith sources`: reading logs into the store
//! without the daemon, and looking at what was read.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::output::{self, Style};
use super::{Cli, Failure, load_config};
use crate::daemon::lock::{self, LockError};
use crate::exit::ExitCode;
use crate::ingest::oneshot::{self, IngestError};
use crate::ingest::reader::ReadOptions;
use crate::ingest::store as ingest_store;
use crate::store::{self, Store, StoreError};

impl From<StoreError> for Failure {
    fn from(err: StoreError) -> Self {
        let code = if err.is_damage() {
            ExitCode::StoreDamaged
        } else {
            ExitCode::Failure
        };
        Failure::new(code, err.to_string())
    }
}

impl From<IngestError> for Failure {
    fn from(err: IngestError) -> Self {
        match err {
            IngestError::Store(e) => e.into(),
            IngestError::UnknownFormat { .. } => Failure::new(ExitCode::Usage, err.to_string()),
            other => Failure::new(ExitCode::Failure, other.to_string()),
        }
    }
}

/// `toolsmith ingest [--format F] PATH...`.
pub(super) fn ingest(
    cli: &Cli,
    format: Option<&str>,
    paths: &[PathBuf],
    out: &mut impl Write,
) -> Result<(), Failure> {
    let config = load_config(cli)?;
    crate::daemon::listener::ensure_private_dir(&config.paths.state.value)
        .map_err(|e| Failure::new(ExitCode::Failure, e.to_string()))?;
    // One writer per store: while a daemon runs here, it does the ingesting.
    let _lock = lock::acquire(&config.lock_path()).map_err(|err| match err {
        LockError::Held { pid, .. } => Failure::new(
            ExitCode::AlreadyRunning,
            format!(
                "toolsmithd (pid {}) runs on {} and ingests its sources itself; stop it, or pass \
                 --state DIR to ingest into another store",
                pid.map_or_else(|| "unknown".into(), |p| p.to_string()),
                config.paths.state.value.display()
            ),
        ),
        other => Failure::new(ExitCode::Failure, other.to_string()),
    })?;
    let store = Store::open(&config.store_path())?;
    let options = ReadOptions::from_settings(&config.ingest, true);
    let progress = super::progress::Progress::bytes(cli.global.json, 0, "listing files");
    let reports = oneshot::ingest_paths_reporting(&store, paths, format, &options, &mut |a| {
        progress.bar_len(a.bytes);
        progress.at(a.bytes_done);
        progress.say(format!(
            "{}/{} files, {} new actions",
            a.files_done, a.files, a.actions
        ));
    })?;
    progress.done();
    if cli.global.json {
        return output::json(out, &json!({ "files": reports }));
    }
    let (mut actions, mut results, mut problems, mut bytes) = (0, 0, 0, 0);
    for report in &reports {
        match (&report.format, &report.skipped) {
            (Some(format), None) => writeln!(
                out,
                "{:<12} {:>8} new actions {:>6} results {:>5} problems  {}",
                format,
                report.actions,
                report.results,
                report.problems,
                report.path.display()
            )?,
            (_, skipped) => writeln!(
                out,
                "{:<12} skipped: {}  {}",
                "-",
                skipped.as_deref().unwrap_or("?"),
                report.path.display()
            )?,
        }
        actions += report.actions;
        results += report.results;
        problems += report.problems;
        bytes += report.bytes;
    }
    writeln!(
        out,
        "{} files, {:.1} MiB: {actions} new actions, {results} results stored, {problems} problems",
        reports.len(),
        bytes as f64 / (1024.0 * 1024.0)
    )?;
    Ok(())
}

fn open_store(cli: &Cli) -> Result<rusqlite::Connection, Failure> {
    let path = load_config(cli)?.store_path();
    if !path.exists() {
        return Err(Failure::new(
            ExitCode::Failure,
            format!(
                "no state store at {} yet: nothing was ingested. Run `toolsmith ingest PATH`, \
                 or start toolsmithd",
                path.display()
            ),
        ));
    }
    Ok(store::open_read_only(&path)?)
}

/// `toolsmith actions [ID…] [--session S] [--limit N]`.
pub(super) fn actions(
    cli: &Cli,
    ids: &[i64],
    session: Option<&str>,
    limit: u64,
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let conn = open_store(cli)?;
    let actions = if ids.is_empty() {
        crate::action::stored::recent_actions(&conn, session, limit)?
    } else {
        let found = crate::action::stored::actions_by_id(&conn, ids)?;
        if let Some(missing) = ids.iter().find(|id| !found.iter().any(|a| a.id == **id)) {
            return Err(Failure::new(
                ExitCode::Failure,
                format!("no action {missing}: `toolsmith actions` lists the stored ones"),
            ));
        }
        found
    };
    // Asked by id: where each was read, for a person to open the log there.
    let read_from = if ids.is_empty() {
        Vec::new()
    } else {
        actions
            .iter()
            .map(|a| ingest_store::provenance(&conn, &a.session, a.seq, a.seq))
            .collect::<Result<Vec<_>, _>>()?
    };
    if cli.global.json {
        if ids.is_empty() {
            return output::json(out, &json!(actions));
        }
        let rows: Vec<Value> = actions
            .iter()
            .zip(&read_from)
            .map(|(a, p)| {
                let mut row = json!(a);
                row["read_from"] = json!(p.files);
                row
            })
            .collect();
        return output::json(out, &json!(rows));
    }
    let mut current = None;
    for action in &actions {
        if current != Some(&action.session) {
            writeln!(out, "session {} ({})", action.session, action.source)?;
            current = Some(&action.session);
        }
        let outcome = match (action.ok, action.exit_code) {
            (Some(true), _) => style.good("ok"),
            (Some(false), Some(code)) => style.bad(&format!("exit {code}")),
            (Some(false), None) => style.bad("failed"),
            (None, _) => style.warn("?"),
        };
        let what = action
            .input
            .get("command")
            .and_then(|c| c.as_str())
            .map(str::to_owned)
            .unwrap_or_else(|| action.input.to_string());
        let what: String = what
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(100)
            .collect();
        writeln!(
            out,
            "  {:>7} {:<20} {:<10} {:<8} {}",
            action.id,
            action.ts.as_deref().unwrap_or("-"),
            action.tool,
            outcome,
            what
        )?;
    }
    if !read_from.is_empty() {
        writeln!(out, "read from:")?;
    }
    for place in &read_from {
        writeln!(out, "  {place}")?;
    }
    if actions.is_empty() {
        writeln!(out, "no actions stored")?;
    }
    Ok(())
}

/// The daemon's batches the store refused, in words, from its status's `ingest` counters;
/// `None` when there were none.
pub(super) fn write_failures(ingest: &serde_json::Value) -> Option<String> {
    let failures = ingest["write_failures"].as_u64().filter(|&n| n > 0)?;
    let retrying = ingest["retrying"].as_u64().unwrap_or(0);
    let last = ingest["last_write_failure"].as_str().unwrap_or("unknown");
    Some(if retrying > 0 {
        format!(
            "{failures} batches not stored, {retrying} files waiting to be read again; last: \
             {last}"
        )
    } else {
        format!("{failures} batches not stored at first, all read again since; last: {last}")
    })
}

/// `toolsmith sources`.
pub(super) fn sources(cli: &Cli, out: &mut impl Write) -> Result<(), Failure> {
    let conn = open_store(cli)?;
    let mut summaries = ingest_store::source_summaries(&conn)?;
    // The lag is against the files as they are now, not as they were when last read.
    let files = ingest_store::file_offsets(&conn)?;
    for summary in &mut summaries {
        summary.lag_bytes = files
            .iter()
            .filter(|f| f.source == summary.source && f.format == summary.format)
            // A database's checkpoint counts rows, not bytes: it has no byte lag.
            .filter(|f| {
                crate::ingest::formats::by_name(&f.format).is_none_or(|format| {
                    format.framing() != crate::ingest::adapters::Framing::Database
                })
            })
            .map(|f| {
                std::fs::metadata(&f.path)
                    .map(|m| m.size().saturating_sub(f.offset))
                    .unwrap_or(0)
            })
            .sum();
    }
    // Batches the store refused (a full disk) cannot be recorded in it: the daemon says.
    let failing =
        super::daemon_status(cli).and_then(|status| write_failures(&status["counters"]["ingest"]));
    if cli.global.json {
        return output::json(out, &json!(summaries));
    }
    if let Some(words) = &failing {
        writeln!(out, "ingest: {words}")?;
    }
    if summaries.is_empty() {
        writeln!(out, "no sources read yet")?;
    }
    for s in &summaries {
        writeln!(
            out,
            "{} ({}): {} files, {:.1} MiB read, {} actions, {} problems, {} bytes behind",
            s.source,
            s.format,
            s.files,
            s.bytes_read as f64 / (1024.0 * 1024.0),
            s.actions,
            s.problems,
            s.lag_bytes
        )?;
        for example in &s.examples {
            writeln!(
                out,
                "    {}:{}: {}",
                example.path, example.line, example.reason
            )?;
        }
        if s.skipped > 0 {
            writeln!(out, "  {} files not read:", s.skipped)?;
        }
        for file in &s.skipped_files {
            writeln!(out, "    {}: {}", file.path, file.reason)?;
        }
        let unnamed = s.skipped.saturating_sub(s.skipped_files.len() as u64);
        if unnamed > 0 {
            writeln!(out, "    … and {unnamed} more")?;
        }
    }
    Ok(())
}
