//! The registry commands: `review`, `approve`, `reject`, `tools`, `run`, `verify`, `reapprove`,
//! `rollback`, `deprecate`, `sync`, `export skills`. They work on the git registry directly
//! (changes take turns with the daemon on the registry's lock; reads take none: see
//! [`open_for_reading`]) and record decisions in the store when there is one.

use std::io::Write;

use serde_json::{Map, Value, json};

use super::output::{self, Style};
use super::{Cli, Failure, RunArgs, load_config};
use crate::config::Config;
use crate::exit::ExitCode;
use crate::generate::review::{self, ReviewError};
use crate::health::executions::Caller;
use crate::invoke;
use crate::registry::repo::{Registry, RegistryError};
use crate::run::{RunError, RunRecorder, RunRequest, run_recorded};
use crate::sandbox::{Need, SandboxPolicy};
use crate::store;
use crate::validate::needs::Levels;

impl From<RegistryError> for Failure {
    fn from(err: RegistryError) -> Self {
        Failure::new(ExitCode::Failure, err.to_string())
    }
}

impl From<ReviewError> for Failure {
    fn from(err: ReviewError) -> Self {
        Failure::new(ExitCode::Failure, err.to_string())
    }
}

/// The registry a command works on, with the configuration and the store (when there is one).
pub(super) struct Opened {
    pub(super) config: Config,
    pub(super) registry: Registry,
    pub(super) store: Option<rusqlite::Connection>,
}

/// Opens (creating on first use) the configured registry for a change: finishes what a crash
/// interrupted, recognises proposals merged with plain git (waiting briefly for another
/// toolsmith process's turn), and brings the store up to what git says.
pub(super) fn open(cli: &Cli) -> Result<Opened, Failure> {
    let config = load_config(cli)?;
    let registry = Registry::open_or_init(&config.paths.registry.value, &config.paths.state.value)?;
    let reconciled = registry.reconcile()?;
    finish_open(config, registry, &reconciled)
}

/// Opens the configured registry for reading (`run`, `verify`, `tools`, …): reconciled only
/// when that needs no wait and the registry can be written; otherwise read as committed, with a
/// note on stderr saying why (a read-only registry, a git lock left behind, named with its
/// age). Never waits for a lock, never fails for one.
pub(super) fn open_for_reading(cli: &Cli) -> Result<Opened, Failure> {
    let config = load_config(cli)?;
    let registry = Registry::open_or_init(&config.paths.registry.value, &config.paths.state.value)?;
    let settled = registry.reconcile_if_free();
    for note in &settled.notes {
        eprintln!(
            "toolsmith: note: registry {}: {note}",
            registry.root().display()
        );
    }
    finish_open(config, registry, &settled.reconciled)
}

fn finish_open(
    config: Config,
    registry: Registry,
    reconciled: &crate::registry::repo::Reconciled,
) -> Result<Opened, Failure> {
    let store = store_for_update(&config);
    if let Some(conn) = &store {
        review::record_landed(conn, &reconciled.landed)?;
        review::catch_up(&registry, conn)?;
    }
    Ok(Opened {
        config,
        registry,
        store,
    })
}

/// A writable connection to the store, when there is one.
fn store_for_update(config: &Config) -> Option<rusqlite::Connection> {
    let path = config.store_path();
    if !path.exists() {
        return None;
    }
    match store::open_for_update(&path) {
        Ok(conn) => Some(conn),
        Err(e) => {
            tracing::warn!("the decision is in the registry, not in the store: {e}");
            None
        }
    }
}

/// `toolsmith review`.
pub(super) fn list_reviews(cli: &Cli, out: &mut impl Write, style: Style) -> Result<(), Failure> {
    let Opened { registry, .. } = open_for_reading(cli)?;
    let reviews = registry.reviews()?;
    if cli.global.json {
        return output::json(out, &json!(reviews));
    }
    if reviews.is_empty() {
        writeln!(
            out,
            "nothing awaits review: candidates are proposed when they pass validation \
             (`toolsmith candidates`)"
        )?;
        return Ok(());
    }
    for r in &reviews {
        let behind = if r.behind_main {
            style.warn(" (main moved since: approval re-applies it)")
        } else {
            String::new()
        };
        writeln!(
            out,
            "{}  {}  {}{behind}\n    {}",
            r.candidate.as_deref().unwrap_or("-"),
            r.branch,
            r.bump.map_or("new", |b| b.as_str()),
            r.subject
        )?;
        for line in &r.reach {
            writeln!(out, "    {}", style.warn(line))?;
        }
    }
    writeln!(
        out,
        "\n`toolsmith show CANDIDATE` shows one; `toolsmith approve CANDIDATE` or \
         `toolsmith reject CANDIDATE --reason …` decides."
    )?;
    Ok(())
}

