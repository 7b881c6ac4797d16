//! A command line into tokens: one per simple command the shell parser finds, with the working
//! directory a `cd DIR &&` prefix gives, the pipe it reads, data written out in the line as a
//! text filter's input, its redirections, and the noise rules applied.

use super::agent_tools::patch_token;
use super::argv::{command_args, strip_wrappers};
use super::draft::{Draft, FlagPart, RedirPart, Segment};
use super::tables::cli;
use super::{
    Globbing, LineParse, MAX_INLINE_INPUT, SlotKind, SlotValue, TEXT_FILTERS, Token, TokenKind,
    Tokenizer, UNPARSED, basename, classify,
};
use crate::mine::shell::{self, Dialect, RedirOp, ShellError, SimpleCommand, Word};

impl Tokenizer {
    /// The tokens of one command line, and whether it parsed.
    pub(super) fn line_tokens(
        &self,
        line: &str,
        dialect: Dialect,
        globbing: Globbing,
        cwd: Option<&str>,
    ) -> (Vec<Token>, LineParse) {
        let commands = match shell::parse_dialect(line, dialect) {
            Ok(commands) => commands,
            // PowerShell or cmd.exe: never read as POSIX words, not even its first line.
            Err(ShellError::ForeignShell { .. }) => {
                return (
                    self.unparsed(line, cwd).into_iter().collect(),
                    LineParse::Foreign,
                );
            }
            Err(_) => {
                // A multi-line text whose first line is a command (SWE-agent, aider) is still
                // worth that command.
                let first = line.lines().next().unwrap_or("");
                match shell::parse_dialect(first, dialect) {
                    Ok(commands) if first.len() < line.len() => commands,
                    _ => {
                        return (
                            self.unparsed(line, cwd).into_iter().collect(),
                            LineParse::Unparsed,
                        );
                    }
                }
            }
        };
        let mut tokens: Vec<Token> = Vec::new();
        let mut reads_pipe = false;
        // The step of the last command of the current pipeline that has a token.
        let mut pipe_source: Option<usize> = None;
        // Text written out in the line that the next command reads through the pipe.
        let mut inline: Option<String> = None;
        for (step, cmd) in commands.iter().enumerate() {
            let from_pipe = reads_pipe;
            reads_pipe = cmd.connector == Some(shell::Connector::Pipe);
            if !from_pipe {
                pipe_source = None;
                inline = None;
            }
            // `echo '{"a":1}' | jq .a`: the data is the filter's input, not a step of its own.
            if !from_pipe
                && reads_pipe
                && commands.get(step + 1).is_some_and(is_text_filter_program)
                && let Some(data) = inline_producer(cmd)
            {
                inline = Some(data);
                continue;
            }
            match self.command_token(cmd, line, step, from_pipe, globbing, cwd) {
                Some(mut token) => {
                    if from_pipe {
                        token.pipe_from = pipe_source;
                        if let Some(data) = inline.take() {
                            token.stdin = Some(data);
                        }
                    }
                    pipe_source = Some(step);
                    tokens.push(token);
                }
                None => inline = None,
            }
        }
        (tokens, LineParse::Parsed)
    }

