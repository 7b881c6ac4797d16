//! Sessions holding the grammar's habits, written in Claude Code, Codex and bash-history formats
//! mixed, with decoys: constant look-arounds (`git status`, `ls`) between steps and between
//! habits, one-session bursts (a habit-like pair of lines repeated many times in one session
//! only, which no tool should come of), the agent reading around, its own calls, and random
//! commands run once. Each occurrence remembers where its lines were written, so the daemon's
//! evidence can be traced back to it.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};

use super::background::Background;
use super::grammar::{Habit, Kind, Rng, habit, value, word};

/// A session's log format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fmt {
    Claude,
    Codex,
    Bash,
}

/// One logged action.
#[derive(Debug, Clone)]
pub enum Entry {
    /// A shell command line; `step` is (occurrence, step) when it is a planted habit's.
    Shell {
        line: String,
        output: String,
        step: Option<(usize, usize)>,
    },
    /// One of the agent's own calls (Claude Code's `Read`, Codex's `update_plan`).
    Own(usize),
    /// An everyday command of the background ([`Background`]) and its output.
    Background { line: String, output: String },
}

/// A session: its format, its id (`None` for a history, whose sessions the adapter cuts), its
/// actions.
#[derive(Debug, Clone)]
pub struct Session {
    pub fmt: Fmt,
    pub id: Option<String>,
    pub entries: Vec<Entry>,
}

/// An occurrence of a habit: its values, the raw lines they make, and where they were written.
#[derive(Debug, Clone)]
pub struct Occ {
    pub habit: usize,
    pub values: Vec<String>,
    pub lines: Vec<String>,
    pub session: usize,
    /// The place of each line (its record's byte offset, shifted left by 8, as the ingest's
    /// `seq`), set by [`Corpus::write`].
    pub places: Vec<u64>,
}

/// Everything planted.
pub struct Corpus {
    pub habits: Vec<Habit>,
    pub occs: Vec<Occ>,
    pub sessions: Vec<Session>,
    /// What the decoys are, for the report.
    pub decoys: Vec<String>,
    /// Each background command's session (an index into `sessions`) and place (as an
    /// occurrence's), set by [`Corpus::write`].
    pub background: Vec<(usize, u64)>,
}

const LOOKAROUNDS: [&str; 6] = [
    "git status",
    "ls",
    "git diff --stat",
    "pwd",
    "git status --short",
    "ls -la",
];

fn output(rng: &mut Rng) -> String {
    match rng.below(3) {
        0 => "ok".to_owned(),
        1 => format!("done: {}", word(rng)),
        _ => format!(
            "{} {}\n{} {}",
            word(rng),
            rng.below(100),
            word(rng),
            rng.below(100)
        ),
    }
}

fn shell(line: String, rng: &mut Rng) -> Entry {
    Entry::Shell {
        line,
        output: output(rng),
        step: None,
    }
}

/// A command no habit holds: a one-off, or the agent reading around.
fn noise(rng: &mut Rng) -> Entry {
    let line = match rng.below(6) {
        0 => format!("cat {}", value(Kind::Path, rng)),
        1 => format!(
            "sed -n '1,{}p' {}",
            rng.range(20, 80),
            value(Kind::Path, rng)
        ),
        2 => format!("grep -rn {} src/", word(rng)),
        _ => format!(
            "{} {} --{} {}",
            word(rng),
            word(rng),
            word(rng),
            value(Kind::Ident, rng)
        ),
    };
    shell(line, rng)
}