/// `toolsmith approve`.
pub(super) fn approve(
    cli: &Cli,
    key: &str,
    note: Option<&str>,
    grants: &[String],
    out: &mut impl Write,
) -> Result<(), Failure> {
    let grants = grants
        .iter()
        .map(|g| Need::parse(g).map_err(|e| Failure::new(ExitCode::Usage, format!("--grant: {e}"))))
        .collect::<Result<Vec<Need>, Failure>>()?;
    // With the daemon running, it approves: it has the registry open already, and records
    // the decision in its store.
    let landed = match super::socket_path(cli)
        .and_then(|path| crate::control::Client::connect(&path).map_err(Failure::from))
    {
        Ok(mut client) => {
            let shown: Vec<String> = grants.iter().map(ToString::to_string).collect();
            let reply = client.call_job(
                "registry.approve",
                json!({"candidate": key, "note": note, "grants": shown}),
            )?;
            serde_json::from_value(reply).map_err(|e| {
                Failure::new(
                    ExitCode::Failure,
                    format!("the daemon's answer to registry.approve is not understood: {e}"),
                )
            })?
        }
        Err(_) => {
            let Opened {
                config,
                registry,
                store,
            } = open(cli)?;
            let levels = Levels::load(config.generate.policy.value.as_deref())
                .map_err(|e| Failure::new(ExitCode::InvalidConfig, e.to_string()))?;
            let approver = registry.approver();
            review::approve(
                &registry,
                store.as_ref(),
                key,
                &approver,
                note,
                &grants,
                &levels,
            )?
        }
    };
    if cli.global.json {
        return output::json(out, &json!(landed));
    }
    writeln!(
        out,
        "approved {} {} as {} (commit {}, approved by {})",
        landed.name,
        landed.version,
        landed.tag,
        &landed.commit[..12.min(landed.commit.len())],
        landed.approved_by
    )?;
    if !grants.is_empty() {
        writeln!(
            out,
            "granted: {} (recorded as Granted: in the commit; its runs get these and nothing \
             more)",
            crate::sandbox::needs::list(&grants)
        )?;
    }
    writeln!(out, "run it: toolsmith run {}", landed.name)?;
    Ok(())
}

/// `toolsmith reject`.
pub(super) fn reject(
    cli: &Cli,
    key: &str,
    reason: &str,
    out: &mut impl Write,
) -> Result<(), Failure> {
    if reason.trim().is_empty() {
        return Err(Failure::new(
            ExitCode::Usage,
            "--reason must say why: it is kept, and the habit is not proposed again",
        ));
    }
    let Opened {
        registry, store, ..
    } = open(cli)?;
    let review = review::reject(&registry, store.as_ref(), key, reason)?;
    if cli.global.json {
        return output::json(out, &json!({"rejected": review, "reason": reason}));
    }
    writeln!(
        out,
        "rejected {} ({}); kept as {}{}",
        review.branch,
        review.candidate.as_deref().unwrap_or("-"),
        crate::registry::repo::REJECTED_PREFIX,
        review
            .candidate
            .clone()
            .unwrap_or_else(|| review.branch.replace('/', "-"))
    )?;
    Ok(())
}

/// `toolsmith edit NAME`: the review branch in a worktree under `<state>/edits/`, its path
/// printed first.
pub(super) fn edit(cli: &Cli, name: &str, out: &mut impl Write) -> Result<(), Failure> {
    let Opened {
        config, registry, ..
    } = open(cli)?;
    let started = registry.start_edit(name, &config.paths.state.value.join(EDITS_DIR))?;
    if cli.global.json {
        return output::json(out, &json!(started));
    }
    writeln!(out, "{}", started.worktree.display())?;
    writeln!(
        out,
        "edit {} {} on {}: change tools/{}/ there and commit (`git commit -a`); the commit is \
         validated in the sandbox and proposed for review by toolsmithd (without it, by \
         `toolsmith generate`); `toolsmith candidates` shows it",
        started.name, started.version, started.branch, started.name
    )?;
    Ok(())
}

