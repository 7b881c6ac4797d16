//! The token of an agent tool call (`Read <path>`, `Grep glob=<glob> <string> <path>`): known
//! tools by their fields, unknown ones (MCP tools and the like) by their short scalar fields,
//! `apply_patch` by the files its patch touches.

use serde_json::Value;

use super::draft::{ArgPart, Draft, FlagPart, Segment};
use super::{SlotKind, Token, TokenKind, classify};
use crate::action::placeholder::PLACEHOLDER_START;

/// How a tool's input field appears in its token.
#[derive(Debug, Clone, Copy)]
enum Role {
    /// A main argument, written positionally (`Read <path>`); with a fixed kind or classified.
    Arg(Option<SlotKind>),
    /// An option, written `name=<kind>`.
    Named(Option<SlotKind>),
    /// An option whose value is part of the key (`output_mode=content`).
    Literal,
}

/// One input field of a tool.
#[derive(Debug)]
struct Field {
    /// The input keys it may be under, by preference.
    keys: &'static [&'static str],
    /// Its name in templates.
    name: &'static str,
    role: Role,
}

const PATH_ARG: Field = Field {
    keys: &[
        "file_path",
        "filePath",
        "path",
        "notebook_path",
        "filename",
        "absolutePath",
    ],
    name: "path",
    role: Role::Arg(Some(SlotKind::Path)),
};

/// Known tools: names (Claude Code, Codex, OpenHands, aider, Gemini CLI, Kimi CLI, Cline,
/// Cursor, OpenCode, Crush) and their fields. Fields not
/// listed (contents, old and new strings, offsets, prompts) are left out of tokens.
static TOOLS: &[(&[&str], &[Field])] = &[
    (
        &[
            "Read",
            "read",
            "NotebookRead",
            "view_image",
            "View",
            "view",
            "ReadFile",
            "read_file",
        ],
        &[PATH_ARG],
    ),
    (
        &[
            "Write",
            "write",
            "MultiEdit",
            "multiedit",
            "NotebookEdit",
            "write_file",
            "WriteFile",
            "write_to_file",
        ],
        &[PATH_ARG],
    ),
    (
        &[
            "Edit",
            "edit",
            "str_replace_based_edit_tool",
            "str_replace_editor",
            "replace",
            "StrReplaceFile",
            "replace_in_file",
        ],
        &[
            Field {
                keys: &["command"],
                name: "command",
                role: Role::Literal,
            },
            PATH_ARG,
        ],
    ),
    (
        &["Grep", "grep", "grep_search", "rg", "search_files"],
        &[
            Field {
                keys: &["pattern", "regex"],
                name: "pattern",
                role: Role::Arg(Some(SlotKind::String)),
            },
            Field {
                keys: &["path", "dir_path"],
                name: "path",
                role: Role::Arg(Some(SlotKind::Path)),
            },
            Field {
                keys: &["glob", "include", "file_pattern"],
                name: "glob",
                role: Role::Named(Some(SlotKind::Glob)),
            },
            Field {
                keys: &["type"],
                name: "type",
                role: Role::Literal,
            },
            Field {
                keys: &["output_mode"],
                name: "output_mode",
                role: Role::Literal,
            },
            Field {
                keys: &["-i"],
                name: "-i",
                role: Role::Literal,
            },
            Field {
                keys: &["multiline"],
                name: "multiline",
                role: Role::Literal,
            },
        ],
    ),
    (
        &["Glob", "glob"],
        &[
            Field {
                keys: &["pattern", "glob_pattern"],
                name: "pattern",
                role: Role::Arg(Some(SlotKind::Glob)),
            },
            Field {
                keys: &["path", "dir_path", "target_directory"],
                name: "path",
                role: Role::Arg(Some(SlotKind::Path)),
            },
        ],
    ),
    (
        &["WebFetch", "web_fetch", "browse", "fetch"],
        &[Field {
            keys: &["url"],
            name: "url",
            role: Role::Arg(Some(SlotKind::Url)),
        }],
    ),
    (
        &["WebSearch", "web_search", "google_web_search"],
        &[Field {
            keys: &["query"],
            name: "query",
            role: Role::Arg(Some(SlotKind::String)),
        }],
    ),
    (
        &["Task", "Agent"],
        &[Field {
            keys: &["subagent_type"],
            name: "subagent_type",
            role: Role::Literal,
        }],
    ),
    (&["Delete", "list_files"], &[PATH_ARG]),
    (&["run_ipython", "KillShell", "KillBash"], &[]),
];

