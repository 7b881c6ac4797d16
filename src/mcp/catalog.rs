//! Which tools an agent is offered, in which order, within its context budget.
//!
//! Agents drop tools past their context budget, so the server lists the tools most likely to be
//! wanted first and stops when their descriptions fill `mcp.description_budget`. Likelihood is
//! *frecency*: every recorded run counts 1, halved every [`HALF_LIFE_DAYS`] days since it
//! happened, and the approval of a tool's current version counts [`APPROVAL_WEIGHT`] runs at the
//! time it was tagged — a tool approved today comes before one used twice last month, and one
//! used every day stays ahead of both. The rest are found through `toolsmith_search`.

use std::collections::{BTreeMap, HashMap};

use rusqlite::Connection;

use crate::health::executions;
use crate::registry::repo::ToolEntry;
use crate::store::StoreError;

/// Days after which a run counts half as much.
pub const HALF_LIFE_DAYS: f64 = 14.0;

/// Runs an approval counts as, at the time of the approval.
pub const APPROVAL_WEIGHT: f64 = 3.0;

/// Runs older than this many days are not read (they count less than 1/80 of a run today).
const HORIZON_DAYS: i64 = 90;

const DAY_MS: i64 = 86_400_000;

/// How much each tool was used lately, read from the recorded executions.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    by_tool: HashMap<String, ToolUsage>,
}

/// One tool's recent use.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct ToolUsage {
    /// Runs weighted by age.
    frecency: f64,
    /// Its last run (Unix ms).
    last_ms: i64,
}

impl Usage {
    /// Reads the runs of the last [`HORIZON_DAYS`] days, grouped by hour (a handful of rows per
    /// tool, however many runs).
    pub fn load(conn: &Connection, now_ms: i64) -> Result<Usage, StoreError> {
        let mut usage = Usage::default();
        for hour in executions::runs_by_hour(conn, now_ms - HORIZON_DAYS * DAY_MS)? {
            usage.add(
                &hour.tool,
                hour.hour_ms,
                hour.runs as f64,
                hour.last_ms,
                now_ms,
            );
        }
        Ok(usage)
    }

    /// Counts `runs` runs of `tool` made at `at_ms`.
    fn add(&mut self, tool: &str, at_ms: i64, runs: f64, last_ms: i64, now_ms: i64) {
        let entry = self.by_tool.entry(tool.to_owned()).or_default();
        entry.frecency += runs * decay(now_ms - at_ms);
        entry.last_ms = entry.last_ms.max(last_ms);
    }
}

/// The weight of something `age_ms` old.
fn decay(age_ms: i64) -> f64 {
    let days = age_ms.max(0) as f64 / DAY_MS as f64;
    0.5f64.powf(days / HALF_LIFE_DAYS)
}

/// Whether an entry is offered to agents: its manifest reads, it is not deprecated.
pub fn is_active(entry: &ToolEntry) -> bool {
    entry.problem.is_none() && !entry.deprecated && entry.version.is_some()
}

/// The active tools, most likely to be wanted first (ties: most recently active, then name).
pub fn rank<'a>(
    tools: &'a [ToolEntry],
    usage: &Usage,
    approved: &BTreeMap<(String, String), i64>,
    now_ms: i64,
) -> Vec<&'a ToolEntry> {
    let mut scored: Vec<(f64, i64, &ToolEntry)> = tools
        .iter()
        .filter(|t| is_active(t))
        .map(|t| {
            let used = usage.by_tool.get(&t.name).copied().unwrap_or_default();
            let approved_ms = t
                .version
                .as_ref()
                .and_then(|v| approved.get(&(t.name.clone(), v.clone())))
                .copied();
            let approval = approved_ms.map_or(0.0, |at| APPROVAL_WEIGHT * decay(now_ms - at));
            let last = used.last_ms.max(approved_ms.unwrap_or(0));
            (used.frecency + approval, last, t)
        })
        .collect();
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(b.1.cmp(&a.1))
            .then_with(|| a.2.name.cmp(&b.2.name))
    });
    scored.into_iter().map(|(_, _, t)| t).collect()
}