    fn command_token(
        &self,
        cmd: &SimpleCommand,
        line: &str,
        step: usize,
        from_pipe: bool,
        globbing: Globbing,
        cwd: Option<&str>,
    ) -> Option<Token> {
        let cwd = match &cmd.cd {
            Some(dir) => Some(shell::resolve_dir(cwd, dir)),
            None => cwd.map(str::to_owned),
        };
        let mut draft = Draft {
            globbing,
            ..Draft::default()
        };
        for a in &cmd.assignments {
            draft.assigns.push(FlagPart::assign(&a.name, &a.value.text));
        }
        // `git commit -m "$(cat <<'EOF' … EOF)"`: the message is the here-document's text.
        let words: Vec<Word> = cmd.words.iter().map(heredoc_value).collect();
        let start = strip_wrappers(&words, &mut draft)?;
        let (program_word, args) = words.get(start..)?.split_first()?;
        let program = basename(&program_word.text);
        if program.is_empty() {
            return None;
        }
        if program == "apply_patch" && line.contains("*** Begin Patch") {
            return patch_token(line, cwd, step);
        }
        draft.program = program.to_owned();
        // The program as it was run: `./gradlew` is the project's, `gradlew` one on `PATH`.
        // A word with an expansion (`$HOME/bin/x`) or a space cannot be written back as one
        // literal word: its name then.
        let written = if program_word.expanded
            || program_word
                .text
                .contains(|c: char| c.is_whitespace() || c == '<' || c == '>')
        {
            program
        } else {
            program_word.text.as_str()
        };
        draft.segments.push(Segment::with_program(written, program));
        draft.innermost = program.to_owned();
        command_args(cli(program), args, &mut draft, 0);

        let mut writes_file = false;
        let mut stdin = None;
        let filter = TEXT_FILTERS.contains(&program);
        for r in &cmd.redirections {
            let target = r.target.text.as_str();
            if filter && let Some(data) = inline_redirection(r) {
                stdin = Some(data);
                continue;
            }
            match r.op {
                RedirOp::DupIn | RedirOp::DupOut
                    if target == "-" || target.bytes().all(|b| b.is_ascii_digit()) => {}
                _ if target.starts_with("/dev/") => {}
                RedirOp::HereDoc { .. } => draft.redirects.push(RedirPart {
                    op: "<<EOF".to_owned(),
                    slot: None,
                }),
                op => {
                    writes_file |= op.writes() || op == RedirOp::DupOut;
                    let fd = r.fd.map(|fd| fd.to_string()).unwrap_or_default();
                    let op_text = if op == RedirOp::DupOut {
                        "&>"
                    } else {
                        op.as_str()
                    };
                    draft.redirects.push(RedirPart {
                        op: format!("{fd}{op_text}"),
                        slot: Some((classify(target), target.to_owned())),
                    });
                }
            }
        }
        let feeds_pipe = cmd.connector == Some(shell::Connector::Pipe);
        let innermost = draft.innermost.as_str();
        if !writes_file
            && ((self.programs.contains(innermost) && !feeds_pipe)
                || (from_pipe && self.pipe_filters.contains(innermost)))
        {
            return None;
        }
        let mut token = draft.finish(TokenKind::Shell, cwd, step);
        token.stdin = stdin;
        token.moved = cmd.cd.is_some();
        token.computed = words[start..]
            .iter()
            .chain(cmd.assignments.iter().map(|a| &a.value))
            .chain(
                cmd.redirections
                    .iter()
                    .filter(|r| !matches!(r.op, RedirOp::HereDoc { .. }))
                    .map(|r| &r.target),
            )
            .any(|w| w.expanded || !w.substitutions.is_empty());
        Some(token)
    }

    /// The token of a line the parser rejected: its first word and the whole line.
    pub(super) fn unparsed(&self, line: &str, cwd: Option<&str>) -> Option<Token> {
        // A broken line may start with an operator or a quote (`| sed …`, `"foo`): the program
        // is the first run of word characters.
        let start = line.trim_start_matches(|c: char| {
            !(c.is_alphanumeric() || matches!(c, '.' | '/' | '_' | '~' | '$'))
        });
        let first = start.split_whitespace().next()?;
        let end = first
            .find(|c: char| {
                matches!(
                    c,
                    '\'' | '"' | '(' | ')' | '`' | '|' | ';' | '&' | '<' | '>'
                )
            })
            .unwrap_or(first.len());
        let program = basename(first.get(..end).unwrap_or(first));
        if program.is_empty() || self.programs.contains(program) {
            return None;
        }
        Some(Token {
            kind: TokenKind::Unparsed,
            key: format!("{program}{UNPARSED}"),
            template: format!("{program}{UNPARSED}"),
            program: program.to_owned(),
            subcommand: None,
            slots: vec![SlotValue {
                kind: SlotKind::String,
                flag: None,
                position: 0,
                value: line.to_owned(),
                glob: None,
            }],
            cwd: cwd.map(str::to_owned),
            step: 0,
            pipe_from: None,
            stdin: None,
            computed: false,
            moved: false,
            by_hand: false,
        })
    }
}