/// Longest value a literal field may have to be part of a key.
const MAX_LITERAL: usize = 40;

/// Longest string an unknown tool's field may have to become a slot.
const MAX_GENERIC_VALUE: usize = 200;

/// The token of an agent tool call.
pub(super) fn tool_token(tool: &str, input: &Value, cwd: Option<&str>) -> Option<Token> {
    if tool.is_empty() {
        return None;
    }
    if tool == "apply_patch" || tool == "ApplyPatch" {
        let text = ["patch", "input", "command"]
            .iter()
            .find_map(|k| input.get(*k).and_then(Value::as_str))
            .unwrap_or("");
        return patch_token(text, cwd.map(str::to_owned), 0);
    }
    let mut draft = Draft {
        program: tool.to_owned(),
        innermost: tool.to_owned(),
        ..Draft::default()
    };
    draft.segments.push(Segment::with_head(tool));
    match TOOLS.iter().find(|(names, _)| names.contains(&tool)) {
        Some((_, fields)) => {
            for field in *fields {
                let Some((key, value)) = field
                    .keys
                    .iter()
                    .find_map(|k| input.get(*k).and_then(scalar).map(|v| (*k, v)))
                else {
                    continue;
                };
                add_field(&mut draft, key, field.name, field.role, value);
            }
        }
        None => {
            let Some(object) = input.as_object() else {
                return Some(draft.finish(TokenKind::Tool, cwd.map(str::to_owned), 0));
            };
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort();
            for key in keys {
                let Some(value) = object.get(key) else {
                    continue;
                };
                let role = match value {
                    Value::Bool(_) => Role::Literal,
                    Value::Number(_) => Role::Named(Some(SlotKind::Number)),
                    Value::String(s) if s.len() <= MAX_GENERIC_VALUE && !s.contains('\n') => {
                        Role::Named(None)
                    }
                    _ => continue,
                };
                if let Some(value) = scalar(value) {
                    add_field(&mut draft, key, key, role, value);
                }
            }
        }
    }
    Some(draft.finish(TokenKind::Tool, cwd.map(str::to_owned), 0))
}

/// A JSON scalar as text.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn add_field(draft: &mut Draft, key: &str, name: &str, role: Role, value: String) {
    let seg = draft.segment();
    match role {
        Role::Arg(kind) => seg.push_arg(ArgPart::Slot {
            kind: kind.unwrap_or_else(|| classify(&value)),
            value,
            name: Some(name.to_owned()),
            flag: Some(key.to_owned()),
            glob: false,
        }),
        Role::Named(kind) => {
            let kind = kind.unwrap_or_else(|| classify(&value));
            let mut part = FlagPart::valued(name, vec![(kind, value)], name.to_owned());
            part.assign = true;
            part.slot_flag = key.to_owned();
            seg.push_flag(part);
        }
        Role::Literal
            if value.len() <= MAX_LITERAL
                && !value.contains(char::is_whitespace)
                && !value.contains(PLACEHOLDER_START) =>
        {
            seg.push_flag(FlagPart::boolean(&format!("{name}={value}")));
        }
        Role::Literal => {
            let mut part = FlagPart::valued(name, vec![(SlotKind::String, value)], name.to_owned());
            part.assign = true;
            part.slot_flag = key.to_owned();
            seg.push_flag(part);
        }
    }
}

