//! `toolsmith mine` and `toolsmith patterns`: mining the stored actions now, and looking at the
//! patterns found.

use std::io::Write;

use serde_json::{Value, json};

use super::output::{self, Style};
use super::{Cli, Failure, connect, load_config};
use crate::daemon::lock::{self, LockError};
use crate::exit::ExitCode;
use crate::generate::candidates;
use crate::ingest::store as ingest_store;
use crate::mine::miner::{self, MineError, MineOptions, MineSummary};
use crate::mine::pattern::{self, PatternKind, StoredPattern};
use crate::store::{self, Store};

impl From<MineError> for Failure {
    fn from(err: MineError) -> Self {
        match err {
            MineError::Store(e) => e.into(),
            MineError::Options(_) => Failure::new(ExitCode::InvalidConfig, err.to_string()),
        }
    }
}

/// `toolsmith mine`: asks the daemon when one runs on this state directory (it is the store's
/// one writer), else mines in this process.
pub(super) fn mine(cli: &Cli, out: &mut impl Write, style: Style) -> Result<(), Failure> {
    let config = load_config(cli)?;
    crate::daemon::listener::ensure_private_dir(&config.paths.state.value)
        .map_err(|e| Failure::new(ExitCode::Failure, e.to_string()))?;
    let progress = super::progress::Progress::spinner(cli.global.json, "mining the stored actions");
    let summary = match lock::acquire(&config.lock_path()) {
        Ok(_lock) => {
            let store = Store::open(&config.store_path())?;
            let options = MineOptions::from_settings(&config.mine);
            let user = miner::UserShell::from_config(&config);
            let report = store.call_blocking(move |conn| {
                let report = match miner::mine_for(conn, &options, &user) {
                    Ok(report) => report,
                    Err(err) => return Ok(Err(err)),
                };
                let outcomes = candidates::pattern_outcomes(conn)?;
                miner::store_patterns(conn, &report, &outcomes)?;
                Ok(Ok(report))
            })??;
            report.summary()
        }
        Err(LockError::Held { .. }) => {
            progress.say("the daemon is mining".into());
            let answer = connect(cli)?.call_job("mine.run", Value::Null)?;
            serde_json::from_value::<MineSummary>(answer).map_err(|e| {
                Failure::new(
                    ExitCode::Failure,
                    format!(
                        "the daemon answered mine.run with a summary this toolsmith cannot \
                         read ({e}): is toolsmithd the same version as toolsmith?"
                    ),
                )
            })?
        }
        Err(other) => return Err(Failure::new(ExitCode::Failure, other.to_string())),
    };
    progress.done();
    if cli.global.json {
        // Through a JSON value: its keys in the order `mine.run` answers with.
        return output::json(out, &json!(summary));
    }
    writeln!(
        out,
        "mined {} actions in {} sessions ({} steps, {} distinct) in {} ms",
        summary.actions, summary.sessions, summary.tokens, summary.symbols, summary.duration_ms
    )?;
    // Each such line stays one opaque step, never a tool: said, so that a habit missing from
    // the patterns can be traced to its lines.
    writeln!(
        out,
        "lines not parsed: {} ({} in another shell's language), each kept as one opaque step",
        summary.unparsed, summary.foreign
    )?;
    if summary.shell_definitions > 0 || !summary.shell_notes.is_empty() {
        writeln!(
            out,
            "shell definitions read: {} (aliases, abbreviations, functions)",
            summary.shell_definitions
        )?;
    }
    for note in &summary.shell_notes {
        writeln!(out, "{}", style.warn(&format!("shell file {note}")))?;
    }
    let kinds = &summary.kinds;
    writeln!(
        out,
        "patterns: {} sequences, {} recoveries, {} slow operations",
        kinds.sequence, kinds.recovery, kinds.slow
    )?;
    if summary.truncated {
        writeln!(
            out,
            "{}",
            style.warn("the sequence miner hit its pattern cap: raise mine.min_support")
        )?;
    }
    if summary.patterns > 0 {
        writeln!(out, "see them with `toolsmith patterns`")?;
    }
    Ok(())
}

