//! The grammar's habits through the daemon end to end: sessions written into Claude Code,
//! Codex and bash-history sources of a running `toolsmithd`, mined and generated through it;
//! then, for each habit, the candidates whose evidence holds its occurrences and, for each
//! occurrence, the candidate's dry run in the sandbox with that occurrence's parameters (the
//! spec's `occurrences[].params`, from `toolsmith show ID --json`) compared with the raw lines
//! planted, as text (trailing whitespace of each line aside).
//!
//! The figures (issue 29): habits reproduced word for word, candidates per habit, habits whose
//! parameters are as many as the values that varied (a value in several holes counting once),
//! and false proposals (candidates awaiting review that hold no planted occurrence).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use super::corpus::{Corpus, Fmt};
use crate::common::{self, Daemon, TestEnv, json_of};

/// What one or more runs measured.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    /// Habits planted.
    pub habits: usize,
    /// Habits one of whose candidates awaiting review prints every occurrence's raw lines.
    pub word_for_word: usize,
    /// Candidates awaiting review holding a habit's occurrences, summed over habits.
    pub candidates: usize,
    /// Habits with exactly one candidate awaiting review.
    pub one_candidate: usize,
    /// Habits whose candidate has as many parameters as values varied.
    pub params_equal: usize,
    /// Candidates awaiting review holding no planted occurrence.
    pub false_proposals: usize,
    /// Candidates, in any state (chosen for a tool), one of whose steps is an everyday command
    /// of the background (issue 30): a frequent neighbour, never a habit.
    pub neighbours: usize,
    /// Of those, the ones made of background commands alone (the rest span a planted step:
    /// a background command before or after it, or around it within the miner's gap).
    pub neighbours_alone: usize,
    /// Each of them, named: `tool` (state): its steps' keys.
    pub neighbour_names: Vec<String>,
    /// Habits whose candidate has more parameters than values varied, and fewer.
    pub params_more: usize,
    pub params_fewer: usize,
    /// Every candidate by state.
    pub states: BTreeMap<String, usize>,
    /// Habits drawn with each shape, and of those how many were reproduced word for word.
    pub shapes: BTreeMap<&'static str, (usize, usize)>,
}

impl Figures {
    /// Adds another run's figures (the benchmark's batches).
    #[allow(dead_code)]
    pub fn add(&mut self, other: &Figures) {
        self.habits += other.habits;
        self.word_for_word += other.word_for_word;
        self.candidates += other.candidates;
        self.one_candidate += other.one_candidate;
        self.params_equal += other.params_equal;
        self.false_proposals += other.false_proposals;
        self.neighbours += other.neighbours;
        self.neighbours_alone += other.neighbours_alone;
        self.neighbour_names
            .extend(other.neighbour_names.iter().cloned());
        self.params_more += other.params_more;
        self.params_fewer += other.params_fewer;
        for (k, v) in &other.states {
            *self.states.entry(k.clone()).or_default() += v;
        }
        for (k, (a, b)) in &other.shapes {
            let e = self.shapes.entry(k).or_default();
            e.0 += a;
            e.1 += b;
        }
    }

    fn ratio(a: usize, b: usize) -> f64 {
        if b == 0 { 0.0 } else { a as f64 / b as f64 }
    }

    /// Share of habits reproduced word for word.
    pub fn word_for_word_ratio(&self) -> f64 {
        Self::ratio(self.word_for_word, self.habits)
    }

    /// Candidates per habit.
    pub fn candidates_per_habit(&self) -> f64 {
        Self::ratio(self.candidates, self.habits)
    }

    /// Share of habits with parameters = values varied.
    pub fn params_ratio(&self) -> f64 {
        Self::ratio(self.params_equal, self.habits)
    }

    /// The four figures and the rest, as lines.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "habits reproduced word for word: {}/{} = {:.1}% (goal ≥ 95%)",
            self.word_for_word,
            self.habits,
            100.0 * self.word_for_word_ratio()
        );
        let _ = writeln!(
            s,
            "candidates per habit: {:.2} ({} of {} habits have exactly one; goal 1.00)",
            self.candidates_per_habit(),
            self.one_candidate,
            self.habits
        );
        let _ = writeln!(
            s,
            "parameters = values varied: {}/{} = {:.1}% (goal ≥ 95%); more parameters in {}, \
             fewer in {}, no candidate in {}",
            self.params_equal,
            self.habits,
            100.0 * self.params_ratio(),
            self.params_more,
            self.params_fewer,
            self.habits - self.params_equal - self.params_more - self.params_fewer
        );
        let _ = writeln!(s, "false proposals: {} (goal 0)", self.false_proposals);
        let _ = writeln!(
            s,
            "frequent-neighbour proposals: {} (goal 0): {} of background commands alone, {} \
             around a planted habit's step",
            self.neighbours,
            self.neighbours_alone,
            self.neighbours - self.neighbours_alone
        );
        for name in &self.neighbour_names {
            let _ = writeln!(s, "    neighbour {name}");
        }
        let _ = writeln!(s, "candidates by state: {:?}", self.states);
        let shapes: Vec<String> = self
            .shapes
            .iter()
            .map(|(k, (n, ok))| format!("{k} {ok}/{n}"))
            .collect();
        let _ = writeln!(s, "word for word by shape: {}", shapes.join(", "));
        s
    }
}