/// A word that is only a here-document read by `cat` in a command substitution (Claude Code's
/// `-m "$(cat <<'EOF'⏎…⏎EOF⏎)"`), as the word the program receives: the here-document's text,
/// its trailing newlines removed as a substitution removes them. Any other word as it is,
/// and this one too when its text would be expanded (an unquoted delimiter and a `$` or a
/// backquote in the body) or split (the substitution not in double quotes).
fn heredoc_value(word: &Word) -> Word {
    let body = match word.substitutions.as_slice() {
        [inner]
            if word.text.len() == inner.len() + 3
                && word.text.starts_with("$(")
                && word.text.ends_with(')')
                && word.raw.starts_with('"')
                && word.raw.ends_with('"') =>
        {
            cat_heredoc(inner)
        }
        _ => None,
    };
    match body {
        Some(body) => Word {
            text: body.trim_end_matches('\n').to_owned(),
            raw: word.raw.clone(),
            quoted: true,
            expanded: false,
            substitutions: Vec::new(),
            span: word.span.clone(),
        },
        None => word.clone(),
    }
}

/// The text `cat <<'EOF'⏎…⏎EOF` prints, when that is all `inner` runs and its body expands
/// nothing.
fn cat_heredoc(inner: &str) -> Option<String> {
    let commands = shell::parse(inner).ok()?;
    let [cmd] = commands.as_slice() else {
        return None;
    };
    let [program] = cmd.words.as_slice() else {
        return None;
    };
    if program.text != "cat" || !program.is_plain() || !cmd.assignments.is_empty() {
        return None;
    }
    match cmd.redirections.as_slice() {
        [r] if matches!(r.op, RedirOp::HereDoc { .. }) => {
            let body = r.body.as_ref()?;
            (r.target.quoted || !(body.contains('$') || body.contains('`'))).then(|| body.clone())
        }
        _ => None,
    }
}

/// Whether a command runs one of the [`TEXT_FILTERS`].
fn is_text_filter_program(cmd: &SimpleCommand) -> bool {
    cmd.words
        .first()
        .is_some_and(|w| TEXT_FILTERS.contains(&basename(&w.text)))
}

/// The text a command prints when it only writes out data given in the line: `echo` or
/// `echo -n` with plain words, `printf` with a format free of conversions (or `'%s\n'` and
/// plain words), `cat` with a here-document or here-string. `None` for anything else, and
/// for more than [`MAX_INLINE_INPUT`] bytes.
fn inline_producer(cmd: &SimpleCommand) -> Option<String> {
    let (program, args) = cmd.words.split_first()?;
    if !cmd.assignments.is_empty()
        || program.expanded
        || args
            .iter()
            .any(|w| w.expanded || !w.substitutions.is_empty())
    {
        return None;
    }
    let data = match program.text.as_str() {
        "echo" if cmd.redirections.is_empty() => {
            let (newline, words) = match args.first() {
                Some(w) if w.text == "-n" && !w.quoted => (false, &args[1..]),
                _ => (true, args),
            };
            // `-e` and friends interpret escapes: not plain data.
            if words.first().is_some_and(|w| w.text.starts_with('-')) {
                return None;
            }
            let mut text = words
                .iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            if newline {
                text.push('\n');
            }
            text
        }
        "printf" if cmd.redirections.is_empty() => {
            let (format, values) = args.split_first()?;
            if format.text == "%s\\n" && !values.is_empty() {
                values.iter().map(|w| format!("{}\n", w.text)).collect()
            } else if values.is_empty() && !format.text.contains('%') {
                printf_escapes(&format.text)?
            } else {
                return None;
            }
        }
        "cat" if args.is_empty() => match cmd.redirections.as_slice() {
            [r] => inline_redirection(r)?,
            _ => return None,
        },
        _ => return None,
    };
    (data.len() <= MAX_INLINE_INPUT).then_some(data)
}

