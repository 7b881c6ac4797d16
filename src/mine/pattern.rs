//! A mined pattern: what the agent keeps doing by hand, with its parameters, its evidence and its
//! score, as stored in the `patterns` table and printed by `toolsmith patterns --json`.
//!
//! A pattern's id is a hash of its kind and its steps' canonical keys, so the same habit keeps
//! its id from one mining run to the next: that is how a pattern rejected at review, or already
//! turned into a candidate, is not proposed again.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::score::Score;
use super::token::{Globbing, looks_around, shuffles_files};
use crate::store::StoreError;

/// What kind of habit a pattern is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PatternKind {
    /// A sequence of actions repeated across sessions (or one complex command repeated with
    /// varying arguments).
    Sequence,
    /// An error followed by the same recovery steps.
    Recovery,
    /// An action that recurs and takes long each time.
    Slow,
}

impl PatternKind {
    /// The name used in the store, the CLI and the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            PatternKind::Sequence => "sequence",
            PatternKind::Recovery => "recovery",
            PatternKind::Slow => "slow",
        }
    }

    /// Parses [`PatternKind::as_str`].
    pub fn from_name(name: &str) -> Option<PatternKind> {
        match name {
            "sequence" => Some(PatternKind::Sequence),
            "recovery" => Some(PatternKind::Recovery),
            "slow" => Some(PatternKind::Slow),
            _ => None,
        }
    }
}

/// One piece of a step's word: written as is, a parameter, or a value an earlier step printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Piece {
    /// Text written as is.
    Literal(String),
    /// A parameter's value (by name).
    Param(String),
    /// A value printed by an earlier step (by variable name).
    Internal(String),
}

/// One step of a pattern: a command whose words are made of pieces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// Readable template, e.g. `cargo test -p <package>`.
    pub template: String,
    /// The words, each made of pieces.
    pub words: Vec<Vec<Piece>>,
    /// Per word (empty when none is), how the shell the habit ran in expanded it as a
    /// pathname pattern (`grep foo **/*.h` typed unquoted): a tool must expand that word the
    /// same way rather than pass it as written. Every occurrence must have expanded it (see
    /// `params::word_glob`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub globs: Vec<Option<Globbing>>,
    /// The canonical key the step was mined by (values abstracted).
    pub key: String,
    /// When a later step uses a value this step printed: the variable it is kept in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub captures: Option<String>,
    /// Whether it reads the previous step's output through a pipe (`jq .x | sort`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub piped: bool,
    /// Whether it is an agent's tool call (`Read`, `Edit`, …) rather than a command: a habit
    /// with one is worth knowing, but no script can do it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub agent_tool: bool,
}

/// A parameter a tool made from the pattern would take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    /// snake_case name, from its flag, its position or its values.
    pub name: String,
    /// The kind of its values: `path`, `number`, `sha`, `url`, `glob`, `string` or `text`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Where the name came from: `flag --package`, `position 1 of git checkout`, `values`.
    pub named_from: String,
    /// Distinct values seen, most frequent first (at most a few).
    pub examples: Vec<String>,
    /// Whether it stands for a run of arguments (`git add <path>...`): an array of values.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub variadic: bool,
    /// Whether its values were secrets, redacted at ingest (`[REDACTED:…]`): the examples are
    /// placeholders, and a tool must ask for the value.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret: bool,
}

/// A value one step printed and a later step used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Internal {
    /// Variable name.
    pub name: String,
    /// The step (0-based) whose output holds it.
    pub from_step: usize,
    /// The step (0-based) that uses it.
    pub to_step: usize,
}

/// Where a pattern was seen: one occurrence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The session.
    pub session: String,
    /// The first action's seq.
    pub first_seq: u64,
    /// The last action's seq.
    pub last_seq: u64,
    /// Each parameter's value in this occurrence.
    #[serde(default)]
    pub params: std::collections::BTreeMap<String, String>,
    /// The commands as they were run, one per step.
    #[serde(default)]
    pub commands: Vec<String>,
    /// When the occurrence was one pipeline of text filters fed data written out in the
    /// command line: that data and what the pipeline printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<Replay>,
    /// The agent (or shell history) whose session it is: `claude-code`, `codex`, `bash`, ….
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// A text transformation the log shows whole: its input, written out in the command line
/// (`printf 'b\na\n' | sort`), and the output recorded for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replay {
    /// What the first step read.
    pub stdin: String,
    /// What the last step printed, as the log recorded it.
    pub stdout: String,
}