/// Where `toolsmith edit` makes its worktrees, under the state directory.
const EDITS_DIR: &str = "edits";

/// `toolsmith tools`.
pub(super) fn tools(cli: &Cli, out: &mut impl Write, style: Style) -> Result<(), Failure> {
    let Opened { registry, .. } = open_for_reading(cli)?;
    let tools = registry.tools()?;
    if cli.global.json {
        /// One tool as `tools --json` lists it.
        #[derive(serde::Serialize)]
        struct Listed<'a> {
            name: &'a str,
            version: Option<&'a str>,
            description: &'a str,
            deprecated: bool,
            problem: Option<&'a str>,
            params: Option<&'a serde_json::value::RawValue>,
            output: Option<crate::package::manifest::OutputKind>,
        }
        let list: Vec<Listed<'_>> = tools
            .iter()
            .map(|t| Listed {
                name: &t.name,
                version: t.version.as_deref(),
                description: &t.description,
                deprecated: t.deprecated,
                problem: t.problem.as_deref(),
                params: t.params.as_deref(),
                output: t.output,
            })
            .collect();
        return output::json(out, &list);
    }
    if tools.is_empty() {
        writeln!(
            out,
            "no approved tools yet: `toolsmith review` lists the proposals awaiting review"
        )?;
        return Ok(());
    }
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4);
    for t in &tools {
        match &t.problem {
            Some(p) => writeln!(
                out,
                "{:<width$}  {}",
                t.name,
                style.bad(&format!("invalid: {p}"))
            )?,
            None => writeln!(
                out,
                "{:<width$}  {:<8}  {}{}",
                t.name,
                t.version.as_deref().unwrap_or("-"),
                t.description,
                if t.deprecated { " (deprecated)" } else { "" }
            )?,
        }
    }
    Ok(())
}

/// `toolsmith run NAME [--param K=V]... [--input JSON] [--workspace DIR]`; returns the tool's
/// exit status.
pub(super) fn run(cli: &Cli, args: &RunArgs) -> Result<u8, Failure> {
    let RunArgs {
        name,
        params: pairs,
        input,
        workspace,
    } = args;
    let input = input.as_deref();
    let workspace = workspace.clone();
    let Opened {
        config,
        registry,
        store,
    } = open_for_reading(cli)?;
    let entry = registry.tool(name)?;
    let mut params: Map<String, Value> = match input {
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                return Err(Failure::new(
                    ExitCode::Usage,
                    "--input takes a JSON object of parameters, e.g. '{\"package\": \"core\"}'",
                ));
            }
            Err(e) => {
                return Err(Failure::new(
                    ExitCode::Usage,
                    format!("--input is not JSON: {e}"),
                ));
            }
        },
        None => Map::new(),
    };
    if let Some(manifest) = &entry.manifest {
        let pairs = invoke::params_from_pairs(manifest, pairs)
            .map_err(|e| Failure::new(ExitCode::Usage, format!("{name}: {e}")))?;
        params.extend(pairs);
    }
    let policy = sandbox_policy(&config)?;
    let request = RunRequest {
        name: name.to_owned(),
        params,
        workspace,
        own: super::own_places(cli, &config),
        caller: Caller::Cli,
        agent: crate::health::executions::agent_from_env(|name| std::env::var(name).ok()),
    };
    let recorder = RunRecorder {
        state_dir: &config.paths.state.value,
        store: store.as_ref(),
    };
    let done = match run_recorded(&registry, &request, &policy, None, recorder) {
        Ok(done) => done,
        Err(RunError::Params { name, source }) => {
            return Err(Failure::new(ExitCode::Usage, format!("{name}: {source}")));
        }
        Err(e) => return Err(Failure::new(ExitCode::Failure, e.to_string())),
    };
    let report = &done.report;
    let mut stdout = output::stdout();
    if cli.global.json {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let parsed: Option<Value> = serde_json::from_slice(&report.stdout.bytes).ok();
        output::json(
            &mut stdout,
            &json!({
                "tool": done.manifest.name,
                "version": done.manifest.version.to_string(),
                "ok": done.execution.ok,
                "exit_code": done.execution.exit_code,
                "limit": done.execution.limit_hit,
                "error_class": done.execution.error_class.map(|c| c.as_str()),
                "duration_ms": done.execution.duration_ms,
                "stdout": text(&report.stdout.bytes),
                "stderr": text(&report.stderr.bytes),
                "output": parsed,
                "warnings": report.warnings,
                "connections": report.connections,
            }),
        )?;
    } else {
        // A reader that stopped reading (`| head`) does not change how the run went.
        output::pass_through(&mut stdout, &report.stdout.bytes)?;
        let mut stderr = std::io::stderr().lock();
        stderr.write_all(&report.stderr.bytes)?;
        // Never silent: a limit the policy lowered, a layer missing here.
        for warning in &report.warnings {
            writeln!(stderr, "toolsmith run: {name}: {warning}")?;
        }
        for c in &report.connections {
            if c.verdict != crate::sandbox::Verdict::Allowed {
                writeln!(
                    stderr,
                    "toolsmith run: {name}: connection to {}:{} {}: {}",
                    c.host,
                    c.port,
                    if c.verdict == crate::sandbox::Verdict::Denied {
                        "refused"
                    } else {
                        "failed"
                    },
                    c.reason.as_deref().unwrap_or_default()
                )?;
            }
        }
        if let Some(limit) = report.limit {
            writeln!(
                stderr,
                "toolsmith run: {name} stopped: {} limit hit",
                limit.as_str()
            )?;
        }
    }
    Ok(report.exit.status())
}

