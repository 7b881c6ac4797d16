//! The aligner's unit tests.

use super::*;
use crate::action::{Action, ActionResult, Source};
use crate::mine::token::tokens_of;
use serde_json::json;

fn occurrence(session: &str, commands: &[&str], outputs: &[&str], cwd: &str) -> AlignInput {
    let mut tokens = Vec::new();
    for (i, c) in commands.iter().enumerate() {
        let action = Action {
            session: session.into(),
            seq: i as u64,
            ts: None,
            source: Source::ClaudeCode,
            cwd: Some(cwd.into()),
            tool: "Bash".into(),
            input: json!({ "command": c }),
            call_id: None,
            parent_session: None,
            result: Some(ActionResult {
                ok: true,
                exit_code: Some(0),
                output: String::new(),
                duration_ms: None,
            }),
        };
        tokens.extend(tokens_of(&action));
    }
    AlignInput {
        session: session.into(),
        seqs: (0, commands.len() as u64 - 1),
        outputs: outputs.iter().map(|o| Some((*o).to_owned())).collect(),
        piped: piped_flags(&tokens),
        tokens,
        replay: None,
        ok: true,
    }
}

/// An occurrence of `commands` (each one action) typed in the shell of `source`.
fn typed_in(source: Source, session: &str, commands: &[&str]) -> AlignInput {
    let tokens: Vec<Token> = commands
        .iter()
        .flat_map(|c| {
            tokens_of(&Action {
                session: session.into(),
                seq: 0,
                ts: None,
                source,
                cwd: Some("/w".into()),
                tool: "shell".into(),
                input: json!({ "command": c }),
                call_id: None,
                parent_session: None,
                result: None,
            })
        })
        .collect();
    AlignInput {
        session: session.into(),
        seqs: (0, commands.len() as u64 - 1),
        outputs: vec![None; tokens.len()],
        piped: piped_flags(&tokens),
        tokens,
        replay: None,
        ok: true,
    }
}

#[test]
fn issue_20_a_word_every_occurrence_expanded_as_a_pattern_is_marked_on_its_step() {
    let zsh = |s: &str, c: &[&str]| typed_in(Source::Zsh, s, c);
    let bash = |s: &str, c: &[&str]| typed_in(Source::Bash, s, c);
    // The same pattern every time: a literal word, expanded by zsh's rules.
    let a = align(
        &[
            zsh("s1", &["git grep foo", "grep -l bar **/*.h"]),
            zsh("s2", &["git grep baz", "grep -l qux **/*.h"]),
        ],
        10,
    )
    .unwrap();
    assert_eq!(a.steps[1].globs, [None, None, None, Some(Globbing::Zsh)]);
    assert_eq!(a.steps[1].words[3], [Piece::Literal("**/*.h".into())]);
    // Written as typed, never quoted, where the pattern shows it.
    assert_eq!(a.steps[1].template, "grep -l <value_2> **/*.h");
    assert_eq!(a.evidence[0].commands[1], "grep -l bar **/*.h");
    assert!(a.steps[0].globs.is_empty());
    // A varying pattern: a parameter, expanded. A value without pattern characters
    // expands to itself, so it agrees.
    let a = align(
        &[
            bash("s1", &["wc -l *.c"]),
            bash("s2", &["wc -l *.h"]),
            bash("s3", &["wc -l main.c"]),
        ],
        10,
    )
    .unwrap();
    assert_eq!(a.steps[0].words[2], [Piece::Param("value".into())]);
    assert_eq!(a.steps[0].globs, [None, None, Some(Globbing::Sh)]);
    // Quoted once: the tool cannot both expand it and not; it passes it as written.
    let a = align(
        &[bash("s1", &["wc -l '*.c'"]), bash("s2", &["wc -l *.h"])],
        10,
    )
    .unwrap();
    assert!(a.steps[0].globs.is_empty());
    // Expanded by shells of different rules: as written too.
    let a = align(&[bash("s1", &["wc -l *.c"]), zsh("s2", &["wc -l *.h"])], 10).unwrap();
    assert!(a.steps[0].globs.is_empty());
    // A constant run of files spread over words: each word marked by itself.
    let a = align(
        &[
            bash("s1", &["git add *.md src/a.rs", "git commit -m one"]),
            bash("s2", &["git add *.md src/a.rs", "git commit -m two"]),
        ],
        10,
    )
    .unwrap();
    assert_eq!(a.steps[0].globs, [None, None, Some(Globbing::Sh), None]);
}

