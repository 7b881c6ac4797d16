//! A token being built: its assignments, its segments (the program's words, in the order they
//! were logged: head words, flags with their values, arguments) and its redirections, rendered
//! into the token's key, template and slot values.
//!
//! The words of a shell command are rendered in the order the agent wrote them: what the CLI
//! tables know (which flags take values, which words are sub-commands) only decides what is a
//! literal word and what a slot, never where a word goes. In the key every slot is written
//! `<arg>`, whatever its value looks like, so that values of different shapes (`main`,
//! `feature/login`) never split a habit; the slot keeps its [`SlotKind`] and the template names
//! it.

use std::collections::HashMap;

use super::{Globbing, SlotKind, SlotValue, Token, TokenKind, classify};
use crate::action::placeholder::PLACEHOLDER_START;

/// How a slot is written in a key: one placeholder for every kind of value.
pub(super) const KEY_SLOT: &str = "<arg>";

/// Whether slots of this kind make a run written once (`git add <arg>`, templated
/// `git add <path>...`): files, whose number varies from one occurrence to the next. Only paths and globs: a run of words of
/// any shape would swallow the literal before a value (`origin main`).
pub fn joins_run(kind: SlotKind) -> bool {
    matches!(kind, SlotKind::Path | SlotKind::Glob)
}

/// A flag, an assignment or a named tool option, with its values.
#[derive(Debug, Clone)]
pub(super) struct FlagPart {
    /// As shown in the key: `-p`, or `NAME` for `NAME=<kind>`, or `name=value` for a literal.
    pub(super) name: String,
    /// Written `NAME=<kind>` rather than `-p <kind>`.
    pub(super) assign: bool,
    pub(super) values: Vec<(SlotKind, String)>,
    /// The slot's name in templates.
    pub(super) placeholder: String,
    /// The flag recorded in the slot values.
    pub(super) slot_flag: String,
    /// Written with its value in one word (`-j4`, `-p<kind>`, as `mysql -pSECRET` must be).
    pub(super) attached: bool,
    /// Written `--name=value`, one word.
    pub(super) eq: bool,
    /// Per value, whether the shell expanded it as a pathname pattern (a value written as a
    /// word of its own only); missing entries are `false`.
    pub(super) globs: Vec<bool>,
}

impl FlagPart {
    pub(super) fn boolean(name: &str) -> Self {
        FlagPart {
            name: name.to_owned(),
            assign: false,
            values: Vec::new(),
            placeholder: String::new(),
            slot_flag: name.to_owned(),
            attached: false,
            eq: false,
            globs: Vec::new(),
        }
    }

    pub(super) fn valued(name: &str, values: Vec<(SlotKind, String)>, placeholder: String) -> Self {
        FlagPart {
            name: name.to_owned(),
            assign: false,
            values,
            placeholder,
            slot_flag: name.to_owned(),
            attached: false,
            eq: false,
            globs: Vec::new(),
        }
    }