/// The sandbox policy runs are under: `generate.policy`, else the built-in one.
fn sandbox_policy(config: &Config) -> Result<SandboxPolicy, Failure> {
    match &config.generate.policy.value {
        Some(path) => SandboxPolicy::load(path)
            .map_err(|e| Failure::new(ExitCode::InvalidConfig, e.to_string())),
        None => Ok(SandboxPolicy::default()),
    }
}

/// `toolsmith verify`.
pub(super) fn verify(cli: &Cli, out: &mut impl Write, style: Style) -> Result<(), Failure> {
    let Opened {
        config, registry, ..
    } = open_for_reading(cli)?;
    let report = registry.verify()?;
    // Valid tools asking for more than the policy allows run with less (validation refuses
    // such a profile now; an older version, or a policy lowered since, can still hold one).
    let policy = sandbox_policy(&config)?;
    let mut warnings = Vec::new();
    for entry in registry.tools()?.iter().filter(|e| e.problem.is_none()) {
        if let Some(m) = registry.listed_manifest(entry) {
            let above = policy.above_max(&m.sandbox.limits);
            if !above.is_empty() {
                warnings.push(format!(
                    "main: tools/{}: {} above the policy's maxima ({}): it runs with the \
                     maxima; lower its limits in a new version, or raise [sandbox.max]",
                    entry.name,
                    above.join(", "),
                    policy.file
                ));
            }
        }
    }
    if cli.global.json {
        let mut value = json!(report);
        value["warnings"] = json!(warnings);
        output::json(out, &value)?;
    } else {
        for p in &report.problems {
            writeln!(out, "{}", style.bad(p))?;
        }
        for w in &warnings {
            writeln!(out, "{}", style.warn(w))?;
        }
        writeln!(
            out,
            "checked {} tags and {} tools on main: {}",
            report.tags,
            report.tools,
            if report.problems.is_empty() {
                style.good("all valid")
            } else {
                style.bad(&format!("{} problems", report.problems.len()))
            }
        )?;
    }
    if report.problems.is_empty() {
        Ok(())
    } else {
        Err(Failure::new(
            ExitCode::Failure,
            format!(
                "verify found {} problems; roll back or re-propose the tools named",
                report.problems.len()
            ),
        ))
    }
}