/// For a recovery: the action that fails and the error it fails with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trigger {
    /// The failing action, as a step (it is also re-run after the recovery).
    pub step: Step,
    /// The error's template (variable parts as `<*>`).
    pub error_template: String,
}

/// One pattern folded into another: both are one habit, since the occurrences of one mostly
/// lie inside the other's (same session, overlapping actions). Only the one it is folded into
/// is proposed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Folded {
    /// The other pattern's id.
    pub id: String,
    /// The other pattern's steps, as readable templates.
    pub steps: Vec<String>,
    /// How many of the folded pattern's occurrences (of those looked at, `of`) overlap one of
    /// the pattern it is folded into.
    pub overlapping: u32,
    /// The folded pattern's occurrences looked at.
    pub of: u32,
}

/// A mined pattern.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pattern {
    /// `p-` and 8 hex digits, stable across runs.
    pub id: String,
    /// Its kind.
    pub kind: PatternKind,
    /// Sessions it was seen in.
    pub support: u32,
    /// Occurrences over all sessions.
    pub occurrences: u32,
    /// The rank, 0–100.
    pub score: f64,
    /// The score's parts.
    pub score_parts: Score,
    /// Each step as a readable template (`cargo test -p <package>`, `| sort -u` when it reads
    /// the previous step through a pipe); for a recovery the failing command first, with its
    /// error.
    #[serde(rename = "steps")]
    pub templates: Vec<String>,
    /// The steps in full (for a recovery: the recovery steps; the failing action is in
    /// `trigger`).
    #[serde(rename = "step_detail")]
    pub steps: Vec<Step>,
    /// Its parameters.
    pub params: Vec<Param>,
    /// Values passed from one step to a later one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub internals: Vec<Internal>,
    /// The habit as the command lines the agent ran, one per step, every byte as logged with
    /// holes (`Param` pieces, named in `params`) where the values varied (see
    /// [`crate::mine::line`]). Empty for what is not a run of command lines: a recovery, a
    /// habit with values passed between steps, one with an agent's tool call, a text
    /// transformation replayed whole, or lines that did not align.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<Vec<Piece>>,
    /// The shell the lines were run in.
    #[serde(default)]
    pub shell: crate::mine::line::Shell,
    /// Whether the working directory varied between occurrences (it becomes the workspace).
    pub workspace_varies: bool,
    /// For a recovery: what fails and how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<Trigger>,
    /// Median duration of one occurrence (all its steps), when the logs say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_ms: Option<u64>,
    /// Some occurrences, one per session first.
    pub evidence: Vec<Evidence>,
    /// When it is the same habit as a better pattern: that pattern (it is not proposed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folded_into: Option<Folded>,
    /// The patterns folded into this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folded: Vec<Folded>,
    /// The user's aliases and functions its commands were typed through, each once: its steps
    /// and lines hold what they expand to (`gia x` is `git add x`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expansions: Vec<crate::mine::defs::Expansion>,
    /// Short command words that are no program on the user's `PATH`, no builtin and none of
    /// their definitions (`gc` without the `.zshrc` defining it): what they ran is unknown, so
    /// no tool is made of it ([`Pattern::unknown_program`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_programs: Vec<String>,
}

impl Pattern {
    /// The first of its command words that names nothing known on the machine (see
    /// [`Pattern::unknown_programs`]), if any: no tool is made of the pattern.
    pub fn unknown_program(&self) -> Option<&str> {
        self.unknown_programs.first().map(String::as_str)
    }

    /// Its steps, the failing command first for a recovery.
    fn every_step(&self) -> impl Iterator<Item = &Step> {
        self.trigger.iter().map(|t| &t.step).chain(&self.steps)
    }

    /// Whether every step only looks around (`wc -l`, `du -sh`, `sed -n`, `grep`: see
    /// [`looks_around`]), each a command of its own rather than a pipeline: the agent reading,
    /// steps seen together because they are common, not a habit a tool takes over. Kept as a
    /// pattern; no tool is made of it.
    pub fn only_looks_around(&self) -> bool {
        let steps: Vec<&Step> = self.every_step().collect();
        !steps.is_empty()
            && steps
                .iter()
                .all(|s| !s.piped && !s.agent_tool && looks_around(&s.key))
    }