#[test]
fn constant_slots_are_literals_and_varying_ones_parameters() {
    let occs = vec![
        occurrence(
            "s1",
            &["cargo build -p core", "cargo test -p core --lib"],
            &["", ""],
            "/a",
        ),
        occurrence(
            "s2",
            &["cargo build -p cli", "cargo test -p cli --lib"],
            &["", ""],
            "/a",
        ),
        occurrence(
            "s3",
            &["cargo build -p core", "cargo test -p core --lib"],
            &["", ""],
            "/b",
        ),
    ];
    let a = align(&occs, 10).expect("aligned");
    assert_eq!(a.params.len(), 1, "{:?}", a.params);
    let p = &a.params[0];
    assert_eq!((p.name.as_str(), p.kind.as_str()), ("package", "string"));
    assert_eq!(p.examples, ["core", "cli"]);
    assert_eq!(a.steps[0].template, "cargo build -p <package>");
    assert!(
        a.steps[1].template.starts_with("cargo test"),
        "{}",
        a.steps[1].template
    );
    assert!(a.steps[1].template.contains("-p <package>"));
    assert!(a.workspace_varies);
    assert_eq!(a.evidence.len(), 3);
    assert_eq!(a.evidence[1].params["package"], "cli");
    assert_eq!(a.evidence[1].commands[0], "cargo build -p cli");
    assert_eq!(a.success_rate, 1.0);
}

#[test]
fn a_value_printed_by_an_earlier_step_is_internal() {
    let occs = vec![
        occurrence(
            "s1",
            &["git rev-parse HEAD", "git show 3f2a9c1b7d"],
            &["3f2a9c1b7d\n", ""],
            "/r",
        ),
        occurrence(
            "s2",
            &["git rev-parse HEAD", "git show 9e8d7c6b5a"],
            &["9e8d7c6b5a\n", ""],
            "/r",
        ),
    ];
    let a = align(&occs, 10).expect("aligned");
    assert!(a.params.is_empty(), "{:?}", a.params);
    assert_eq!(a.internals.len(), 1);
    assert_eq!((a.internals[0].from_step, a.internals[0].to_step), (0, 1));
    assert_eq!(a.steps[0].captures.as_deref(), Some("out_1"));
    assert_eq!(a.steps[1].template, "git show <out_1>");
    assert!(!a.workspace_varies);
}

#[test]
fn messages_are_text_and_numbers_are_typed() {
    let occs = vec![
        occurrence(
            "s1",
            &["git commit -m 'fix the parser'", "git log -n 3"],
            &["", ""],
            "/r",
        ),
        occurrence(
            "s2",
            &["git commit -m 'add a test'", "git log -n 5"],
            &["", ""],
            "/r",
        ),
    ];
    let a = align(&occs, 10).expect("aligned");
    let kinds: Vec<(&str, &str)> = a
        .params
        .iter()
        .map(|p| (p.name.as_str(), p.kind.as_str()))
        .collect();
    assert!(
        kinds.contains(&("message", "text")) || kinds.iter().any(|(_, k)| *k == "text"),
        "{kinds:?}"
    );
    assert!(kinds.iter().any(|(_, k)| *k == "number"), "{kinds:?}");
    assert_eq!(a.evidence[0].commands[0], "git commit -m 'fix the parser'");
}

