//! Habits drawn from a grammar of command-line shapes, not from a list of cases (issue 29's
//! "Checks and figures"): invented programs and sub-commands, flags in `-x V`, `--x=V` and
//! `--x V` forms, values as whole words, inside words (`v{version}`, `config/{env}.toml`) and
//! inside quotes (`"Release {version}"`, `'s/x/{v}/'`), one value shared by several holes and
//! steps, environment prefixes, `cd DIR &&`, pipelines of 2–4 elements with holes in any of
//! them, redirections, `||` fallbacks and heredocs. A habit is 1–3 command lines with holes;
//! each occurrence fills the holes of its varying values with fresh values (a constant value
//! is the same in every occurrence). Seeded and deterministic: the same seed gives the same
//! habits, values and sessions.

use std::collections::BTreeSet;

/// xorshift64*: deterministic, no dependency.
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value, zero included).
    pub fn new(seed: u64) -> Rng {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        rng.next();
        rng
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % (n.max(1) as u64)) as usize
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const ONSETS: [&str; 18] = [
    "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "kl", "tr", "st",
];
const VOWELS: [&str; 6] = ["a", "e", "i", "o", "u", "y"];
const CODAS: [&str; 8] = ["", "n", "r", "x", "k", "l", "s", "m"];

/// Words a random syllable string must not be: programs the policy or the shell treat apart.
const RESERVED: [&str; 16] = [
    "sudo", "su", "doas", "eval", "kill", "mount", "dd", "test", "true", "false", "time", "sort",
    "make", "tar", "env", "set",
];

/// An invented lowercase word of two or three syllables.
pub fn word(rng: &mut Rng) -> String {
    loop {
        let mut w = String::new();
        for _ in 0..rng.range(2, 3) {
            w.push_str(ONSETS[rng.below(ONSETS.len())]);
            w.push_str(VOWELS[rng.below(VOWELS.len())]);
        }
        w.push_str(CODAS[rng.below(CODAS.len())]);
        // Nor a program of the background: a habit's step never reads as an everyday command.
        if w.len() >= 4
            && !RESERVED.contains(&w.as_str())
            && !super::background::PROGRAMS.contains(&w.as_str())
        {
            return w;
        }
    }
}

/// What a value looks like. Every kind but `Phrase` is one shell-safe word
/// (`[A-Za-z0-9._/:-]`); a phrase has spaces and only ever sits inside quotes or a heredoc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Version,
    Port,
    Count,
    Ident,
    Path,
    Env,
    Branch,
    Hex,
    Sha,
    Date,
    Phrase,
}

const ENVS: [&str; 14] = [
    "dev", "staging", "prod", "qa", "canary", "preview", "sandbox", "perf", "demo", "edge", "blue",
    "green", "local", "ci",
];
const PHRASE_WORDS: [&str; 16] = [
    "fix", "token", "refresh", "race", "cache", "expiry", "retry", "queue", "route", "backoff",
    "parser", "limits", "schema", "docs", "flaky", "timeout",
];