    /// Whether every step only creates, moves, copies or removes files (`mkdir`, `mv`, `rm`:
    /// [`shuffles_files`]) and no value passes from one step to another (no parameter in two
    /// steps, no value printed and used, no pipe): `rm -rf Template/ → mkdir Templates`, two
    /// of the commands typed all day, seen together because they are common. `mkdir <dir> →
    /// mv <file> <dir>` moves a file into the directory it made: a habit. Kept as a pattern;
    /// no tool is made of it.
    pub fn only_shuffles_files(&self) -> bool {
        let steps: Vec<&Step> = self.every_step().collect();
        if steps.len() < 2
            || !self.internals.is_empty()
            || steps
                .iter()
                .any(|s| s.piped || s.agent_tool || !shuffles_files(&s.key))
        {
            return false;
        }
        let mut first_step: HashMap<&str, usize> = HashMap::new();
        for (i, step) in steps.iter().enumerate() {
            for piece in step.words.iter().flatten() {
                if let Piece::Param(name) | Piece::Internal(name) = piece
                    && *first_step.entry(name).or_insert(i) != i
                {
                    return false;
                }
            }
        }
        true
    }

    /// The one command of a habit whose other steps are glances: fixed looks around
    /// ([`looks_around`], no parameter: `git status → git checkout <value>`, `git pull → git
    /// log`), or the same program asked for its state with values of their own (`brew update
    /// → brew info <value>`). A tool of it
    /// would be that command with a glance before or after. Kept as a pattern; no tool is
    /// made of it. A recovery (its tool runs the fix on the failure), a pipeline (`cat <path>
    /// | jq .`) and a search the habit feeds values (`mkdir -p out → grep -l <word> <glob>`)
    /// are not.
    pub fn one_command_looked_around(&self) -> Option<&Step> {
        if self.trigger.is_some() || self.steps.len() < 2 {
            return None;
        }
        fn values(s: &Step) -> Vec<&String> {
            s.words
                .iter()
                .flatten()
                .filter_map(|p| match p {
                    Piece::Param(name) | Piece::Internal(name) => Some(name),
                    _ => None,
                })
                .collect()
        }
        fn program(s: &Step) -> &str {
            s.key.split(' ').next().unwrap_or_default()
        }
        // A look is a glance when it is fixed, or when it asks the program another step
        // drives for its state and shares no value with the others (`brew update → brew info
        // <value>`, `docker build . → docker images`).
        let fixed_look =
            |s: &Step| {
                if !looks_around(&s.key) {
                    return false;
                }
                let own = values(s);
                own.is_empty()
                    || self.steps.iter().filter(|o| !std::ptr::eq(*o, s)).all(|o| {
                        program(o) == program(s) && values(o).iter().all(|v| !own.contains(v))
                    })
            };
        let mut doing = self
            .steps
            .iter()
            .filter(|s| s.piped || s.agent_tool || !fixed_look(s));
        let one = doing.next()?;
        (doing.next().is_none() && !self.steps.iter().any(|s| s.piped || s.agent_tool))
            .then_some(one)
    }

    /// The first step that the next one runs again at once for the same target: with flags
    /// added (`rm <arg>` then `rm <arg> -r`), with more power (`rm <arg>` then `sudo rm <arg>`),
    /// or through another program taking the same sub-command or flags (`paru -S <arg>` then
    /// `sudo pacman -S <arg>`): a command that failed, tried again. A tool of both would stop
    /// at the failure, or do the work twice. Kept as a pattern; no tool is made of it. A
    /// recovery's failing command and its fix (`npm run lint` failing, then `npm run lint --
    /// --fix`) are not: its tool runs the fix on the failure.
    pub fn retried_step(&self) -> Option<&Step> {
        self.steps.windows(2).find_map(|pair| {
            let (first, then) = (&pair[0], &pair[1]);
            if first.agent_tool || then.agent_tool || then.piped {
                return None;
            }
            retries(&first.key, &then.key).then_some(first)
        })
    }

    /// Whether the habit's steps follow each other no more often than their own frequencies
    /// predict ([`crate::mine::chance`]): two commands run all day, seen together by chance.
    /// Kept as a pattern; no tool is made of it. Patterns stored before the test was made are
    /// not judged by it.
    pub fn by_chance(&self) -> Option<&crate::mine::chance::Association> {
        self.score_parts
            .association
            .as_ref()
            .filter(|a| !a.beats_chance())
    }