    pub(super) fn assign(name: &str, value: &str) -> Self {
        FlagPart {
            name: name.to_owned(),
            assign: true,
            values: vec![(classify(value), value.to_owned())],
            placeholder: name.to_ascii_lowercase(),
            slot_flag: name.to_owned(),
            attached: false,
            eq: false,
            globs: Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
pub(super) enum ArgPart {
    Lit(String),
    Slot {
        kind: SlotKind,
        value: String,
        /// Template name; the kind's name when `None`.
        name: Option<String>,
        /// Flag recorded in the slot value (a tool's field); `None` for positionals.
        flag: Option<String>,
        /// Whether the shell expanded the word as a pathname pattern.
        glob: bool,
    },
}

/// One word (or a flag with its values) of a segment, in the order it was written.
#[derive(Debug, Clone)]
pub(super) enum Part {
    /// A literal word of the head: the program, a sub-command, `-m module`, `--`.
    Head(String),
    Flag(FlagPart),
    Arg(ArgPart),
}

/// One program's part of a token: its words in logged order, and which of them are its head
/// (the program and the sub-commands that say what it does).
#[derive(Debug, Clone, Default)]
pub(super) struct Segment {
    /// The program's name and the literal words that say what it does (`git`, `stash`, `pop`).
    pub(super) head: Vec<String>,
    /// Every word, in the order it was logged.
    pub(super) parts: Vec<Part>,
}

impl Segment {
    pub(super) fn with_head(word: &str) -> Self {
        Segment {
            head: vec![word.to_owned()],
            parts: vec![Part::Head(word.to_owned())],
        }
    }

    /// A program's segment: named `name` (its basename), written `word` as logged
    /// (`./scripts/check.sh` stays a program of the project, never one found on `PATH`).
    pub(super) fn with_program(word: &str, name: &str) -> Self {
        Segment {
            head: vec![name.to_owned()],
            parts: vec![Part::Head(word.to_owned())],
        }
    }

    /// Adds a literal word of the head.
    pub(super) fn push_head(&mut self, word: &str) {
        self.head.push(word.to_owned());
        self.parts.push(Part::Head(word.to_owned()));
    }

    pub(super) fn push_flag(&mut self, flag: FlagPart) {
        self.parts.push(Part::Flag(flag));
    }

    pub(super) fn push_arg(&mut self, arg: ArgPart) {
        self.parts.push(Part::Arg(arg));
    }

    /// Whether an argument was added yet.
    pub(super) fn has_args(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Arg(_)))
    }

    /// The flags, in order.
    #[cfg(test)]
    pub(super) fn flags(&self) -> impl Iterator<Item = &FlagPart> {
        self.parts.iter().filter_map(|p| match p {
            Part::Flag(f) => Some(f),
            _ => None,
        })
    }

    /// The arguments, in order.
    #[cfg(test)]
    pub(super) fn args(&self) -> Vec<&ArgPart> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Arg(a) => Some(a),
                _ => None,
            })
            .collect()
    }

    /// An agent tool's options are a JSON object, whose order means nothing: head, then the
    /// named options sorted, then the main arguments, so one call always has one key.
    fn canonical(&mut self) {
        let parts = std::mem::take(&mut self.parts);
        let (mut heads, mut flags, mut args) = (Vec::new(), Vec::new(), Vec::new());
        for part in parts {
            match part {
                Part::Head(_) => heads.push(part),
                Part::Flag(f) => flags.push(f),
                Part::Arg(_) => args.push(part),
            }
        }
        flags.sort_by(|a, b| a.name.cmp(&b.name));
        heads.extend(flags.into_iter().map(Part::Flag));
        heads.extend(args);
        self.parts = heads;
    }
}

#[derive(Debug, Clone)]
pub(super) struct RedirPart {
    pub(super) op: String,
    pub(super) slot: Option<(SlotKind, String)>,
}

/// A token being built.
#[derive(Debug, Clone, Default)]
pub(super) struct Draft {
    pub(super) program: String,
    /// The program that finally runs, past runners (`sudo apt` → `apt`): what noise rules see.
    pub(super) innermost: String,
    /// Leading `NAME=value` assignments, in logged order.
    pub(super) assigns: Vec<FlagPart>,
    pub(super) segments: Vec<Segment>,
    pub(super) redirects: Vec<RedirPart>,
    /// The pathname expansion rules of the shell the command ran in.
    pub(super) globbing: Globbing,
}

/// The key, template and slots being rendered.
#[derive(Default)]
struct Rendered {
    key: Vec<String>,
    template: Vec<String>,
    slots: Vec<SlotValue>,
    counters: HashMap<Option<String>, usize>,
}

impl Rendered {
    fn slot(
        &mut self,
        kind: SlotKind,
        flag: Option<String>,
        value: String,
        glob: Option<Globbing>,
    ) {
        let counter = self.counters.entry(flag.clone()).or_insert(0);
        self.slots.push(SlotValue {
            kind,
            flag,
            position: *counter,
            value,
            glob,
        });
        *counter += 1;
    }

    fn word(&mut self, text: String) {
        self.key.push(text.clone());
        self.template.push(text);
    }

    fn flag(&mut self, part: FlagPart, globbing: Globbing) {
        let FlagPart {
            name,
            assign,
            values,
            placeholder,
            slot_flag,
            attached,
            eq,
            globs,
        } = part;
        let one_word = if assign || eq {
            Some("=")
        } else if attached {
            Some("")
        } else {
            None
        };
        match (one_word, values.as_slice()) {
            (Some(sep), [_]) => {
                self.key.push(format!("{name}{sep}{KEY_SLOT}"));
                self.template.push(format!("{name}{sep}<{placeholder}>"));
            }
            _ => {
                self.word(name);
                for _ in &values {
                    self.key.push(KEY_SLOT.to_owned());
                    self.template.push(format!("<{placeholder}>"));
                }
            }
        }
        for (i, (kind, value)) in values.into_iter().enumerate() {
            // Only a value written as a word of its own was a pattern by itself.
            let glob = (one_word.is_none() && globs.get(i) == Some(&true)).then_some(globbing);
            self.slot(kind, Some(slot_flag.clone()), value, glob);
        }
    }
}