/// `toolsmith reapprove [--yes]`.
pub(super) fn reapprove(
    cli: &Cli,
    yes: bool,
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let found = if yes {
        let Opened { registry, .. } = open(cli)?;
        registry.reapprove()?
    } else {
        let Opened { registry, .. } = open_for_reading(cli)?;
        registry.unvouched()?
    };
    if cli.global.json {
        output::json(out, &json!(found))?;
    } else {
        if found.unvouched.is_empty() {
            writeln!(
                out,
                "the ledger vouches for every tag and review branch: nothing to re-approve"
            )?;
            return Ok(());
        }
        for why in &found.why {
            writeln!(out, "{}", style.warn(why))?;
        }
        let trusted = found
            .unvouched
            .iter()
            .filter(|u| u.refused.is_none())
            .count();
        for u in &found.unvouched {
            match &u.refused {
                None => writeln!(out, "  {}  {}", u.reference, u.detail)?,
                Some(why) => writeln!(
                    out,
                    "  {}  {}",
                    u.reference,
                    style.bad(&format!("not trusted: {why} ({})", u.detail))
                )?,
            }
        }
        if found.trusted {
            writeln!(
                out,
                "trusted {trusted} again (recorded in the ledger, sealed with {}); `toolsmith \
                 verify` checks the tools on main",
                config_seal_hint(cli)
            )?;
        } else {
            writeln!(
                out,
                "nothing was trusted: check that each of these is what a person approved (`git \
                 show TAG`), then run `toolsmith reapprove --yes` to trust the {trusted} above"
            )?;
        }
    }
    if found.trusted || found.unvouched.is_empty() {
        Ok(())
    } else {
        Err(Failure::new(
            ExitCode::Failure,
            format!(
                "{} tags or review branches are not vouched for; `toolsmith reapprove --yes` \
                 trusts them after you checked them",
                found.unvouched.len()
            ),
        ))
    }
}

/// Where the approval key is, as `reapprove` names it.
fn config_seal_hint(cli: &Cli) -> String {
    load_config(cli)
        .map(|c| {
            c.paths
                .state
                .value
                .join(crate::registry::ledger::KEY_FILE)
                .display()
                .to_string()
        })
        .unwrap_or_else(|_| "the state directory's key".into())
}

/// `toolsmith rollback`.
pub(super) fn rollback(cli: &Cli, name: &str, out: &mut impl Write) -> Result<(), Failure> {
    let Opened { registry, .. } = open(cli)?;
    let (from, to, commit) = registry.rollback(name)?;
    if cli.global.json {
        return output::json(
            out,
            &json!({"tool": name, "from": from, "to": to, "commit": commit}),
        );
    }
    match to {
        Some(v) => writeln!(
            out,
            "rolled {name} back from {from} to {v} (commit {commit})"
        )?,
        None => writeln!(
            out,
            "rolled {name} {from} back: it had no earlier version and is gone from main \
             (commit {commit})"
        )?,
    }
    Ok(())
}

/// `toolsmith deprecate`.
pub(super) fn deprecate(
    cli: &Cli,
    name: &str,
    replaced_by: Option<&str>,
    reason: &str,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let Opened { registry, .. } = open(cli)?;
    let landed = registry.deprecate(name, replaced_by, reason)?;
    if cli.global.json {
        return output::json(out, &json!(landed));
    }
    writeln!(
        out,
        "deprecated {name} in {} ({})",
        landed.version, landed.tag
    )?;
    Ok(())
}

/// What `show` prints for a name that is a tool rather than a candidate.
pub(super) fn show_tool(cli: &Cli, name: &str, out: &mut impl Write) -> Result<bool, Failure> {
    let Opened { registry, .. } = open_for_reading(cli)?;
    let Ok(entry) = registry.tool(name) else {
        return Ok(false);
    };
    let readme = registry.tool_readme(name)?;
    if cli.global.json {
        output::json(
            out,
            &json!({"tool": entry, "manifest": entry.manifest, "readme": readme}),
        )?;
        return Ok(true);
    }
    match &entry.manifest {
        Some(m) => {
            for line in crate::sandbox::grants::reach_lines(&m.sandbox) {
                writeln!(out, "# {line}")?;
            }
            if !m.granted.is_empty() {
                writeln!(
                    out,
                    "# Granted at approval: {}",
                    crate::sandbox::needs::list(&m.granted)
                )?;
            }
            out.write_all(m.to_yaml().as_bytes())?;
        }
        None => writeln!(
            out,
            "{name}: invalid: {}",
            entry.problem.as_deref().unwrap_or_default()
        )?,
    }
    if let Some(text) = readme {
        writeln!(out, "\n{text}")?;
    }
    Ok(true)
}

/// The proposal of a candidate awaiting review, with its diff against `main`.
pub(super) fn proposal_of(cli: &Cli, candidate: &str) -> Option<Value> {
    let Opened { registry, .. } = open_for_reading(cli).ok()?;
    let review = registry.review(candidate).ok()?;
    let diff = registry.review_diff(&review).ok()?;
    Some(json!({"review": review, "diff": diff}))
}