    /// Whether the habit is one command: a single command line, or a pipeline (`cat <path> |
    /// jq .`, `cat <path> | pbcopy`), whatever its other steps that only change directory. A
    /// habit needs two steps that each do work; a command the agent types is already one call.
    /// Recoveries (the failure detected is the work) and slow operations are other habits.
    pub fn one_command(&self) -> bool {
        if self.kind != PatternKind::Sequence {
            return false;
        }
        let working = self
            .steps
            .iter()
            .filter(|s| !s.piped && !moves(&s.key))
            .count();
        working < 2
    }

    /// Why the pattern is no habit to propose, when it is not: one command, or steps that
    /// follow each other no more often than chance. Unlike the other refusals a tool could
    /// still be made of it: `toolsmith generate --pattern ID` is a person's own call and makes
    /// one; only the proposals the daemon makes by itself pass it by. Mined again, it is
    /// judged again.
    pub fn not_a_habit(&self) -> Option<String> {
        if self.one_command() {
            return Some(format!(
                "it is one command (`{}`; a pipeline is one command): a habit needs two steps \
                 that each do work, and the agent already runs this one in one call",
                self.steps_text().join(" → ")
            ));
        }
        let a = self.by_chance()?;
        let link = match self.link_steps(a) {
            Some((from, to)) => format!("`{from}` → `{to}`"),
            None => format!("link {}", a.link + 1),
        };
        Some(format!(
            "its steps follow each other no more than chance or now and then: {link} came {} \
             times after {} runs of the first ({} runs of the second) where chance predicts \
             {:.1} (lift {:.2}, G² {:.1}, held by {:.0}% of one step's runs; a habit needs a \
             lift of at least {}, G² of at least {} and {:.0}%): commands run often, seen \
             together, not one piece of work",
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
        ))
    }

    /// The templates of the two steps a link of `a` joins (`None` when the steps are not
    /// there: a pattern stored by another build).
    pub fn link_steps(&self, a: &crate::mine::chance::Association) -> Option<(&str, &str)> {
        let at = a.link as usize;
        let step = |i: usize| self.steps.get(i).map(|s| s.template.as_str());
        Some((step(at)?, step(at + 1)?))
    }

    /// The steps as readable templates, the failing command first for a recovery; a step that
    /// reads the previous one through a pipe starts with `| `.
    pub fn steps_text(&self) -> Vec<String> {
        let mut steps = Vec::new();
        if let Some(trigger) = &self.trigger {
            steps.push(format!(
                "{}  (fails: {})",
                trigger.step.template, trigger.error_template
            ));
        }
        if !self.lines.is_empty() {
            steps.extend(
                self.lines
                    .iter()
                    .map(|l| crate::mine::line::align::display(l)),
            );
            return steps;
        }
        steps.extend(self.steps.iter().map(|s| {
            if s.piped {
                format!("| {}", s.template)
            } else {
                s.template.clone()
            }
        }));
        steps
    }
}

/// Whether a step only changes the shell's directory (`cd <arg>`, `pushd`, `popd`).
fn moves(key: &str) -> bool {
    matches!(key.split(' ').next(), Some("cd" | "pushd" | "popd"))
}

/// Whether the command keyed `then` runs the one keyed `first` again for the same target (see
/// [`Pattern::retried_step`]).
fn retries(first: &str, then: &str) -> bool {
    /// The words after a privilege prefix (`sudo`, `doas`, with their flags), and whether
    /// there was one.
    fn unprivileged(key: &str) -> (Vec<&str>, bool) {
        let mut words = key.split(' ').peekable();
        let mut privileged = false;
        while let Some(&w) = words.peek() {
            if matches!(w, "sudo" | "doas") || (privileged && w.starts_with('-')) {
                privileged = true;
                words.next();
            } else {
                break;
            }
        }
        (words.collect(), privileged)
    }
    let ((a, a_root), (b, b_root)) = (unprivileged(first), unprivileged(then));
    let (Some(program_a), Some(program_b)) = (a.first(), b.first()) else {
        return false;
    };
    // `a`'s words in order within `b`, every other word of `b` a flag or a value (no word of
    // its own, which would make it another command: `make` then `make clean`): how many were
    // added.
    let added_flags = || {
        let mut rest = a.iter().peekable();
        let mut added = 0;
        for word in &b {
            if rest.peek() == Some(&word) {
                rest.next();
            } else if (word.starts_with('-') && word.len() > 1) || word.starts_with('<') {
                added += 1;
            } else {
                return None;
            }
        }
        rest.peek().is_none().then_some(added)
    };
    if program_a == program_b {
        return match added_flags() {
            Some(added) => added > 0 || (b_root && !a_root),
            None => false,
        };
    }
    // Another program for the same target: the same sub-command or flags and values after
    // the program, at least one of them a word of its own (not only values: `mypy <arg>` then
    // `ruff <arg>` checks a path twice, a habit).
    a[1..] == b[1..]
        && a[1..]
            .iter()
            .any(|w| !w.starts_with('<') && w.chars().any(|c| c.is_ascii_alphabetic()))
}

