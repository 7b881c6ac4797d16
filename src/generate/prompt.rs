//! Prompts for the model: one per origin (sequence, recovery, slow operation, request, heal),
//! each carrying the spec, the evidence (already redacted at ingest), similar registry tools,
//! the policy's constraints and the strict output contract; and the repair turn that hands a
//! failed attempt's diagnostics back.
//!
//! The model writes the implementation, the tests and the README. It never writes the manifest:
//! that is built from the spec, so a reply cannot widen a tool's sandbox profile or rename it.

use std::fmt::Write as _;

use super::contract;
use super::llm::Message;
use super::spec::{HealContext, ParamKind, ToolSpec};
use crate::invoke;
use crate::package::manifest::{Language, Origin, OutputKind};

/// The files a model must answer with for a tool in `language`.
pub fn reply_files(language: Language) -> [&'static str; 3] {
    match language {
        Language::Sh | Language::Bash => ["run.sh", "tests/cases.json", "README.md"],
        Language::Python => ["run.py", "tests/cases.json", "README.md"],
    }
}

/// A registry tool close to the one asked for, so the model does not write it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimilarTool {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
}

const SYSTEM: &str = "You write small, dependable command-line tools that a coding agent calls \
instead of repeating the same commands by hand in this codebase. Your tools run in a sandbox \
without network access, with the workspace as the working directory. They are reviewed by a \
person before anyone uses them: write plain, readable code.";

fn conventions(spec: &ToolSpec) -> String {
    let lang = match spec.language {
        // A habit of command lines runs each line as typed, in the shell it was typed in.
        Language::Bash if spec.is_lines() => {
            "bash (#!/usr/bin/env bash, `set -eu`). Run each command line exactly as the agent \
             typed it (every `cd`, pipe, redirection and `||` kept), each in a subshell with \
             `set +eu`, stopping at the first that fails; write each parameter into its place \
             as a quoted value, never as code. The entry point is run.sh."
        }
        Language::Sh => {
            "POSIX sh (#!/bin/sh, `set -eu`, no bashisms; quote every expansion). The entry point \
             is run.sh."
        }
        Language::Bash => {
            "bash (#!/usr/bin/env bash, `set -eu`, `shopt -s globstar`; quote every expansion \
             except a pathname pattern the commands expand). The entry point is run.sh."
        }
        Language::Python => {
            "Python 3 with the standard library only (#!/usr/bin/env python3, argparse). The \
             entry point is run.py."
        }
    };
    let dry_run = if spec.is_lines() {
        "prints each command line as typed, one per line, with the parameters' values written \
         into their places (quoted as the place needs: inside single quotes, double quotes or \
         bare), and runs nothing"
    } else {
        "prints each command it would run, one per line, with words that contain characters \
         other than letters, digits and `_./:=@%+,~-` in single quotes, and runs nothing"
    };
    let mut text = format!(
        "Conventions every tool follows:\n\
         - Language: {lang}\n\
         - Parameters are long options: a parameter `some_name` is `--some-name VALUE`; a \
           boolean is a bare `--flag`; an array repeats its option once per item.\n\
         - `--help` prints usage listing every option and exits 0.\n\
         - A missing required option, a bad value or an unknown option prints a message to stderr \
           and exits 2.\n\
         - With the environment variable {dry}=1 the tool {dry_run}.\n\
         - Output: {output}.\n\
         - {network}, sudo, eval, or write outside the working directory and $TMPDIR.\n",
        network = if spec.sandbox.hosts.is_empty() {
            "Never use the network (no curl, wget, ssh, sockets)".to_owned()
        } else {
            format!(
                "The package manager the steps run may reach only {} through the proxy the \
                 sandbox sets in HTTP_PROXY and HTTPS_PROXY; use nothing else of the network \
                 (no curl, wget, ssh, sockets)",
                spec.sandbox.hosts.join(", ")
            )
        },
        dry = invoke::DRY_RUN_ENV,
        output = match spec.output {
            OutputKind::Text => "plain text for an agent to read; keep it short".to_owned(),
            OutputKind::Json => format!(
                "one JSON document on stdout{}",
                spec.output_schema
                    .as_ref()
                    .map(|s| format!(", valid against this schema: {s}"))
                    .unwrap_or_default()
            ),
        }
    );
    text.push_str(
        "- tests/cases.json holds the tests run in the sandbox: {\"cases\": [{\"name\": …, \
         \"params\": {…} or \"args\": […], \"dry_run\": true|false, \"stdin\": …, \"expect\": \
         {\"exit_code\": …, \"stdout\": exact text, \"stdout_contains\": […], \
         \"stderr_contains\": […], \"stdout_matches_schema\": true}}]}. Include at least: the \
         dry run of each example below printing exactly its commands, --help, and a missing \
         required option.\n",
    );
    if spec.heal.as_ref().is_none_or(|h| h.steps_repaired) && !spec.occurrences.is_empty() {
        text.push_str(
            "- Each observed occurrence's dry run is also tested against the commands as they \
             were run, whatever tests/cases.json says.\n",
        );
    }
    text
}