#[test]
fn a_run_of_arguments_stays_a_run_of_words() {
    let occs = vec![
        occurrence(
            "s1",
            &["git add src/a.rs src/b.rs", "cargo build -p core"],
            &["", ""],
            "/r",
        ),
        occurrence(
            "s2",
            &["git add src/a.rs src/b.rs", "cargo build -p cli"],
            &["", ""],
            "/r",
        ),
    ];
    let a = align(&occs, 10).expect("aligned");
    assert_eq!(
        a.steps[0].words,
        [
            vec![Piece::Literal("git".into())],
            vec![Piece::Literal("add".into())],
            vec![Piece::Literal("src/a.rs".into())],
            vec![Piece::Literal("src/b.rs".into())],
        ]
    );
    assert_eq!(a.steps[0].template, "git add src/a.rs src/b.rs");
    let occs = vec![
        occurrence(
            "s1",
            &["git add src/a.rs src/b.rs", "git status"],
            &["", ""],
            "/r",
        ),
        occurrence("s2", &["git add README.md", "git status"], &["", ""], "/r"),
    ];
    let a = align(&occs, 10).expect("aligned");
    assert!(a.params[0].variadic, "{:?}", a.params);
    assert_eq!(a.evidence[0].commands[0], "git add src/a.rs src/b.rs");
    assert_eq!(a.evidence[0].params["path"], "src/a.rs src/b.rs");
}

#[test]
fn a_value_redacted_at_ingest_is_a_parameter_never_a_literal() {
    // Every occurrence shows the same placeholders (the secrets differed, their kinds do
    // not): without the rule, these columns would be literals, replayed as arguments.
    let commands = [
        "aws configure set aws_secret_access_key [REDACTED:aws-secret-key]",
        "mysql -uroot -p[REDACTED:password-flag] shop -e 'select 1'",
        "DEPLOY_TOKEN=[REDACTED:secret-assignment] make deploy",
        "curl -u admin:[REDACTED:password-flag] https://ci.example.com/api",
    ];
    let occs: Vec<AlignInput> = ["s1", "s2", "s3"]
        .iter()
        .map(|s| occurrence(s, &commands, &["", "", "", ""], "/r"))
        .collect();
    let a = align(&occs, 10).expect("aligned");
    let secrets: Vec<&Param> = a.params.iter().filter(|p| p.secret).collect();
    assert_eq!(secrets.len(), 4, "{:?}", a.params);
    assert!(a.params.iter().all(|p| p.secret), "{:?}", a.params);
    for step in &a.steps {
        for piece in step.words.iter().flatten() {
            if let Piece::Literal(t) = piece {
                assert!(!t.contains(PLACEHOLDER_START), "literal {t:?} in {step:?}");
            }
        }
        assert!(
            !step.template.contains(PLACEHOLDER_START),
            "{}",
            step.template
        );
    }
    assert_eq!(
        a.steps[1].template, "mysql -uroot -p<secret_2> shop -e 'select 1'",
        "{:?}",
        a.steps[1]
    );
    // Two secrets with the same placeholder in every occurrence are two parameters.
    let names: std::collections::HashSet<&str> = a.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names.len(), 4, "{:?}", a.params);
    // The evidence keeps the placeholders: mining shows where a secret was.
    assert!(
        a.evidence[0].commands[0].contains("[REDACTED:aws-secret-key]"),
        "{:?}",
        a.evidence[0]
    );
    assert_eq!(
        a.steps[0].template,
        "aws configure set aws_secret_access_key <secret>"
    );
}

#[test]
fn template_words_are_cut_into_placeholders() {
    assert_eq!(
        segments("--features=<features>"),
        vec![
            Segment::Text("--features=".into()),
            Segment::Slot {
                name: "features".into(),
                variadic: false,
                list: false
            }
        ]
    );
    assert_eq!(
        segments("<path>..."),
        vec![Segment::Slot {
            name: "path".into(),
            variadic: true,
            list: false
        }]
    );
    assert_eq!(segments("<<EOF"), vec![Segment::Text("<<EOF".into())]);
    assert_eq!(segments("<"), vec![Segment::Text("<".into())]);
    assert_eq!(param_name("--test-threads"), "test_threads");
    assert_eq!(param_name("2nd"), "arg_2nd");
    assert_eq!(param_name("--"), "arg");
}