/// A candidate as the harness reads it back.
struct Cand {
    id: String,
    /// The pattern it was made from.
    pattern: String,
    state: String,
    tool: String,
    reason: Option<String>,
    spec: Value,
    /// Each spec occurrence's (session, first place, last place) and params.
    evidence: Vec<((String, u64, u64), Value)>,
}

/// Text as compared: each line without trailing whitespace, no trailing empty lines.
fn normal(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let mut n = lines.len();
    while n > 0 && lines[n - 1].is_empty() {
        n -= 1;
    }
    lines[..n].join("\n")
}

/// Parameters as the validation passes them: `--name-with-dashes VALUE`, an array's option
/// once per item (a variadic parameter's text split at whitespace, as `ParamSpec::value_of`
/// reads it), a true boolean bare.
fn args_of(params: &Value, spec: &Value) -> Vec<String> {
    let variadic = |name: &str| {
        spec["params"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| p["name"] == name && p["variadic"] == true)
    };
    let mut args = Vec::new();
    for (name, value) in params.as_object().into_iter().flatten() {
        let option = format!("--{}", name.replace('_', "-"));
        let items = match value {
            Value::Array(items) => items.clone(),
            Value::String(text) if variadic(name) => text
                .split_whitespace()
                .map(|item| Value::String(item.to_owned()))
                .collect(),
            other => vec![other.clone()],
        };
        for item in items {
            match item {
                Value::Bool(true) => args.push(option.clone()),
                Value::Bool(false) | Value::Null => {}
                Value::String(s) => args.extend([option.clone(), s]),
                other => args.extend([option.clone(), other.to_string()]),
            }
        }
    }
    args
}

/// The latest attempt's tool directory of a staged candidate.
fn tool_dir(state: &Path, id: &str) -> Option<PathBuf> {
    let stage = state.join("staging").join(id);
    let latest = std::fs::read_dir(&stage)
        .ok()?
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_prefix("attempt-")?.parse::<u32>().ok()
        })
        .max()?;
    Some(stage.join(format!("attempt-{latest}")).join("tool"))
}