impl Draft {
    pub(super) fn segment(&mut self) -> &mut Segment {
        if self.segments.is_empty() {
            self.segments.push(Segment::default());
        }
        let last = self.segments.len() - 1;
        &mut self.segments[last]
    }

    pub(super) fn finish(mut self, kind: TokenKind, cwd: Option<String>, step: usize) -> Token {
        let mut out = Rendered::default();
        let subcommand = self
            .segments
            .first()
            .filter(|seg| seg.head.len() > 1)
            .map(|seg| seg.head[1..].join(" "));
        // Assignments, then each segment's words, in the order they were written.
        let globbing = self.globbing;
        let glob = |expanded: bool| expanded.then_some(globbing);
        for part in std::mem::take(&mut self.assigns) {
            out.flag(part, globbing);
        }
        for mut seg in std::mem::take(&mut self.segments) {
            if kind == TokenKind::Tool {
                seg.canonical();
            }
            // The operands a command ends with (`brew upgrade wget jq`, `apt install a b c`):
            // one key slot whatever their number, so that the same steps with one or several
            // values of a list are one habit (issue 30); the template keeps each value, and
            // the alignment of the lines says where a list stood.
            let operands = if kind == TokenKind::Tool {
                0
            } else {
                seg.parts
                    .iter()
                    .rev()
                    .take_while(|p| {
                        matches!(p, Part::Arg(ArgPart::Slot { flag: None, value, .. })
                            if !value.contains(PLACEHOLDER_START))
                    })
                    .count()
            };
            let list_from = seg.parts.len() - operands;
            let mut taken = 0;
            let mut list_keyed = false;
            let mut parts = seg.parts.into_iter().peekable();
            while let Some(part) = parts.next() {
                let at = taken;
                taken += 1;
                let (kind, value, name, flag, expanded) = match part {
                    Part::Head(word) | Part::Arg(ArgPart::Lit(word)) => {
                        out.word(word);
                        continue;
                    }
                    Part::Flag(flag) => {
                        out.flag(flag, globbing);
                        continue;
                    }
                    Part::Arg(ArgPart::Slot {
                        kind,
                        value,
                        name,
                        flag,
                        glob: expanded,
                    }) => (kind, value, name, flag, expanded),
                };
                let label = name.unwrap_or_else(|| kind.as_str().to_owned());
                let mut run = 1;
                // A secret redacted at ingest is a slot of its own, never part of a run (a run
                // is one parameter, and the words around a secret are not).
                let collapsible =
                    flag.is_none() && joins_run(kind) && !value.contains(PLACEHOLDER_START);
                out.slot(kind, flag, value, glob(expanded));
                while collapsible
                    && let Some(Part::Arg(ArgPart::Slot {
                        kind: next_kind,
                        flag: None,
                        value: next_value,
                        ..
                    })) = parts.peek()
                    && joins_run(*next_kind)
                    && !next_value.contains(PLACEHOLDER_START)
                {
                    if let Some(Part::Arg(ArgPart::Slot {
                        kind,
                        value,
                        glob: expanded,
                        ..
                    })) = parts.next()
                    {
                        out.slot(kind, None, value, glob(expanded));
                    }
                    run += 1;
                    taken += 1;
                }
                // One file or several: one key (the number of files never splits a habit); the
                // template marks where a run may stand, and alignment says whether one did.
                let _ = run;
                if at < list_from || !list_keyed {
                    out.key.push(KEY_SLOT.to_owned());
                }
                list_keyed |= at >= list_from;
                let dots = if collapsible { "..." } else { "" };
                out.template.push(format!("<{label}>{dots}"));
            }
        }
        for r in self.redirects {
            out.word(r.op.clone());
            if let Some((kind, value)) = r.slot {
                let name = if r.op.contains('<') {
                    "input"
                } else {
                    "output"
                };
                out.key.push(KEY_SLOT.to_owned());
                out.template.push(format!("<{name}>"));
                out.slot(kind, Some(r.op), value, None);
            }
        }
        Token {
            kind,
            key: out.key.join(" "),
            template: out.template.join(" "),
            program: self.program,
            subcommand,
            slots: out.slots,
            cwd,
            step,
            pipe_from: None,
            stdin: None,
            computed: false,
            moved: false,
            by_hand: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mine::token::testing::bash;

    fn path(value: &str) -> ArgPart {
        ArgPart::Slot {
            kind: SlotKind::Path,
            value: value.to_owned(),
            name: None,
            flag: None,
            glob: false,
        }
    }

    #[test]
    fn slots_carry_values_in_logged_order() {
        let tokens = bash("cargo test -p foo --features x -p bar src/lib.rs");
        let t = &tokens[0];
        assert_eq!(t.key, "cargo test -p <arg> --features <arg> -p <arg> <arg>");
        assert_eq!(
            t.template,
            "cargo test -p <package> --features <features> -p <package> <path>..."
        );
        assert_eq!(t.program, "cargo");
        assert_eq!(t.subcommand.as_deref(), Some("test"));
        let slots: Vec<(Option<&str>, usize, &str, SlotKind)> = t
            .slots
            .iter()
            .map(|s| (s.flag.as_deref(), s.position, s.value.as_str(), s.kind))
            .collect();
        assert_eq!(
            slots,
            [
                (Some("-p"), 0, "foo", SlotKind::String),
                (Some("--features"), 0, "x", SlotKind::String),
                (Some("-p"), 1, "bar", SlotKind::String),
                (None, 0, "src/lib.rs", SlotKind::Path),
            ]
        );
        // Collapsed runs of files keep one slot per value.
        let t = &bash("git add a.rs b.rs")[0];
        assert_eq!(t.key, "git add <arg>");
        assert_eq!(t.key, bash("git add a.rs")[0].key);
        assert_eq!(t.template, "git add <path>...");
        let positions: Vec<(usize, &str)> = t
            .slots
            .iter()
            .map(|s| (s.position, s.value.as_str()))
            .collect();
        assert_eq!(positions, [(0, "a.rs"), (1, "b.rs")]);
        // Assignments and redirections are slots too.
        let t = &bash("RUST_LOG=debug cargo run > out.log")[0];
        assert_eq!(t.template, "RUST_LOG=<rust_log> cargo run > <output>");
        let flags: Vec<Option<&str>> = t.slots.iter().map(|s| s.flag.as_deref()).collect();
        assert_eq!(flags, [Some("RUST_LOG"), Some(">")]);
        // Different values, same key.
        assert_eq!(
            bash("cargo test -p a")[0].key,
            bash("cargo test -p b")[0].key
        );
    }

    /// Issue 30: the operands a command ends with are one key slot whatever their number
    /// (`brew upgrade X` and `brew upgrade X Y` are the same step); each value stays a slot
    /// of its own, in order, and what precedes the operands still counts.
    #[test]
    fn a_command_s_operands_are_one_key_slot_whatever_their_number() {
        let one = &bash("brew upgrade wget")[0];
        let two = &bash("brew upgrade wget jq")[0];
        let three = &bash("sudo apt install -y curl jq ripgrep")[0];
        assert_eq!(one.key, "brew upgrade <arg>");
        assert_eq!(two.key, one.key);
        assert_eq!(three.key, bash("sudo apt install -y curl")[0].key);
        let values: Vec<&str> = two.slots.iter().map(|s| s.value.as_str()).collect();
        assert_eq!(values, ["wget", "jq"]);
        assert_eq!(two.template.matches('<').count(), 2, "{}", two.template);
        // A flag's values and an operand before a flag are not operands the command ends with.
        assert_ne!(
            bash("tool run a -x b")[0].key,
            bash("tool run a b -x c")[0].key
        );
        assert_ne!(
            bash("cargo test -p a -p b")[0].key,
            bash("cargo test -p a")[0].key
        );
    }

    /// Issue 20: values of different shapes for one parameter (`main`, `feature/login`,
    /// `fix-1432`, a sha) give one key, so they never split a habit; each slot keeps its kind.
    #[test]
    fn a_value_s_shape_never_changes_the_key() {
        let lines = [
            "git pull --rebase origin main",
            "git pull --rebase origin feature/login",
            "git pull --rebase origin fix-1432",
            "git pull --rebase origin a1b2c3d4",
        ];
        let tokens: Vec<Token> = lines.iter().map(|l| bash(l).remove(0)).collect();
        for t in &tokens {
            assert_eq!(t.key, "git pull --rebase <arg>", "{t:?}");
        }
        let kinds: Vec<SlotKind> = tokens.iter().map(|t| t.slots[1].kind).collect();
        assert_eq!(
            kinds,
            [
                SlotKind::String,
                SlotKind::Path,
                SlotKind::String,
                SlotKind::Hex
            ]
        );
        assert_eq!(
            bash("git checkout -b feature/login")[0].key,
            bash("git checkout -b fix-1432")[0].key
        );
        assert_eq!(
            bash("RUST_LOG=debug cargo run")[0].key,
            bash("RUST_LOG=4 cargo run")[0].key
        );
    }

    #[test]
    fn a_draft_renders_its_words_in_logged_order() {
        let mut draft = Draft {
            program: "cargo".into(),
            innermost: "cargo".into(),
            ..Draft::default()
        };
        draft.assigns.push(FlagPart::assign("RUST_LOG", "debug"));
        draft.assigns.push(FlagPart::assign("CC", "clang"));
        let mut seg = Segment::with_head("cargo");
        seg.push_head("test");
        let core = vec![(SlotKind::String, "core".to_owned())];
        seg.push_flag(FlagPart::valued("-p", core, "package".into()));
        seg.push_flag(FlagPart::boolean("--release"));
        seg.push_arg(path("a.rs"));
        seg.push_arg(path("b.rs"));
        let mut jobs = FlagPart::valued("-j", vec![(SlotKind::Number, "4".into())], "jobs".into());
        jobs.attached = true;
        seg.push_flag(jobs);
        let mut features = FlagPart::valued(
            "--features",
            vec![(SlotKind::String, "x".into())],
            "features".into(),
        );
        features.eq = true;
        seg.push_flag(features);
        draft.segments.push(seg);
        draft.redirects.push(RedirPart {
            op: ">".into(),
            slot: Some((SlotKind::Path, "out.log".into())),
        });
        let token = draft.finish(TokenKind::Shell, Some("/w".into()), 2);
        assert_eq!(
            token.key,
            "RUST_LOG=<arg> CC=<arg> cargo test -p <arg> --release <arg> -j<arg> --features=<arg> > <arg>"
        );
        assert_eq!(
            token.template,
            "RUST_LOG=<rust_log> CC=<cc> cargo test -p <package> --release <path>... -j<jobs> --features=<features> > <output>"
        );
        assert_eq!(token.subcommand.as_deref(), Some("test"));
        assert_eq!((token.step, token.cwd.as_deref()), (2, Some("/w")));
        let slots: Vec<(Option<&str>, usize, &str)> = token
            .slots
            .iter()
            .map(|s| (s.flag.as_deref(), s.position, s.value.as_str()))
            .collect();
        assert_eq!(
            slots,
            [
                (Some("RUST_LOG"), 0, "debug"),
                (Some("CC"), 0, "clang"),
                (Some("-p"), 0, "core"),
                (None, 0, "a.rs"),
                (None, 1, "b.rs"),
                (Some("-j"), 0, "4"),
                (Some("--features"), 0, "x"),
                (Some(">"), 0, "out.log"),
            ]
        );
    }

    #[test]
    fn an_agent_tool_s_options_are_sorted_as_json_fields_mean_no_order() {
        let mut draft = Draft::default();
        let mut seg = Segment::with_head("Grep");
        seg.push_arg(path("src"));
        seg.push_flag(FlagPart::boolean("output_mode=content"));
        seg.push_flag(FlagPart::boolean("-i=true"));
        draft.segments.push(seg);
        let token = draft.finish(TokenKind::Tool, None, 0);
        assert_eq!(token.key, "Grep -i=true output_mode=content <arg>");
    }

    #[test]
    fn a_redacted_value_is_never_part_of_a_run_and_stays_attached() {
        let mut draft = Draft::default();
        let mut seg = Segment::with_head("mysql");
        let mut secret = FlagPart::valued(
            "-p",
            vec![(SlotKind::String, "[REDACTED:password-flag]".to_owned())],
            "p".into(),
        );
        secret.attached = true;
        seg.push_flag(secret);
        for value in ["a", "[REDACTED:user-path]", "c", "d"] {
            seg.push_arg(path(value));
        }
        draft.segments.push(seg);
        let token = draft.finish(TokenKind::Shell, None, 0);
        assert_eq!(token.key, "mysql -p<arg> <arg> <arg> <arg>");
        assert_eq!(token.template, "mysql -p<p> <path>... <path> <path>...");
        assert_eq!(token.slots.len(), 5);
    }
}