fn params_text(spec: &ToolSpec) -> String {
    if spec.params.is_empty() {
        return "Parameters: none.\n".into();
    }
    let mut text = String::from("Parameters:\n");
    for p in &spec.params {
        let kind = match p.kind {
            ParamKind::Boolean => "boolean".to_owned(),
            ParamKind::Integer => "integer".to_owned(),
            ParamKind::Number => "number".to_owned(),
            other => format!("string ({})", other.placeholder().to_lowercase()),
        };
        let _ = writeln!(
            text,
            "- {} ({}{}{}{}): {}{}",
            invoke::option_name(&p.name),
            kind,
            if p.variadic {
                ", repeatable: the option once per item"
            } else {
                ""
            },
            if p.required { ", required" } else { "" },
            if spec.refuses_dash(p) {
                ", never beginning with `-`: refuse such a value with exit 2, as the command \
                 would take it for an option"
            } else {
                ""
            },
            p.description,
            if p.examples.is_empty() {
                String::new()
            } else {
                format!("; seen: {}", p.examples.join(", "))
            }
        );
    }
    text
}

fn examples_text(spec: &ToolSpec) -> String {
    if spec.occurrences.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "Observed occurrences (the dry run with these parameters must print exactly these \
         commands):\n",
    );
    for occ in spec.occurrences.iter().take(6) {
        let params: Vec<String> = occ
            .params
            .iter()
            .map(|(k, v)| format!("{}={v}", invoke::option_name(k)))
            .collect();
        let _ = writeln!(
            text,
            "- with {}:",
            if params.is_empty() {
                "no parameters".into()
            } else {
                params.join(" ")
            }
        );
        // What the log recorded, which the tests expect; the miner's rendering when the log
        // could not be read.
        if occ.logged.is_empty() {
            for c in &occ.commands {
                let _ = writeln!(text, "    {c}");
            }
        } else {
            for line in super::template::dry_run_text(&occ.logged).lines() {
                let _ = writeln!(text, "    {line}");
            }
        }
    }
    text
}

