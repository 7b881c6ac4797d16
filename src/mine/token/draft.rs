//! A token being built: its assignments, its segments (head words, flags, arguments) and its
//! redirections, rendered into the token's key, template and slot values.

use std::collections::HashMap;

use super::{SlotKind, SlotValue, Token, TokenKind, classify};
use crate::action::placeholder::PLACEHOLDER_START;

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
    /// Written with its value in one word (`-p<kind>`, as `mysql -pSECRET` must be).
    pub(super) attached: bool,
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
    },
}

/// One program's part of a token: its literal head, flags and arguments.
#[derive(Debug, Clone, Default)]
pub(super) struct Segment {
    pub(super) head: Vec<String>,
    pub(super) flags: Vec<FlagPart>,
    pub(super) args: Vec<ArgPart>,
}

impl Segment {
    pub(super) fn with_head(word: &str) -> Self {
        Segment {
            head: vec![word.to_owned()],
            ..Segment::default()
        }
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
    pub(super) assigns: Vec<FlagPart>,
    pub(super) segments: Vec<Segment>,
    pub(super) redirects: Vec<RedirPart>,
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
        let mut key: Vec<String> = Vec::new();
        let mut template: Vec<String> = Vec::new();
        let mut slots: Vec<SlotValue> = Vec::new();
        let mut counters: HashMap<Option<String>, usize> = HashMap::new();
        let mut push_slot = |slots: &mut Vec<SlotValue>, kind, flag: Option<String>, value| {
            let counter = counters.entry(flag.clone()).or_insert(0);
            slots.push(SlotValue {
                kind,
                flag,
                position: *counter,
                value,
            });
            *counter += 1;
        };

        self.assigns.sort_by(|a, b| a.name.cmp(&b.name));
        let mut flag_groups = vec![std::mem::take(&mut self.assigns)];
        let mut subcommand = None;
        for (i, seg) in self.segments.iter_mut().enumerate() {
            if i == 0 && seg.head.len() > 1 {
                subcommand = Some(seg.head[1..].join(" "));
            }
            seg.flags.sort_by(|a, b| a.name.cmp(&b.name));
            flag_groups.push(std::mem::take(&mut seg.flags));
        }
        let mut groups = flag_groups.into_iter();
        // Assignments first, then each segment: head, sorted flags, arguments.
        for part in groups.next().unwrap_or_default() {
            render_flag(&part, &mut key, &mut template);
            for (kind, value) in part.values {
                push_slot(&mut slots, kind, Some(part.slot_flag.clone()), value);
            }
        }
        for seg in std::mem::take(&mut self.segments) {
            key.extend(seg.head.iter().cloned());
            template.extend(seg.head);
            for part in groups.next().unwrap_or_default() {
                render_flag(&part, &mut key, &mut template);
                for (kind, value) in part.values {
                    push_slot(&mut slots, kind, Some(part.slot_flag.clone()), value);
                }
            }
            let mut args = seg.args.into_iter().peekable();
            while let Some(arg) = args.next() {
                match arg {
                    ArgPart::Lit(text) => {
                        key.push(text.clone());
                        template.push(text);
                    }
                    ArgPart::Slot {
                        kind,
                        value,
                        name,
                        flag,
                    } => {
                        let label = name.unwrap_or_else(|| kind.as_str().to_owned());
                        let mut run = 1;
                        // A secret redacted at ingest is a slot of its own, never part of a run
                        // (a run is one parameter, and the words around a secret are not).
                        let collapsible = flag.is_none() && !value.contains(PLACEHOLDER_START);
                        push_slot(&mut slots, kind, flag, value);
                        while collapsible
                            && let Some(ArgPart::Slot {
                                kind: next_kind,
                                flag: None,
                                value: next_value,
                                ..
                            }) = args.peek()
                            && *next_kind == kind
                            && !next_value.contains(PLACEHOLDER_START)
                        {
                            if let Some(ArgPart::Slot { value, .. }) = args.next() {
                                push_slot(&mut slots, kind, None, value);
                            }
                            run += 1;
                        }
                        let dots = if run > 1 { "..." } else { "" };
                        key.push(format!("<{kind}>{dots}"));
                        template.push(format!("<{label}>{dots}"));
                    }
                }
            }
        }
        for r in self.redirects {
            key.push(r.op.clone());
            template.push(r.op.clone());
            if let Some((kind, value)) = r.slot {
                let name = if r.op.contains('<') {
                    "input"
                } else {
                    "output"
                };
                key.push(format!("<{kind}>"));
                template.push(format!("<{name}>"));
                push_slot(&mut slots, kind, Some(r.op), value);
            }
        }
        Token {
            kind,
            key: key.join(" "),
            template: template.join(" "),
            program: self.program,
            subcommand,
            slots,
            cwd,
            step,
            pipe_from: None,
            stdin: None,
        }
    }
}