/// `toolsmith sync [--remote URL]`.
pub(super) fn sync(cli: &Cli, remote: Option<&str>, out: &mut impl Write) -> Result<(), Failure> {
    let Opened {
        registry, store, ..
    } = open(cli)?;
    if let Some(url) = remote {
        registry.remote_url(Some(url))?;
    }
    let report = registry.sync()?;
    // What came from the remote may hold proposals already approved there.
    if let Some(conn) = &store {
        review::record_landed(conn, &report.landed)?;
    }
    if cli.global.json {
        return output::json(out, &json!(report));
    }
    writeln!(out, "synced with {}: main {}", report.remote, report.main)?;
    if !report.received.is_empty() {
        writeln!(out, "tools from the remote: {}", report.received.join(", "))?;
    }
    if !report.tag_conflicts.is_empty() {
        writeln!(
            out,
            "tags that differ here and on the remote (each side keeps its own; the remote's are \
             under refs/remotes/origin/tags/): {}",
            report.tag_conflicts.join(", ")
        )?;
    }
    if !report.new_reviews.is_empty() {
        writeln!(
            out,
            "proposals from the remote, awaiting review: {}",
            report.new_reviews.join(", ")
        )?;
    }
    Ok(())
}

/// `toolsmith export skills [--to DIR] [--agents]`.
pub(super) fn export_skills(
    cli: &Cli,
    to: Option<&std::path::Path>,
    agents: bool,
    out: &mut impl Write,
) -> Result<(), Failure> {
    use crate::mcp::agents::{Agent, Homes, skill_targets};
    let Opened { registry, .. } = open_for_reading(cli)?;
    let mut active = Vec::new();
    for entry in registry.tools()? {
        if entry.deprecated || entry.problem.is_some() {
            continue;
        }
        if let Some(m) = registry.listed_manifest(&entry) {
            active.push(m);
        }
    }
    let mut dirs: Vec<(Option<Agent>, std::path::PathBuf)> =
        to.map(|d| (None, d.to_owned())).into_iter().collect();
    if agents {
        let homes = Homes::from_env().ok_or_else(|| {
            Failure::new(
                ExitCode::Failure,
                "$HOME is not set: cannot find the agents' skill folders; pass --to DIR",
            )
        })?;
        let found: Vec<Agent> = Agent::ALL
            .into_iter()
            .filter(|a| a.found(&homes) && !a.user_skill_dirs(&homes).is_empty())
            .collect();
        if found.is_empty() && to.is_none() {
            return Err(Failure::new(
                ExitCode::Failure,
                "no agent that reads skills is set up here (looked for ~/.claude, $CODEX_HOME or \
                 ~/.codex, ~/.gemini, ~/.config/opencode); pass --to DIR",
            ));
        }
        for (agent, dir) in skill_targets(&homes, &found) {
            if !dirs.iter().any(|(_, d)| *d == dir) {
                dirs.push((Some(agent), dir));
            }
        }
    }
    let mut reports = Vec::new();
    for (agent, dir) in &dirs {
        let report = crate::mcp::skills::export(dir, &active)
            .map_err(|e| Failure::new(ExitCode::Failure, e.to_string()))?;
        reports.push((*agent, dir, report));
    }
    if cli.global.json {
        // One folder: its report as before; several: one per folder, with its agent.
        if let ([(None, _, report)], false) = (reports.as_slice(), agents) {
            return output::json(out, report);
        }
        let all: Vec<serde_json::Value> = reports
            .iter()
            .map(|(agent, dir, report)| {
                serde_json::json!({"agent": agent, "dir": dir, "report": report})
            })
            .collect();
        return output::json(out, &all);
    }
    for (agent, dir, report) in &reports {
        let whose = agent
            .map(|a| format!(" ({})", a.as_str()))
            .unwrap_or_default();
        writeln!(
            out,
            "{} skills in {}{whose}: {} written, {} unchanged, {} removed",
            active.len(),
            dir.display(),
            report.written.len(),
            report.unchanged.len(),
            report.removed.len()
        )?;
        if !report.skipped.is_empty() {
            writeln!(
                out,
                "left alone (not written by toolsmith): {}",
                report.skipped.join(", ")
            )?;
        }
    }
    Ok(())
}