impl Corpus {
    /// `n` habits and their sessions, from `seed`, with background noise between everything.
    pub fn new(seed: u64, n: usize) -> Corpus {
        let mut rng = Rng::new(seed);
        let mut bg = Background::new(seed);
        let everyday = |line: String, bg: &mut Background| Entry::Background {
            output: output(bg.rng()),
            line,
        };
        // Two habits never share a line's shape: each occurrence is one habit's.
        let mut habits: Vec<Habit> = Vec::new();
        let mut shapes: BTreeSet<String> = BTreeSet::new();
        let fresh = |h: &Habit, shapes: &mut BTreeSet<String>| {
            let own = h.shapes_of_lines();
            let distinct: BTreeSet<&String> = own.iter().collect();
            if distinct.len() < own.len() || own.iter().any(|l| shapes.contains(l)) {
                return false;
            }
            shapes.extend(own);
            true
        };
        while habits.len() < n {
            let h = habit(habits.len(), &mut rng);
            if fresh(&h, &mut shapes) {
                habits.push(h);
            }
        }
        let mut occs = Vec::new();
        for h in &habits {
            // One line saves no call: it takes more sessions to rank (as issue 20's commit).
            let count = if h.lines.len() == 1 {
                rng.range(8, 10)
            } else {
                rng.range(5, 7)
            };
            let mut used = vec![BTreeSet::new(); h.vars.len()];
            for _ in 0..count {
                let values = h.values(&mut rng, &mut used);
                occs.push(Occ {
                    habit: h.id,
                    lines: h.render(&values),
                    values,
                    session: 0,
                    places: Vec::new(),
                });
            }
        }
        // Occurrences into sessions: one each mostly, two habits in some, never the same pair
        // twice (no sequence spans two habits in more than one session).
        let mut order: Vec<usize> = (0..occs.len()).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut fmts: Vec<Fmt> = Vec::new();
        let mut pairs: BTreeSet<(usize, usize)> = BTreeSet::new();
        for &o in &order {
            let h = occs[o].habit;
            let multiline = habits[h].multiline();
            let join = rng.chance(0.3).then(|| {
                (0..members.len()).rev().take(8).find(|&s| {
                    members[s].len() == 1 && !(multiline && fmts[s] == Fmt::Bash) && {
                        let other = occs[members[s][0]].habit;
                        other != h && !pairs.contains(&(other.min(h), other.max(h)))
                    }
                })
            });
            match join.flatten() {
                Some(s) => {
                    let other = occs[members[s][0]].habit;
                    pairs.insert((other.min(h), other.max(h)));
                    members[s].push(o);
                }
                None => {
                    let fmt = match rng.below(20) {
                        0..=7 => Fmt::Claude,
                        8..=14 => Fmt::Codex,
                        _ if multiline => *rng.pick(&[Fmt::Claude, Fmt::Codex]),
                        _ => Fmt::Bash,
                    };
                    members.push(vec![o]);
                    fmts.push(fmt);
                }
            }
        }
        let mut sessions = Vec::new();
        let mut own = 0;
        for (s, held) in members.iter().enumerate() {
            let mut entries = Vec::new();
            for _ in 0..rng.below(3) {
                entries.push(noise(&mut rng));
            }
            for line in bg.stretch(1, 4) {
                entries.push(everyday(line, &mut bg));
            }
            for &o in held {
                occs[o].session = s;
                if rng.chance(0.3) {
                    entries.push(shell((*rng.pick(&LOOKAROUNDS)).to_owned(), &mut rng));
                }
                if let Some(line) = bg.navigation() {
                    entries.push(everyday(line, &mut bg));
                }
                for (i, line) in occs[o].lines.iter().enumerate() {
                    // A look-around between two steps, in a few occurrences; else, now and
                    // then, a frequent command (never navigation: a piece of work goes on in
                    // one place). One action at most: what the miner's gap allows.
                    if i > 0 && rng.chance(0.2) {
                        entries.push(shell((*rng.pick(&LOOKAROUNDS)).to_owned(), &mut rng));
                    } else if i > 0 && bg.chance(0.1) {
                        let line = bg.frequent_work();
                        entries.push(everyday(line, &mut bg));
                    }
                    entries.push(Entry::Shell {
                        line: line.clone(),
                        output: output(&mut rng),
                        step: Some((o, i)),
                    });
                }
                if fmts[s] != Fmt::Bash && rng.chance(0.4) {
                    own += 1;
                    entries.push(Entry::Own(own));
                }
                if rng.chance(0.5) {
                    entries.push(noise(&mut rng));
                }
                for line in bg.stretch(1, 3) {
                    entries.push(everyday(line, &mut bg));
                }
            }
            sessions.push(Session {
                fmt: fmts[s],
                id: None,
                entries,
            });
        }
        // Decoys. Bursts: a habit-like pair repeated in one session only.
        let mut decoys = Vec::new();
        for b in 0..(n / 10).max(2) {
            let burst = loop {
                let h = habit(usize::MAX - b, &mut rng);
                if !h.multiline() && h.lines.len() >= 2 && fresh(&h, &mut shapes) {
                    break h;
                }
            };
            let mut used = vec![BTreeSet::new(); burst.vars.len()];
            let mut entries = Vec::new();
            let times = rng.range(6, 9);
            for _ in 0..times {
                for line in burst.render(&burst.values(&mut rng, &mut used)) {
                    entries.push(shell(line, &mut rng));
                }
                if rng.chance(0.5) {
                    entries.push(noise(&mut rng));
                }
            }
            decoys.push(format!(
                "burst ×{times} in one session: {}",
                burst.template().join(" ⏎ ")
            ));
            sessions.push(Session {
                fmt: *rng.pick(&[Fmt::Claude, Fmt::Codex, Fmt::Bash]),
                id: None,
                entries,
            });
        }
        // Look-arounds and reading around on their own, in sessions of their own.
        for _ in 0..(n / 5).max(3) {
            let mut entries = Vec::new();
            for _ in 0..rng.range(2, 5) {
                if rng.chance(0.5) {
                    entries.push(shell((*rng.pick(&LOOKAROUNDS)).to_owned(), &mut rng));
                } else {
                    entries.push(noise(&mut rng));
                }
            }
            sessions.push(Session {
                fmt: *rng.pick(&[Fmt::Claude, Fmt::Codex, Fmt::Bash]),
                id: None,
                entries,
            });
        }
        // Days of background alone: everyday commands and navigation, no habit.
        let days = (n / 2).max(6);
        for _ in 0..days {
            let entries = bg
                .stretch(5, 12)
                .into_iter()
                .map(|line| everyday(line, &mut bg))
                .collect();
            let fmt = match bg.range(0, 2) {
                0 => Fmt::Claude,
                1 => Fmt::Codex,
                _ => Fmt::Bash,
            };
            sessions.push(Session {
                fmt,
                id: None,
                entries,
            });
        }
        decoys.push(format!(
            "constant look-arounds ({}) between steps and habits, the agent reading around, one-off commands",
            LOOKAROUNDS.join(", ")
        ));
        let background = sessions
            .iter()
            .flat_map(|s| &s.entries)
            .filter(|e| matches!(e, Entry::Background { .. }))
            .count();
        decoys.push(format!(
            "background: {background} everyday commands drawn by a Zipf law (make, git status, \
             open FILE, cargo build, ls, npm test most often; {} in all) with interactive \
             navigation (cd, vim, less, htop, man, a pager) between everything, in the habits' \
             sessions and in {days} sessions of their own",
            super::background::VOCABULARY_SIZE
        ));
        for (s, session) in sessions.iter_mut().enumerate() {
            session.id = match session.fmt {
                Fmt::Claude => Some(format!("{:08x}-0000-4000-8000-{:012x}", seed as u32, s)),
                Fmt::Codex => Some(format!("0198{:04x}-0000-7000-8000-{:012x}", seed as u16, s)),
                Fmt::Bash => None,
            };
        }
        Corpus {
            habits,
            occs,
            sessions,
            decoys,
            background: Vec::new(),
        }
    }