/// The ranked tools split by the description budget.
#[derive(Debug)]
pub struct Listing<'a> {
    /// The tools listed, in rank order.
    pub listed: Vec<&'a ToolEntry>,
    /// How many active tools did not fit.
    pub hidden: usize,
}

/// Takes tools in rank order while their descriptions (counted in characters) fit in
/// `budget`; a description too long for what is left is skipped, and shorter ones after it
/// may still fit.
pub fn fit<'a>(ranked: &[&'a ToolEntry], budget: usize) -> Listing<'a> {
    let mut left = budget;
    let mut listed = Vec::new();
    for t in ranked {
        let size = t.description.chars().count();
        if size <= left {
            left -= size;
            listed.push(*t);
        }
    }
    let hidden = ranked.len() - listed.len();
    Listing { listed, hidden }
}

/// The words of a text, lower-cased: runs of letters and digits.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether a query word matches a tool's word: the same, or one a prefix of the other when the
/// shorter has at least 3 characters (`test` finds `tests` and `testing`, `tests` finds `test`).
fn matches(wanted: &str, word: &str) -> bool {
    let (short, long) = if wanted.len() <= word.len() {
        (wanted, word)
    } else {
        (word, wanted)
    };
    short == long || (short.chars().count() >= 3 && long.starts_with(short))
}

