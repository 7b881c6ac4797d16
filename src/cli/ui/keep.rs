//! The "Keep rate and use" page: what `toolsmith stats` reports (`stats::stats`, through
//! `cli::stats::gather`), as figures and inline SVG bar charts — proposals made, approved,
//! rejected and waiting (and for how long), the reasons of rejections, and per approved tool
//! its runs by each agent since approval and the missed uses, with the steps and time they
//! took by hand. No script and nothing fetched: the charts are markup.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::super::output::duration;
use super::super::{Cli, Failure};
use super::pages::{esc, layout};
use crate::stats::Stats;

/// One bar: its label, its value, the words after it, and its class (its colour).
struct Bar {
    label: String,
    value: u64,
    shown: String,
    class: &'static str,
}

impl Bar {
    fn count(label: &str, value: u32, class: &'static str) -> Bar {
        Bar {
            label: label.to_owned(),
            value: u64::from(value),
            shown: value.to_string(),
            class,
        }
    }
}

/// A horizontal bar chart, one row a bar, labelled and valued, as inline SVG.
fn bars(aria: &str, rows: &[Bar]) -> String {
    const LABEL: u64 = 210;
    const WIDTH: u64 = 360;
    const ROW: u64 = 22;
    let max = rows.iter().map(|b| b.value).max().unwrap_or(0).max(1);
    let height = ROW * rows.len() as u64 + 4;
    let total = LABEL + WIDTH + 110;
    let mut svg = format!(
        "<svg class=\"chart bars\" width=\"{total}\" height=\"{height}\" viewBox=\"0 0 {total} \
         {height}\" role=\"img\" aria-label=\"{}\">",
        esc(aria)
    );
    for (i, b) in rows.iter().enumerate() {
        let y = ROW * i as u64 + 2;
        let w = if b.value == 0 {
            0
        } else {
            (b.value * WIDTH / max).max(2)
        };
        // Long labels are cut to fit their column; the whole label is the bar's title.
        let label: String = b.label.chars().take(30).collect();
        let _ = write!(
            svg,
            "<text x=\"4\" y=\"{ty}\">{label}</text><rect class=\"{class}\" x=\"{LABEL}\" \
             y=\"{y}\" width=\"{w}\" height=\"{h}\"><title>{title}: {shown}</title></rect>\
             <text class=\"value\" x=\"{vx}\" y=\"{ty}\">{shown}</text>",
            ty = y + 14,
            label = esc(&label),
            class = b.class,
            h = ROW - 6,
            title = esc(&b.label),
            shown = esc(&b.shown),
            vx = LABEL + w + 6,
        );
    }
    svg.push_str("</svg>");
    svg
}

/// One figure of the summary: its value (with an id the tests and readers can find) and name.
fn figure(body: &mut String, id: &str, value: &str, name: &str) {
    let _ = write!(
        body,
        "<div><strong id=\"{id}\">{}</strong><span>{}</span></div>",
        esc(value),
        esc(name)
    );
}

/// Counts by agent as bars.
fn by_agent(counts: &BTreeMap<String, u32>, class: &'static str) -> Vec<Bar> {
    counts
        .iter()
        .map(|(agent, n)| Bar::count(agent, *n, class))
        .collect()
}

/// The page.
pub(super) fn page(cli: &Cli, csrf: &str) -> Result<String, Failure> {
    let stats = super::super::stats::gather(cli)?;
    Ok(layout(
        "Keep rate and use",
        csrf,
        "Keep rate and use",
        &render(&stats),
    ))
}

