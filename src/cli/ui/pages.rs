//! The pages of `toolsmith ui`, written as HTML strings from the same functions and rows the
//! CLI's commands read (`toolsmith candidates`, `show`, `review`). Every text that comes from
//! a log, a model, a generator or git is escaped ([`esc`]); no page carries inline script or
//! style (the Content-Security-Policy forbids both).

use std::fmt::Write as _;

use serde_json::Value;

use super::super::generate::{read_store, staged_needs};
use super::super::{Cli, Failure};
use crate::generate::candidates::{self, Candidate, State};
use crate::generate::spec::ToolSpec;
use crate::generate::staging::Staging;
use crate::package::manifest::Manifest;
use crate::sandbox::Need;
use crate::sandbox::SandboxProfile;

/// How many occurrences of a habit the candidate page shows, each with its logged actions.
const SHOWN_OCCURRENCES: usize = 8;

/// `text` escaped for HTML text and attribute values.
pub(super) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// The frame of every page: title, navigation, the CSRF value the script sends.
pub(super) fn layout(title: &str, csrf: &str, active: &str, body: &str) -> String {
    let mut nav = String::new();
    for (href, name) in [
        ("/", "Review queue"),
        ("/tools", "Tools"),
        ("/patterns", "Patterns"),
        ("/stats", "Keep rate and use"),
    ] {
        let class = if name == active {
            " class=\"active\""
        } else {
            ""
        };
        let _ = write!(nav, "<a href=\"{href}\"{class}>{name}</a>");
    }
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"csrf\" content=\"{csrf}\">\
         <title>{title} · toolsmith</title>\
         <link rel=\"stylesheet\" href=\"/assets/style.css\">\
         <script src=\"/assets/app.js\" defer></script></head>\
         <body><header><span class=\"brand\">toolsmith</span><nav>{nav}</nav>\
         <span id=\"live\" class=\"live\" title=\"the daemon's events\">connecting…</span></header>\
         <main id=\"main\">{body}</main></body></html>\n",
        csrf = esc(csrf),
        title = esc(title),
    )
}

/// A page saying what failed, with the frame (no CSRF value: it changes nothing).
pub(super) fn error_page(message: &str) -> String {
    layout(
        "not found",
        "",
        "",
        &format!("<h1>Not shown</h1><p class=\"error\">{}</p>", esc(message)),
    )
}