/// The ranked tools that match `query`, best match first: each query word counts 3 when it is
/// a word of the tool's name, 2 when it matches one as a prefix (see [`matches`]), and 1 more
/// when it matches a word of the description; tools matching no word are left out; equal
/// matches keep the rank order. An empty query gives the ranked tools. At most
/// `limit`.
pub fn search<'a>(ranked: &[&'a ToolEntry], query: &str, limit: usize) -> Vec<&'a ToolEntry> {
    let wanted = words(query);
    if wanted.is_empty() {
        return ranked.iter().take(limit).copied().collect();
    }
    let mut scored: Vec<(usize, usize, &ToolEntry)> = ranked
        .iter()
        .enumerate()
        .filter_map(|(position, t)| {
            let name = words(&t.name);
            let description = words(&t.description);
            let score: usize = wanted
                .iter()
                .map(|w| {
                    let in_name = if name.contains(w) {
                        3
                    } else if name.iter().any(|n| matches(w, n)) {
                        2
                    } else {
                        0
                    };
                    let in_description = description.iter().any(|d| matches(w, d));
                    in_name + usize::from(in_description)
                })
                .sum();
            (score > 0).then_some((score, position, *t))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(limit).map(|(_, _, t)| t).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, description: &str) -> ToolEntry {
        ToolEntry {
            name: name.into(),
            version: Some("1.0.0".into()),
            description: description.into(),
            deprecated: false,
            problem: None,
            tree: String::new(),
            params: None,
            output: None,
            manifest: None,
        }
    }

    const NOW: i64 = 1_800_000_000_000;

    fn names(tools: &[&ToolEntry]) -> Vec<String> {
        tools.iter().map(|t| t.name.clone()).collect()
    }

    #[test]
    fn used_often_and_lately_comes_first_and_a_new_approval_beats_old_use() {
        let tools = vec![
            entry("old-favourite", "a"),
            entry("daily", "b"),
            entry("just-approved", "c"),
            entry("never-used", "d"),
        ];
        let mut usage = Usage::default();
        // Eight runs 60 days ago count about 0.4 today.
        usage.add(
            "old-favourite",
            NOW - 60 * DAY_MS,
            8.0,
            NOW - 60 * DAY_MS,
            NOW,
        );
        // One run a day for the last five days.
        for day in 0..5 {
            usage.add("daily", NOW - day * DAY_MS, 1.0, NOW - day * DAY_MS, NOW);
        }
        let mut approved = BTreeMap::new();
        approved.insert(("just-approved".into(), "1.0.0".into()), NOW - 3_600_000);
        approved.insert(("never-used".into(), "1.0.0".into()), NOW - 400 * DAY_MS);
        approved.insert(("old-favourite".into(), "1.0.0".into()), NOW - 400 * DAY_MS);
        let ranked = rank(&tools, &usage, &approved, NOW);
        assert_eq!(
            names(&ranked),
            ["daily", "just-approved", "old-favourite", "never-used"]
        );
    }

    #[test]
    fn deprecated_and_invalid_tools_are_not_offered() {
        let mut deprecated = entry("gone", "x");
        deprecated.deprecated = true;
        let mut broken = entry("broken", "x");
        broken.problem = Some("manifest.yaml: bad".into());
        let tools = vec![deprecated, broken, entry("fine", "x")];
        let ranked = rank(&tools, &Usage::default(), &BTreeMap::new(), NOW);
        assert_eq!(names(&ranked), ["fine"]);
    }

    #[test]
    fn the_budget_keeps_whole_descriptions_in_rank_order() {
        let tools = [
            entry("a", &"x".repeat(40)),
            entry("b", &"y".repeat(70)),
            entry("c", &"z".repeat(50)),
            entry("d", "ü".repeat(10).as_str()),
        ];
        let ranked: Vec<&ToolEntry> = tools.iter().collect();
        let listing = fit(&ranked, 100);
        // b does not fit after a; c and d (10 characters, 20 bytes) do.
        assert_eq!(names(&listing.listed), ["a", "c", "d"]);
        assert_eq!(listing.hidden, 1);
        let all = fit(&ranked, 170);
        assert_eq!(all.listed.len(), 4);
        assert_eq!(fit(&ranked, 0).hidden, 4);
    }

    #[test]
    fn search_weighs_names_over_descriptions_and_keeps_rank_among_equals() {
        let tools = [
            entry("lint-fix", "Runs the linter and applies its fixes."),
            entry("test-core", "Runs the core package's tests."),
            entry("run-tests", "Runs every test suite."),
            entry("fmt", "Formats the code."),
        ];
        let ranked: Vec<&ToolEntry> = tools.iter().collect();
        // "tests" is a word of run-tests' name, a longer form of test-core's.
        assert_eq!(
            names(&search(&ranked, "tests", 10)),
            ["run-tests", "test-core"]
        );
        assert_eq!(
            names(&search(&ranked, "Test core", 10)),
            ["test-core", "run-tests"]
        );
        assert_eq!(names(&search(&ranked, "linter", 10)), ["lint-fix"]);
        assert_eq!(names(&search(&ranked, "lint", 10)), ["lint-fix"]);
        // Two letters are no prefix: "ru" does not find "runs".
        assert!(search(&ranked, "ru", 10).is_empty());
        assert!(search(&ranked, "deploy", 10).is_empty());
        assert_eq!(search(&ranked, "", 2).len(), 2);
        assert_eq!(search(&ranked, "runs", 1).len(), 1);
        // A whole word beats a prefix: "00150" is tool-00150, not tool-001.
        let numbered = [entry("tool-001", "x"), entry("tool-00150", "x")];
        let ranked: Vec<&ToolEntry> = numbered.iter().collect();
        assert_eq!(names(&search(&ranked, "tool 00150", 10))[0], "tool-00150");
    }

    #[test]
    fn usage_is_read_from_the_executions_table() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = crate::store::Store::open(&dir.path().join("s.db")).expect("store");
        let conn = crate::store::open_for_update(store.path()).expect("a connection");
        for (tool, at) in [
            ("a", NOW - 1000),
            ("a", NOW - 2000),
            ("b", NOW - 10 * DAY_MS),
            ("c", NOW - 200 * DAY_MS),
        ] {
            executions::record(
                &conn,
                &executions::Execution {
                    tool: tool.into(),
                    version: "1.0.0".into(),
                    caller: executions::Caller::Mcp,
                    started_ms: at,
                    duration_ms: 10,
                    ok: true,
                    exit_code: Some(0),
                    signal: None,
                    limit_hit: None,
                    error_class: None,
                    error_excerpt: None,
                    peak_memory_kb: None,
                    params: None,
                    agent: None,
                },
            )
            .expect("the run is recorded");
        }
        let usage = Usage::load(&conn, NOW).unwrap();
        let a = usage.by_tool["a"];
        assert!(a.frecency > 1.99 && a.frecency <= 2.0, "{a:?}");
        assert_eq!(a.last_ms, NOW - 1000);
        assert!(usage.by_tool["b"].frecency < 1.0);
        // Past the horizon: not read.
        assert!(!usage.by_tool.contains_key("c"));
    }
}