#[test]
fn occurrences_that_do_not_fit_the_first_ones_templates_are_left_out() {
    let occs = vec![
        occurrence("s1", &["cargo test -p core", "git push"], &["", ""], "/r"),
        occurrence("s2", &["cargo test -p cli", "git push"], &["", ""], "/r"),
        // One step short.
        occurrence("s3", &["cargo test -p web"], &[""], "/r"),
        // Two packages where the template has one.
        occurrence("s4", &["cargo test -p a -p b", "git push"], &["", ""], "/r"),
        occurrence("s5", &["cargo test -p core", "git push"], &["", ""], "/r"),
    ];
    let templates = step_templates(&occs[0]);
    assert_eq!(templates.len(), 2);
    assert_eq!(
        templates[0].last(),
        Some(&vec![Segment::Slot {
            name: "package".into(),
            variadic: false,
            list: false
        }])
    );
    let (fitting, values) = fitting_occurrences(&occs, &templates);
    let sessions: Vec<&str> = fitting.iter().map(|o| o.session.as_str()).collect();
    assert_eq!(sessions, ["s1", "s2", "s5"]);
    assert_eq!(values[1][0][0].0, "cli");
    assert_eq!(values[1][1].len(), 0);
    // Three of five fit (the package repeats, so it is a parameter worth its name).
    let a = align(&occs, 10).expect("aligned");
    assert_eq!(a.consistency, 0.6);
    assert_eq!(a.evidence.len(), 3);
    assert!(align(&[], 10).is_none());
}

#[test]
fn each_placeholder_gets_one_role() {
    let occs = vec![
        occurrence(
            "s1",
            &[
                "git rev-parse HEAD",
                "git show 3f2a9c1b7d",
                "git tag v1 -m one",
                "git push -f",
            ],
            &["3f2a9c1b7d\n", "", "", ""],
            "/r",
        ),
        occurrence(
            "s2",
            &[
                "git rev-parse HEAD",
                "git show 9e8d7c6b5a",
                "git tag v2 -m two",
                "git push -f",
            ],
            &["9e8d7c6b5a\n", "", "", ""],
            "/r",
        ),
    ];
    let templates = step_templates(&occs[0]);
    let (fitting, values) = fitting_occurrences(&occs, &templates);
    let roles = assign_roles(&templates, &values, &fitting, &occs[0]);
    // `HEAD` never changes; the sha was printed by step 0; the tag and message vary.
    assert_eq!(roles.of[&(0, 0)], Role::Literal("HEAD".into()));
    assert_eq!(roles.of[&(1, 0)], Role::Internal(0));
    assert_eq!(roles.captures.get(&0).map(String::as_str), Some("out_1"));
    let names: Vec<(&str, &str)> = roles
        .params
        .iter()
        .map(|p| (p.name.as_str(), p.named_from.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("value", "position 1 of `git tag <string> -m <message>`"),
            ("message", "flag -m")
        ]
    );
    assert_eq!(roles.param_values[1], ["one", "two"]);
    // Two placeholders always varying as plain strings: the literal, the internal, and no
    // more.
    assert_eq!((roles.literal_or_typed, roles.total), (2, 4));
    assert_eq!(roles.consistency(), 0.5);
}

#[test]
fn a_placeholder_holding_a_parameters_values_is_that_parameter() {
    let occs = vec![
        occurrence(
            "s1",
            &["cargo build -p core", "cargo test -p core"],
            &["", ""],
            "/r",
        ),
        occurrence(
            "s2",
            &["cargo build -p cli", "cargo test -p cli"],
            &["", ""],
            "/r",
        ),
    ];
    let templates = step_templates(&occs[0]);
    let (fitting, values) = fitting_occurrences(&occs, &templates);
    let roles = assign_roles(&templates, &values, &fitting, &occs[0]);
    assert_eq!(roles.params.len(), 1);
    assert_eq!(roles.of[&(0, 0)], Role::Param(0));
    assert_eq!(roles.of[&(1, 0)], Role::Param(0));
}

