use super::*;

fn words(cmd: &SimpleCommand) -> Vec<&str> {
    cmd.words.iter().map(|w| w.text.as_str()).collect()
}

fn argvs(line: &str) -> Vec<Vec<String>> {
    parse(line)
        .unwrap_or_else(|e| panic!("{line:?}: {e}"))
        .iter()
        .map(|c| c.words.iter().map(|w| w.text.clone()).collect())
        .collect()
}

#[test]
fn words_and_quotes_table() {
    let cases: &[(&str, &[&str])] = &[
        ("cargo test -p foo", &["cargo", "test", "-p", "foo"]),
        ("echo 'a b' \"c d\"", &["echo", "a b", "c d"]),
        ("echo a\\ b", &["echo", "a b"]),
        (r#"echo "a \"q\" \$x \\ \n""#, &["echo", r#"a "q" $x \ \n"#]),
        ("echo 'it''s'", &["echo", "its"]),
        ("echo \"it's\"", &["echo", "it's"]),
        ("echo pre'mid'\"post\"", &["echo", "premidpost"]),
        ("echo $'a\\tb\\x41\\u00e9\\101'", &["echo", "a\tbAéA"]),
        (
            "echo $HOME/x ${A:-b} $1 $?",
            &["echo", "$HOME/x", "${A:-b}", "$1", "$?"],
        ),
        ("echo $ a$", &["echo", "$", "a$"]),
        ("echo a#b # comment", &["echo", "a#b"]),
        ("echo a\\\nb", &["echo", "ab"]),
        ("echo one \\\n two", &["echo", "one", "two"]),
        ("echo é ü 日本", &["echo", "é", "ü", "日本"]),
        ("grep -n \"fn (\" src", &["grep", "-n", "fn (", "src"]),
        ("echo {a,b}.rs", &["echo", "{a,b}.rs"]),
        ("echo trailing\\", &["echo", "trailing\\"]),
    ];
    for (line, expected) in cases {
        let got = argvs(line);
        assert_eq!(got.len(), 1, "{line:?}: {got:?}");
        assert_eq!(&got[0], expected, "{line:?}");
    }
}

#[test]
fn quoting_and_expansion_flags() {
    let cmds = parse("echo plain 'q' $V \"$(date)\" `id` <(sort a)").unwrap();
    let flags: Vec<(bool, bool)> = cmds[0]
        .words
        .iter()
        .map(|w| (w.quoted, w.expanded))
        .collect();
    assert_eq!(
        flags,
        [
            (false, false),
            (false, false),
            (true, false),
            (false, true),
            (true, true),
            (false, true),
            (false, true)
        ]
    );
    let subs: Vec<&[String]> = cmds[0]
        .words
        .iter()
        .map(|w| w.substitutions.as_slice())
        .collect();
    assert_eq!(subs[4], ["date"]);
    assert_eq!(subs[5], ["id"]);
    assert_eq!(subs[6], ["sort a"]);
    assert_eq!(cmds[0].words[4].text, "$(date)");
    assert!(cmds[0].has_substitution());
    assert!(!parse("echo a").unwrap()[0].has_substitution());
}

#[test]
fn operators_connectors_and_pipelines() {
    let cmds = parse("a && b || c; d & e | f |& g\nh").unwrap();
    let got: Vec<(&str, Option<Connector>, bool)> = cmds
        .iter()
        .map(|c| (c.words[0].text.as_str(), c.connector, c.in_pipeline))
        .collect();
    assert_eq!(
        got,
        [
            ("a", Some(Connector::And), false),
            ("b", Some(Connector::Or), false),
            ("c", Some(Connector::Seq), false),
            ("d", Some(Connector::Background), false),
            ("e", Some(Connector::Pipe), true),
            ("f", Some(Connector::Pipe), true),
            ("g", Some(Connector::Seq), true),
            ("h", None, false),
        ]
    );
    // No spaces needed around operators; a newline may follow `&&`.
    assert_eq!(argvs("a&&b|c"), [["a"], ["b"], ["c"]]);
    assert_eq!(argvs("a &&\n  b"), [["a"], ["b"]]);
}

#[test]
fn redirections_table() {
    let cases: &[(&str, Option<u32>, RedirOp, &str)] = &[
        ("cmd > out.txt", None, RedirOp::Write, "out.txt"),
        ("cmd >> log", None, RedirOp::Append, "log"),
        ("cmd < in", None, RedirOp::Read, "in"),
        ("cmd 2> err", Some(2), RedirOp::Write, "err"),
        ("cmd 2>&1", Some(2), RedirOp::DupOut, "1"),
        ("cmd >&2", None, RedirOp::DupOut, "2"),
        ("cmd &> all", None, RedirOp::WriteAll, "all"),
        ("cmd &>> all", None, RedirOp::AppendAll, "all"),
        (
            "cmd <<< 'some text'",
            None,
            RedirOp::HereString,
            "some text",
        ),
        ("cmd >| f", None, RedirOp::Clobber, "f"),
        ("cmd 0<&3", Some(0), RedirOp::DupIn, "3"),
        ("cmd 2>&-", Some(2), RedirOp::DupOut, "-"),
        ("cmd 2>/dev/null", Some(2), RedirOp::Write, "/dev/null"),
        ("cmd >\"a b\"", None, RedirOp::Write, "a b"),
    ];
    for (line, fd, op, target) in cases {
        let cmds = parse(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
        assert_eq!(cmds.len(), 1, "{line:?}");
        assert_eq!(words(&cmds[0]), ["cmd"], "{line:?}");
        let r = &cmds[0].redirections[0];
        assert_eq!(
            (r.fd, r.op, r.target.text.as_str()),
            (*fd, *op, *target),
            "{line:?}"
        );
    }
    // A number not touching the operator is an argument.
    let cmds = parse("head -n 2 > x").unwrap();
    assert_eq!(words(&cmds[0]), ["head", "-n", "2"]);
    assert!(RedirOp::Append.writes() && !RedirOp::Read.writes());
}

#[test]
fn here_documents_are_kept_apart_from_the_words() {
    let line = "cat > types/state.ts << 'EOF'\nimport { x } from './y';\n(unbalanced \"quote\nEOF\nnpx tsc --noEmit";
    let cmds = parse(line).unwrap();
    assert_eq!(words(&cmds[0]), ["cat"]);
    assert_eq!(cmds[0].redirections.len(), 2);
    assert_eq!(
        cmds[0].redirections[1].op,
        RedirOp::HereDoc { strip_tabs: false }
    );
    assert_eq!(cmds[0].redirections[1].target.text, "EOF");
    assert_eq!(
        cmds[0].redirections[1].body.as_deref(),
        Some("import { x } from './y';\n(unbalanced \"quote\n")
    );
    assert_eq!(cmds[0].redirections[0].body, None);
    assert_eq!(words(&cmds[1]), ["npx", "tsc", "--noEmit"]);

    // `<<-` strips tabs before the delimiter.
    let cmds = parse("a <<-X\n\tbody\n\t\tmore\n\tX\nb").unwrap();
    assert_eq!(argvs_of(&cmds), [vec!["a"], vec!["b"]]);
    assert_eq!(
        cmds[0].redirections[0].body.as_deref(),
        Some("body\nmore\n")
    );
    // An unquoted delimiter: the body keeps its expansions as written.
    let cmds = parse("cat <<EOF\nhello $USER `id`\nEOF").unwrap();
    assert_eq!(
        cmds[0].redirections[0].body.as_deref(),
        Some("hello $USER `id`\n")
    );
    assert_eq!(cmds[0].redirections[0].target.text, "EOF");
    assert!(!cmds[0].redirections[0].target.quoted);

    // A here-document inside a command substitution inside double quotes.
    let line = "git commit -m \"$(cat <<'EOF'\nFix (it's broken\n\nEOF\n)\" && git push";
    let cmds = parse(line).unwrap();
    assert_eq!(cmds.len(), 2);
    assert_eq!(words(&cmds[0])[..3], ["git", "commit", "-m"]);
    assert!(cmds[0].words[3].text.starts_with("$(cat <<'EOF'"));
    assert!(cmds[0].redirections.is_empty());
    assert_eq!(words(&cmds[1]), ["git", "push"]);
}

/// What tree-sitter-bash does not accept, though bash does: rare in agents' lines, and an
/// error rather than a guess, so each stays one opaque step.
#[test]
fn grammar_limits_are_errors_not_guesses() {
    for line in [
        // A here-document without its delimiter (bash reads to the end, with a warning).
        "cat <<EOF\nno end here",
        // Two here-documents on one line.
        "a <<X <<Y\nx\nX\ny\nY\nb",
        // `<>`, open for reading and writing.
        "cmd <> f",
        // Nested subshells written `((`, which the grammar reads as arithmetic.
        "((cd a && make) ; (cd b))",
    ] {
        assert!(parse(line).is_err(), "{line:?}: {:?}", parse(line));
    }
}

fn argvs_of(cmds: &[SimpleCommand]) -> Vec<Vec<&str>> {
    cmds.iter().map(words).collect()
}

#[test]
fn assignments_lead_commands() {
    let cmds = parse("RUST_LOG=debug A+=1 B= cargo test X=1").unwrap();
    let c = &cmds[0];
    let names: Vec<(&str, &str, bool)> = c
        .assignments
        .iter()
        .map(|a| (a.name.as_str(), a.value.text.as_str(), a.append))
        .collect();
    assert_eq!(
        names,
        [
            ("RUST_LOG", "debug", false),
            ("A", "1", true),
            ("B", "", false)
        ]
    );
    // After the program, `X=1` is an ordinary argument.
    assert_eq!(words(c), ["cargo", "test", "X=1"]);
    let cmds = parse("V=\"a b\" cmd").unwrap();
    assert_eq!(cmds[0].assignments[0].value.text, "a b");
    assert!(cmds[0].assignments[0].value.quoted);
    // Not assignments: a quoted name, a name starting with a digit.
    assert_eq!(words(&parse("'A'=1 x").unwrap()[0]), ["A=1", "x"]);
    assert_eq!(words(&parse("1A=1 x").unwrap()[0]), ["1A=1", "x"]);
    // Assignment-only command and array assignment.
    let cmds = parse("arr=(a \"b c\") ; echo").unwrap();
    assert!(cmds[0].words.is_empty());
    assert_eq!(cmds[0].assignments[0].value.text, "(a b c)");
    assert_eq!(words(&cmds[1]), ["echo"]);
}

#[test]
fn cd_prefixes_become_the_directory() {
    let cmds = parse("cd /path/to/app && npx tsc --noEmit").unwrap();
    assert_eq!(cmds.len(), 1);
    assert_eq!(cmds[0].cd.as_deref(), Some("/path/to/app"));

    let cmds = parse("cd a && cd ../b; make && cd c && make test").unwrap();
    assert_eq!(argvs_of(&cmds), [vec!["make"], vec!["make", "test"]]);
    assert_eq!(cmds[0].cd.as_deref(), Some("b"));
    assert_eq!(cmds[1].cd.as_deref(), Some("b/c"));

    // A subshell's cd does not outlive it.
    let cmds = parse("(cd web && npm test) && npm run lint").unwrap();
    assert_eq!(cmds[0].cd.as_deref(), Some("web"));
    assert!(cmds[0].in_subshell);
    assert_eq!(cmds[1].cd, None);
    assert!(!cmds[1].in_subshell);

    // Kept as commands: a lone cd, `cd -`, cd in a pipeline, cd followed by `||`.
    assert_eq!(argvs("cd foo"), [["cd", "foo"]]);
    assert_eq!(parse("cd - && ls").unwrap().len(), 2);
    assert_eq!(parse("cd x || exit 1").unwrap().len(), 2);
    let cmds = parse("cd && ls").unwrap();
    assert_eq!(cmds[0].cd.as_deref(), Some("~"));
    let cmds = parse("cd -P \"my dir\"; ls").unwrap();
    assert_eq!(cmds[0].cd.as_deref(), Some("my dir"));
}

#[test]
fn compound_commands_keep_inner_commands() {
    let cases: &[(&str, &[&[&str]])] = &[
        (
            "if cargo test; then echo ok; else echo no; fi",
            &[&["cargo", "test"], &["echo", "ok"], &["echo", "no"]],
        ),
        (
            "for f in *.rs; do wc -l \"$f\"; done",
            &[&["wc", "-l", "$f"]],
        ),
        ("for f in a b\ndo\n  echo $f\ndone", &[&["echo", "$f"]]),
        (
            "for ((i=0; i<3; i++)); do echo $i; done",
            &[&["echo", "$i"]],
        ),
        (
            "while read l; do echo \"$l\"; done < in.txt",
            &[&["read", "l"], &["echo", "$l"]],
        ),
        (
            "{ make; make install; } > log",
            &[&["make"], &["make", "install"]],
        ),
        (
            "case $x in a|b) echo ab;; (c) echo c;& *) echo other;; esac",
            &[&["echo", "ab"], &["echo", "c"], &["echo", "other"]],
        ),
        (
            "case $1 in\n  start) run ;;\nesac && done_it",
            &[&["run"], &["done_it"]],
        ),
        ("f() { echo hi; }; f", &[&["echo", "hi"], &["f"]]),
        ("function g { ls; }", &[&["ls"]]),
        (
            "[[ -f a && $b < c ]] && echo yes",
            &[
                &["[[", "-f", "a", "&&", "$b", "<", "c", "]]"],
                &["echo", "yes"],
            ],
        ),
        ("(( x > 2 )) && echo big", &[&["echo", "big"]]),
        ("! grep -q x f", &[&["grep", "-q", "x", "f"]]),
        ("echo $((1 + (2 * 3)))", &[&["echo", "$((1 + (2 * 3)))"]]),
        ("x=$(case a in a) echo A;; esac) && y", &[&[], &["y"]]),
        ("echo done fi then", &[&["echo", "done", "fi", "then"]]),
        ("( (cd a && make) ; (cd b))", &[&["make"], &["cd", "b"]]),
    ];
    for (line, expected) in cases {
        let got = argvs(line);
        assert_eq!(&got, expected, "{line:?}");
    }
    let cmds = parse("(a; b) | c").unwrap();
    assert_eq!(cmds[1].connector, Some(Connector::Pipe));
    assert!(cmds[2].in_pipeline);
    let cmds = parse("if a; then b; fi && c").unwrap();
    assert_eq!(argvs_of(&cmds), [vec!["a"], vec!["b"], vec!["c"]]);
}

#[test]
fn fish_dialect() {
    let cmds = parse_dialect("git commit -m (date +%s); and git push", Dialect::Fish).unwrap();
    assert_eq!(words(&cmds[0]), ["git", "commit", "-m", "(date +%s)"]);
    assert_eq!(cmds[0].words[3].substitutions, ["date +%s"]);
    assert_eq!(cmds[0].connector, Some(Connector::And));
    assert_eq!(words(&cmds[1]), ["git", "push"]);
    let cmds = parse_dialect("echo 'it\\'s' a\\\\b", Dialect::Fish).unwrap();
    assert_eq!(words(&cmds[0]), ["echo", "it's", "a\\b"]);
    let cmds = parse_dialect(
        "for f in *.fish; source $f; end; if test -d x; cd x; end",
        Dialect::Fish,
    )
    .unwrap();
    // `cd x;` leads into more commands: it is folded, not a command.
    assert_eq!(
        argvs_of(&cmds),
        [vec!["source", "$f"], vec!["test", "-d", "x"]]
    );
    // The same line is an error in POSIX syntax.
    assert!(parse("git commit -m (date)").is_err());
}

#[test]
fn errors_table() {
    let cases: &[(&str, ShellError)] = &[
        (
            "echo 'abc",
            ShellError::UnterminatedQuote { quote: '\'', at: 5 },
        ),
        (
            "echo \"abc",
            ShellError::UnterminatedQuote { quote: '"', at: 5 },
        ),
        (
            "echo $'abc",
            ShellError::UnterminatedQuote { quote: '\'', at: 5 },
        ),
        (
            "echo $(date",
            ShellError::UnterminatedSubstitution { at: 5 },
        ),
        ("echo `date", ShellError::UnterminatedSubstitution { at: 5 }),
        (
            "echo \"$(date\"",
            ShellError::UnterminatedQuote { quote: '"', at: 5 },
        ),
        ("echo ${HOME", ShellError::UnterminatedExpansion { at: 5 }),
        ("cat >", ShellError::MissingRedirectionTarget { at: 4 }),
        ("cat > | x", ShellError::MissingRedirectionTarget { at: 4 }),
        (
            "&& ls",
            ShellError::UnexpectedToken {
                token: "&&".into(),
                at: 0,
            },
        ),
        (
            "ls && && pwd",
            ShellError::UnexpectedToken {
                token: "&&".into(),
                at: 3,
            },
        ),
        (
            "ls | ; pwd",
            ShellError::UnexpectedToken {
                token: ";".into(),
                at: 5,
            },
        ),
        (
            "ls )",
            ShellError::UnexpectedToken {
                token: ")".into(),
                at: 3,
            },
        ),
        (
            "echo a (b)",
            ShellError::UnexpectedToken {
                token: "a".into(),
                at: 5,
            },
        ),
        (
            "(a) b",
            ShellError::UnexpectedToken {
                token: "(".into(),
                at: 0,
            },
        ),
        (
            "a ;; b",
            ShellError::UnexpectedToken {
                token: ";;".into(),
                at: 2,
            },
        ),
        (
            "}",
            ShellError::UnexpectedToken {
                token: "}".into(),
                at: 0,
            },
        ),
        (
            "& ls",
            ShellError::UnexpectedToken {
                token: "&".into(),
                at: 0,
            },
        ),
        ("ls &&", ShellError::UnexpectedEnd),
        ("ls |", ShellError::UnexpectedEnd),
        ("(ls", ShellError::Unclosed { what: "subshell" }),
        (
            "{ ls;",
            ShellError::Unclosed {
                what: "brace group",
            },
        ),
        ("case x in a) b;;", ShellError::Unclosed { what: "case" }),
        ("[[ -f x", ShellError::Unclosed { what: "[[" }),
        ("for x in a b", ShellError::Unclosed { what: "loop" }),
    ];
    for (line, expected) in cases {
        assert_eq!(parse(line).as_ref(), Err(expected), "{line:?}");
    }
    // Errors render a message.
    assert_eq!(
        ShellError::UnexpectedEnd.to_string(),
        "line ends where a command is expected"
    );
}

#[test]
fn empty_and_blank_lines_have_no_commands() {
    for line in ["", "   ", "\n\n", "# only a comment", ";", " ; ; "] {
        assert_eq!(parse(line), Ok(vec![]), "{line:?}");
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    // Unclosed: the grammar's error recovery does not nest them; an error either way.
    let deep = "$(".repeat(10_000);
    assert!(parse(&format!("echo {deep}")).is_err());
    let parens = "(".repeat(10_000);
    assert!(parse(&parens).is_err());
    assert!(parse_dialect(&format!("echo {parens}"), Dialect::Fish).is_err());
    // Closed, past the limit.
    for n in [MAX_DEPTH + 1, 5_000] {
        let closed = format!("echo {}x{}", "$(".repeat(n), ")".repeat(n));
        assert!(
            matches!(parse(&closed), Err(ShellError::TooDeep { .. })),
            "{n}: {:?}",
            parse(&closed).err()
        );
        let subshells = format!("{}x{}", "( ".repeat(n), ")".repeat(n));
        assert!(matches!(parse(&subshells), Err(ShellError::TooDeep { .. })));
        let fish = format!("echo {}x{}", "(".repeat(n), ")".repeat(n));
        assert!(matches!(
            parse_dialect(&fish, Dialect::Fish),
            Err(ShellError::TooDeep { .. })
        ));
    }
    // Within the limit, nesting works.
    let ok = format!("echo {}x{}", "$(".repeat(20), ")".repeat(20));
    assert_eq!(parse(&ok).unwrap().len(), 1);
    // A long list is no nesting: `a && a && …` is read with a loop.
    let long = vec!["a"; 20_000].join(" && ");
    assert_eq!(parse(&long).unwrap().len(), 20_000);
}

#[test]
fn pathological_look_ahead_stays_linear() {
    // Every `((` looks for its `))`; the shared budget keeps this from going quadratic.
    let line = "echo $((".repeat(5_000);
    let started = std::time::Instant::now();
    assert!(parse(&line).is_err());
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn resolve_dir_table() {
    let cases: &[(Option<&str>, &str, &str)] = &[
        (None, "a", "a"),
        (None, "a/./b/", "a/b"),
        (None, "../x", "../x"),
        (None, "a/..", "."),
        (Some("/w"), "sub", "/w/sub"),
        (Some("/w/"), "./sub/../other", "/w/other"),
        (Some("/w"), "../../..", "/"),
        (Some("/w"), "~/p", "~/p"),
        (Some("~"), "..", "~"),
        (Some("rel"), "x", "rel/x"),
        (Some(""), "x", "x"),
    ];
    for (base, dir, expected) in cases {
        assert_eq!(resolve_dir(*base, dir), *expected, "{base:?} + {dir:?}");
    }
}

/// A small deterministic generator, so the fuzz test needs no extra crate.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Random strings over shell-significant pieces, and random mutations of real lines: every
/// one must parse or fail with an error, never panic or hang.
#[test]
fn garbage_never_panics() {
    const PIECES: &[&str] = &[
        " ", "\t", "\n", "'", "\"", "\\", "$", "$(", "${", "$((", "`", "(", ")", "((", "))", "{",
        "}", "[[", "]]", "&", "&&", "|", "||", ";", ";;", ";&", "<", ">", ">>", "<<", "<<-", "<<<",
        "2>&1", "&>", "<(", ">(", "#", "=", "a", "cd", "EOF", "case", "in", "esac", "for", "do",
        "done", "if", "fi", "function", "x=", "é", "\r", "\u{0}", "-",
    ];
    const SEEDS: &[&str] = &[
        "cd /a && RUST_LOG=1 cargo test -p x -- --nocapture 2>&1 | tail -5",
        "cat > f << 'EOF'\nbody (\nEOF\ngit commit -m \"$(cat <<'EOF'\nmsg\nEOF\n)\"",
        "for f in *.rs; do case $f in a) echo \"$f\";; esac; done > out",
        "x=(a b) f() { [[ -n ${x[0]} ]] && echo `id`; }; (cd b; make) &",
    ];
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for round in 0..6_000 {
        let line = if round % 2 == 0 {
            let len = rng.below(40);
            (0..len)
                .map(|_| PIECES[rng.below(PIECES.len())])
                .collect::<String>()
        } else {
            let mut chars: Vec<char> = SEEDS[rng.below(SEEDS.len())].chars().collect();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(chars.len() + 1);
                match rng.below(3) {
                    0 if at < chars.len() => {
                        chars.remove(at);
                    }
                    1 => chars.truncate(at),
                    _ => {
                        let piece = PIECES[rng.below(PIECES.len())];
                        for (k, c) in piece.chars().enumerate() {
                            chars.insert((at + k).min(chars.len()), c);
                        }
                    }
                }
            }
            chars.into_iter().collect()
        };
        for dialect in [Dialect::Posix, Dialect::Fish] {
            if let Err(e) = parse_dialect(&line, dialect) {
                // Offsets in errors point into the line.
                let at = e.at().unwrap_or(0);
                assert!(at <= line.len(), "{line:?}: {e}");
            }
        }
    }
    // Arbitrary bytes, decoded lossily as the ingest layer would.
    for _ in 0..2_000 {
        let bytes: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
        let line = String::from_utf8_lossy(&bytes);
        let _ = parse(&line);
        let _ = parse_dialect(&line, Dialect::Fish);
    }
}

#[test]
fn spans_point_at_the_words_as_typed() {
    let line = "cd web && LOG=\"a b\" npm run 'build' --mode=x 2>/dev/null | tail -n 5";
    let cmds = parse(line).unwrap();
    for cmd in &cmds {
        for w in &cmd.words {
            assert_eq!(&line[w.span.clone()], w.raw, "{w:?}");
        }
        assert!(
            line[cmd.span.clone()].starts_with(cmd.words[0].raw.as_str())
                || !cmd.assignments.is_empty()
        );
    }
    let npm = &cmds[0];
    assert_eq!(
        &line[npm.span.clone()],
        "LOG=\"a b\" npm run 'build' --mode=x 2>/dev/null"
    );
    assert_eq!(&line[npm.assignments[0].value.span.clone()], "\"a b\"");
    assert_eq!(npm.words[2].text, "build");
    assert_eq!(&line[npm.words[2].span.clone()], "'build'");
    assert_eq!(&line[npm.redirections[0].target.span.clone()], "/dev/null");
    assert_eq!(&line[cmds[1].span.clone()], "tail -n 5");
}

#[test]
fn grammar_quirks_are_read_as_bash_reads_them() {
    // A lone `-` before a here-document (the grammar drops it).
    let cmds = parse("python3 - <<'EOF'\nprint(1)\nEOF").unwrap();
    assert_eq!(words(&cmds[0]), ["python3", "-"]);
    assert_eq!(cmds[0].words[1].span, 8..9);
    assert_eq!(cmds[0].redirections[0].body.as_deref(), Some("print(1)\n"));
    // A redirection after a pipeline is its last command's.
    let cmds = parse("make 2>&1 | tail -5 > last.log").unwrap();
    assert_eq!(cmds[0].redirections.len(), 1);
    assert_eq!(cmds[1].redirections[0].target.text, "last.log");
    assert!(cmds[1].in_pipeline);
    // What follows a here-document's delimiter on its line.
    let cmds = parse("cat <<EOF | wc -l\none\ntwo\nEOF\nls").unwrap();
    assert_eq!(argvs_of(&cmds), [vec!["cat"], vec!["wc", "-l"], vec!["ls"]]);
    assert_eq!(cmds[0].connector, Some(Connector::Pipe));
    assert_eq!(cmds[0].redirections[0].body.as_deref(), Some("one\ntwo\n"));
    assert!(cmds[1].in_pipeline);
    let cmds = parse("cat <<EOF > out.txt && echo done\nx\nEOF").unwrap();
    assert_eq!(argvs_of(&cmds), [vec!["cat"], vec!["echo", "done"]]);
    let ops: Vec<RedirOp> = cmds[0].redirections.iter().map(|r| r.op).collect();
    assert_eq!(
        ops,
        [RedirOp::HereDoc { strip_tabs: false }, RedirOp::Write]
    );
    assert_eq!(cmds[0].connector, Some(Connector::And));
    // A line continuation ending the line.
    assert_eq!(argvs("make test\\\n"), [["make", "test"]]);
    // A word the grammar would skip is an error, never a dropped word.
    assert!(parse("sshnatofuz@localhost").is_err());
}

#[test]
fn foreign_shells_are_errors_not_posix_words() {
    for (line, shell) in [
        ("Get-ChildItem -Force", "powershell"),
        ("Set-Location src; npm test", "powershell"),
        ("echo $env:PATH", "powershell"),
        ("cmd /c dir", "cmd"),
        ("dir /s /b", "cmd"),
    ] {
        assert_eq!(
            parse(line),
            Err(ShellError::ForeignShell { shell }),
            "{line}"
        );
    }
    let long = "x".repeat(MAX_LINE + 1);
    assert!(matches!(parse(&long), Err(ShellError::TooLong { .. })));
}

#[test]
fn fish_operators_and_spans() {
    let line = "cd web && npm run build | tail -5";
    let cmds = parse_dialect(line, Dialect::Fish).unwrap();
    assert_eq!(
        argvs_of(&cmds),
        [vec!["npm", "run", "build"], vec!["tail", "-5"]]
    );
    assert_eq!(cmds[0].cd.as_deref(), Some("web"));
    assert_eq!(cmds[0].connector, Some(Connector::Pipe));
    assert!(cmds[1].in_pipeline);
    for w in cmds.iter().flat_map(|c| &c.words) {
        assert_eq!(&line[w.span.clone()], w.raw);
    }
    let cmds = parse_dialect("set -x A 1; FOO=bar make 2>&1 >log", Dialect::Fish).unwrap();
    assert_eq!(cmds[1].assignments[0].name, "FOO");
    assert_eq!(words(&cmds[1]), ["make"]);
    let ops: Vec<(Option<u32>, RedirOp, &str)> = cmds[1]
        .redirections
        .iter()
        .map(|r| (r.fd, r.op, r.target.text.as_str()))
        .collect();
    assert_eq!(
        ops,
        [
            (Some(2), RedirOp::DupOut, "1"),
            (None, RedirOp::Write, "log")
        ]
    );
}
