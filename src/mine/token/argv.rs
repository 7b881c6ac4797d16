//! One simple command's words into a [`Draft`]: wrappers skipped, the program's sub-commands
//! kept literal, flags with their values, typed positional slots, and the programs runners run,
//! each read with its own entry of the CLI tables (`tables.rs`).

use super::basename;
use super::classify::{
    SlotKind, classify, env_like, expanded_glob, is_flag, is_identifier_like, is_number, is_punct,
};
use super::draft::{ArgPart, Draft, FlagPart, Segment};
use super::tables::{Cli, GENERIC, Sub, cli, cli_of_module};
use crate::action::placeholder::PLACEHOLDER_START;
use crate::mine::shell::Word;

/// The most programs a command line may chain through runners (`sudo xargs uv run …`).
const MAX_RUNNERS: usize = 8;

/// Skips the wrappers that do not change what runs; returns the index of the program's word.
pub(super) fn strip_wrappers(words: &[Word], draft: &mut Draft) -> Option<usize> {
    let mut i = 0;
    // Each pass consumes at least one word, so this ends.
    while let Some(word) = words.get(i) {
        let rest = &words[i + 1..];
        let skipped = match word.text.as_str() {
            "time" | "nohup" | "builtin" | "exec" | "noglob" | "nocorrect" => {
                1 + count_flags(rest, &[])
            }
            // `command -v x` asks where x is: not a wrapper then.
            "command" if rest.first().is_some_and(|w| !w.text.starts_with('-')) => 1,
            "env" => {
                let mut n = 1;
                while let Some(w) = words.get(i + n) {
                    let t = w.text.as_str();
                    if matches!(
                        t,
                        "-u" | "--unset" | "-C" | "--chdir" | "-S" | "--split-string"
                    ) {
                        n += 2;
                    } else if t.starts_with('-') {
                        n += 1;
                    } else if let Some((name, value)) = env_like(t) {
                        draft.assigns.push(FlagPart::assign(name, value));
                        n += 1;
                    } else {
                        break;
                    }
                }
                n
            }
            "timeout" => {
                let n = 1 + count_flags(rest, &["-s", "--signal", "-k", "--kill-after"]);
                n + 1 // the duration
            }
            "nice" => 1 + count_flags(rest, &["-n", "--adjustment"]),
            "ionice" => 1 + count_flags(rest, &["-c", "--class", "-n", "--classdata", "-p"]),
            "stdbuf" => 1 + count_flags(rest, &["-i", "-o", "-e"]),
            _ => 0,
        };
        if skipped == 0 {
            return Some(i);
        }
        if i + skipped >= words.len() {
            // Nothing after the wrapper: the wrapper itself is the program.
            return Some(i);
        }
        i += skipped;
    }
    None
}

/// How many leading words are flags (with the values of `with_value`).
fn count_flags(words: &[Word], with_value: &[&str]) -> usize {
    let mut n = 0;
    while let Some(w) = words.get(n) {
        let t = w.text.as_str();
        if !t.starts_with('-') || t == "-" {
            break;
        }
        n += if with_value.contains(&t) { 2 } else { 1 };
    }
    n
}