#[test]
fn parameter_names_types_and_examples() {
    let values = |vs: &[&str]| vs.iter().map(|v| (*v).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        most_common(&values(&["b", "a", "b", "c", "a", "b"]), 2),
        ["b", "a"]
    );
    assert!(typed_or_repeating("path", &values(&["a", "b"]), 2));
    assert!(typed_or_repeating("string", &values(&["a", "a", "b"]), 3));
    assert!(!typed_or_repeating("string", &values(&["a", "b"]), 2));
    assert!(!typed_or_repeating("text", &values(&["a b", "c d"]), 2));
    assert_eq!(
        param_kind(&[SlotKind::Number; 2], &values(&["1", "2"])),
        "number"
    );
    assert_eq!(
        param_kind(&[SlotKind::Number; 2], &values(&["1.5", "2"])),
        "string"
    );
    assert_eq!(
        param_kind(&[SlotKind::Path, SlotKind::String], &values(&["a", "b"])),
        "string"
    );
    // Files with bare names among them are files; branches with slashes are not.
    let kinds = [
        SlotKind::Path,
        SlotKind::Path,
        SlotKind::String,
        SlotKind::String,
    ];
    assert_eq!(
        param_kind(
            &kinds,
            &values(&["perl_1.pl", "Gemfile", "cpanfile", "2nd"])
        ),
        "path"
    );
    assert_eq!(
        param_kind(
            &kinds,
            &values(&["feature/login", "release/2.1", "main", "fix-1432"])
        ),
        "string"
    );
    assert_eq!(
        param_kind(&kinds[1..], &values(&["a.rs", "b", "--all"])),
        "string"
    );
    assert_eq!(
        param_kind(&[SlotKind::Hex; 2], &values(&["a1b2c3d", "b"])),
        "sha"
    );
    // A name already taken gets a number; a secret without a better name is `secret`.
    let token = &occurrence("s", &["git add a.rs b.rs"], &[""], "/r").tokens[0];
    let column = |name: &'static str, kinds, vs: &[&str]| Column {
        step: 0,
        index: 0,
        name,
        variadic: true,
        values: values(vs),
        kinds,
        first_value: "a.rs".into(),
    };
    let paths = column("path", vec![SlotKind::Path; 2], &["a.rs b.rs", "c.rs"]);
    let first = new_param(&paths, false, token, &[]);
    // A run of several files is paths, not the text its joined values look like.
    assert_eq!((first.name.as_str(), first.kind.as_str()), ("path", "path"));
    assert_eq!(first.named_from, "position 1 of `git add <path>...`");
    assert!(first.variadic && !first.secret);
    let second = new_param(&paths, false, token, std::slice::from_ref(&first));
    assert_eq!(second.name, "path_2");
    let secret = column(
        "string",
        vec![SlotKind::String; 2],
        &["[REDACTED:x]", "[REDACTED:x]"],
    );
    assert_eq!(new_param(&secret, true, token, &[]).name, "secret");
    let plain = column(
        "string",
        vec![SlotKind::Url; 2],
        &["http://a.b/c", "http://d.e/f"],
    );
    assert_eq!(new_param(&plain, false, token, &[]).name, "url");
}

#[test]
fn a_value_printed_earlier_is_found_by_its_step() {
    let occs = [
        occurrence(
            "s1",
            &["make id", "make tag", "deploy abc123x"],
            &["id abc123x", "x", ""],
            "/r",
        ),
        occurrence(
            "s2",
            &["make id", "make tag", "deploy def456y"],
            &["def456y\n", "y", ""],
            "/r",
        ),
    ];
    let fitting: Vec<&AlignInput> = occs.iter().collect();
    let values = vec!["abc123x".to_owned(), "def456y".to_owned()];
    assert_eq!(printed_earlier(&fitting, 2, &values), Some(0));
    assert_eq!(printed_earlier(&fitting, 0, &values), None);
    // Inside a longer word is not printed.
    assert!(!printed("xabc123x", "abc123x"));
    assert!(printed("(abc123x)", "abc123x"));
}

/// The words a command line gives its program, as the shell splits them.
fn argv(line: &str) -> Vec<String> {
    crate::mine::shell::parse(line)
        .expect("the line parses")
        .iter()
        .flat_map(|c| c.words.iter().map(|w| w.text.clone()))
        .collect()
}

/// Aligns one-step occurrences of `lines` and checks what issue 20 asks: the step's words
/// in the order they were logged, each occurrence's command word for word, and a flag's
/// value next to its flag. Returns the alignment.
fn faithful(lines: &[&str], template: &str) -> Aligned {
    let occs: Vec<AlignInput> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| occurrence(&format!("s{i}"), &[l], &[""], "/w"))
        .collect();
    let a = align(&occs, 20).expect("aligned");
    assert_eq!(a.evidence.len(), lines.len(), "every occurrence fits");
    assert_eq!(a.steps[0].template, template);
    for (line, evidence) in lines.iter().zip(&a.evidence) {
        assert_eq!(argv(&evidence.commands[0]), argv(line), "{line}");
    }
    a
}