/// The page's body from the stats.
fn render(s: &Stats) -> String {
    let t = &s.total;
    let mut body = String::from("<h1>Keep rate and use</h1><div class=\"figures\">");
    let keep = t
        .keep_rate
        .map_or_else(|| "-".to_owned(), |r| format!("{:.0}%", r * 100.0));
    figure(
        &mut body,
        "keep-rate",
        &keep,
        "keep rate (approved of decided)",
    );
    figure(
        &mut body,
        "proposed",
        &t.proposed.to_string(),
        "proposals made",
    );
    figure(&mut body, "approved", &t.approved.to_string(), "approved");
    figure(&mut body, "rejected", &t.rejected.to_string(), "rejected");
    figure(&mut body, "waiting", &t.waiting.to_string(), "waiting");
    figure(
        &mut body,
        "oldest-wait",
        &s.oldest_wait_s
            .map_or_else(|| "-".to_owned(), |w| duration(w.max(0) as u64)),
        "longest wait",
    );
    body.push_str("</div>");

    body.push_str("<h2>Proposals</h2>");
    body.push_str(&bars(
        "proposals by outcome",
        &[
            Bar::count("made", t.proposed, "made"),
            Bar::count("approved", t.approved, "approved"),
            Bar::count("rejected", t.rejected, "rejected"),
            Bar::count("waiting", t.waiting, "waiting"),
            Bar::count("failed before review", t.failed, "failed"),
        ],
    ));
    if !s.by_origin.is_empty() {
        body.push_str(
            "<table class=\"origins\"><tr><th>origin</th><th>made</th><th>approved</th>\
             <th>rejected</th><th>waiting</th><th>failed</th><th>keep rate</th></tr>",
        );
        for (origin, c) in &s.by_origin {
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td></tr>",
                esc(origin),
                c.proposed,
                c.approved,
                c.rejected,
                c.waiting,
                c.failed,
                c.keep_rate
                    .map_or_else(|| "-".to_owned(), |r| format!("{:.0}%", r * 100.0))
            );
        }
        body.push_str("</table>");
    }

    body.push_str("<h2>Waiting, and for how long</h2>");
    if s.waiting.is_empty() {
        body.push_str("<p class=\"empty\">Nothing awaits review.</p>");
    } else {
        let _ = write!(
            body,
            "<p class=\"meta\">{} waiting; median wait {}.</p>",
            s.waiting.len(),
            s.median_wait_s
                .map_or_else(|| "-".to_owned(), |w| duration(w.max(0) as u64))
        );
        let rows: Vec<Bar> = s
            .waiting
            .iter()
            .map(|w| Bar {
                label: w.tool.clone(),
                value: w.waited_s.max(0) as u64,
                shown: duration(w.waited_s.max(0) as u64),
                class: "waiting",
            })
            .collect();
        body.push_str(&bars("proposals waiting, by how long", &rows));
        body.push_str("<ul class=\"waiting-list\">");
        for w in &s.waiting {
            let _ = write!(
                body,
                "<li><a href=\"/candidate/{id}\">{tool}</a> <span class=\"id\">{id}</span> \
                 ({origin})</li>",
                id = esc(&w.candidate),
                tool = esc(&w.tool),
                origin = esc(&w.origin)
            );
        }
        body.push_str("</ul>");
    }

    body.push_str("<h2>Rejection reasons</h2>");
    if s.rejections.is_empty() {
        body.push_str("<p class=\"empty\">Nothing rejected.</p>");
    } else {
        let mut reasons: BTreeMap<&str, u32> = BTreeMap::new();
        for r in &s.rejections {
            *reasons.entry(r.reason.as_str()).or_default() += 1;
        }
        let rows: Vec<Bar> = reasons
            .iter()
            .map(|(reason, n)| Bar::count(reason, *n, "rejected"))
            .collect();
        body.push_str(&bars("rejections by reason", &rows));
        body.push_str(
            "<table class=\"rejections\"><tr><th>tool</th><th>origin</th><th>reason</th></tr>",
        );
        for r in &s.rejections {
            let _ = write!(
                body,
                "<tr><td>{} <span class=\"version\">{}</span></td><td>{}</td><td>{}</td></tr>",
                esc(&r.tool),
                esc(r.version.as_deref().unwrap_or("")),
                esc(&r.origin),
                esc(&r.reason)
            );
        }
        body.push_str("</table>");
    }

    body.push_str("<h2>Use since approval</h2>");
    if s.tools.is_empty() {
        body.push_str("<p class=\"empty\">No approved tools yet.</p>");
    }
    for u in &s.tools {
        let _ = write!(
            body,
            "<section class=\"use\" data-tool=\"{name}\"><h3>{name} <span class=\"version\">\
             {version}</span></h3><p class=\"meta\">approved {approved} · <strong \
             class=\"runs\">{runs}</strong> runs since</p>",
            name = esc(&u.tool),
            version = esc(&u.version),
            approved = esc(&jiff::Timestamp::from_millisecond(u.approved_ms)
                .map(|t| t.strftime("%Y-%m-%d %H:%M UTC").to_string())
                .unwrap_or_default()),
            runs = u.runs,
        );
        if u.runs_by_agent.is_empty() {
            body.push_str("<p class=\"empty\">Not run since its approval.</p>");
        } else {
            body.push_str(&bars(
                "runs by agent",
                &by_agent(&u.runs_by_agent, "approved"),
            ));
        }
        if !u.missed_counted {
            let why = if u.habit.is_empty() {
                "no habit is known for it"
            } else {
                "a recovery: runs by hand are not looked for"
            };
            let _ = write!(body, "<p class=\"meta\">Missed uses: - ({why}).</p>");
        } else if u.missed == 0 {
            body.push_str(
                "<p class=\"meta\">Missed uses: <strong class=\"missed\">0</strong> — no agent \
                 typed the habit by hand since.</p>",
            );
        } else {
            let _ = write!(
                body,
                "<p class=\"meta\">Missed uses: <strong class=\"missed\">{}</strong> {} an \
                 agent typed the habit by hand instead — <span class=\"saved\">{} steps, {}</span> \
                 the tool would have saved.</p>",
                u.missed,
                if u.missed == 1 { "time" } else { "times" },
                u.missed_steps,
                duration(u.missed_ms / 1000)
            );
            body.push_str(&bars(
                "missed uses by agent",
                &by_agent(&u.missed_by_agent, "missed"),
            ));
        }
        body.push_str("</section>");
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_largest_and_escape_their_labels() {
        let svg = bars(
            "x",
            &[
                Bar::count("<b>", 2, "approved"),
                Bar::count("none", 0, "failed"),
                Bar::count("most", 4, "waiting"),
            ],
        );
        assert!(svg.contains("&lt;b&gt;"), "{svg}");
        assert!(!svg.contains("<b>"));
        assert!(
            svg.contains("class=\"approved\" x=\"210\" y=\"2\" width=\"180\""),
            "{svg}"
        );
        assert!(
            svg.contains("class=\"failed\" x=\"210\" y=\"24\" width=\"0\""),
            "{svg}"
        );
        assert!(
            svg.contains("class=\"waiting\" x=\"210\" y=\"46\" width=\"360\""),
            "{svg}"
        );
    }
}