/// What the candidate's dry run prints for `params`, run in the sandbox as
/// `tests/it/planted.rs` runs it, with the interpreter and entry point of the tool's manifest;
/// `Err` with what went wrong when it fails.
fn dry_run(env: &TestEnv, tool_dir: &Path, params: &Value, spec: &Value) -> Result<String, String> {
    let workspace = tempfile::tempdir_in(env.path()).expect("workspace");
    let manifest = toolsmith::package::manifest::Manifest::load(tool_dir)
        .map_err(|e| format!("the tool's manifest: {e}"))?;
    let interpreter = manifest.runtime.language.interpreter();
    let entry = format!("/tool/{}", manifest.runtime.entrypoint);
    let out = env
        .cli()
        .args(["sandbox", "--env", "TOOLSMITH_DRY_RUN=1", "--tool-dir"])
        .arg(tool_dir)
        .args(["--workspace", "write"])
        .arg(workspace.path())
        .args(["--timeout", "30", "--", "/bin/sh", "-c"])
        .arg(format!("{interpreter} {entry} \"$@\""))
        .arg("sh")
        .args(args_of(params, spec))
        .timeout(Duration::from_secs(90))
        .output()
        .expect("toolsmith sandbox runs");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "exit {:?}: {}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Indents every line of `text` by `by`.
fn indent(text: &str, by: &str) -> String {
    text.lines()
        .map(|l| format!("{by}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `n` habits drawn with `seed` through a daemon; the figures and a per-habit report.
pub fn run(seed: u64, n: usize) -> (Figures, String) {
    let env = TestEnv::new();
    let mut corpus = Corpus::new(seed, n);
    // The invented programs, as stubs on the user's PATH, in a virtual environment of the
    // user's own commands (a toolchain the sandbox binds; `~/.local/bin` would do for a user,
    // but a test's home is not root's): what a tool requires must be there for validation.
    let venv = env.path().join("venv");
    let bin = venv.join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir bin");
    std::fs::write(
        venv.join("pyvenv.cfg"),
        "home = /usr/bin\ninclude-system-site-packages = false\n",
    )
    .expect("write pyvenv.cfg");
    for program in corpus.habits.iter().flat_map(|h| &h.programs) {
        let path = bin.join(program);
        std::fs::write(&path, "#!/bin/sh\necho \"$0 $*\"\n").expect("write stub");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let user_path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let root = env.path().join("logs");
    let config = env.write_config(&format!(
        "[ingest]\ndebounce_ms = 10\n\n[mine]\nafter_new_actions = 1000000\n\n\
         [generate]\nmax_per_run = 1000\n\n[sandbox]\npath = {}\n\n\
         [[source]]\nname = \"claude\"\nformat = \"claude-code\"\npath = \"{}\"\n\n\
         [[source]]\nname = \"codex\"\nformat = \"codex\"\npath = \"{}\"\n\n\
         [[source]]\nname = \"bash\"\nformat = \"bash\"\npath = \"{}\"\n",
        Value::String(user_path),
        root.join("claude/projects").display(),
        root.join("codex/sessions").display(),
        root.join("bash/.bash_history").display(),
    ));
    for dir in ["claude/projects", "codex/sessions", "bash"] {
        std::fs::create_dir_all(root.join(dir)).expect("mkdir");
    }
    std::fs::write(root.join("bash/.bash_history"), "").expect("write history");
    let mut cmd = env.daemon_command();
    cmd.arg("--config").arg(&config);
    let daemon = Daemon::start(&env, cmd);
    let mut events = daemon.connect();
    let subscribed = events.call(1, "events.subscribe", json!({"kinds": ["ingest."]}));
    assert!(subscribed.get("error").is_none(), "{subscribed}");
    let actions = corpus.write(&root);
    let mut stored = 0u64;
    while stored < actions as u64 {
        let message = events.read_or(|| daemon.log());
        if message["params"]["kind"] == "ingest.actions" {
            stored += message["params"]["data"]["new"].as_u64().unwrap_or(0);
        }
    }
    let cli = || {
        let mut c = env.cli();
        c.arg("--config")
            .arg(&config)
            .timeout(Duration::from_secs(600));
        c
    };
    cli().args(["--json", "mine"]).assert().success();
    cli().args(["--json", "generate"]).assert().success();
    let out = cli().args(["--json", "candidates"]).assert().success();
    let listed = json_of(out.get_output());
    let out = cli()
        .args(["--json", "patterns", "--limit", "1000000"])
        .assert()
        .success();
    let patterns = json_of(out.get_output());

    // Each occurrence's session as stored: a history's sessions are the adapter's.
    let bash_sessions: BTreeMap<u64, String> = common::stored(&env, &env.state())
        .iter()
        .filter_map(|a| {
            let session = a["session"].as_str()?;
            session
                .starts_with("bash:")
                .then(|| (a["seq"].as_u64().unwrap_or(0), session.to_owned()))
        })
        .collect();
    let session_of = |session: usize, place: u64| -> String {
        let s = &corpus.sessions[session];
        match (&s.id, s.fmt) {
            (Some(id), _) => id.clone(),
            (None, _) => bash_sessions.get(&place).cloned().unwrap_or_default(),
        }
    };
    let occ_session = |o: &super::corpus::Occ| session_of(o.session, o.places[0]);
    // Where each background command was stored: a step of a candidate there is a neighbour.
    let background: BTreeSet<(String, u64)> = corpus
        .background
        .iter()
        .map(|&(s, place)| (session_of(s, place), place))
        .collect();
    // Each occurrence's session and the places of its own lines (a look-around between two of
    // them is not the habit's).
    let located: Vec<(String, Vec<u64>)> = corpus
        .occs
        .iter()
        .map(|o| (occ_session(o), o.places.clone()))
        .collect();

    let place = |key: &Value| toolsmith::action::stored::place_of(key.as_u64().unwrap_or(0));
    let cands: Vec<Cand> = listed
        .as_array()
        .expect("candidates")
        .iter()
        .map(|c| {
            let id = c["id"].as_str().expect("id").to_owned();
            let out = cli().args(["--json", "show", &id]).assert().success();
            let shown = json_of(out.get_output());
            let spec = shown["spec"].clone();
            let evidence = spec["occurrences"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|o| {
                    let e = &o["evidence"];
                    (
                        (
                            e["session"].as_str().unwrap_or_default().to_owned(),
                            place(&e["first_seq"]),
                            place(&e["last_seq"]),
                        ),
                        o["params"].clone(),
                    )
                })
                .collect();
            Cand {
                id,
                pattern: c["pattern"].as_str().unwrap_or_default().to_owned(),
                state: c["state"].as_str().unwrap_or_default().to_owned(),
                tool: c["tool"].as_str().unwrap_or_default().to_owned(),
                reason: c["reason"].as_str().map(str::to_owned),
                spec,
                evidence,
            }
        })
        .collect();
    // Evidence holds an occurrence when it spans one of the occurrence's lines.
    let overlaps = |(s, first, last): &(String, u64, u64), (ps, places): &(String, Vec<u64>)| {
        s == ps && places.iter().any(|p| first <= p && p <= last)
    };

    let mut figures = Figures {
        habits: n,
        ..Figures::default()
    };
    for c in &cands {
        *figures.states.entry(c.state.clone()).or_default() += 1;
    }
    let awaiting = |c: &&Cand| c.state == "awaiting-review";
    let mut report = String::new();
    let _ = writeln!(
        report,
        "seed {seed}: {n} habits, {} occurrences, {} sessions ({} Claude Code, {} Codex, {} bash \
         history), {} actions",
        corpus.occs.len(),
        corpus.sessions.len(),
        corpus
            .sessions
            .iter()
            .filter(|s| s.fmt == Fmt::Claude)
            .count(),
        corpus
            .sessions
            .iter()
            .filter(|s| s.fmt == Fmt::Codex)
            .count(),
        corpus
            .sessions
            .iter()
            .filter(|s| s.fmt == Fmt::Bash)
            .count(),
        actions
    );
    for d in &corpus.decoys {
        let _ = writeln!(report, "decoy: {d}");
    }
    // A candidate whose first or last step, in some occurrence, is a background command: the
    // pattern's ends are its first and last steps, so such a step is one of the tool's.
    for c in &cands {
        let ends_in_background = c.evidence.iter().any(|((s, first, last), _)| {
            background.contains(&(s.clone(), *first)) || background.contains(&(s.clone(), *last))
        });
        if !ends_in_background {
            continue;
        }
        figures.neighbours += 1;
        let planted = c
            .evidence
            .iter()
            .any(|(e, _)| located.iter().any(|p| overlaps(e, p)));
        if !planted {
            figures.neighbours_alone += 1;
        }
        let keys: Vec<&str> = c.spec["keys"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        // Why it was proposed: its test against chance.
        let terms = patterns
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["id"].as_str() == Some(c.pattern.as_str()))
            .map(|p| {
                let a = &p["score_parts"]["association"];
                format!(
                    "score {}, lift {}, G² {}, {} of {} after",
                    p["score"], a["lift"], a["llr"], a["observed"], a["trials"]
                )
            })
            .unwrap_or_default();
        let name = format!(
            "`{}` ({}{}; {terms}): {}",
            c.tool,
            c.state,
            if planted {
                ", around a planted step"
            } else {
                ""
            },
            keys.join(" → ")
        );
        let _ = writeln!(report, "NEIGHBOUR {} {name}", c.id);
        figures.neighbour_names.push(name);
    }
    for c in cands.iter().filter(awaiting) {
        let planted = c
            .evidence
            .iter()
            .any(|(e, _)| located.iter().any(|p| overlaps(e, p)));
        if !planted {
            figures.false_proposals += 1;
            let _ = writeln!(
                report,
                "FALSE PROPOSAL {} `{}`: steps {}",
                c.id, c.tool, c.spec["steps"]
            );
        }
    }
    for h in &corpus.habits {
        let occs: Vec<usize> = (0..corpus.occs.len())
            .filter(|&o| corpus.occs[o].habit == h.id)
            .collect();
        let mine: Vec<&Cand> = cands
            .iter()
            .filter(|c| {
                c.evidence
                    .iter()
                    .any(|(e, _)| occs.iter().any(|&o| overlaps(e, &located[o])))
            })
            .collect();
        let proposed: Vec<&Cand> = mine.iter().copied().filter(awaiting).collect();
        figures.candidates += proposed.len();
        if proposed.len() == 1 {
            figures.one_candidate += 1;
        }
        let formats: BTreeSet<String> = occs
            .iter()
            .map(|&o| format!("{:?}", corpus.sessions[corpus.occs[o].session].fmt))
            .collect();
        let mut lines = String::new();
        let mut reproduced_by: Option<&Cand> = None;
        for c in &proposed {
            let Some(dir) = tool_dir(&env.state(), &c.id) else {
                let _ = writeln!(lines, "    {}: no staged tool", c.id);
                continue;
            };
            let mut all = true;
            for &o in &occs {
                let occ = &corpus.occs[o];
                let want = normal(&occ.lines.join("\n"));
                let Some((_, params)) = c.evidence.iter().find(|(e, _)| overlaps(e, &located[o]))
                else {
                    all = false;
                    let _ = writeln!(
                        lines,
                        "    {} holds no occurrence in {}:\n{}",
                        c.id,
                        located[o].0,
                        indent(&want, "      planted  | ")
                    );
                    break;
                };
                match dry_run(&env, &dir, params, &c.spec) {
                    Ok(got) if normal(&got) == want => {}
                    Ok(got) => {
                        all = false;
                        let _ = writeln!(
                            lines,
                            "    {} with {params} (planted values {:?}):\n{}\n{}",
                            c.id,
                            occ.values,
                            indent(&want, "      planted  | "),
                            indent(&normal(&got), "      dry run  | ")
                        );
                        break;
                    }
                    Err(why) => {
                        all = false;
                        let _ = writeln!(
                            lines,
                            "    {} with {params}: the dry run failed: {}",
                            c.id,
                            why.trim()
                        );
                        break;
                    }
                }
            }
            if all && reproduced_by.is_none() {
                reproduced_by = Some(c);
            }
        }
        let word_for_word = reproduced_by.is_some();
        if word_for_word {
            figures.word_for_word += 1;
        }
        let judged = reproduced_by.or(proposed.first().copied());
        let params = judged.map(|c| c.spec["params"].as_array().map_or(0, Vec::len));
        match params.map(|p| p.cmp(&h.values_varied())) {
            Some(std::cmp::Ordering::Equal) => figures.params_equal += 1,
            Some(std::cmp::Ordering::Greater) => figures.params_more += 1,
            Some(std::cmp::Ordering::Less) => figures.params_fewer += 1,
            None => {}
        }
        for shape in &h.shapes {
            let e = figures.shapes.entry(shape).or_default();
            e.0 += 1;
            e.1 += usize::from(word_for_word);
        }
        let verdict = if word_for_word && proposed.len() == 1 && params == Some(h.values_varied()) {
            "ok  "
        } else {
            "FAIL"
        };
        let _ = writeln!(
            report,
            "{verdict} habit {} [{}] {} occurrences in {:?}; candidates {}; parameters {} of \
             {} varied; word for word: {}",
            h.id,
            h.shapes.iter().copied().collect::<Vec<_>>().join(", "),
            occs.len(),
            formats,
            proposed.len(),
            params.map_or("-".to_owned(), |p| p.to_string()),
            h.values_varied(),
            if word_for_word { "yes" } else { "no" },
        );
        let _ = writeln!(
            report,
            "{}",
            indent(&h.template().join("\n"), "    habit    | ")
        );
        if verdict == "FAIL" {
            for c in &mine {
                let names: Vec<&str> = c.spec["params"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p["name"].as_str())
                    .collect();
                let _ = writeln!(
                    report,
                    "    candidate {} `{}` {}{} params {:?}",
                    c.id,
                    c.tool,
                    c.state,
                    c.reason
                        .as_deref()
                        .map(|r| format!(" ({})", r.chars().take(300).collect::<String>()))
                        .unwrap_or_default(),
                    names
                );
            }
            report.push_str(&lines);
            // What the miner made of it: the patterns holding its occurrences.
            for p in patterns.as_array().into_iter().flatten().filter(|p| {
                p["evidence"].as_array().into_iter().flatten().any(|e| {
                    let e = (
                        e["session"].as_str().unwrap_or_default().to_owned(),
                        place(&e["first_seq"]),
                        place(&e["last_seq"]),
                    );
                    occs.iter().any(|&o| overlaps(&e, &located[o]))
                })
            }) {
                let steps: Vec<&str> = p["steps"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let _ = writeln!(
                    report,
                    "    pattern {} {} (support {}, score {:.0}, habit {} lift {} G² {} at link {}{}): {}",
                    p["id"].as_str().unwrap_or_default(),
                    p["status"].as_str().unwrap_or_default(),
                    p["support"],
                    p["score"].as_f64().unwrap_or_default(),
                    p["score_parts"]["habit"],
                    p["score_parts"]["association"]["lift"],
                    p["score_parts"]["association"]["llr"],
                    p["score_parts"]["association"]["link"],
                    p["reason"]
                        .as_str()
                        .map(|r| format!(", {}", r.chars().take(200).collect::<String>()))
                        .unwrap_or_default(),
                    steps.join(" → ")
                );
            }
        }
    }
    drop(daemon);
    (figures, report)
}