/// Adds the arguments of a program to the draft's last segment (and more segments for `--`,
/// modules and programs run by runners).
pub(super) fn command_args(known: Option<&Cli>, args: &[Word], draft: &mut Draft, depth: usize) {
    let spec = known.unwrap_or(&GENERIC);
    let mut sub: Option<String> = None;
    let mut expect_sub = spec.sub == Sub::First;
    let mut runner_next = spec.sub == Sub::Runner;
    let mut nested_next = false;
    let mut literal_left = spec.literal_after("");
    let mut dashdash = false;
    let mut known_flags = true;
    let mut positionals = 0usize;
    let mut pattern_given = false;
    let mut k = 0;
    while let Some(w) = args.get(k) {
        let t = w.text.as_str();
        if !dashdash && t == "--" {
            draft.segments.push(Segment::with_head("--"));
            dashdash = true;
            known_flags = false;
            k += 1;
            continue;
        }
        // After `--` flags are still flags, of the program the words are passed to, whose
        // table is unknown: `cargo test -- --nocapture`.
        if is_flag(t) {
            if known_flags
                && spec.module_flag == Some(t)
                && let Some(module) = args.get(k + 1)
                && depth < MAX_RUNNERS
            {
                let name = module.text.as_str();
                let seg = draft.segment();
                seg.push_head(t);
                seg.push_head(name);
                draft.innermost = name.to_owned();
                draft.segments.push(Segment::default());
                command_args(cli_of_module(name), &args[k + 2..], draft, depth + 1);
                return;
            }
            let spec_for_flags = if known_flags { spec } else { &GENERIC };
            k += flag(
                spec_for_flags,
                sub.as_deref(),
                args,
                k,
                draft,
                &mut pattern_given,
            );
            continue;
        }
        // A positional argument.
        if expect_sub {
            expect_sub = false;
            if spec.plus_toolchain && t.starts_with('+') && !t.contains('/') {
                draft.segment().push_head(t);
                expect_sub = true;
                k += 1;
                continue;
            }
            if is_identifier_like(t) {
                draft.segment().push_head(t);
                nested_next = spec.nests(t);
                literal_left = spec.literal_after(t);
                runner_next = spec.runners.contains(&t);
                sub = Some(t.to_owned());
                k += 1;
                continue;
            }
        }
        if nested_next {
            nested_next = false;
            if is_identifier_like(t) {
                draft.segment().push_head(t);
                let joined = format!("{} {t}", sub.as_deref().unwrap_or(""));
                literal_left = literal_left.max(spec.literal_after(&joined));
                runner_next = spec.runners.contains(&joined.as_str());
                k += 1;
                continue;
            }
        }
        if runner_next && depth < MAX_RUNNERS && classify(t) != SlotKind::Path {
            let program = basename(t);
            draft.innermost = program.to_owned();
            draft.segments.push(Segment::with_program(t, program));
            command_args(cli(program), &args[k + 1..], draft, depth + 1);
            return;
        }
        runner_next = false;
        if literal_left > 0 && is_identifier_like(t) {
            // Right after the sub-command, a target or script name reads as part of it
            // (`make test -j4`, `kubectl get pods -n x`).
            let seg = draft.segment();
            if seg.has_args() {
                seg.push_arg(ArgPart::Lit(t.to_owned()));
            } else {
                seg.push_head(t);
            }
            literal_left -= 1;
        } else if is_punct(t) {
            draft.segment().push_arg(ArgPart::Lit(t.to_owned()));
        } else if let Some((name, value)) = env_like(t) {
            draft.segment().push_flag(FlagPart::assign(name, value));
        } else {
            let kind = if spec.pattern_first && positionals == 0 && !pattern_given && known_flags {
                SlotKind::String
            } else {
                classify(t)
            };
            let glob = expanded_glob(w, draft.globbing);
            draft.segment().push_arg(ArgPart::Slot {
                kind,
                value: t.to_owned(),
                name: None,
                flag: None,
                glob,
            });
        }
        positionals += 1;
        k += 1;
        if spec.script_host && known_flags {
            // `python x.py -m y`: what follows the script is the script's, in its own group.
            known_flags = false;
            draft.segments.push(Segment::default());
        }
    }
}