/// A Unix time as UTC, to the minute.
fn when(unix: i64) -> String {
    jiff::Timestamp::from_second(unix)
        .map(|t| t.strftime("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|_| unix.to_string())
}

/// The manifest of a candidate's last attempt: its sandbox profile is what the tool would get
/// (the spec's, fitted to the policy), its `needs` what a person grants.
fn staged_manifest(staging: &Staging) -> Option<Manifest> {
    let n = *staging.attempts().last()?;
    let files = staging.files(n);
    let text = files.get(crate::package::manifest::FILE_NAME)?;
    Manifest::parse(text, crate::package::manifest::FILE_NAME).ok()
}

/// What a candidate needs beyond the defaults, each a short line: the needs a person grants,
/// and what the profile reaches (toolchains bound, hosts, host sockets, the workspace).
fn beyond_defaults(profile: Option<&SandboxProfile>, needs: &[Need]) -> Vec<String> {
    let mut lines: Vec<String> = needs.iter().map(|n| format!("grant {n}")).collect();
    if let Some(p) = profile {
        for t in &p.toolchains {
            lines.push(format!("toolchain {}", t.program));
        }
        for h in &p.hosts {
            lines.push(format!("host {h}"));
        }
        for s in &p.host_sockets {
            lines.push(format!("socket {}", s.display()));
        }
        let workspace = format!("{:?}", p.workspace).to_lowercase();
        if workspace != "none" {
            lines.push(format!("workspace {workspace}"));
        }
    }
    lines
}

/// The review queue: candidates awaiting review, newest first.
pub(super) fn queue(cli: &Cli, csrf: &str) -> Result<String, Failure> {
    let mut body = String::from("<h1>Review queue</h1>");
    let waiting = match read_store(cli) {
        Ok((conn, state_dir)) => {
            let newest_first = |a: &Candidate, b: &Candidate| {
                b.updated_at
                    .cmp(&a.updated_at)
                    .then(b.created_at.cmp(&a.created_at))
            };
            let mut waiting = candidates::in_state(&conn, State::AwaitingReview)?;
            waiting.sort_by(newest_first);
            let mut specs = candidates::in_state(&conn, State::SpecAwaitingReview)?;
            specs.sort_by(newest_first);
            Some((waiting, specs, state_dir))
        }
        Err(failure) => {
            let _ = write!(body, "<p class=\"empty\">{}</p>", esc(&failure.message));
            None
        }
    };
    if let Some((waiting, specs, state_dir)) = waiting {
        if waiting.is_empty() {
            body.push_str(
                "<p class=\"empty\">Nothing awaits review: candidates are proposed when they \
                 pass validation.</p>",
            );
        } else {
            let _ = write!(
                body,
                "<p class=\"count\" data-count=\"{n}\">{n} awaiting review, newest first.</p>\
                 <table class=\"queue\"><thead><tr><th>Tool</th><th>Origin</th>\
                 <th>Support</th><th>What it does</th><th>Needs beyond the defaults</th>\
                 <th>Proposed</th></tr></thead><tbody>",
                n = waiting.len()
            );
            for c in &waiting {
                queue_row(&mut body, c, &state_dir);
            }
            body.push_str("</tbody></table>");
        }
        if !specs.is_empty() {
            // Requests whose spec a person accepts before any code is written.
            let _ = write!(
                body,
                "<h2>Specs awaiting review</h2><p class=\"count\" data-specs=\"{n}\">{n} \
                 requested, waiting for you to accept what they will do before generation.</p>\
                 <table class=\"queue specs\"><thead><tr><th>Tool</th><th>Origin</th>\
                 <th>Support</th><th>What it does</th><th>Needs beyond the defaults</th>\
                 <th>Proposed</th></tr></thead><tbody>",
                n = specs.len()
            );
            for c in &specs {
                queue_row(&mut body, c, &state_dir);
            }
            body.push_str("</tbody></table>");
        }
    }
    Ok(layout("Review queue", csrf, "Review queue", &body))
}

fn queue_row(body: &mut String, c: &Candidate, state_dir: &std::path::Path) {
    let staging = Staging::new(state_dir, &c.id);
    let spec = staging.spec();
    let needs = staging
        .attempts()
        .last()
        .map(|&n| staged_needs(&staging, n))
        .unwrap_or_default();
    let summary = spec
        .as_ref()
        .map(|s| s.description.lines().next().unwrap_or_default().to_owned())
        .unwrap_or_default();
    let support = spec
        .as_ref()
        .and_then(|s| s.support)
        .map_or("—".to_owned(), |n| format!("{n} sessions"));
    let manifest = staged_manifest(&staging);
    let profile = manifest
        .as_ref()
        .map(|m| &m.sandbox)
        .or(spec.as_ref().map(|s| &s.sandbox));
    let beyond = beyond_defaults(profile, &needs);
    let needs_html = if beyond.is_empty() {
        "<span class=\"none\">none</span>".to_owned()
    } else {
        beyond
            .iter()
            .map(|l| format!("<span class=\"need\">{}</span>", esc(l)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let _ = write!(
        body,
        "<tr data-candidate=\"{id}\"><td><a href=\"/candidate/{id}\">{tool}</a> \
         <span class=\"version\">{version}</span><div class=\"id\">{id}</div></td>\
         <td>{origin}</td><td>{support}</td><td>{summary}</td><td>{needs_html}</td>\
         <td>{time}</td></tr>",
        id = esc(&c.id),
        tool = esc(&c.tool),
        version = esc(c.version.as_deref().unwrap_or("")),
        origin = esc(&c.origin),
        support = esc(&support),
        summary = esc(&summary),
        time = esc(&when(c.updated_at)),
    );
}

/// A script or text file with simple highlighting: comments dimmed, the rest as is (escaped).
fn highlighted(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('#') {
            let _ = writeln!(out, "<span class=\"c\">{}</span>", esc(line));
        } else {
            let _ = writeln!(out, "{}", esc(line));
        }
    }
    out
}

/// A unified diff, its added and removed lines marked.
fn diff_html(diff: &str) -> String {
    let mut out = String::new();
    for line in diff.lines() {
        let class = if line.starts_with("+++") || line.starts_with("---") {
            "h"
        } else if line.starts_with('+') {
            "add"
        } else if line.starts_with('-') {
            "del"
        } else if line.starts_with("@@") {
            "h"
        } else {
            ""
        };
        let _ = writeln!(out, "<span class=\"{class}\">{}</span>", esc(line));
    }
    out
}

/// The candidate page: reach (prominent), the decision, the spec, the evidence as logged, the
/// checks and tests, the code, the diff against `main`.
pub(super) fn candidate(cli: &Cli, csrf: &str, id: &str) -> Result<String, Failure> {
    let (conn, state_dir) = read_store(cli)?;
    let c = candidates::get(&conn, id)?;
    let staging = Staging::new(&state_dir, &c.id);
    let spec = staging.spec();
    let numbers = staging.attempts();
    let last = numbers.last().copied();
    let needs = last.map(|n| staged_needs(&staging, n)).unwrap_or_default();
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>{tool} <span class=\"version\">{version}</span></h1>\
         <p class=\"meta\"><span class=\"state state-{state}\">{state}</span> · candidate \
         <code>{id}</code> · origin {origin} · proposed {time}</p>",
        tool = esc(&c.tool),
        version = esc(c.version.as_deref().unwrap_or("")),
        state = esc(c.state.as_str()),
        id = esc(&c.id),
        origin = esc(&c.origin),
        time = esc(&when(c.created_at)),
    );
    if let Some(reason) = &c.reason {
        let _ = write!(body, "<p class=\"reason\">{}</p>", esc(reason));
    }
    if let Some(edit) = &c.edit {
        let _ = write!(
            body,
            "<p class=\"meta edit\">Edited by <b>{}</b> in commit <code>{}</code>: the files \
             validated are that commit's.</p>",
            esc(&edit.author),
            esc(&edit.commit)
        );
    }

    // What the tool may reach, first and prominent.
    body.push_str("<section class=\"reach\"><h2>What this tool may reach</h2><ul>");
    let manifest = staged_manifest(&staging);
    let profile = manifest
        .as_ref()
        .map(|m| &m.sandbox)
        .or(spec.as_ref().map(|s| &s.sandbox));
    if let Some(p) = profile {
        let workspace = format!("{:?}", p.workspace).to_lowercase();
        let _ = write!(
            body,
            "<li>Workspace (the directory it is run in): <b>{}</b></li>",
            esc(&workspace)
        );
        if p.hosts.is_empty() {
            body.push_str("<li>Network: <b>none</b></li>");
        }
        for line in crate::sandbox::grants::reach_lines(p) {
            let _ = write!(body, "<li class=\"warn\">{}</li>", esc(&line));
        }
        for t in &p.toolchains {
            let paths: Vec<String> = t.paths.iter().map(|p| p.display().to_string()).collect();
            let _ = write!(
                body,
                "<li>Toolchain <b>{}</b>, read-only: {}</li>",
                esc(&t.program),
                esc(&paths.join(", "))
            );
        }
        let l = &p.limits;
        let _ = write!(
            body,
            "<li>Limits: {} s wall, {} s CPU, {} MB memory, {} processes, {} KB output</li>",
            l.wall_s, l.cpu_s, l.memory_mb, l.pids, l.output_kb
        );
    }
    for n in &needs {
        let _ = write!(
            body,
            "<li class=\"warn\">Needs a person's grant: <b>{}</b></li>",
            esc(&n.to_string())
        );
    }
    body.push_str("</ul></section>");

    if c.state == State::AwaitingReview {
        decision_form(&mut body, &c, &needs);
    }
    if c.state == State::SpecAwaitingReview {
        spec_decision_form(&mut body, &c);
    }

    if let Some(spec) = &spec {
        spec_section(&mut body, spec);
        evidence_section(&mut body, &conn, spec)?;
    }

    if let Some(n) = last {
        if let Some(d) = staging.diagnostics(n) {
            let _ = write!(
                body,
                "<section><h2>Checks and tests (attempt {n}, {})</h2><table class=\"checks\">\
                 <thead><tr><th>Layer</th><th>Check</th><th>Verdict</th><th>Output</th></tr>\
                 </thead><tbody>",
                if d.passed { "all passed" } else { "failed" }
            );
            for check in &d.checks {
                let verdict = if check.passed {
                    "<span class=\"pass\">passed</span>"
                } else {
                    "<span class=\"fail\">failed</span>"
                };
                let _ = write!(
                    body,
                    "<tr><td>{}</td><td>{}</td><td>{verdict}</td><td><pre>{}</pre></td></tr>",
                    esc(check.layer.as_str()),
                    esc(&check.name),
                    esc(&check.details.join("\n"))
                );
            }
            body.push_str("</tbody></table></section>");
        }
        body.push_str("<section><h2>The code</h2>");
        for (name, text) in staging.files(n) {
            let _ = write!(
                body,
                "<details open><summary><code>{}</code></summary><pre class=\"code\">{}</pre>\
                 </details>",
                esc(&name),
                highlighted(&text)
            );
        }
        body.push_str("</section>");
    }

    if c.state == State::AwaitingReview {
        match super::super::registry::proposal_of(cli, &c.id) {
            Some(proposal) => {
                let diff = proposal["diff"].as_str().unwrap_or_default();
                let subject = proposal["review"]["subject"].as_str().unwrap_or_default();
                let branch = proposal["review"]["branch"].as_str().unwrap_or_default();
                let _ = write!(
                    body,
                    "<section><h2>Diff against <code>main</code></h2><p>{} on <code>{}</code>\
                     </p><pre class=\"diff\">{}</pre></section>",
                    esc(subject),
                    esc(branch),
                    diff_html(diff)
                );
            }
            None => body.push_str(
                "<section><h2>Diff against <code>main</code></h2><p class=\"error\">The \
                 proposal's review branch is not in the registry: `toolsmith review` lists \
                 those that are.</p></section>",
            ),
        }
    }
    Ok(layout(&c.tool, csrf, "", &body))
}

/// Approve (each need a checkbox) and Reject (with a reason).
fn decision_form(body: &mut String, c: &Candidate, needs: &[Need]) {
    let _ = write!(
        body,
        "<section class=\"decide\" data-candidate=\"{}\"><h2>Decide</h2>\
         <form id=\"approve\"><fieldset><legend>Approve</legend>",
        esc(&c.id)
    );
    if needs.is_empty() {
        body.push_str("<p>It needs no grant beyond the policy's defaults.</p>");
    } else {
        body.push_str(
            "<p>Grant what it needs (each one you do not tick refuses the approval):</p>",
        );
        for n in needs {
            let shown = n.to_string();
            let _ = write!(
                body,
                "<label><input type=\"checkbox\" name=\"grant\" value=\"{v}\"> {v}</label>",
                v = esc(&shown)
            );
        }
    }
    body.push_str(
        "<label>Note (kept in the commit): <input type=\"text\" name=\"note\"></label>\
         <button type=\"submit\" id=\"approve-button\">Approve</button></fieldset></form>\
         <form id=\"reject\"><fieldset><legend>Reject</legend>\
         <label>Reason (kept; the habit is not proposed again): \
         <textarea name=\"reason\" required></textarea></label>\
         <button type=\"submit\" id=\"reject-button\">Reject</button></fieldset></form>\
         <p id=\"outcome\" role=\"status\"></p></section>",
    );
}

/// Accept (then its code is generated) and Reject (with a reason) of a requested tool's spec,
/// before any code is written.
fn spec_decision_form(body: &mut String, c: &Candidate) {
    let _ = write!(
        body,
        "<section class=\"decide\" data-candidate=\"{}\"><h2>Its spec awaits your review</h2>\
         <p>Nothing is generated until you accept what it will do (below).</p>\
         <form id=\"accept-spec\"><fieldset><legend>Accept the spec</legend>\
         <button type=\"submit\" id=\"accept-spec-button\">Accept and generate</button>\
         </fieldset></form>\
         <form id=\"reject-spec\"><fieldset><legend>Reject the spec</legend>\
         <label>Reason (kept with the candidate): \
         <textarea name=\"reason\" required></textarea></label>\
         <button type=\"submit\" id=\"reject-spec-button\">Reject</button></fieldset></form>\
         <p id=\"outcome\" role=\"status\"></p></section>",
        esc(&c.id)
    );
}

fn spec_section(body: &mut String, spec: &ToolSpec) {
    let _ = write!(
        body,
        "<section><h2>Spec</h2><p>{}</p>",
        esc(&spec.description)
    );
    if let Some(request) = &spec.request {
        let _ = write!(body, "<p>Asked for: <q>{}</q></p>", esc(request));
    }
    if let Some(support) = spec.support {
        let _ = write!(body, "<p>Seen in {support} sessions.</p>");
    }
    if !spec.params.is_empty() {
        body.push_str(
            "<table><thead><tr><th>Parameter</th><th>Kind</th><th>Required</th>\
             <th>What</th></tr></thead><tbody>",
        );
        for p in &spec.params {
            let _ = write!(
                body,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&crate::invoke::option_name(&p.name)),
                esc(&format!("{:?}", p.kind).to_lowercase()),
                if p.required { "yes" } else { "no" },
                esc(&p.description)
            );
        }
        body.push_str("</tbody></table>");
    }
    if !spec.steps.is_empty() {
        body.push_str("<ol class=\"steps\">");
        for s in &spec.steps {
            let pipe = if s.piped { "| " } else { "" };
            let _ = write!(body, "<li><code>{pipe}{}</code></li>", esc(&s.display()));
        }
        body.push_str("</ol>");
    }
    body.push_str("</section>");
}

/// The sessions the habit was seen in, with their agent, and each action exactly as stored.
fn evidence_section(
    body: &mut String,
    conn: &rusqlite::Connection,
    spec: &ToolSpec,
) -> Result<(), Failure> {
    if spec.occurrences.is_empty() {
        if !spec.examples.is_empty() {
            body.push_str("<section><h2>Examples given</h2><ul>");
            for e in &spec.examples {
                let _ = write!(body, "<li><pre>{}</pre></li>", esc(e));
            }
            body.push_str("</ul></section>");
        }
        return Ok(());
    }
    let _ = write!(
        body,
        "<section class=\"evidence\"><h2>Evidence ({} occurrences)</h2>",
        spec.occurrences.len()
    );
    for o in spec.occurrences.iter().take(SHOWN_OCCURRENCES) {
        let e = &o.evidence;
        let actions =
            crate::action::stored::actions_between(conn, &e.session, e.first_seq, e.last_seq)?;
        // The agent is the source every action of the session was read from.
        let agent = actions.first().map_or_else(
            || "not read from a log".to_owned(),
            |a| format!("agent {}", a.source),
        );
        let _ = write!(
            body,
            "<div class=\"session\"><h3>session <code>{}</code> · {}</h3><table class=\"log\">\
             <tbody>",
            esc(&e.session),
            esc(&agent)
        );
        if actions.is_empty() {
            // Not read from a log (a request's examples): the commands as given.
            let given = if o.lines.is_empty() {
                &o.commands
            } else {
                &o.lines
            };
            for line in given {
                let _ = write!(
                    body,
                    "<tr><td class=\"ts\">given</td><td></td><td><pre>{}</pre></td><td></td></tr>",
                    esc(line)
                );
            }
        }
        for a in &actions {
            let logged = match &a.input {
                Value::Object(fields) => match fields.get("command") {
                    Some(Value::String(command)) => command.clone(),
                    _ => a.input.to_string(),
                },
                other => other.to_string(),
            };
            let status = match (a.ok, a.exit_code) {
                (_, Some(code)) => format!("exit {code}"),
                (Some(true), None) => "ok".to_owned(),
                (Some(false), None) => "failed".to_owned(),
                (None, None) => String::new(),
            };
            let _ = write!(
                body,
                "<tr><td class=\"ts\">{}</td><td>{}</td><td><pre>{}</pre></td><td>{}</td></tr>",
                esc(a.ts.as_deref().unwrap_or("")),
                esc(&a.tool),
                esc(&logged),
                esc(&status)
            );
        }
        body.push_str("</tbody></table></div>");
    }
    let more = spec.occurrences.len().saturating_sub(SHOWN_OCCURRENCES);
    if more > 0 {
        let _ = write!(body, "<p>and {more} more occurrences.</p>");
    }
    body.push_str("</section>");
    Ok(())
}

/// How many days the runs chart of the tools page covers.
const CHART_DAYS: i64 = 30;

/// Runs per day over the last [`CHART_DAYS`] days (oldest first) as an inline SVG bar chart:
/// no script, no library, nothing fetched.
fn runs_chart(days: &[u32]) -> String {
    let max = days.iter().copied().max().unwrap_or(0).max(1);
    let (bar, height) = (8u32, 40u32);
    let width = bar * days.len() as u32;
    let mut svg = format!(
        "<svg class=\"chart\" width=\"{width}\" height=\"{}\" viewBox=\"0 0 {width} {}\" \
         role=\"img\" aria-label=\"runs per day, last {CHART_DAYS} days\">",
        height + 12,
        height + 12
    );
    for (i, &n) in days.iter().enumerate() {
        let h = if n == 0 { 0 } else { (n * height / max).max(2) };
        let ago = days.len() - 1 - i;
        let _ = write!(
            svg,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{h}\"><title>{n} runs, {ago} days \
             ago</title></rect>",
            i as u32 * bar,
            height - h,
            bar - 1
        );
    }
    let _ = write!(
        svg,
        "<text x=\"0\" y=\"{}\">{CHART_DAYS} days · max {max}/day</text></svg>",
        height + 11
    );
    svg
}

/// Counts per day of `started_ms`, the last [`CHART_DAYS`] days up to `now_ms`, oldest first.
fn per_day(started_ms: impl Iterator<Item = i64>, now_ms: i64) -> Vec<u32> {
    let day = 86_400_000;
    let today = now_ms.div_euclid(day);
    let mut days = vec![0u32; CHART_DAYS as usize];
    for ms in started_ms {
        let ago = today - ms.div_euclid(day);
        if (0..CHART_DAYS).contains(&ago) {
            days[(CHART_DAYS - 1 - ago) as usize] += 1;
        }
    }
    days
}

/// The tools page: each approved tool with its versions (when each was approved), health and
/// status, runs per day, error classes, heals and rollbacks.
pub(super) fn tools(cli: &Cli, csrf: &str) -> Result<String, Failure> {
    let opened = super::super::registry::open_for_reading(cli)?;
    let registry = &opened.registry;
    let tools = registry.tools()?;
    let approved = registry.approval_times(&mut std::collections::HashMap::new());
    let store = read_store(cli).ok();
    let policy = super::super::health::health_policy(&opened.config).ok();
    let now_ms = jiff::Timestamp::now().as_millisecond();
    let mut body = String::from("<h1>Tools</h1>");
    if tools.is_empty() {
        body.push_str(
            "<p class=\"empty\">No approved tools yet: the review queue lists what awaits \
             review.</p>",
        );
    }
    for t in &tools {
        let status = match (&t.problem, t.deprecated) {
            (Some(p), _) => format!("<span class=\"fail\">invalid: {}</span>", esc(p)),
            (None, true) => "deprecated".to_owned(),
            (None, false) => "active".to_owned(),
        };
        let _ = write!(
            body,
            "<section class=\"tool\" data-tool=\"{name}\"><h2>{name} <span class=\"version\">\
             {version}</span></h2><p>{description}</p><p class=\"meta\">{status}</p>",
            name = esc(&t.name),
            version = esc(t.version.as_deref().unwrap_or("")),
            description = esc(&t.description),
        );
        let versions: Vec<(&String, &i64)> = approved
            .iter()
            .filter(|((name, _), _)| *name == t.name)
            .map(|((_, v), at)| (v, at))
            .collect();
        body.push_str(
            "<table class=\"versions\"><thead><tr><th>Version</th><th>Approved</th>\
             <th>Runs</th><th>Health</th><th>Error classes</th></tr></thead><tbody>",
        );
        for (version, at) in versions.iter().rev() {
            let runs = match &store {
                Some((conn, _)) => crate::health::executions::run_count(conn, &t.name, version)?,
                None => 0,
            };
            let (health, errors) = match (&store, &policy) {
                (Some((conn, _)), Some(policy)) if runs > 0 => {
                    let h =
                        crate::health::executions::version_health(conn, &t.name, version, policy)?;
                    let errors: Vec<String> = h
                        .top_errors
                        .iter()
                        .map(|e| format!("{} ×{}: {}", e.class.as_str(), e.count, e.template))
                        .collect();
                    (
                        format!(
                            "{} (score {:.0}, {}/{} ok)",
                            h.status.as_str(),
                            h.score,
                            h.successes,
                            h.runs
                        ),
                        errors.join("\n"),
                    )
                }
                _ => ("not run yet".to_owned(), String::new()),
            };
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{runs}</td><td>{}</td><td><pre>{}</pre></td></tr>",
                esc(version),
                esc(&when(**at / 1000)),
                esc(&health),
                esc(&errors)
            );
        }
        body.push_str("</tbody></table>");
        if let Some((conn, _)) = &store {
            let runs = crate::health::executions::list(conn, Some(&t.name))?;
            let _ = write!(
                body,
                "<div class=\"runs\"><h3>Runs per day</h3>{}</div>",
                runs_chart(&per_day(runs.iter().map(|r| r.started_ms), now_ms))
            );
            let history = crate::health::actions::history(conn, &t.name, 20)?;
            if !history.is_empty() {
                body.push_str(
                    "<table class=\"history\"><thead><tr><th>When</th><th>Heal or rollback\
                     </th><th>Outcome</th><th>What happened</th></tr></thead><tbody>",
                );
                for a in &history {
                    let _ = write!(
                        body,
                        "<tr><td>{}</td><td>{} ({})</td><td>{}</td><td>{}</td></tr>",
                        esc(&when(a.at_ms / 1000)),
                        esc(&a.action),
                        esc(&a.trigger),
                        esc(&a.outcome),
                        esc(&a.detail)
                    );
                }
                body.push_str("</tbody></table>");
            }
        }
        body.push_str("</section>");
    }
    Ok(layout("Tools", csrf, "Tools", &body))
}

/// How many patterns the patterns page lists.
const SHOWN_PATTERNS: u64 = 100;

/// The patterns page: the ranked habits, each with why it was or was not proposed.
pub(super) fn patterns(cli: &Cli, csrf: &str) -> Result<String, Failure> {
    let config = super::super::load_config(cli)?;
    let min_score = config.generate.min_score.value;
    let (conn, _) = read_store(cli)?;
    let all = crate::mine::pattern::list_patterns(&conn, None, SHOWN_PATTERNS)?;
    let mut body = String::from("<h1>Patterns</h1>");
    if all.is_empty() {
        body.push_str(
            "<p class=\"empty\">No patterns mined yet: the daemon mines the logs it reads \
             (`toolsmith mine` does it now).</p>",
        );
        return Ok(layout("Patterns", csrf, "Patterns", &body));
    }
    let _ = write!(
        body,
        "<p class=\"count\">{} habits, best first (generation proposes those scoring {min_score} \
         or more).</p><table class=\"patterns\"><thead><tr><th>Score</th><th>Habit</th>\
         <th>Kind</th><th>Sessions</th><th>Proposed?</th></tr></thead><tbody>",
        all.len()
    );
    for sp in &all {
        let p = &sp.pattern;
        use crate::mine::pattern::PatternStatus as S;
        let why = match sp.status {
            S::New if p.score < f64::from(min_score) => format!(
                "not proposed: its score {:.0} is under generate.min_score {min_score}",
                p.score
            ),
            S::New => "not yet: the next generation run proposes it".to_owned(),
            S::Folded => match &p.folded_into {
                Some(f) => format!(
                    "not proposed: the same habit as {}, which stands for it",
                    f.id
                ),
                None => "not proposed: folded into a better pattern".to_owned(),
            },
            _ => sp
                .reason
                .clone()
                .unwrap_or_else(|| sp.status.as_str().to_owned()),
        };
        let _ = write!(
            body,
            "<tr><td>{:.0}</td><td><pre>{}</pre><div class=\"id\">{}</div></td><td>{}</td>\
             <td>{}</td><td><b>{}</b>: {}</td></tr>",
            p.score,
            esc(&p.templates.join("\n")),
            esc(&p.id),
            esc(p.kind.as_str()),
            p.support,
            esc(sp.status.as_str()),
            esc(&why)
        );
    }
    body.push_str("</tbody></table>");
    Ok(layout("Patterns", csrf, "Patterns", &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_counted_by_day_oldest_first() {
        let day = 86_400_000;
        let now = 100 * day + 5;
        let days = per_day(
            [now, now - 1, now - day, now - 29 * day, now - 30 * day].into_iter(),
            now,
        );
        assert_eq!(days.len(), 30);
        assert_eq!(days[29], 2, "today");
        assert_eq!(days[28], 1, "yesterday");
        assert_eq!(days[0], 1, "29 days ago");
        assert_eq!(days.iter().sum::<u32>(), 4, "30 days ago is outside");
        let svg = runs_chart(&days);
        assert_eq!(svg.matches("<rect").count(), 30);
        assert!(svg.contains("<title>2 runs, 0 days ago</title>"));
    }

    #[test]
    fn escaping_leaves_no_markup() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }

    #[test]
    fn diff_lines_are_marked_and_escaped() {
        let html = diff_html("--- a\n+++ b\n@@ -1 +1 @@\n-old <b>\n+new\n same");
        assert!(html.contains("<span class=\"del\">-old &lt;b&gt;</span>"));
        assert!(html.contains("<span class=\"add\">+new</span>"));
        assert!(html.contains("<span class=\"\"> same</span>"));
    }
}