/// The text a here-document or here-string gives its command, when it is written out: a
/// here-document whose body expands nothing (its delimiter quoted, or no `$` or backquote in
/// it), a here-string of one plain word.
fn inline_redirection(r: &shell::Redirection) -> Option<String> {
    let data = match r.op {
        RedirOp::HereDoc { .. } => {
            let body = r.body.as_ref()?;
            if !r.target.quoted && (body.contains('$') || body.contains('`')) {
                return None;
            }
            body.clone()
        }
        RedirOp::HereString if !r.target.expanded && r.target.substitutions.is_empty() => {
            format!("{}\n", r.target.text)
        }
        _ => return None,
    };
    (data.len() <= MAX_INLINE_INPUT).then_some(data)
}

/// A `printf` format without conversions, its escapes applied; `None` when it holds an
/// escape this does not know.
fn printf_escapes(format: &str) -> Option<String> {
    let mut out = String::with_capacity(format.len());
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            '\\' => out.push('\\'),
            '"' => out.push('"'),
            '\'' => out.push('\''),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::action::Source;
    use crate::mine::token::testing::{action, bash, keys};
    use crate::mine::token::tokens_of;

    #[test]
    fn data_written_in_the_line_is_a_text_filters_input() {
        let one = |command: &str| {
            let tokens = bash(command);
            assert_eq!(tokens.len(), 1, "{command}: {tokens:#?}");
            (tokens[0].key.clone(), tokens[0].stdin.clone())
        };
        let cases: &[(&str, &str, &str)] = &[
            ("echo '{\"a\": 1}' | jq .a", "jq <arg>", "{\"a\": 1}\n"),
            ("echo -n a b | tr a-z A-Z", "tr <arg>", "a b"),
            ("printf 'b\\na\\n' | sort", "sort", "b\na\n"),
            ("printf '%s\\n' b a b | sort -u", "sort -u", "b\na\nb\n"),
            (
                "jq -r .name <<< '{\"name\":\"x\"}'",
                "jq -r <arg>",
                "{\"name\":\"x\"}\n",
            ),
            (
                "jq .a <<'EOF'\n{\"a\": \"$HOME\"}\nEOF",
                "jq <arg>",
                "{\"a\": \"$HOME\"}\n",
            ),
            ("cat <<EOF | wc -l\none\ntwo\nEOF", "wc -l", "one\ntwo\n"),
        ];
        for (command, key, stdin) in cases {
            assert_eq!(
                one(command),
                ((*key).to_owned(), Some((*stdin).to_owned())),
                "{command}"
            );
        }
        // Not written out: expansions, an unquoted here-document that expands, escapes `echo
        // -e` would interpret, a program that is not a text filter.
        for command in [
            "echo \"$X\" | jq .a",
            "jq .a <<EOF\n{\"a\": \"$HOME\"}\nEOF",
            "echo -e 'a\\tb' | sort",
            "printf '%d\\n' 3 | sort",
        ] {
            assert!(bash(command).iter().all(|t| t.stdin.is_none()), "{command}");
        }
        let tokens = bash("echo y | apt-get install x");
        assert_eq!(tokens.len(), 2);
        assert!(tokens.iter().all(|t| t.stdin.is_none()));
        assert_eq!(tokens[1].pipe_from, Some(0));

        // The whole pipeline reads the data; later filters read the one before.
        let tokens = bash("echo '[3,1]' | jq '.[]' | sort -n | uniq -c");
        let shape: Vec<_> = tokens
            .iter()
            .map(|t| (t.key.as_str(), t.pipe_from, t.stdin.as_deref()))
            .collect();
        assert_eq!(
            shape,
            [
                ("jq <arg>", None, Some("[3,1]\n")),
                ("sort -n", Some(1), None),
                ("uniq -c", Some(2), None)
            ]
        );
        // A trimming filter dropped in between: the next one reads the last kept command.
        let tokens = bash("cargo test 2>&1 | tail -5 | grep FAIL; git status");
        let shape: Vec<_> = tokens
            .iter()
            .map(|t| (t.program.as_str(), t.pipe_from))
            .collect();
        assert_eq!(shape, [("cargo", None), ("grep", Some(0)), ("git", None)]);
    }

    #[test]
    fn noise_is_dropped() {
        for command in [
            "ls -la",
            "pwd",
            "echo done",
            "cd src",
            "cat README.md",
            "head -50 src/lib.rs",
            "[ -f x ] && echo yes",
            "clear; true",
            "",
            "   ",
            "FOO=1",
            "# comment",
            "command -v cargo",
            "which git",
        ] {
            assert_eq!(keys(command), Vec::<String>::new(), "{command:?}");
        }
        // Kept: writing a file, feeding a pipe.
        assert_eq!(
            keys("echo '{\"a\": 1}' > config.json"),
            ["echo <arg> > <arg>"]
        );
        assert_eq!(keys("cat data.json | jq .name"), ["cat <arg>", "jq <arg>"]);
        // A pipe filter that writes a file is kept.
        assert_eq!(
            keys("make 2>&1 | tail -5 > last.log"),
            ["make", "tail <arg> > <arg>"]
        );
    }

    #[test]
    fn cwd_and_steps() {
        let tokens = bash("cd sub && make && cd ../other && make test");
        let got: Vec<(&str, Option<&str>, usize)> = tokens
            .iter()
            .map(|t| (t.key.as_str(), t.cwd.as_deref(), t.step))
            .collect();
        assert_eq!(
            got,
            [
                ("make", Some("/w/sub"), 0),
                ("make test", Some("/w/other"), 1)
            ]
        );
        // Without a known cwd, a relative cd stays relative.
        let history = action(
            Source::Bash,
            "shell",
            json!({"command": "cd proj && make"}),
            None,
        );
        assert_eq!(tokens_of(&history)[0].cwd.as_deref(), Some("proj"));
    }

    #[test]
    fn a_word_its_shell_computed_is_noted() {
        for (line, computed) in [
            ("cat $dirfile | sort", Some("$dirfile")),
            (
                "git log \"$(git merge-base HEAD main)\"..HEAD",
                Some("\"$(git merge-base HEAD main)\"..HEAD"),
            ),
            ("tar czf out.tgz $HOME/.config", Some("$HOME/.config")),
            ("RUST_LOG=$level cargo run", Some("$level")),
            ("make > $log", Some("$log")),
            ("cargo test `cat args`", Some("`cat args`")),
            // Quoted, the `$` is the program's; the commit idiom's message is known.
            ("perl -ne 'print $_'", None),
            ("git commit -m \"$(cat <<'EOF'\nFix it\nEOF\n)\"", None),
            ("cargo test -p core", None),
        ] {
            let tokens = bash(line);
            let t = tokens.first().unwrap_or_else(|| panic!("{line}: no token"));
            assert_eq!(t.computed, computed.is_some(), "{line}: {computed:?}");
        }
    }

    #[test]
    fn claude_code_s_heredoc_commit_message_is_the_value_and_both_commands_stay() {
        let line = "git add src/a.rs && git commit -m \"$(cat <<'EOF'\nFix the parser\n\nIt dropped a word.\n\nCo-Authored-By: Claude <noreply@anthropic.com>\nEOF\n)\"";
        let tokens = bash(line);
        let keys: Vec<&str> = tokens.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(keys, ["git add <arg>", "git commit -m <arg>"]);
        let message = &tokens[1].slots[0];
        assert_eq!(message.flag.as_deref(), Some("-m"));
        assert_eq!(
            message.value,
            "Fix the parser\n\nIt dropped a word.\n\nCo-Authored-By: Claude <noreply@anthropic.com>"
        );
        // `<<-` strips tabs; an unquoted delimiter with nothing to expand is the same text.
        let t = &bash("git commit -m \"$(cat <<-EOF\n\tSubject\n\tEOF\n)\"")[0];
        assert_eq!(t.slots[0].value, "Subject");
        // What the shell would expand or split is not known: kept as written.
        for line in [
            "git commit -m \"$(cat <<EOF\nBump to $VERSION\nEOF\n)\"",
            "git commit -m $(cat <<'EOF'\nSubject\nEOF\n)",
            "git commit -m \"$(cat <<'EOF'\nSubject\nEOF\n) and more\"",
            "git commit -m \"$(cat notes.txt)\"",
        ] {
            let t = &bash(line)[0];
            assert_eq!(t.key, "git commit -m <arg>", "{line}");
            assert!(
                t.slots[0].value.starts_with("$(cat"),
                "{line}: {:?}",
                t.slots
            );
        }
    }

    #[test]
    fn unparsable_lines_still_give_a_token() {
        let tokens = bash("git commit -m 'unterminated");
        assert_eq!(tokens.len(), 1);
        assert_eq!(tokens[0].kind, TokenKind::Unparsed);
        assert_eq!(tokens[0].key, "git <unparsed>");
        assert_eq!(tokens[0].slots[0].value, "git commit -m 'unterminated");
        // Noise stays noise.
        assert!(bash("echo 'unterminated").is_empty());
        // The program of a broken line is its first word, past operators and quotes.
        assert_eq!(keys("| sed s/i//g\""), ["sed <unparsed>"]);
        assert_eq!(keys("\"foo(bar"), ["foo <unparsed>"]);
        assert!(keys("'(((").is_empty());
        // An unbalanced quote mid-line, or syntax the parser does not know: one opaque step,
        // never words guessed from it.
        for line in [
            "objdump -d \"build/agent --start-address 0x1",
            "make <(<(",
            "a && && b",
        ] {
            let tokens = bash(line);
            assert!(tokens.len() <= 1, "{line}: {tokens:?}");
            assert!(
                tokens
                    .iter()
                    .all(|t| t.kind == TokenKind::Unparsed && t.key.ends_with(UNPARSED)),
                "{line}: {tokens:?}"
            );
        }
        // A multi-line text whose first line parses gives that line's command.
        assert_eq!(keys("make test\nthen 'junk"), ["make test"]);
    }

    #[test]
    fn printf_formats_without_conversions_are_data() {
        assert_eq!(printf_escapes("a\\tb\\n").as_deref(), Some("a\tb\n"));
        assert_eq!(
            printf_escapes("say \\\"hi\\\"\\\\").as_deref(),
            Some("say \"hi\"\\")
        );
        assert_eq!(printf_escapes("\\x41"), None);
        assert_eq!(printf_escapes("trailing\\"), None);
    }

    #[test]
    fn what_a_command_writes_out_from_its_line() {
        let producer = |line: &str| {
            let commands = shell::parse(line).expect("the line parses");
            inline_producer(&commands[0])
        };
        assert_eq!(producer("echo a  b").as_deref(), Some("a b\n"));
        assert_eq!(producer("echo -n a").as_deref(), Some("a"));
        assert_eq!(producer("printf '%s\\n' x y").as_deref(), Some("x\ny\n"));
        assert_eq!(producer("cat <<< word").as_deref(), Some("word\n"));
        assert_eq!(producer("echo $HOME"), None);
        assert_eq!(producer("X=1 echo a"), None);
        assert_eq!(producer("cat file.txt"), None);
        assert_eq!(producer("echo a > f"), None);
        // More than the limit is not kept: the filter reads from the echo's token.
        let big = "x".repeat(MAX_INLINE_INPUT);
        assert!(producer(&format!("echo {big}")).is_none());
        let tokens = bash(&format!("echo {big} | wc -c"));
        let shape: Vec<_> = tokens
            .iter()
            .map(|t| (t.key.as_str(), t.pipe_from, t.stdin.is_some()))
            .collect();
        assert_eq!(
            shape,
            [("echo <arg>", None, false), ("wc -c", Some(0), false)]
        );
        assert_eq!(keys("true | wc -l"), ["true", "wc -l"]);
    }
}