/// The stable id of a pattern of `kind` whose steps have these canonical keys.
pub fn pattern_id(kind: PatternKind, keys: &[&str], trigger: Option<&str>) -> String {
    let mut hash = Sha256::new();
    hash.update(kind.as_str().as_bytes());
    if let Some(t) = trigger {
        hash.update(b"\0trigger\0");
        hash.update(t.as_bytes());
    }
    for key in keys {
        hash.update(b"\0");
        hash.update(key.as_bytes());
    }
    let digest = hash.finalize();
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    format!("p-{hex}")
}

/// Where a pattern stands across mining runs and reviews.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PatternStatus {
    /// Found, not yet acted on.
    New,
    /// A candidate tool was made from it.
    Proposed,
    /// Its candidate was rejected at review: never proposed again.
    Rejected,
    /// An approved tool already does it.
    Covered,
    /// Another pattern is the same habit and stands for it (see [`Pattern::folded_into`]).
    Folded,
}

impl PatternStatus {
    /// The name used in the store and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            PatternStatus::New => "new",
            PatternStatus::Proposed => "proposed",
            PatternStatus::Rejected => "rejected",
            PatternStatus::Covered => "covered",
            PatternStatus::Folded => "folded",
        }
    }

    fn from_name(name: &str) -> PatternStatus {
        match name {
            "proposed" => PatternStatus::Proposed,
            "rejected" => PatternStatus::Rejected,
            "covered" => PatternStatus::Covered,
            "folded" => PatternStatus::Folded,
            _ => PatternStatus::New,
        }
    }

    /// Whether a pattern in this status may still go on to generation.
    pub fn proposable(self) -> bool {
        self == PatternStatus::New
    }
}

/// A pattern as stored, with its status.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredPattern {
    /// The pattern.
    #[serde(flatten)]
    pub pattern: Pattern,
    /// Where it stands.
    pub status: PatternStatus,
    /// Why (for rejected or covered ones).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Stores the patterns of one mining run in one transaction: new ones are inserted, known ones
/// updated (their status kept), and those not found again that were never acted on are removed.
/// A pattern never acted on is `folded` when it is folded into another this run, `new` when it
/// is not (any more). Returns the ids stored for the first time.
pub fn replace_patterns(
    conn: &mut Connection,
    patterns: &[Pattern],
    now: i64,
) -> Result<Vec<String>, StoreError> {
    let mut fresh = Vec::new();
    let tx = conn.transaction()?;
    tx.execute(
        "CREATE TEMP TABLE IF NOT EXISTS seen_patterns (id TEXT PRIMARY KEY)",
        [],
    )?;
    tx.execute("DELETE FROM seen_patterns", [])?;
    {
        let mut upsert = tx.prepare(
            "INSERT INTO patterns (id, kind, support, score, body, status, first_seen, last_seen)
             VALUES (?1, ?2, ?3, ?4, ?5, 'new', ?6, ?6)
             ON CONFLICT(id) DO UPDATE SET kind = excluded.kind, support = excluded.support,
                 score = excluded.score, body = excluded.body, last_seen = excluded.last_seen",
        )?;
        let mut seen = tx.prepare("INSERT OR IGNORE INTO seen_patterns (id) VALUES (?1)")?;
        let mut known = tx.prepare("SELECT 1 FROM patterns WHERE id = ?1")?;
        let mut fold = tx.prepare(
            "UPDATE patterns SET status = ?2, reason = ?3
             WHERE id = ?1 AND status IN ('new', 'folded')",
        )?;
        for p in patterns {
            if !known.exists(params![p.id])? {
                fresh.push(p.id.clone());
            }
            let body = serde_json::to_string(p).map_err(|e| StoreError::Corrupt {
                what: format!("pattern {}", p.id),
                reason: e.to_string(),
            })?;
            upsert.execute(params![
                p.id,
                p.kind.as_str(),
                p.support,
                p.score,
                body,
                now
            ])?;
            seen.execute(params![p.id])?;
            match &p.folded_into {
                Some(into) => fold.execute(params![
                    p.id,
                    PatternStatus::Folded.as_str(),
                    format!(
                        "folded into {}: {} of its {} occurrences looked at lie inside that \
                         pattern's",
                        into.id, into.overlapping, into.of
                    )
                ])?,
                None => fold.execute(params![p.id, PatternStatus::New.as_str(), None::<String>])?,
            };
        }
    }
    tx.execute(
        "DELETE FROM patterns WHERE status IN ('new', 'folded')
             AND id NOT IN (SELECT id FROM seen_patterns)",
        [],
    )?;
    tx.commit()?;
    Ok(fresh)
}