/// `toolsmith patterns [--kind K] [--limit N] [ID]`.
pub(super) fn patterns(
    cli: &Cli,
    kind: Option<&str>,
    limit: u64,
    id: Option<&str>,
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let kind = match kind {
        None => None,
        Some(name) => Some(PatternKind::from_name(name).ok_or_else(|| {
            Failure::new(
                ExitCode::Usage,
                format!("unknown pattern kind `{name}`: use sequence, recovery or slow"),
            )
        })?),
    };
    let path = load_config(cli)?.store_path();
    if !path.exists() {
        return Err(Failure::new(
            ExitCode::Failure,
            format!(
                "no state store at {} yet: run `toolsmith ingest PATH` and `toolsmith mine`, or \
                 start toolsmithd",
                path.display()
            ),
        ));
    }
    let conn = store::open_read_only(&path)?;
    if let Some(id) = id {
        let Some(found) = pattern::get_pattern(&conn, id)? else {
            return Err(Failure::new(
                ExitCode::Failure,
                format!("no pattern `{id}`: `toolsmith patterns` lists them"),
            ));
        };
        // Where each occurrence was read: the ids `toolsmith actions` looks up, files and lines.
        let read_from = found
            .pattern
            .evidence
            .iter()
            .map(|e| ingest_store::provenance(&conn, &e.session, e.first_seq, e.last_seq))
            .collect::<Result<Vec<_>, _>>()?;
        if cli.global.json {
            let mut value = json!(found);
            value["read_from"] = json!(read_from);
            return output::json(out, &value);
        }
        return show(&found, &read_from, out, style);
    }
    let found = pattern::list_patterns(&conn, kind, limit)?;
    if cli.global.json {
        return output::json(out, &json!(found));
    }
    if found.is_empty() {
        writeln!(
            out,
            "no patterns yet: `toolsmith mine` mines the stored actions (patterns need at least \
             mine.min_support sessions)"
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<10} {:<8} {:>7} {:>5}  {:<8}  steps",
        "id", "kind", "support", "score", "status"
    )?;
    for p in &found {
        let status = match p.status {
            pattern::PatternStatus::New => style.good("new"),
            other => style.warn(other.as_str()),
        };
        let steps = p.pattern.steps_text().join(" → ");
        let steps: String = steps.chars().take(120).collect();
        writeln!(
            out,
            "{:<10} {:<8} {:>7} {:>5.1}  {:<8}  {}",
            p.pattern.id,
            p.pattern.kind.as_str(),
            p.pattern.support,
            p.pattern.score,
            status,
            steps
        )?;
    }
    Ok(())
}