fn names(a: &Aligned) -> Vec<(&str, &str)> {
    a.params
        .iter()
        .map(|p| (p.name.as_str(), p.kind.as_str()))
        .collect()
}

#[test]
fn issue_20_objdump_keeps_its_order_and_each_flag_its_value() {
    let a = faithful(
        &[
            "objdump -d build/agent --start-address 0x4013b0 --stop-address 0x402c60",
            "objdump -d build/agent --start-address 0x4064f0 --stop-address 0x406850",
            "objdump -d out/loader --start-address 0x401000 --stop-address 0x401200",
        ],
        "objdump -d <path> --start-address <number> --stop-address <number_2>",
    );
    assert_eq!(
        names(&a),
        [
            ("path", "path"),
            ("number", "string"),
            ("number_2", "string")
        ]
    );
}

#[test]
fn issue_20_openssl_x509_keeps_its_order() {
    faithful(
        &[
            "openssl x509 -in certs/relay.example.com.pem -noout -subject -enddate",
            "openssl x509 -in tls/mqtt-broker.pem -noout -subject -enddate",
        ],
        "openssl x509 -in <in> -noout -subject -enddate",
    );
}

#[test]
fn issue_20_an_unknown_cli_keeps_its_sub_command_first_and_its_flag_values() {
    // `coverage` has no table entry: the sub-command is the same in every occurrence, so
    // it is a literal, in its place; `--include=…` stays one word.
    faithful(
        &[
            "coverage report -m --include=src/storage/*",
            "coverage report -m --include=src/cli/*",
        ],
        "coverage report -m --include=<include>",
    );
    faithful(
        &[
            "coverage run -m pytest tests/test_cli.py -q",
            "coverage run -m pytest tests/test_storage.py -q",
        ],
        "coverage run -m pytest <path> -q",
    );
}

#[test]
fn issue_20_a_project_script_keeps_its_path() {
    let a = faithful(
        &[
            "./scripts/check.sh --module auth",
            "./scripts/check.sh --module billing",
        ],
        "./scripts/check.sh --module <value>",
    );
    assert_eq!(names(&a), [("value", "string")]);
    faithful(
        &["./gradlew test --tests Foo", "./gradlew test --tests Bar"],
        "./gradlew test --tests <tests>",
    );
}

#[test]
fn issue_20_the_heredoc_commit_message_is_the_value() {
    let commit = |subject: &str| {
        format!(
            "git add src/cache.py && git commit -m \"$(cat <<'EOF'\n{subject}\n\nThe TTL was wrong.\n\n🤖 Generated with [Claude Code](https://claude.com/claude-code)\nEOF\n)\""
        )
    };
    let lines = [commit("Expire cache entries"), commit("Fix the parser")];
    let occs: Vec<AlignInput> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| occurrence(&format!("s{i}"), &[l], &[""], "/w"))
        .collect();
    let a = align(&occs, 20).expect("aligned");
    // `a && b` keeps both.
    let templates: Vec<&str> = a.steps.iter().map(|s| s.template.as_str()).collect();
    assert_eq!(
        templates,
        ["git add src/cache.py", "git commit -m <message>"]
    );
    assert_eq!(names(&a), [("message", "text")]);
    let message = &a.evidence[1].params["message"];
    assert!(
        message.starts_with("Fix the parser\n\nThe TTL"),
        "{message}"
    );
    assert!(
        message.ends_with("(https://claude.com/claude-code)"),
        "{message}"
    );
    assert!(
        !message.contains("EOF") && !message.contains("$("),
        "{message}"
    );
    assert_eq!(
        argv(&a.evidence[1].commands[1]),
        ["git", "commit", "-m", message.as_str()]
    );
}