/// What the candidates made from patterns came to, as the stage that owns candidates reports
/// it: mining brings the patterns' statuses up to date with it after each run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CandidateOutcomes {
    /// Patterns with a rejected candidate, each with its newest rejection's reason.
    pub rejected: Vec<Rejection>,
    /// Patterns with an approved candidate.
    pub approved: Vec<String>,
    /// Patterns with a candidate under way (proposed, generating, validating, awaiting review).
    pub under_way: Vec<String>,
}

/// A pattern whose candidate was rejected at review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The pattern.
    pub pattern: String,
    /// The reviewer's reason, if one was given.
    pub reason: Option<String>,
}

/// Brings statuses up to date with `outcomes`: a pattern whose candidate was rejected is
/// `rejected` (with the reason), one whose candidate was approved is `covered` (unless rejected),
/// one still `new` with a candidate under way is `proposed`.
pub fn apply_outcomes(conn: &Connection, outcomes: &CandidateOutcomes) -> Result<(), StoreError> {
    let mut rejected =
        conn.prepare_cached("UPDATE patterns SET status = 'rejected', reason = ?2 WHERE id = ?1")?;
    for r in &outcomes.rejected {
        rejected.execute(params![r.pattern, r.reason])?;
    }
    let mut covered = conn.prepare_cached(
        "UPDATE patterns SET status = 'covered', reason = 'an approved tool does it'
         WHERE id = ?1 AND status != 'rejected'",
    )?;
    for id in &outcomes.approved {
        covered.execute(params![id])?;
    }
    let mut proposed = conn.prepare_cached(
        "UPDATE patterns SET status = 'proposed', reason = NULL
         WHERE id = ?1 AND status IN ('new', 'folded')",
    )?;
    for id in &outcomes.under_way {
        proposed.execute(params![id])?;
    }
    Ok(())
}

/// Sets a pattern's status (a candidate was made, rejected, or a tool covers it).
pub fn set_status(
    conn: &Connection,
    id: &str,
    status: PatternStatus,
    reason: Option<&str>,
) -> Result<bool, StoreError> {
    let n = conn.execute(
        "UPDATE patterns SET status = ?2, reason = ?3 WHERE id = ?1",
        params![id, status.as_str(), reason],
    )?;
    Ok(n > 0)
}

/// The stored patterns, best first, of one kind if given.
pub fn list_patterns(
    conn: &Connection,
    kind: Option<PatternKind>,
    limit: u64,
) -> Result<Vec<StoredPattern>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT id, body, status, reason FROM patterns
         WHERE ?1 IS NULL OR kind = ?1 ORDER BY score DESC, id LIMIT ?2",
    )?;
    let rows = stmt.query_map(
        params![
            kind.map(PatternKind::as_str),
            limit.min(i64::MAX as u64) as i64
        ],
        |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, Option<String>>(3)?,
            ))
        },
    )?;
    let mut out = Vec::new();
    for row in rows {
        let (id, body, status, reason) = row?;
        let pattern: Pattern = serde_json::from_str(&body).map_err(|e| StoreError::Corrupt {
            what: format!("pattern {id}"),
            reason: e.to_string(),
        })?;
        out.push(StoredPattern {
            pattern,
            status: PatternStatus::from_name(&status),
            reason,
        });
    }
    Ok(out)
}