/// A fresh value of `kind`.
pub fn value(kind: Kind, rng: &mut Rng) -> String {
    match kind {
        Kind::Version => format!("{}.{}.{}", rng.below(4), rng.below(20), rng.below(30)),
        Kind::Port => format!("{}", rng.range(1025, 65000)),
        Kind::Count => format!("{}", rng.range(2, 400)),
        Kind::Ident => format!("{}{}", word(rng), if rng.chance(0.3) { "-2" } else { "" }),
        Kind::Path => format!(
            "src/{}/{}.{}",
            word(rng),
            word(rng),
            rng.pick(&["rs", "py", "ts"])
        ),
        Kind::Env => {
            let env = *rng.pick(&ENVS);
            if rng.chance(0.5) {
                format!("{env}-{}", rng.range(1, 9))
            } else {
                env.to_owned()
            }
        }
        Kind::Branch => format!(
            "{}/{}-{}",
            rng.pick(&["feature", "fix", "chore"]),
            word(rng),
            rng.range(10, 9999)
        ),
        Kind::Hex => format!("0x{:06x}", rng.range(0x40_0000, 0x4f_ffff)),
        Kind::Sha => format!("{:07x}", rng.next() & 0xfff_ffff),
        Kind::Date => format!("2026-{:02}-{:02}", rng.range(1, 12), rng.range(1, 28)),
        Kind::Phrase => {
            let mut words: Vec<String> = (0..rng.range(2, 5))
                .map(|_| {
                    if rng.chance(0.5) {
                        (*rng.pick(&PHRASE_WORDS)).to_owned()
                    } else {
                        word(rng)
                    }
                })
                .collect();
            if let Some(first) = words.first_mut() {
                let mut c = first.chars();
                *first = c
                    .next()
                    .map(|h| h.to_ascii_uppercase().to_string() + c.as_str())
                    .unwrap_or_default();
            }
            words.join(" ")
        }
    }
}

/// One piece of a line: literal text or a hole holding a value.
#[derive(Debug, Clone, PartialEq)]
pub enum Seg {
    Lit(String),
    Hole(usize),
}

/// A value of a habit: varying (fresh in each occurrence) or constant.
#[derive(Debug, Clone)]
pub struct Var {
    pub kind: Kind,
    pub varies: bool,
    /// The value of a constant, in every occurrence.
    pub constant: String,
    /// A name for reports (`version`, `env`, …).
    pub name: String,
    /// A list of 1–3 values of `kind` a command ends with (`brew upgrade wget jq`): their
    /// number varies from one occurrence to the next (issue 30's variants of one habit).
    pub list: bool,
}

/// A habit: its command lines with holes, its values, the shapes the grammar drew for it.
#[derive(Debug, Clone)]
pub struct Habit {
    pub id: usize,
    pub lines: Vec<Vec<Seg>>,
    pub vars: Vec<Var>,
    pub shapes: BTreeSet<&'static str>,
    /// The invented programs it runs from the `PATH` (a test gives each a stub there).
    pub programs: BTreeSet<String>,
}

impl Habit {
    /// The lines with `values` (one per var) in the holes.
    pub fn render(&self, values: &[String]) -> Vec<String> {
        self.lines
            .iter()
            .map(|line| {
                line.iter()
                    .map(|seg| match seg {
                        Seg::Lit(t) => t.as_str(),
                        Seg::Hole(v) => values[*v].as_str(),
                    })
                    .collect()
            })
            .collect()
    }

    /// The lines with each varying hole shown as `{name}` (constants filled in).
    pub fn template(&self) -> Vec<String> {
        let shown: Vec<String> = self
            .vars
            .iter()
            .map(|v| {
                if v.varies {
                    format!("{{{}}}", v.name)
                } else {
                    v.constant.clone()
                }
            })
            .collect();
        self.render(&shown)
    }

    /// Each line's structure: its text with every hole as `{}`, constant or not (a line
    /// holding a constant where another habit's varies is still that habit's line).
    pub fn shapes_of_lines(&self) -> Vec<String> {
        self.render(&vec!["{}".to_owned(); self.vars.len()])
    }

    /// Whether a line spans several lines of text (a heredoc): no shell history holds it as
    /// one entry.
    pub fn multiline(&self) -> bool {
        self.template().iter().any(|l| l.contains('\n'))
    }

    /// How many distinct values vary from one occurrence to the next (a value in several holes
    /// counts once): the parameters a person would pass.
    pub fn values_varied(&self) -> usize {
        self.vars.iter().filter(|v| v.varies).count()
    }