fn show(
    found: &StoredPattern,
    read_from: &[ingest_store::Provenance],
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let p = &found.pattern;
    writeln!(
        out,
        "{} ({}): seen in {} sessions, {} occurrences, score {:.1} [{}]",
        p.id,
        p.kind.as_str(),
        p.support,
        p.occurrences,
        p.score,
        found.status.as_str()
    )?;
    // A folded pattern's reason is said in full below.
    if let Some(reason) = found.reason.as_ref().filter(|_| p.folded_into.is_none()) {
        writeln!(out, "  {}", style.warn(reason))?;
    }
    if let Some(why) = p.not_a_habit().filter(|_| found.status.proposable()) {
        writeln!(
            out,
            "  {}",
            style.warn(&format!(
                "not proposed: {why}; `toolsmith generate --pattern {}` makes a tool of it anyway",
                p.id
            ))
        )?;
    }
    let s = &p.score_parts;
    writeln!(
        out,
        "  score parts: frequency {:.2}, impact {:.2}, complexity {:.2}, confidence {:.2}, \
         habit {:.2}",
        s.frequency, s.impact, s.complexity, s.confidence, s.habit
    )?;
    // Patterns stored before the terms were kept have none to show.
    if s.sessions > 0 {
        writeln!(
            out,
            "    frequency  from {} sessions and {} occurrences (repeats count a quarter)",
            s.sessions, s.occurrences
        )?;
        writeln!(
            out,
            "    confidence = (0.25 + 0.75 × consistency {:.2}) × (0.5 + 0.5 × success rate {:.2})",
            s.consistency, s.success_rate
        )?;
    }
    if let Some(a) = &s.association {
        let link = match p.link_steps(a) {
            Some((from, to)) => format!("{from} → {to}"),
            None => format!("link {}", a.link + 1),
        };
        let verdict = if a.beats_chance() {
            style.good("more than chance")
        } else {
            style.warn("no more than chance: not proposed")
        };
        writeln!(
            out,
            "  habit {:.2} = ln(lift)/ln 16 + ¼ × {} of {} links a value passes over; weakest \
             link ({link}): followed {} of {} times ({} runs of the next), chance predicts \
             {:.1}; lift {:.2}, G² {:.1}, held by {:.0}% of one step's runs ({verdict}; needs \
             lift ≥ {}, G² ≥ {}, {:.0}%)",
            s.habit,
            s.links_passing,
            p.steps.len().saturating_sub(1),
            a.observed,
            a.trials,
            a.seconds,
            a.expected,
            a.lift,
            a.llr,
            a.confidence * 100.0,
            crate::mine::chance::MIN_LIFT,
            crate::mine::chance::MIN_LLR,
            crate::mine::chance::MIN_CONFIDENCE * 100.0,
        )?;
    }
    if let Some(into) = &p.folded_into {
        writeln!(
            out,
            "{}",
            style.warn(&format!(
                "folded into {} ({}): {} of its {} occurrences looked at lie inside that \
                 pattern's; only that one is proposed",
                into.id,
                into.steps.join(" → "),
                into.overlapping,
                into.of
            ))
        )?;
    }
    if !p.folded.is_empty() {
        writeln!(out, "folded into this one (the same habit):")?;
        for f in &p.folded {
            writeln!(
                out,
                "  {} ({}/{} occurrences inside)  {}",
                f.id,
                f.overlapping,
                f.of,
                f.steps.join(" → ")
            )?;
        }
    }
    if let Some(word) = p.unknown_program() {
        writeln!(
            out,
            "{}",
            style.warn(&format!(
                "`{word}` is no program on your PATH, no builtin and none of the shell \
                 definitions read: what it ran is not guessed, so no tool is made of this"
            ))
        )?;
    }
    if !p.expansions.is_empty() {
        // The steps below hold what these stand for: what the shell ran.
        writeln!(out, "typed through your shell's definitions:")?;
        for e in &p.expansions {
            writeln!(
                out,
                "  {} = {}  ({} at {})",
                e.name, e.text, e.kind, e.defined_at
            )?;
        }
    }
    if let Some(trigger) = &p.trigger {
        writeln!(out, "when   {}", trigger.step.template)?;
        writeln!(out, "fails  {}", trigger.error_template)?;
        writeln!(out, "the agent recovers with:")?;
    } else if !p.lines.is_empty() {
        // A habit of command lines: each line as typed, its parameters named.
        writeln!(out, "lines ({}):", p.shell.as_str())?;
        for (i, line) in p.templates.iter().enumerate() {
            let mut rows = line.lines();
            writeln!(out, "  {}. {}", i + 1, rows.next().unwrap_or(""))?;
            for row in rows {
                writeln!(out, "     {row}")?;
            }
        }
    } else {
        writeln!(out, "steps:")?;
    }
    for (i, step) in p.steps.iter().enumerate().filter(|_| p.lines.is_empty()) {
        let capture = step
            .captures
            .as_ref()
            .map(|v| format!("   → <{v}>"))
            .unwrap_or_default();
        writeln!(out, "  {}. {}{}", i + 1, step.template, capture)?;
    }
    if !p.params.is_empty() {
        writeln!(out, "parameters:")?;
        for param in &p.params {
            writeln!(
                out,
                "  {:<16} {:<7} {:<28} e.g. {}",
                param.name,
                param.kind,
                param.named_from,
                param.examples.join(", ")
            )?;
        }
    }
    if p.workspace_varies {
        writeln!(out, "works in: the directory it is run in (it varied)")?;
    }
    if let Some(ms) = p.median_ms {
        writeln!(out, "median duration: {}", human_ms(ms))?;
    }
    writeln!(out, "evidence:")?;
    for (i, e) in p.evidence.iter().take(10).enumerate() {
        let agent = e
            .agent
            .as_deref()
            .map(|a| format!(" ({a})"))
            .unwrap_or_default();
        let place = read_from
            .get(i)
            .map_or_else(|| "actions not stored".to_owned(), ToString::to_string);
        writeln!(out, "  session {}{agent} {place}", e.session)?;
        for c in &e.commands {
            let mut rows = c.lines();
            writeln!(out, "      {}", rows.next().unwrap_or(""))?;
            for row in rows {
                writeln!(out, "        {row}")?;
            }
        }
    }
    Ok(())
}

fn human_ms(ms: u64) -> String {
    if ms >= 60_000 {
        format!("{:.1} min", ms as f64 / 60_000.0)
    } else if ms >= 1000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{ms} ms")
    }
}