fn render_flag(part: &FlagPart, key: &mut Vec<String>, template: &mut Vec<String>) {
    if part.assign {
        let kind = part.values.first().map_or(SlotKind::String, |v| v.0);
        key.push(format!("{}=<{kind}>", part.name));
        template.push(format!("{}=<{}>", part.name, part.placeholder));
        return;
    }
    if part.attached
        && let [(kind, _)] = part.values.as_slice()
    {
        key.push(format!("{}<{kind}>", part.name));
        template.push(format!("{}<{}>", part.name, part.placeholder));
        return;
    }
    key.push(part.name.clone());
    template.push(part.name.clone());
    for (kind, _) in &part.values {
        key.push(format!("<{kind}>"));
        template.push(format!("<{}>", part.placeholder));
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
        }
    }

    #[test]
    fn slots_carry_values_in_key_order() {
        let tokens = bash("cargo test -p foo --features x -p bar src/lib.rs");
        let t = &tokens[0];
        assert_eq!(
            t.key,
            "cargo test --features <string> -p <string> -p <string> <path>"
        );
        assert_eq!(
            t.template,
            "cargo test --features <features> -p <package> -p <package> <path>"
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
                (Some("--features"), 0, "x", SlotKind::String),
                (Some("-p"), 0, "foo", SlotKind::String),
                (Some("-p"), 1, "bar", SlotKind::String),
                (None, 0, "src/lib.rs", SlotKind::Path),
            ]
        );
        // Collapsed runs keep one slot per value.
        let t = &bash("git add a.rs b.rs")[0];
        assert_eq!(t.key, "git add <path>...");
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

    #[test]
    fn a_draft_renders_assignments_sorted_flags_runs_and_redirections() {
        let mut draft = Draft {
            program: "cargo".into(),
            innermost: "cargo".into(),
            ..Draft::default()
        };
        draft.assigns.push(FlagPart::assign("RUST_LOG", "debug"));
        draft.assigns.push(FlagPart::assign("CC", "clang"));
        let mut seg = Segment::with_head("cargo");
        seg.head.push("test".into());
        let core = vec![(SlotKind::String, "core".to_owned())];
        seg.flags
            .push(FlagPart::valued("-p", core, "package".into()));
        seg.flags.push(FlagPart::boolean("--release"));
        seg.args.extend([path("a.rs"), path("b.rs")]);
        draft.segments.push(seg);
        draft.redirects.push(RedirPart {
            op: ">".into(),
            slot: Some((SlotKind::Path, "out.log".into())),
        });
        let token = draft.finish(TokenKind::Shell, Some("/w".into()), 2);
        assert_eq!(
            token.key,
            "CC=<string> RUST_LOG=<string> cargo test --release -p <string> <path>... > <path>"
        );
        assert_eq!(
            token.template,
            "CC=<cc> RUST_LOG=<rust_log> cargo test --release -p <package> <path>... > <output>"
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
                (Some("CC"), 0, "clang"),
                (Some("RUST_LOG"), 0, "debug"),
                (Some("-p"), 0, "core"),
                (None, 0, "a.rs"),
                (None, 1, "b.rs"),
                (Some(">"), 0, "out.log"),
            ]
        );
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
        seg.flags.push(secret);
        seg.args.extend([
            path("a"),
            path("[REDACTED:user-path]"),
            path("c"),
            path("d"),
        ]);
        draft.segments.push(seg);
        let token = draft.finish(TokenKind::Shell, None, 0);
        assert_eq!(token.key, "mysql -p<string> <path> <path> <path>...");
        assert_eq!(token.template, "mysql -p<p> <path> <path> <path>...");
        assert_eq!(token.slots.len(), 5);
    }
}