    /// Writes the sessions under `root` (Claude Code transcripts in `claude/projects`, Codex
    /// rollouts in `codex/sessions`, one bash history, `bash/.bash_history`, whose sessions are
    /// two hours apart) and records each occurrence's places; returns how many actions they
    /// hold.
    pub fn write(&mut self, root: &Path) -> usize {
        let claude = root.join("claude").join("projects");
        let codex = root.join("codex").join("sessions");
        let bash_dir = root.join("bash");
        let claude_dir = claude.join("-home-dev-relay");
        let codex_dir = codex.join("2026").join("11").join("10");
        for d in [&claude_dir, &codex_dir, &bash_dir] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        let bash = bash_dir.join(".bash_history");
        let mut history = String::new();
        let mut actions = 0;
        let mut places: Vec<(usize, usize, u64)> = Vec::new();
        let mut background: Vec<(usize, u64)> = Vec::new();
        for (s, session) in self.sessions.iter().enumerate() {
            match session.fmt {
                Fmt::Claude => {
                    let sid = session.id.clone().unwrap_or_default();
                    let mut t = Transcript::new(&sid);
                    for e in &session.entries {
                        actions += 1;
                        match e {
                            Entry::Shell { line, output, step } => {
                                let at = t.call(
                                    "Bash",
                                    json!({"command": line, "description": "run"}),
                                    output,
                                );
                                if let Some((o, i)) = step {
                                    places.push((*o, *i, at));
                                }
                            }
                            Entry::Own(n) => {
                                t.call(
                                    "Read",
                                    json!({"file_path": format!("/home/dev/relay/src/m{n}.py")}),
                                    "1\tx",
                                );
                            }
                            Entry::Background { line, output } => {
                                let at = t.call(
                                    "Bash",
                                    json!({"command": line, "description": "run"}),
                                    output,
                                );
                                background.push((s, at));
                            }
                        }
                    }
                    std::fs::write(claude_dir.join(format!("{sid}.jsonl")), t.text)
                        .expect("write transcript");
                }
                Fmt::Codex => {
                    let id = session.id.clone().unwrap_or_default();
                    let mut r = Rollout::new(&id, s);
                    for e in &session.entries {
                        actions += 1;
                        match e {
                            Entry::Shell { line, output, step } => {
                                let at = r.shell(line, output);
                                if let Some((o, i)) = step {
                                    places.push((*o, *i, at));
                                }
                            }
                            Entry::Own(n) => r.plan(*n),
                            Entry::Background { line, output } => {
                                let at = r.shell(line, output);
                                background.push((s, at));
                            }
                        }
                    }
                    std::fs::write(
                        codex_dir
                            .join(format!("rollout-2026-11-10T08-{:02}-00-{id}.jsonl", s % 60)),
                        r.text,
                    )
                    .expect("write rollout");
                }
                Fmt::Bash => {
                    // Two hours between sessions: the adapter cuts at gaps over 30 minutes.
                    let mut ts = 1_762_000_000 + s as u64 * 7200;
                    for e in &session.entries {
                        let (line, step) = match e {
                            Entry::Shell { line, step, .. } => (line, *step),
                            Entry::Background { line, .. } => (line, None),
                            Entry::Own(_) => continue,
                        };
                        actions += 1;
                        let at = history.len() as u64;
                        history.push_str(&format!("#{ts}\n{line}\n"));
                        ts += 20;
                        match step {
                            Some((o, i)) => places.push((o, i, at)),
                            None if matches!(e, Entry::Background { .. }) => {
                                background.push((s, at));
                            }
                            None => {}
                        }
                    }
                }
            }
        }
        std::fs::write(&bash, history).expect("write history");
        for occ in &mut self.occs {
            occ.places = vec![0; occ.lines.len()];
        }
        // The ingest's seq of an action: its record's byte offset, shifted left by 8 (the low
        // byte numbers the actions of one record).
        for (o, i, at) in places {
            self.occs[o].places[i] = at << 8;
        }
        self.background = background.into_iter().map(|(s, at)| (s, at << 8)).collect();
        actions
    }
}