#[test]
fn issue_20_one_file_or_several_is_one_habit() {
    let a = faithful(
        &[
            "git add README.md",
            "git add src/a.py tests/test_a.py",
            "git add pyproject.toml",
        ],
        "git add <path>",
    );
    assert!(a.params[0].variadic, "{:?}", a.params);
    // Never more than one file: a plain parameter.
    let a = faithful(&["git add README.md", "git add src/a.py"], "git add <path>");
    assert!(!a.params[0].variadic, "{:?}", a.params);
}

#[test]
fn a_run_of_files_is_a_path_parameter_whatever_its_values_look_like() {
    // Seen in a Claude Code session: the directories a `mkdir -p` makes, one or several,
    // with or without a slash, are paths (a run's values are joined with spaces, which is
    // no sign of free text).
    let a = faithful(
        &[
            "mkdir -p components",
            "mkdir -p src/auth src/socket src/claude",
            "mkdir -p types",
        ],
        "mkdir -p <path>",
    );
    assert_eq!(names(&a), [("path", "path")], "{:?}", a.params);
    assert!(a.params[0].variadic);
}

#[test]
fn issue_20_branch_values_of_any_shape_are_one_parameter() {
    let a = faithful(
        &[
            "git pull --rebase origin main",
            "git pull --rebase origin feature/login",
            "git pull --rebase origin fix-1432",
            "git pull --rebase origin deps/bump-tokio",
        ],
        "git pull --rebase origin <value>",
    );
    assert_eq!(names(&a), [("value", "string")]);
    assert_eq!(
        a.params[0].examples,
        ["deps/bump-tokio", "feature/login", "fix-1432", "main"]
    );
    // The first occurrence's value a path, the others not: still one parameter of the
    // joined kind, named by it.
    let a = faithful(
        &["git checkout feature/login", "git checkout fix-1432"],
        "git checkout <value>",
    );
    assert_eq!(names(&a), [("value", "string")]);
}

/// Issue 30: the same steps with one or several operands (`brew upgrade wget`, `brew upgrade
/// wget jq`) are one list parameter every occurrence fits; operands whose number never varies
/// stay values of their own, a constant one literal.
#[test]
fn operands_of_varying_number_are_one_list_every_occurrence_fits() {
    let occs = vec![
        occurrence("s1", &["brew update", "brew upgrade wget"], &["", ""], "/r"),
        occurrence(
            "s2",
            &["brew update", "brew upgrade wget jq"],
            &["", ""],
            "/r",
        ),
        occurrence(
            "s3",
            &["brew update", "brew upgrade node fd rg"],
            &["", ""],
            "/r",
        ),
        occurrence(
            "s4",
            &["brew update", "brew upgrade ffmpeg"],
            &["", ""],
            "/r",
        ),
    ];
    let a = align(&occs, 20).expect("aligned");
    let lists: Vec<&str> = a
        .evidence
        .iter()
        .filter_map(|e| e.params.values().next().map(String::as_str))
        .collect();
    assert_eq!(lists, ["wget", "wget jq", "node fd rg", "ffmpeg"]);
    assert_eq!(a.params.len(), 1, "{:?}", a.params);
    assert!(a.params[0].variadic);
    // As consistent as one operand in every occurrence.
    let one: Vec<AlignInput> = ["wget", "jq", "node", "ffmpeg"]
        .iter()
        .enumerate()
        .map(|(k, p)| {
            let upgrade = format!("brew upgrade {p}");
            occurrence(
                &format!("s{k}"),
                &["brew update", &upgrade],
                &["", ""],
                "/r",
            )
        })
        .collect();
    let fixed = align(&one, 20).expect("aligned");
    assert_eq!(fixed.evidence.len(), 4);
    assert!(
        (a.consistency - fixed.consistency).abs() < 1e-9,
        "every occurrence fits: {} against {}",
        a.consistency,
        fixed.consistency
    );
    let occs = vec![
        occurrence("s1", &["git pull --rebase origin main"], &[""], "/r"),
        occurrence("s2", &["git pull --rebase origin dev"], &[""], "/r"),
    ];
    let a = align(&occs, 20).expect("aligned");
    assert_eq!(a.params.len(), 1, "{:?}", a.params);
    assert!(!a.params[0].variadic);
    assert_eq!(a.steps[0].template, "git pull --rebase origin <value>");
}