    /// Fresh values for one occurrence: varying values new (and never one already used by
    /// `used`, so each occurrence differs), constants as they are.
    pub fn values(&self, rng: &mut Rng, used: &mut [BTreeSet<String>]) -> Vec<String> {
        // A list's values come from a stream of their own (the main one goes on as without
        // lists); their number goes 1, 2, 3, 1… from one occurrence to the next.
        let mut side = Rng::new(
            0x5eed
                ^ ((self.id as u64) << 16)
                ^ used.iter().map(BTreeSet::len).sum::<usize>() as u64,
        );
        loop {
            let values: Vec<String> = self
                .vars
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    if !v.varies {
                        return v.constant.clone();
                    }
                    if v.list {
                        let count = 1 + used[i].len() % 3;
                        loop {
                            let mut items: Vec<String> = Vec::new();
                            while items.len() < count {
                                let x = value(v.kind, &mut side);
                                if !items.contains(&x) {
                                    items.push(x);
                                }
                            }
                            let x = items.join(" ");
                            if !used[i].contains(&x) {
                                return x;
                            }
                        }
                    }
                    loop {
                        let x = value(v.kind, rng);
                        if !used[i].contains(&x) {
                            return x;
                        }
                    }
                })
                .collect();
            // Two values of one occurrence never contain each other: each is its own parameter.
            let clash = values.iter().enumerate().any(|(i, a)| {
                values
                    .iter()
                    .enumerate()
                    .any(|(j, b)| i != j && self.vars[i].varies && b.contains(a.as_str()))
            });
            if !clash {
                for (i, v) in values.iter().enumerate() {
                    used[i].insert(v.clone());
                }
                return values;
            }
        }
    }
}

/// Where a hole sits, which says what its value may hold.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ctx {
    /// A bare word: no spaces.
    Bare,
    /// Inside quotes or a heredoc: spaces allowed.
    Quoted,
}

const WORD_KINDS: [Kind; 10] = [
    Kind::Version,
    Kind::Port,
    Kind::Count,
    Kind::Ident,
    Kind::Path,
    Kind::Env,
    Kind::Branch,
    Kind::Hex,
    Kind::Sha,
    Kind::Date,
];

const FLAG_NAMES: [&str; 16] = [
    "mode", "env", "port", "tag", "out", "target", "profile", "level", "since", "name", "config",
    "jobs", "filter", "module", "stage", "limit",
];

const ENV_NAMES: [&str; 8] = [
    "LOG_LEVEL",
    "APP_ENV",
    "PORT",
    "RUST_LOG",
    "PROFILE",
    "TARGET",
    "STAGE",
    "FEATURES",
];

/// Builds one habit.
struct Builder<'r> {
    rng: &'r mut Rng,
    /// Decides where a list goes, from a stream of its own: habits without one are drawn as
    /// they were before lists were.
    side: Rng,
    vars: Vec<Var>,
    shapes: BTreeSet<&'static str>,
    programs: BTreeSet<String>,
    line: Vec<Seg>,
}