/// A Claude Code transcript, record by record, as `tests/it/planted.rs` writes one.
struct Transcript {
    sid: String,
    text: String,
    parent: Option<String>,
    n: usize,
}

impl Transcript {
    fn new(sid: &str) -> Self {
        Transcript {
            sid: sid.to_owned(),
            text: String::new(),
            parent: None,
            n: 0,
        }
    }

    fn record(&mut self, kind: &str, message: Value, extra: Value) -> u64 {
        self.n += 1;
        let uuid = format!("{}-{:04}", self.sid, self.n);
        let mut r = json!({
            "parentUuid": self.parent, "isSidechain": false, "userType": "external",
            "cwd": "/home/dev/relay", "sessionId": self.sid, "version": "2.1.3",
            "gitBranch": "main", "type": kind, "message": message, "uuid": uuid,
            "timestamp": format!("2026-11-10T08:{:02}:{:02}.000Z", self.n / 60 % 60, self.n % 60),
        });
        if let (Some(r), Some(extra)) = (r.as_object_mut(), extra.as_object()) {
            r.extend(extra.clone());
        }
        self.parent = Some(uuid);
        let at = self.text.len() as u64;
        self.text.push_str(&(r.to_string() + "\n"));
        at
    }

    /// A tool call and its result; the call record's place.
    fn call(&mut self, name: &str, input: Value, output: &str) -> u64 {
        let id = format!("toolu_{}_{}", self.sid, self.n);
        let at = self.record(
            "assistant",
            json!({"id": format!("msg_{}", self.n), "type": "message", "role": "assistant",
                   "model": "claude-sonnet-4-5-20250929",
                   "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}),
            json!({}),
        );
        self.record(
            "user",
            json!({"role": "user", "content": [{"tool_use_id": id, "type": "tool_result",
                                                "content": output, "is_error": false}]}),
            json!({"toolUseResult": {"stdout": output, "stderr": "",
                                     "interrupted": false, "isImage": false}}),
        );
        at
    }
}

/// A Codex rollout (the envelope form of codex_cli_rs), its shell calls in the three forms
/// Codex logs them: `shell_command` (a string), `exec_command` (unified exec, `cmd`) and
/// `shell` (an argv `["bash", "-lc", LINE]`).
struct Rollout {
    text: String,
    n: usize,
}

impl Rollout {
    fn new(id: &str, s: usize) -> Self {
        let mut r = Rollout {
            text: String::new(),
            n: 0,
        };
        let ts = r.ts();
        r.push(json!({"timestamp": ts, "type": "session_meta", "payload": {
            "id": id, "timestamp": ts, "cwd": "/home/dev/relay", "originator": "codex_cli_rs",
            "cli_version": "0.122.0", "source": "cli", "model_provider": "openai"}}));
        let ts = r.ts();
        r.push(json!({"timestamp": ts, "type": "turn_context", "payload": {
            "cwd": "/home/dev/relay", "approval_policy": "on-request", "model": "gpt-5.2-codex"}}));
        let ts = r.ts();
        r.push(
            json!({"timestamp": ts, "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": format!("task {s}")}]}}),
        );
        r
    }

    fn ts(&mut self) -> String {
        self.n += 1;
        format!(
            "2026-11-10T09:{:02}:{:02}.000Z",
            self.n / 60 % 60,
            self.n % 60
        )
    }

    fn push(&mut self, record: Value) -> u64 {
        let at = self.text.len() as u64;
        self.text.push_str(&(record.to_string() + "\n"));
        at
    }

    /// A shell call and its output; the call record's place.
    fn shell(&mut self, line: &str, output: &str) -> u64 {
        let call_id = format!("call_{}", self.n);
        let (name, args, out) = match self.n % 3 {
            0 => (
                "shell_command",
                json!({"command": line, "workdir": "/home/dev/relay", "timeout_ms": 120000}),
                format!("Exit code: 0\nWall time: 0.2 seconds\nOutput:\n{output}\n"),
            ),
            1 => (
                "exec_command",
                json!({"cmd": line, "yield_time_ms": 10000}),
                format!(
                    "Chunk ID: 1a2b\nWall time: 0.0500 seconds\nProcess exited with code 0\n\
                     Original token count: 3\nOutput:\n{output}\n"
                ),
            ),
            _ => (
                "shell",
                json!({"command": ["bash", "-lc", line], "workdir": "/home/dev/relay",
                       "timeout_ms": 120000}),
                json!({"output": output, "metadata": {"exit_code": 0, "duration_seconds": 0.2}})
                    .to_string(),
            ),
        };
        let ts = self.ts();
        let at = self.push(
            json!({"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call", "name": name, "arguments": args.to_string(),
            "call_id": call_id}}),
        );
        let ts = self.ts();
        self.push(
            json!({"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": call_id, "output": out}}),
        );
        at
    }

    /// The agent's own call.
    fn plan(&mut self, n: usize) {
        let call_id = format!("call_plan_{n}");
        let ts = self.ts();
        let args = json!({"plan": [{"step": format!("step {n}"), "status": "in_progress"}]});
        self.push(
            json!({"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call", "name": "update_plan", "arguments": args.to_string(),
            "call_id": call_id}}),
        );
        let ts = self.ts();
        self.push(
            json!({"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": call_id, "output": "Plan updated"}}),
        );
    }
}