/// The first conversation for a spec.
pub fn initial(
    spec: &ToolSpec,
    similar: &[SimilarTool],
    policy_rules: &[(String, String)],
    heal: Option<&HealContext>,
) -> Vec<Message> {
    let mut user = String::new();
    let task = match spec.origin {
        Origin::MinedSequence => format!(
            "Write the tool `{}`: {}\nThe agent repeatedly ran these commands in this order:\n{}",
            spec.name,
            spec.description,
            spec.steps
                .iter()
                .map(|s| format!("    {}", s.display()))
                .collect::<Vec<_>>()
                .join("\n")
        ),
        Origin::ErrorRecovery => format!(
            "Write the tool `{}`: {}\nThe agent's command\n    {}\nkeeps failing with an \
             error matching\n    {}\nand the agent then fixes it with\n{}\nand runs the command \
             again. The tool runs the command; when its output matches that error, it runs the \
             fix and the command again; otherwise it exits with the command's status. In a dry \
             run it prints the command, the fix and the command again.",
            spec.name,
            spec.description,
            spec.trigger_step
                .as_ref()
                .map(|s| s.display())
                .unwrap_or_default(),
            spec.trigger
                .as_ref()
                .map(|t| t.error_template.clone())
                .unwrap_or_default(),
            spec.steps
                .iter()
                .map(|s| format!("    {}", s.display()))
                .collect::<Vec<_>>()
                .join("\n")
        ),
        Origin::SlowOperation => format!(
            "Write the tool `{}`: {}\nThe agent often runs\n    {}\nwhich takes about {} s each \
             time. Make the common case fast and the output short.",
            spec.name,
            spec.description,
            spec.steps.first().map(|s| s.display()).unwrap_or_default(),
            spec.median_ms.unwrap_or(0) / 1000
        ),
        Origin::Request => format!(
            "Write the tool `{}` that a developer asked for:\n    {}\n{}",
            spec.name,
            spec.request.as_deref().unwrap_or(&spec.description),
            if spec.examples.is_empty() {
                String::new()
            } else {
                format!(
                    "Example commands they gave:\n{}",
                    spec.examples
                        .iter()
                        .map(|e| format!("    {e}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                )
            }
        ),
        Origin::Heal => format!(
            "Repair the tool `{}`: {}\nIt has started failing in use.",
            spec.name, spec.description
        ),
    };
    user.push_str(&task);
    user.push_str("\n\n");
    user.push_str(&params_text(spec));
    user.push('\n');
    user.push_str(&examples_text(spec));
    if let Some(h) = heal {
        let _ = write!(
            user,
            "\nIts current implementation:\n````\n{}````\nRecent failures:\n{}\n",
            h.code,
            h.failures
                .iter()
                .map(|f| format!("- {f}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        if !h.new_evidence.is_empty() {
            let _ = write!(
                user,
                "How the agent runs these commands now:\n{}\n",
                h.new_evidence
                    .iter()
                    .map(|e| format!("    {e}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
    if !similar.is_empty() {
        user.push_str("\nTools that already exist (do not duplicate them):\n");
        for t in similar.iter().take(5) {
            let _ = writeln!(user, "- {}: {}", t.name, t.description);
        }
    }
    user.push('\n');
    user.push_str(&conventions(spec));
    if !policy_rules.is_empty() {
        user.push_str("The policy rejects code that matches any of these rules:\n");
        for (id, reason) in policy_rules {
            let _ = writeln!(user, "- {id}: {reason}");
        }
    }
    user.push('\n');
    user.push_str(&contract::instructions(&reply_files(spec.language)));
    vec![Message::system(SYSTEM), Message::user(user)]
}

/// The conversation for another attempt: the previous one, the model's reply, and what failed.
pub fn repair(previous: &[Message], reply: &str, failures: &str) -> Vec<Message> {
    let mut messages = previous.to_vec();
    messages.push(Message::assistant(reply));
    messages.push(Message::user(format!(
        "That attempt failed validation:\n{failures}\nFix every problem and answer again with \
         all the files, following the same output contract."
    )));
    messages
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::llm::Role;

    fn spec() -> ToolSpec {
        crate::generate::template::tests_support::sequence_spec()
    }

    #[test]
    fn the_prompt_carries_spec_evidence_policy_and_contract() {
        let s = spec();
        let rules = vec![(
            "net.dev-tcp".to_owned(),
            "opens a network connection".to_owned(),
        )];
        let similar = vec![SimilarTool {
            name: "cargo-fmt-all".into(),
            description: "Format every package.".into(),
        }];
        let messages = initial(&s, &similar, &rules, None);
        assert_eq!(messages[0].role, Role::System);
        let user = &messages[1].content;
        for needle in [
            "cargo-check-package",
            "cargo fmt -p <package>",
            "--package (string (value), required, never beginning with `-`",
            "cargo clippy --package=core",
            "cargo-fmt-all",
            "net.dev-tcp",
            "TOOLSMITH_DRY_RUN=1",
            "````file run.sh",
            "tests/cases.json",
        ] {
            assert!(user.contains(needle), "missing {needle} in:\n{user}");
        }
        let again = repair(
            &messages,
            "```\noops\n```",
            "- [static] sh -n\n    syntax error",
        );
        assert_eq!(again.len(), 4);
        assert_eq!(again[2].role, Role::Assistant);
        assert!(again[3].content.contains("syntax error"));
    }

    #[test]
    fn each_origin_says_what_is_wanted() {
        let mut s = spec();
        s.origin = Origin::Request;
        s.request = Some("list the crates whose tests failed last".into());
        assert!(
            initial(&s, &[], &[], None)[1]
                .content
                .contains("list the crates")
        );
        s.origin = Origin::Heal;
        let heal = HealContext {
            code: "#!/bin/sh\ncargo test --all\n".into(),
            failures: vec!["error: unexpected argument '--all' found (7 runs)".into()],
            new_evidence: vec!["cargo test --workspace".into()],
            steps_repaired: false,
        };
        let text = &initial(&s, &[], &[], Some(&heal))[1].content;
        assert!(text.contains("Repair the tool"));
        assert!(text.contains("unexpected argument '--all'"));
        assert!(text.contains("cargo test --workspace"));
    }
}