/// Adds the flag at `args[k]` (and its values) to the draft; returns how many words it used.
fn flag(
    spec: &Cli,
    sub: Option<&str>,
    args: &[Word],
    k: usize,
    draft: &mut Draft,
    pattern_given: &mut bool,
) -> usize {
    let t = args.get(k).map_or("", |w| w.text.as_str());
    let next = args.get(k + 1).map(|w| w.text.as_str());
    let value_kind = |flag: &str, value: &str| {
        if spec.pattern_flags.contains(&flag) {
            SlotKind::String
        } else {
            classify(value)
        }
    };
    // Whether each of the words from `args[from]` on was expanded as a pathname pattern.
    let globs = |from: usize, n: usize, draft: &Draft| -> Vec<bool> {
        args.iter()
            .skip(from)
            .take(n)
            .map(|w| expanded_glob(w, draft.globbing))
            .collect()
    };
    // Each flag is written back the way it was logged: `-p x`, `--name=x`, `-j4`.
    let mut add =
        |flag: &str, values: Vec<&str>, form: Form, globs: Vec<bool>, draft: &mut Draft| {
            if spec.pattern_flags.contains(&flag) {
                *pattern_given = true;
            }
            let mut part = if values.is_empty() {
                FlagPart::boolean(flag)
            } else {
                let values = values
                    .into_iter()
                    .map(|v| (value_kind(flag, v), v.to_owned()))
                    .collect();
                FlagPart::valued(flag, values, spec.long_name(flag))
            };
            part.eq = form == Form::Eq;
            part.attached = form == Form::Attached;
            part.globs = globs;
            draft.segment().push_flag(part);
        };

    // `-p[REDACTED:password-flag]`: a value redacted at ingest, attached to its flag, is that
    // flag's value (a slot), whatever the table says of the flag, and stays attached (`mysql
    // -p X` would prompt, and take X for a database).
    if let Some(at) = t.find(PLACEHOLDER_START)
        && at >= 2
        && !t.starts_with("--")
        && !t[..at].contains('=')
    {
        let (name, value) = t.split_at(at);
        let mut part = FlagPart::valued(
            name,
            vec![(classify(value), value.to_owned())],
            spec.long_name(name),
        );
        part.attached = true;
        draft.segment().push_flag(part);
        return 1;
    }
    // `--name=value`, and single-dash long flags written `-name=value` (go).
    if let Some((name, value)) = t.split_once('=')
        && (t.starts_with("--") || name.len() > 2)
    {
        add(name, vec![value], Form::Eq, Vec::new(), draft);
        return 1;
    }
    if spec.until_semicolon.contains(&t) {
        // `-exec wc -l {} ;`: each word of the command is a value of the flag, and the `;`
        // or `+` that ends them a word of its own.
        let rest = args.get(k + 1..).unwrap_or(&[]);
        let len = rest
            .iter()
            .position(|w| w.text == ";" || w.text == "+")
            .unwrap_or(rest.len());
        let command: Vec<&str> = rest[..len].iter().map(|w| w.text.as_str()).collect();
        let marks = globs(k + 1, len, draft);
        add(t, command, Form::Apart, marks, draft);
        if let Some(end) = rest.get(len) {
            draft.segment().push_arg(ArgPart::Lit(end.text.clone()));
        }
        return 1 + (len + 1).min(rest.len());
    }
    if spec.value2.contains(&t) {
        let values: Vec<&str> = args
            .get(k + 1..)
            .unwrap_or(&[])
            .iter()
            .take(2)
            .map(|w| w.text.as_str())
            .collect();
        let used = values.len();
        let marks = globs(k + 1, used, draft);
        add(t, values, Form::Apart, marks, draft);
        return 1 + used;
    }
    if spec.takes_value(sub, t) {
        return match next {
            Some(value) => {
                let marks = globs(k + 1, 1, draft);
                add(t, vec![value], Form::Apart, marks, draft);
                2
            }
            None => {
                add(t, vec![], Form::Apart, Vec::new(), draft);
                1
            }
        };
    }
    if spec.optional_number.contains(&t)
        && let Some(value) = next.filter(|v| is_number(v))
    {
        add(t, vec![value], Form::Apart, Vec::new(), draft);
        return 2;
    }
    if !t.starts_with("--")
        && let (Some(short), Some(rest)) = (t.get(..2), t.get(2..))
        && !rest.is_empty()
    {
        // `-j4`, `-pcore`, `-n5`: a value flag with its value attached.
        if spec.takes_value(sub, short)
            || spec.optional_number.contains(&short)
            || spec.attached.contains(&short)
        {
            add(short, vec![rest], Form::Attached, Vec::new(), draft);
            return 1;
        }
        // `-am msg`, `-xzf file.tgz`: a cluster whose last letter takes the next word.
        if let Some(last) = t.chars().last()
            && spec.takes_value(sub, &format!("-{last}"))
            && let Some(value) = next
        {
            let marks = globs(k + 1, 1, draft);
            add(t, vec![value], Form::Apart, marks, draft);
            return 2;
        }
    }
    add(t, vec![], Form::Apart, Vec::new(), draft);
    1
}