/// One stored pattern by id.
pub fn get_pattern(conn: &Connection, id: &str) -> Result<Option<StoredPattern>, StoreError> {
    let row = conn
        .query_row(
            "SELECT body, status, reason FROM patterns WHERE id = ?1",
            params![id],
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, Option<String>>(2)?,
                ))
            },
        )
        .optional()?;
    let Some((body, status, reason)) = row else {
        return Ok(None);
    };
    let pattern: Pattern = serde_json::from_str(&body).map_err(|e| StoreError::Corrupt {
        what: format!("pattern {id}"),
        reason: e.to_string(),
    })?;
    Ok(Some(StoredPattern {
        pattern,
        status: PatternStatus::from_name(&status),
        reason,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_tell_kinds_and_steps_apart() {
        let a = pattern_id(PatternKind::Sequence, &["cargo build", "cargo test"], None);
        assert_eq!(
            a,
            pattern_id(PatternKind::Sequence, &["cargo build", "cargo test"], None)
        );
        assert!(a.starts_with("p-") && a.len() == 10, "{a}");
        assert_ne!(
            a,
            pattern_id(PatternKind::Slow, &["cargo build", "cargo test"], None)
        );
        assert_ne!(
            a,
            pattern_id(PatternKind::Sequence, &["cargo test", "cargo build"], None)
        );
        assert_ne!(
            a,
            pattern_id(PatternKind::Sequence, &["cargo buildcargo test"], None)
        );
        assert_ne!(
            a,
            pattern_id(
                PatternKind::Sequence,
                &["cargo build", "cargo test"],
                Some("x")
            )
        );
    }

    fn pattern(id: &str) -> Pattern {
        Pattern {
            lines: Default::default(),
            shell: Default::default(),
            id: id.into(),
            kind: PatternKind::Sequence,
            support: 3,
            occurrences: 3,
            score: 50.0,
            score_parts: crate::mine::score::score(&crate::mine::score::ScoreInput {
                support: 3,
                ..Default::default()
            }),
            templates: vec!["make build".into()],
            steps: Vec::new(),
            params: Vec::new(),
            internals: Vec::new(),
            workspace_varies: false,
            trigger: None,
            median_ms: None,
            evidence: Vec::new(),
            folded_into: None,
            folded: Vec::new(),
            expansions: Vec::new(),
            unknown_programs: Vec::new(),
        }
    }

    /// A sequence of steps keyed `keys` (`|` first: read through a pipe).
    fn steps_of(keys: &[&str]) -> Pattern {
        let mut p = pattern("p-steps");
        p.steps = keys
            .iter()
            .map(|k| {
                let (piped, key) = match k.strip_prefix("| ") {
                    Some(rest) => (true, rest),
                    None => (false, *k),
                };
                Step {
                    template: key.to_owned(),
                    words: Vec::new(),
                    globs: Vec::new(),
                    key: key.to_owned(),
                    captures: None,
                    piped,
                    agent_tool: false,
                }
            })
            .collect();
        p
    }

    #[test]
    fn a_command_run_again_with_more_power_or_another_program_is_a_retry() {
        for retry in [
            ["rm <arg>", "sudo rm <arg>"],
            ["rm -r <arg>", "sudo rm -r <arg>"],
            ["rm <arg>", "rm <arg> -r"],
            ["paru -S <arg>", "sudo pacman -S <arg>"],
            ["pip install <arg>", "pip3 install <arg>"],
            ["apt install <arg>", "sudo -E apt install <arg>"],
            ["npm install", "yarn install"],
            ["ojichat", "ojichat <arg>"],
        ] {
            assert!(
                steps_of(&retry).retried_step().is_some(),
                "{retry:?} is a retry"
            );
        }
        for habit in [
            ["git add <arg>", "git commit -m <arg>"],
            ["mypy <arg>", "ruff <arg>"],
            ["make", "make clean"],
            ["cargo build", "cargo test"],
            ["sudo rm <arg>", "rm <arg>"],
            ["sudo make clean install", "sudo rm <arg>"],
            ["black .", "isort ."],
            ["make", "make install"],
        ] {
            assert!(
                steps_of(&habit).retried_step().is_none(),
                "{habit:?} is no retry"
            );
        }
    }

    #[test]
    fn a_program_asked_for_its_state_after_working_is_a_glance() {
        let with_value = |p: &mut Pattern, step: usize, name: &str| {
            p.steps[step].words = vec![vec![Piece::Param(name.to_owned())]];
        };
        let mut info = steps_of(&["brew update", "brew info <arg>"]);
        with_value(&mut info, 1, "value");
        assert_eq!(
            info.one_command_looked_around().map(|s| s.key.as_str()),
            Some("brew update")
        );
        assert!(
            steps_of(&["docker build <arg>", "docker images"])
                .one_command_looked_around()
                .is_some()
        );
        // The look at what the first step made: a value passes.
        let mut shared = steps_of(&["docker build -t <arg> <arg>", "docker inspect <arg>"]);
        with_value(&mut shared, 0, "tag");
        with_value(&mut shared, 1, "tag");
        assert!(shared.one_command_looked_around().is_none());
        // A search the habit feeds values, with another program, stays a habit.
        let mut search = steps_of(&["mkdir -p out", "grep -l <arg> <arg>"]);
        with_value(&mut search, 1, "word");
        assert!(search.one_command_looked_around().is_none());
    }

    #[test]
    fn a_pipeline_is_one_command_and_a_habit_needs_two_that_work() {
        assert!(steps_of(&["cat <arg>", "| pbcopy"]).one_command());
        assert!(steps_of(&["cat <arg>", "| jq <arg>", "| head -n <arg>"]).one_command());
        assert!(steps_of(&["docker run --rm -it <arg>"]).one_command());
        assert!(steps_of(&["cd <arg>", "make"]).one_command());
        assert!(!steps_of(&["cat <arg>", "| jq .", "git diff"]).one_command());
        assert!(!steps_of(&["cd <arg>", "make", "make install"]).one_command());
        assert!(!steps_of(&["git add <arg>", "git commit -m <arg>"]).one_command());
        let mut slow = steps_of(&["cargo build --release"]);
        slow.kind = PatternKind::Slow;
        assert!(
            !slow.one_command(),
            "a slow operation is a habit of its own"
        );
    }

    #[test]
    fn a_pattern_is_by_chance_when_its_weakest_link_is() {
        use crate::mine::chance::Association;
        let mut p = steps_of(&["make", "open <arg>"]);
        assert!(p.by_chance().is_none(), "untested: not judged");
        p.score_parts.association = Some(Association {
            lift: 1.1,
            llr: 0.4,
            ..Association::default()
        });
        assert!(p.by_chance().is_some());
        p.score_parts.association = Some(Association {
            lift: 9.0,
            llr: 60.0,
            ..Association::default()
        });
        assert!(p.by_chance().is_none());
        // Round trip through the stored body keeps the terms.
        let back: Pattern =
            serde_json::from_value(serde_json::to_value(&p).expect("json")).expect("parsed");
        assert_eq!(back.score_parts.association, p.score_parts.association);
    }

    #[test]
    fn candidate_outcomes_set_rejected_covered_and_proposed_statuses() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.db");
        drop(crate::store::Store::open(&path).expect("migrate"));
        let mut conn = crate::store::open_for_update(&path).expect("a connection");
        let ids = ["p-1", "p-2", "p-3", "p-4"];
        let patterns: Vec<Pattern> = ids.iter().map(|id| pattern(id)).collect();
        replace_patterns(&mut conn, &patterns, 1).expect("stored");
        let outcomes = CandidateOutcomes {
            rejected: vec![Rejection {
                pattern: "p-1".into(),
                reason: Some("not useful".into()),
            }],
            // A rejection wins over an approval; an approval over work under way.
            approved: vec!["p-1".into(), "p-2".into()],
            under_way: vec!["p-2".into(), "p-3".into(), "p-unknown".into()],
        };
        apply_outcomes(&conn, &outcomes).expect("applied");
        let status = |id: &str| {
            let p = get_pattern(&conn, id).expect("read").expect("stored");
            (p.status, p.reason)
        };
        assert_eq!(
            status("p-1"),
            (PatternStatus::Rejected, Some("not useful".into()))
        );
        assert_eq!(
            status("p-2"),
            (
                PatternStatus::Covered,
                Some("an approved tool does it".into())
            )
        );
        assert_eq!(status("p-3"), (PatternStatus::Proposed, None));
        assert_eq!(status("p-4"), (PatternStatus::New, None));
        assert_eq!(get_pattern(&conn, "p-unknown").expect("read"), None);
    }
}