/// The token of an `apply_patch` patch: the files it adds, updates, deletes and moves.
pub(super) fn patch_token(text: &str, cwd: Option<String>, step: usize) -> Option<Token> {
    let mut draft = Draft {
        program: "apply_patch".to_owned(),
        innermost: "apply_patch".to_owned(),
        ..Draft::default()
    };
    draft.segments.push(Segment::with_head("apply_patch"));
    for line in text.lines() {
        let line = line.trim_end();
        let found = [
            ("*** Add File: ", "add"),
            ("*** Update File: ", "update"),
            ("*** Delete File: ", "delete"),
            ("*** Move to: ", "move_to"),
        ]
        .into_iter()
        .find_map(|(prefix, op)| line.strip_prefix(prefix).map(|path| (op, path.trim())));
        if let Some((op, path)) = found {
            draft.segment().push_flag(FlagPart::valued(
                op,
                vec![(SlotKind::Path, path.to_owned())],
                op.to_owned(),
            ));
        }
    }
    Some(draft.finish(TokenKind::Tool, cwd, step))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Source;
    use crate::mine::token::testing::action;
    use crate::mine::token::tokens_of;
    use serde_json::json;

    #[test]
    fn apply_patch_lists_its_files() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Add File: src/b.rs\n+new\n*** Update File: src/c.rs\n*** End Patch";
        let codex = action(
            Source::Codex,
            "apply_patch",
            json!({ "patch": patch }),
            None,
        );
        let t = &tokens_of(&codex)[0];
        assert_eq!(t.key, "apply_patch add <arg> update <arg> update <arg>");
        let values: Vec<(&str, usize, &str)> = t
            .slots
            .iter()
            .map(|s| {
                (
                    s.flag.as_deref().unwrap_or(""),
                    s.position,
                    s.value.as_str(),
                )
            })
            .collect();
        assert_eq!(
            values,
            [
                ("add", 0, "src/b.rs"),
                ("update", 0, "src/a.rs"),
                ("update", 1, "src/c.rs")
            ]
        );
        // The same patch sent through the shell, as older Codex did.
        let shell = action(
            Source::Codex,
            "shell",
            json!({ "command": format!("apply_patch <<'EOF'\n{patch}\nEOF") }),
            None,
        );
        assert_eq!(tokens_of(&shell)[0].key, t.key);
    }

    #[test]
    fn opencode_and_crush_file_tools_are_known_by_their_paths() {
        // OpenCode's read/edit take `filePath` (sst/opencode packages/opencode/src/tool/read.ts);
        // Crush's view/multiedit take `file_path` (charmbracelet/crush internal/llm/tools).
        for (tool, input) in [
            ("read", json!({"filePath": "/w/index.html", "limit": 30})),
            (
                "edit",
                json!({"filePath": "/w/index.html", "oldString": "a", "newString": "b"}),
            ),
            ("view", json!({"file_path": "/w/index.html"})),
            (
                "multiedit",
                json!({"file_path": "/w/index.html", "edits": []}),
            ),
        ] {
            let t = tool_token(tool, &input, Some("/w")).expect("a token");
            let paths: Vec<&str> = t.slots.iter().map(|s| s.value.as_str()).collect();
            assert_eq!(paths, ["/w/index.html"], "{tool}: {}", t.key);
        }
    }

    #[test]
    fn known_tools_give_their_fields_unknown_ones_their_short_scalars() {
        let input = json!({"pattern": "fn main", "path": "src", "-i": true, "head_limit": 5});
        let t = tool_token("Grep", &input, Some("/w")).expect("a token");
        assert_eq!(t.key, "Grep -i=true <arg> <arg>");
        assert_eq!(t.template, "Grep -i=true <pattern> <path>");
        assert_eq!(t.cwd.as_deref(), Some("/w"));
        let slots: Vec<(Option<&str>, &str)> = t
            .slots
            .iter()
            .map(|s| (s.flag.as_deref(), s.value.as_str()))
            .collect();
        assert_eq!(slots, [(Some("pattern"), "fn main"), (Some("path"), "src")]);
        // A literal with spaces is a slot, not part of the key.
        let t =
            tool_token("Task", &json!({"subagent_type": "code reviewer"}), None).expect("a token");
        assert_eq!(t.key, "Task subagent_type=<arg>");
        // An unknown tool: its fields sorted; long or multi-line strings and arrays left out.
        let input = json!({"b": 2, "a": "v", "long": "x".repeat(201), "body": "a\nb", "list": [1]});
        let t = tool_token("mcp__x__y", &input, None).expect("a token");
        assert_eq!(t.key, "mcp__x__y a=<arg> b=<arg>");
        assert!(tool_token("", &json!({}), None).is_none());
        assert_eq!(scalar(&json!(1.5)).as_deref(), Some("1.5"));
        assert_eq!(scalar(&json!(null)), None);
    }

    /// Gemini CLI's file tools (google-gemini/gemini-cli `packages/core/src/tools`: `read_file`,
    /// `write_file`, `replace`, `grep_search`) as the same tools of other agents: the path a
    /// slot, contents and replaced strings left out.
    #[test]
    fn gemini_file_tools_are_shaped_like_the_others() {
        let read = tool_token(
            "read_file",
            &json!({"file_path": "src/a.rs", "start_line": 1}),
            None,
        )
        .expect("a token");
        assert_eq!(read.key, "read_file <arg>");
        assert_eq!(read.template, "read_file <path>");
        assert_eq!(read.slots[0].kind, SlotKind::Path);
        let edit = json!({"file_path": "src/a.rs", "old_string": "a", "new_string": "b"});
        let edit = tool_token("replace", &edit, None).expect("a token");
        assert_eq!(edit.key, "replace <arg>");
        assert_eq!(edit.slots.len(), 1);
        let write = json!({"file_path": "src/a.rs", "content": "x"});
        let write = tool_token("write_file", &write, None).expect("a token");
        assert_eq!(write.key, "write_file <arg>");
        assert_eq!(write.slots.len(), 1);
        let grep = json!({"pattern": "fn main", "dir_path": "src", "include": "*.rs"});
        let grep = tool_token("grep_search", &grep, None).expect("a token");
        assert_eq!(grep.template, "grep_search glob=<glob> <pattern> <path>");
    }

    #[test]
    fn kimi_cline_and_cursor_file_tools_give_their_paths() {
        let cases = [
            (
                "ReadFile",
                json!({"path": "backend/railway.toml"}),
                "ReadFile <path>",
            ),
            (
                "WriteFile",
                json!({"path": "a.json", "content": "{}"}),
                "WriteFile <path>",
            ),
            (
                "StrReplaceFile",
                json!({"path": "backend/.env", "edit": [{"old": "a", "new": "b"}]}),
                "StrReplaceFile <path>",
            ),
            (
                "read_file",
                json!({"path": "src/lib/db.ts", "task_progress": "- [ ] x"}),
                "read_file <path>",
            ),
            (
                "replace_in_file",
                json!({"absolutePath": "c:/a/b.ts", "diff": "------- SEARCH"}),
                "replace_in_file <path>",
            ),
            ("Delete", json!({"path": "debug.log"}), "Delete <path>"),
            (
                "Glob",
                json!({"glob_pattern": "**/*.log", "target_directory": "/w"}),
                "Glob <pattern> <path>",
            ),
            (
                "rg",
                json!({"pattern": "CRAWL", "path": "/w"}),
                "rg <pattern> <path>",
            ),
            (
                "search_files",
                json!({"path": "src", "regex": "firebase", "file_pattern": "*.ts"}),
                "search_files glob=<glob> <pattern> <path>",
            ),
        ];
        for (tool, input, template) in cases {
            let t = tool_token(tool, &input, None).expect("a token");
            assert_eq!(t.template, template, "{tool}");
        }
        // Cursor's ApplyPatch is a patch like Codex's apply_patch.
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** End Patch";
        let t = tool_token("ApplyPatch", &json!({"patch": patch}), None).expect("a token");
        assert_eq!(t.program, "apply_patch");
    }
}