/// How a flag and its value were written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `-p value` (or a flag without a value).
    Apart,
    /// `--name=value`.
    Eq,
    /// `-j4`.
    Attached,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mine::shell;
    use crate::mine::token::joins_run;
    use crate::mine::token::testing::keys;

    /// The words of the first simple command of `line`.
    fn words(line: &str) -> Vec<Word> {
        let mut commands = shell::parse(line).expect("the line parses");
        commands.remove(0).words
    }

    /// The draft of a command line's first command, as the tokenizer starts it.
    fn draft(line: &str) -> Draft {
        let words = words(line);
        let program = basename(&words[0].text).to_owned();
        let mut draft = Draft {
            program: program.clone(),
            innermost: program.clone(),
            ..Draft::default()
        };
        draft.segments.push(Segment::with_head(&program));
        command_args(cli(&program), &words[1..], &mut draft, 0);
        draft
    }

    #[test]
    fn shell_keys_table() {
        let cases: &[(&str, &[&str])] = &[
            ("cargo test -p foo", &["cargo test -p <arg>"]),
            (
                "cargo test --release -p foo",
                &["cargo test --release -p <arg>"],
            ),
            (
                "cargo test -p foo --release",
                &["cargo test -p <arg> --release"],
            ),
            (
                "cargo +nightly build --features=a,b -j4",
                &["cargo +nightly build --features=<arg> -j<arg>"],
            ),
            (
                "cargo clippy --all-targets -- -D warnings",
                &["cargo clippy --all-targets -- -D <arg>"],
            ),
            (
                "cd web && RUST_LOG=debug cargo test 2>&1 | tail -5",
                &["RUST_LOG=<arg> cargo test"],
            ),
            ("git commit -am 'fix bug'", &["git commit -am <arg>"]),
            (
                "git -C ../repo log -n 5 --oneline",
                &["git -C <arg> log -n <arg> --oneline"],
            ),
            ("git checkout a1b2c3d", &["git checkout <arg>"]),
            ("git checkout -b feature/x", &["git checkout -b <arg>"]),
            ("git stash pop", &["git stash pop"]),
            ("git add src/a.rs src/b.rs README.md", &["git add <arg>"]),
            ("git push -u origin main", &["git push -u <arg>"]),
            ("npm run build", &["npm run build"]),
            ("npm run test -- src/a.test.ts", &["npm run test -- <arg>"]),
            ("pnpm --filter web build", &["pnpm --filter <arg> build"]),
            ("npx tsc --noEmit", &["npx tsc --noEmit"]),
            (
                "npx -y create-next-app@latest app --typescript",
                &["npx -y create-next-app@latest <arg> --typescript"],
            ),
            ("uv run pytest -x tests/", &["uv run pytest -x <arg>"]),
            ("uv run script.py", &["uv run <arg>"]),
            (
                "poetry run python -m pytest -k slow",
                &["poetry run python -m pytest -k <arg>"],
            ),
            (
                "python3 -m pip install -r requirements.txt",
                &["python3 -m pip install -r <arg>"],
            ),
            ("python scripts/gen.py -m fast", &["python <arg> -m <arg>"]),
            ("make -j8 test", &["make -j<arg> test"]),
            (
                "make -j 8 build CC=clang",
                &["make -j <arg> build CC=<arg>"],
            ),
            (
                "docker compose -f dev.yml up -d",
                &["docker compose -f <arg> up -d"],
            ),
            ("docker logs -f web", &["docker logs -f <arg>"]),
            ("kubectl get pods -n prod", &["kubectl get pods -n <arg>"]),
            (
                "kubectl rollout status deployment/api",
                &["kubectl rollout status <arg>"],
            ),
            (
                "gh pr create --title 'x' --body y",
                &["gh pr create --title <arg> --body <arg>"],
            ),
            (
                "sudo apt-get install -y curl",
                &["sudo apt-get install -y <arg>"],
            ),
            ("time cargo build", &["cargo build"]),
            ("timeout 30 npm test", &["npm test"]),
            ("env -i FOO=1 make", &["FOO=<arg> make"]),
            ("nohup ./server --port 8080 &", &["./server --port <arg>"]),
            ("grep -rn 'fn main' src/", &["grep -rn <arg>"]),
            ("grep -e 'a.*' -e b *.rs", &["grep -e <arg> -e <arg> <arg>"]),
            ("rg -t rust TODO", &["rg -t <arg> <arg>"]),
            (
                "find . -name '*.rs' -exec wc -l {} \\;",
                &["find <arg> -name <arg> -exec <arg> <arg> <arg> ;"],
            ),
            (
                "find . \\( -name a -o -name b \\) -type f",
                &["find <arg> ( -name <arg> -o -name <arg> ) -type <arg>"],
            ),
            ("jq -r '.items[] | .name' data.json", &["jq -r <arg>"]),
            ("jq --arg n 1 '.x' f.json", &["jq --arg <arg> <arg> <arg>"]),
            (
                "curl -s -X POST -H 'Content-Type: application/json' https://api.x.com/v1",
                &["curl -s -X <arg> -H <arg> <arg>"],
            ),
            ("tar -czf out.tgz src", &["tar -czf <arg> <arg>"]),
            ("head -20 src/main.rs | wc -l", &["head <arg>", "wc -l"]),
            ("ls | wc -l", &["ls", "wc -l"]),
            ("cargo test 2>/dev/null | head -20", &["cargo test"]),
            ("cargo test > out.txt 2>&1", &["cargo test > <arg>"]),
            (
                "cat > types/state.ts << 'EOF'\nexport type X = 1;\nEOF",
                &["cat > <arg> <<EOF"],
            ),
            ("echo hi >> notes.md", &["echo <arg> >> <arg>"]),
            ("sort < in.txt", &["sort < <arg>"]),
            ("xargs -I{} rm {}", &["xargs -I<arg> rm {}"]),
            ("mysql -uroot -psecret db", &["mysql -u<arg> -p<arg> <arg>"]),
            (
                "git commit -m \"$(cat <<'EOF'\nFix it\nEOF\n)\" && git push",
                &["git commit -m <arg>", "git push"],
            ),
            ("for f in *.rs; do rustfmt \"$f\"; done", &["rustfmt <arg>"]),
            ("/usr/bin/python3.12 -V", &["/usr/bin/python3.12 -V"]),
            ("hub pull-request -m x", &["hub pull-request -m <arg>"]),
            (
                "hg commit -m 'x' && jj git push",
                &["hg commit -m <arg>", "jj git push"],
            ),
            ("npx next dev --port 3000", &["npx next dev --port <arg>"]),
            ("pyenv install 3.12.1", &["pyenv install <arg>"]),
            ("screen -S build make all", &["screen -S <arg> make all"]),
        ];
        let mut wrong = Vec::new();
        for (command, expected) in cases {
            if &keys(command) != expected {
                wrong.push(format!("{command:?} => {:?}", keys(command)));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// The words of a token's template, its placeholders filled with its slots' values in
    /// order: what a tool made of it would run.
    fn filled(line: &str) -> Vec<String> {
        let token = crate::mine::token::testing::bash(line).remove(0);
        let mut slots = token.slots.iter().peekable();
        let mut words = Vec::new();
        for word in token.template.split(' ') {
            let Some(open) = word
                .find('<')
                .filter(|_| word.ends_with('>') || word.ends_with("..."))
            else {
                words.push(word.to_owned());
                continue;
            };
            let value = slots.next().map(|s| s.value.clone()).unwrap_or_default();
            words.push(format!("{}{value}", &word[..open]));
            while word.ends_with("...")
                && let Some(s) = slots.next_if(|s| s.flag.is_none() && joins_run(s.kind))
            {
                words.push(s.value.clone());
            }
        }
        words
    }

    /// Issue 20: the tables only add knowledge; a command's words come back in the order they
    /// were logged, each flag with its value.
    #[test]
    fn words_stay_in_logged_order_with_their_values() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "objdump -d build/agent --start-address 0x4013b0 --stop-address 0x402c60",
                "objdump -d <arg> --start-address <arg> --stop-address <arg>",
                "objdump -d <path>... --start-address <number> --stop-address <number>",
            ),
            (
                "openssl x509 -in certs/x.pem -noout -subject -enddate",
                "openssl x509 -in <arg> -noout -subject -enddate",
                "openssl x509 -in <in> -noout -subject -enddate",
            ),
            (
                "coverage report -m --include=src/storage/*",
                "coverage <arg> -m --include=<arg>",
                "coverage <string> -m --include=<include>",
            ),
            (
                "./scripts/check.sh --module auth",
                "./scripts/check.sh --module <arg>",
                "./scripts/check.sh --module <string>",
            ),
            (
                "make -C auth test",
                "make -C <arg> test",
                "make -C <dir> test",
            ),
            (
                "git -C ../r commit -am 'fix it' src/a.rs",
                "git -C <arg> commit -am <arg> <arg>",
                "git -C <dir> commit -am <am> <path>...",
            ),
            (
                "python3 -u -m pytest -x tests/ -k slow",
                "python3 -u -m pytest -x <arg> -k <arg>",
                "python3 -u -m pytest -x <path>... -k <keyword>",
            ),
            (
                "find . -name '*.rs' -exec wc -l {} +",
                "find <arg> -name <arg> -exec <arg> <arg> <arg> +",
                "find <path>... -name <name> -exec <exec> <exec> <exec> +",
            ),
        ];
        for (line, key, template) in cases {
            let t = crate::mine::token::testing::bash(line).remove(0);
            assert_eq!(
                (t.key.as_str(), t.template.as_str()),
                (*key, *template),
                "{line}"
            );
            let logged: Vec<String> = words(line).into_iter().map(|w| w.text).collect();
            assert_eq!(filled(line), logged, "{line}");
        }
        // A word after a flag of a program the tables do not know stays beside it, a slot of
        // its own: constant, a literal; varying, a parameter the tool passes right there.
        let t = &crate::mine::token::testing::bash("objdump --start-address 0x1 -d --demangle")[0];
        assert_eq!(t.key, "objdump --start-address <arg> -d --demangle");
    }

    #[test]
    fn wrappers_are_skipped_and_env_assignments_kept() {
        let w = words("env -u HOME FOO=1 timeout -s KILL 30 nice -n 5 cargo test");
        let mut d = Draft::default();
        let at = strip_wrappers(&w, &mut d).expect("a program");
        assert_eq!(w[at].text, "cargo");
        let assigns: Vec<&str> = d.assigns.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(assigns, ["FOO"]);
        // Nothing after the wrapper: the wrapper is the program.
        assert_eq!(
            strip_wrappers(&words("nohup"), &mut Draft::default()),
            Some(0)
        );
        // `command -v x` asks where x is: not a wrapper then.
        assert_eq!(
            strip_wrappers(&words("command -v cargo"), &mut Draft::default()),
            Some(0)
        );
        assert_eq!(
            strip_wrappers(&words("command cargo"), &mut Draft::default()),
            Some(1)
        );
        assert_eq!(count_flags(&words("x -n 5 -v file")[1..], &["-n"]), 3);
        assert_eq!(count_flags(&words("x - file")[1..], &[]), 0);
    }

    #[test]
    fn a_sub_command_stays_in_the_head_and_flags_take_their_values() {
        let d = draft("git -C ../r commit -am 'fix it' src/a.rs");
        assert_eq!(d.segments.len(), 1);
        let seg = &d.segments[0];
        assert_eq!(seg.head, ["git", "commit"]);
        let flags: Vec<(&str, Vec<&str>)> = seg
            .flags()
            .map(|f| {
                (
                    f.name.as_str(),
                    f.values.iter().map(|v| v.1.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(flags, [("-C", vec!["../r"]), ("-am", vec!["fix it"])]);
        assert!(
            matches!(&seg.args()[..], [ArgPart::Slot { kind: SlotKind::Path, value, .. }] if value == "src/a.rs"),
            "{:?}",
            seg.args()
        );
    }

    #[test]
    fn a_runner_starts_a_segment_for_the_program_it_runs() {
        let d = draft("uv run pytest -x tests/");
        let heads: Vec<&[String]> = d.segments.iter().map(|s| s.head.as_slice()).collect();
        assert_eq!(heads, [&["uv", "run"][..], &["pytest"][..]]);
        assert_eq!((d.program.as_str(), d.innermost.as_str()), ("uv", "pytest"));
        let d = draft("python3 -m pip install -r requirements.txt");
        assert_eq!(d.segments[0].head, ["python3", "-m", "pip"]);
        assert_eq!(d.innermost, "pip");
        // After `--`, the words are another program's, in a segment of their own.
        let d = draft("cargo test -- --nocapture");
        let heads: Vec<&[String]> = d.segments.iter().map(|s| s.head.as_slice()).collect();
        assert_eq!(heads, [&["cargo", "test"][..], &["--"][..]]);
        assert_eq!(
            d.segments[1].flags().next().map(|f| f.name.as_str()),
            Some("--nocapture")
        );
    }
}