impl Builder<'_> {
    fn lit(&mut self, text: &str) {
        if let Some(Seg::Lit(last)) = self.line.last_mut() {
            last.push_str(text);
        } else {
            self.line.push(Seg::Lit(text.to_owned()));
        }
    }

    /// A hole of one of `kinds`: with some chance the value of an earlier hole of a fitting
    /// kind (one value, several holes), else a new value, varying in most cases.
    fn hole(&mut self, kinds: &[Kind], ctx: Ctx, name: &str) {
        let fitting: Vec<usize> = (0..self.vars.len())
            .filter(|&i| {
                self.vars[i].varies && !self.vars[i].list && kinds.contains(&self.vars[i].kind)
            })
            .filter(|&i| ctx == Ctx::Quoted || self.vars[i].kind != Kind::Phrase)
            .collect();
        let v = if !fitting.is_empty() && self.rng.chance(0.3) {
            self.shapes.insert("shared-value");
            *self.rng.pick(&fitting)
        } else {
            let kinds: Vec<Kind> = kinds
                .iter()
                .copied()
                .filter(|k| ctx == Ctx::Quoted || *k != Kind::Phrase)
                .collect();
            let kind = *self.rng.pick(&kinds);
            let varies = self.rng.chance(0.75);
            let constant = value(kind, self.rng);
            let taken = self
                .vars
                .iter()
                .filter(|v| v.name.starts_with(name))
                .count();
            let name = if taken == 0 {
                name.to_owned()
            } else {
                format!("{name}{}", taken + 1)
            };
            self.vars.push(Var {
                kind,
                varies,
                constant,
                name,
                list: false,
            });
            self.vars.len() - 1
        };
        self.line.push(Seg::Hole(v));
    }

    /// A value as a word: whole, or inside a word with a fixed affix.
    fn word_value(&mut self, name: &str) {
        let kind = *self.rng.pick(&WORD_KINDS);
        if self.rng.chance(0.35) {
            self.shapes.insert("affix");
            let (pre, post) = match kind {
                Kind::Version => *self.rng.pick(&[("v", ""), ("release-", ""), ("", "-rc1")]),
                Kind::Env => {
                    *self
                        .rng
                        .pick(&[("config/", ".toml"), ("deploy/", ".yaml"), (".env.", "")])
                }
                Kind::Ident => *self
                    .rng
                    .pick(&[("out/", ".log"), ("svc-", ""), ("", "-worker")]),
                Kind::Port => *self
                    .rng
                    .pick(&[("localhost:", ""), ("127.0.0.1:", "/health")]),
                Kind::Date => ("logs/", ".txt"),
                Kind::Sha => ("", "..HEAD"),
                Kind::Branch => ("origin/", ""),
                Kind::Count => ("HEAD~", ""),
                _ => ("", ""),
            };
            self.lit(pre);
            self.hole(&[kind], Ctx::Bare, name);
            self.lit(post);
        } else {
            self.hole(&[kind], Ctx::Bare, name);
        }
    }

    /// A quoted argument with a hole inside.
    fn quoted(&mut self) {
        self.shapes.insert("quoted");
        match self.rng.below(4) {
            0 => {
                self.lit("\"Release ");
                self.hole(&[Kind::Version], Ctx::Quoted, "version");
                self.lit("\"");
            }
            1 => {
                self.lit("\"");
                self.hole(&[Kind::Phrase], Ctx::Quoted, "message");
                self.lit("\"");
            }
            2 => {
                self.lit("'s/");
                let from = word(self.rng);
                self.lit(&from);
                self.lit("/");
                self.hole(&[Kind::Version, Kind::Ident], Ctx::Quoted, "value");
                self.lit("/g'");
            }
            _ => {
                self.lit("'");
                let key = word(self.rng);
                self.lit(&key);
                self.lit("=");
                self.hole(&[Kind::Ident, Kind::Env, Kind::Count], Ctx::Quoted, &key);
                self.lit("'");
            }
        }
    }

    /// A flag with a value in one of the three forms, or a positional value.
    fn argument(&mut self) {
        match self.rng.below(10) {
            0..=1 => {
                self.shapes.insert("flag -x V");
                let c = (b'a' + self.rng.below(26) as u8) as char;
                self.lit(&format!(" -{c} "));
                self.word_value(&c.to_string());
            }
            2..=3 => {
                self.shapes.insert("flag --x=V");
                let name = *self.rng.pick(&FLAG_NAMES);
                self.lit(&format!(" --{name}="));
                self.word_value(name);
            }
            4..=5 => {
                self.shapes.insert("flag --x V");
                let name = *self.rng.pick(&FLAG_NAMES);
                self.lit(&format!(" --{name} "));
                if self.rng.chance(0.2) {
                    self.quoted();
                } else {
                    self.word_value(name);
                }
            }
            6 if self.rng.chance(0.25) => {
                // A value the shell computes: the same text in every occurrence.
                self.shapes.insert("command-substitution");
                let sub = *self.rng.pick(&[
                    "--since=\"$(date +%F)\"",
                    "--rev $(git rev-parse --short HEAD)",
                ]);
                self.lit(&format!(" {sub}"));
            }
            6 => {
                let flag = *self
                    .rng
                    .pick(&["-v", "--verbose", "--dry-run", "-q", "--no-cache"]);
                self.lit(&format!(" {flag}"));
            }
            7..=8 => {
                self.lit(" ");
                self.word_value("arg");
            }
            _ => {
                self.lit(" ");
                self.quoted();
            }
        }
    }

    /// A program and its sub-command: invented mostly, a project script sometimes; or a real
    /// program with its usual arguments (git, `sed -i`), whose values are holes too. Returns
    /// whether arguments may follow.
    fn program(&mut self) -> bool {
        match self.rng.below(12) {
            0..=6 => {
                let p = word(self.rng);
                self.lit(&p);
                self.programs.insert(p.clone());
                if self.rng.chance(0.6) {
                    let sub = word(self.rng);
                    self.lit(&format!(" {sub}"));
                }
                true
            }
            7..=8 => {
                self.shapes.insert("project-program");
                let p = word(self.rng);
                let path = if self.rng.chance(0.5) {
                    format!("./bin/{p}")
                } else {
                    format!("./scripts/{p}.sh")
                };
                self.lit(&path);
                true
            }
            _ => {
                self.shapes.insert("real-program");
                match self.rng.below(6) {
                    0 => {
                        self.lit("git checkout ");
                        self.hole(&[Kind::Branch], Ctx::Bare, "branch");
                    }
                    1 => {
                        self.lit("git log --oneline -n ");
                        self.hole(&[Kind::Count], Ctx::Bare, "count");
                        self.lit(" -- ");
                        self.hole(&[Kind::Path], Ctx::Bare, "path");
                        self.last_hole_varies();
                    }
                    2 => {
                        self.shapes.insert("quoted");
                        // One version, two holes: the tag and its message.
                        self.lit("git tag -a v");
                        self.hole(&[Kind::Version], Ctx::Bare, "version");
                        let version = self.line.last().cloned();
                        self.lit(" -m \"Release ");
                        self.line.extend(version);
                        self.lit("\"");
                    }
                    3 => {
                        self.lit("git diff --stat ");
                        self.hole(&[Kind::Sha], Ctx::Bare, "sha");
                        self.last_hole_varies();
                        self.lit("..HEAD");
                    }
                    4 => {
                        self.shapes.insert("quoted");
                        self.lit("sed -i 's/^version = .*/version = \"");
                        self.hole(&[Kind::Version], Ctx::Quoted, "version");
                        self.lit("\"/' Cargo.toml");
                    }
                    _ => {
                        self.shapes.insert("quoted");
                        self.lit("git commit -am \"");
                        self.hole(&[Kind::Phrase, Kind::Version], Ctx::Quoted, "message");
                        self.lit("\"");
                    }
                }
                false
            }
        }
    }

    /// Makes the value of the hole just written vary: a look-around (`git log`, `git diff`)
    /// with fixed values is a decoy the agent runs anywhere, never a step of a habit.
    fn last_hole_varies(&mut self) {
        if let Some(Seg::Hole(v)) = self.line.last() {
            let v = *v;
            self.vars[v].varies = true;
        }
    }

    /// A simple command: environment prefixes, program, arguments.
    fn command(&mut self) {
        if self.rng.chance(0.2) {
            self.shapes.insert("env-prefix");
            let first = self.rng.below(ENV_NAMES.len());
            let count = self.rng.range(1, 2);
            for k in 0..count {
                let name = ENV_NAMES[(first + 3 * k) % ENV_NAMES.len()];
                self.lit(&format!("{name}="));
                self.hole(
                    &[Kind::Env, Kind::Ident, Kind::Port, Kind::Count],
                    Ctx::Bare,
                    &name.to_ascii_lowercase(),
                );
                self.lit(" ");
            }
        }
        if self.program() {
            // The arguments are drawn either way, so that the main stream goes on as it did.
            let saved = (
                self.line.clone(),
                self.vars.len(),
                self.shapes.clone(),
                self.programs.clone(),
            );
            for _ in 0..*self.rng.pick(&[0, 1, 1, 2, 2, 3]) {
                self.argument();
            }
            if self.side.chance(0.05) {
                (self.line, _, self.shapes, self.programs) = saved.clone();
                self.vars.truncate(saved.1);
                self.list();
            }
        }
    }

    /// The operands the command ends with: a list of packages, names or files whose number
    /// varies (`brew upgrade wget`, `brew upgrade wget jq`).
    fn list(&mut self) {
        self.shapes.insert("variadic-list");
        let kind = *self.side.pick(&[Kind::Ident, Kind::Ident, Kind::Path]);
        self.lit(" ");
        self.vars.push(Var {
            kind,
            varies: true,
            constant: String::new(),
            name: "list".to_owned(),
            list: true,
        });
        self.line.push(Seg::Hole(self.vars.len() - 1));
    }

    fn redirection(&mut self) {
        self.shapes.insert("redirection");
        match self.rng.below(4) {
            0 => self.lit(" 2>&1"),
            1 => self.lit(" 2>/dev/null"),
            2 => {
                self.lit(" > out/");
                self.hole(&[Kind::Ident, Kind::Date, Kind::Env], Ctx::Bare, "log");
                self.lit(".log");
            }
            _ => {
                self.lit(" >> logs/");
                self.hole(&[Kind::Date, Kind::Ident], Ctx::Bare, "log");
                self.lit(".txt 2>&1");
            }
        }
    }

    /// A pipeline element after the first: a text filter, sometimes with a hole.
    fn filter(&mut self, kind: usize) {
        match kind {
            0 => {
                self.lit("grep -i ");
                self.hole(&[Kind::Ident, Kind::Env], Ctx::Bare, "pattern");
            }
            1 => self.lit("grep -v DEBUG"),
            2 => {
                self.lit("tail -n ");
                self.hole(&[Kind::Count], Ctx::Bare, "lines");
            }
            3 => self.lit("head -n 20"),
            4 => {
                let f = *self.rng.pick(&["sort", "sort -u", "uniq -c", "wc -l"]);
                self.lit(f);
            }
            5 => {
                self.lit("cut -d: -f");
                self.hole(&[Kind::Count], Ctx::Bare, "field");
            }
            6 => self.lit("tr a-z A-Z"),
            7 => {
                self.lit("sed 's/");
                let w = word(self.rng);
                self.lit(&w);
                self.lit("/");
                self.hole(&[Kind::Ident, Kind::Version], Ctx::Quoted, "replacement");
                self.lit("/'");
            }
            8 => {
                let f = *self.rng.pick(&["awk '{print $2}'", "cat"]);
                self.lit(f);
            }
            _ => {
                let p = word(self.rng);
                self.lit(&p);
                self.programs.insert(p.clone());
                self.argument();
            }
        }
    }

    /// A command, or a pipeline of 2–4 elements; a redirection at its end sometimes.
    fn pipeline(&mut self) {
        self.command();
        if self.rng.chance(0.35) {
            self.shapes.insert("pipeline");
            let mut seen = BTreeSet::new();
            for _ in 0..self.rng.range(1, 3) {
                // The same filter twice in a row is no one's habit.
                let mut kind = self.rng.below(10);
                while !seen.insert(kind) {
                    kind = self.rng.below(10);
                }
                self.lit(" | ");
                self.filter(kind);
            }
        }
        if self.rng.chance(0.15) {
            self.redirection();
        }
    }

    /// A heredoc line: a commit message through `$(cat <<'EOF' …)`, or a program reading one.
    fn heredoc(&mut self) {
        self.shapes.insert("heredoc");
        if self.rng.chance(0.5) {
            self.lit("git add -u && git commit -m \"$(cat <<'EOF'\n");
            self.hole(&[Kind::Phrase], Ctx::Quoted, "message");
            self.lit("\n\nRefs: ");
            self.hole(&[Kind::Ident, Kind::Branch], Ctx::Bare, "refs");
            self.lit("\nEOF\n)\"");
        } else {
            let p = word(self.rng);
            let sub = word(self.rng);
            self.programs.insert(p.clone());
            self.lit(&format!("{p} {sub} <<'EOF'\n"));
            for _ in 0..self.rng.range(1, 3) {
                let key = word(self.rng);
                self.lit(&format!("{key}: "));
                self.hole(&WORD_KINDS, Ctx::Quoted, &key);
                self.lit("\n");
            }
            self.lit("EOF");
        }
    }

    /// One command line.
    fn line(&mut self) -> Vec<Seg> {
        self.line = Vec::new();
        if self.rng.chance(0.1) {
            self.heredoc();
            return std::mem::take(&mut self.line);
        }
        if self.rng.chance(0.06) {
            // A subshell: the directory change stays inside it.
            self.shapes.insert("subshell");
            self.lit("(cd ");
            self.hole(&[Kind::Ident], Ctx::Bare, "dir");
            self.lit(" && ");
            self.command();
            self.lit(")");
            return std::mem::take(&mut self.line);
        }
        if self.rng.chance(0.25) {
            self.shapes.insert("cd");
            self.lit("cd ");
            if self.rng.chance(0.3) {
                self.hole(&[Kind::Ident], Ctx::Bare, "dir");
            } else if self.rng.chance(0.3) {
                // As agents write it: the absolute path, quoted.
                let d = *self.rng.pick(&["frontend", "services/api", "web"]);
                self.lit(&format!("\"/home/dev/relay/{d}\""));
            } else {
                let d =
                    *self
                        .rng
                        .pick(&["frontend", "services/api", "crates/core", "web", "infra"]);
                self.lit(d);
            }
            self.lit(" && ");
        }
        self.pipeline();
        if self.rng.chance(0.2) {
            self.shapes.insert("list");
            let op = *self.rng.pick(&[" && ", "; "]);
            self.lit(op);
            self.pipeline();
        }
        if self.rng.chance(0.12) {
            self.shapes.insert("fallback");
            let text = word(self.rng);
            self.lit(&format!(" || echo \"{text} failed\""));
        }
        std::mem::take(&mut self.line)
    }
}

/// A habit of 1–3 lines with at least one varying value.
pub fn habit(id: usize, rng: &mut Rng) -> Habit {
    loop {
        let mut b = Builder {
            rng,
            side: Rng::new(0x11 ^ ((id as u64) << 8)),
            vars: Vec::new(),
            shapes: BTreeSet::new(),
            programs: BTreeSet::new(),
            line: Vec::new(),
        };
        // A habit is two lines at least (issue 30): one line, even a pipeline or `cd X && …`,
        // is one command the agent already runs in one call.
        let n = *b.rng.pick(&[2, 2, 2, 3, 3]);
        let lines: Vec<Vec<Seg>> = (0..n).map(|_| b.line()).collect();
        let (vars, mut shapes, programs) = (b.vars, b.shapes, b.programs);
        if !vars.iter().any(|v| v.varies) {
            continue;
        }
        // A shared value is one whose holes are several.
        let shared = (0..vars.len()).any(|i| {
            vars[i].varies
                && lines
                    .iter()
                    .flatten()
                    .filter(|s| **s == Seg::Hole(i))
                    .count()
                    > 1
        });
        if !shared {
            shapes.remove("shared-value");
        }
        let across = (0..vars.len()).any(|i| {
            vars[i].varies
                && lines
                    .iter()
                    .filter(|line| line.contains(&Seg::Hole(i)))
                    .count()
                    > 1
        });
        if across {
            shapes.insert("shared-across-lines");
        }
        if n > 1 {
            shapes.insert("multi-line");
        }
        let habit = Habit {
            id,
            lines,
            vars,
            shapes,
            programs,
        };
        return habit;
    }
}
