//! One simple command's words into a [`Draft`]: wrappers skipped, the program's sub-commands
//! kept literal, flags with their values, typed positional slots, and the programs runners run,
//! each read with its own entry of the CLI tables (`tables.rs`).

use super::basename;
use super::classify::{
    SlotKind, classify, env_like, is_flag, is_identifier_like, is_number, is_punct,
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
                seg.head.push(t.to_owned());
                seg.head.push(name.to_owned());
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
                draft.segment().head.push(t.to_owned());
                expect_sub = true;
                k += 1;
                continue;
            }
            if is_identifier_like(t) {
                draft.segment().head.push(t.to_owned());
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
                draft.segment().head.push(t.to_owned());
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
            draft.segments.push(Segment::with_head(program));
            command_args(cli(program), &args[k + 1..], draft, depth + 1);
            return;
        }
        runner_next = false;
        if literal_left > 0 && is_identifier_like(t) {
            // Right after the sub-command, a target or script name reads as part of it
            // (`make test -j4`, `kubectl get pods -n x`).
            let seg = draft.segment();
            if seg.args.is_empty() {
                seg.head.push(t.to_owned());
            } else {
                seg.args.push(ArgPart::Lit(t.to_owned()));
            }
            literal_left -= 1;
        } else if is_punct(t) {
            draft.segment().args.push(ArgPart::Lit(t.to_owned()));
        } else if let Some((name, value)) = env_like(t) {
            draft.segment().flags.push(FlagPart::assign(name, value));
        } else {
            let kind = if spec.pattern_first && positionals == 0 && !pattern_given && known_flags {
                SlotKind::String
            } else {
                classify(t)
            };
            draft.segment().args.push(ArgPart::Slot {
                kind,
                value: t.to_owned(),
                name: None,
                flag: None,
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
    let mut add = |flag: &str, values: Vec<&str>, draft: &mut Draft| {
        if spec.pattern_flags.contains(&flag) {
            *pattern_given = true;
        }
        let part = if values.is_empty() {
            FlagPart::boolean(flag)
        } else {
            let values = values
                .into_iter()
                .map(|v| (value_kind(flag, v), v.to_owned()))
                .collect();
            FlagPart::valued(flag, values, spec.long_name(flag))
        };
        draft.segment().flags.push(part);
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
        draft.segment().flags.push(part);
        return 1;
    }
    // `--name=value`, and single-dash long flags written `-name=value` (go).
    if let Some((name, value)) = t.split_once('=')
        && (t.starts_with("--") || name.len() > 2)
    {
        add(name, vec![value], draft);
        return 1;
    }
    if spec.until_semicolon.contains(&t) {
        let rest = args.get(k + 1..).unwrap_or(&[]);
        let len = rest
            .iter()
            .position(|w| w.text == ";" || w.text == "+")
            .unwrap_or(rest.len());
        let command: Vec<&str> = rest[..len].iter().map(|w| w.text.as_str()).collect();
        add(t, vec![&command.join(" ")], draft);
        // The words, and the `;` or `+` that ends them.
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
        add(t, values, draft);
        return 1 + used;
    }
    if spec.takes_value(sub, t) {
        return match next {
            Some(value) => {
                add(t, vec![value], draft);
                2
            }
            None => {
                add(t, vec![], draft);
                1
            }
        };
    }
    if spec.optional_number.contains(&t)
        && let Some(value) = next.filter(|v| is_number(v))
    {
        add(t, vec![value], draft);
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
            add(short, vec![rest], draft);
            return 1;
        }
        // `-am msg`, `-xzf file.tgz`: a cluster whose last letter takes the next word.
        if let Some(last) = t.chars().last()
            && spec.takes_value(sub, &format!("-{last}"))
            && let Some(value) = next
        {
            add(t, vec![value], draft);
            return 2;
        }
    }
    add(t, vec![], draft);
    1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mine::shell;
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
            ("cargo test -p foo", &["cargo test -p <string>"]),
            (
                "cargo test --release -p foo",
                &["cargo test --release -p <string>"],
            ),
            (
                "cargo test -p foo --release",
                &["cargo test --release -p <string>"],
            ),
            (
                "cargo +nightly build --features=a,b -j4",
                &["cargo +nightly build --features <string> -j <number>"],
            ),
            (
                "cargo clippy --all-targets -- -D warnings",
                &["cargo clippy --all-targets -- -D <string>"],
            ),
            (
                "cd web && RUST_LOG=debug cargo test 2>&1 | tail -5",
                &["RUST_LOG=<string> cargo test"],
            ),
            ("git commit -am 'fix bug'", &["git commit -am <string>"]),
            (
                "git -C ../repo log -n 5 --oneline",
                &["git log --oneline -C <path> -n <number>"],
            ),
            ("git checkout a1b2c3d", &["git checkout <hex>"]),
            ("git checkout -b feature/x", &["git checkout -b <path>"]),
            ("git stash pop", &["git stash pop"]),
            (
                "git add src/a.rs src/b.rs README.md",
                &["git add <path>..."],
            ),
            ("git push -u origin main", &["git push -u <string>..."]),
            ("npm run build", &["npm run build"]),
            ("npm run test -- src/a.test.ts", &["npm run test -- <path>"]),
            ("pnpm --filter web build", &["pnpm build --filter <string>"]),
            ("npx tsc --noEmit", &["npx tsc --noEmit"]),
            (
                "npx -y create-next-app@latest app --typescript",
                &["npx -y create-next-app@latest --typescript <string>"],
            ),
            ("uv run pytest -x tests/", &["uv run pytest -x <path>"]),
            ("uv run script.py", &["uv run <path>"]),
            (
                "poetry run python -m pytest -k slow",
                &["poetry run python -m pytest -k <string>"],
            ),
            (
                "python3 -m pip install -r requirements.txt",
                &["python3 -m pip install -r <path>"],
            ),
            (
                "python scripts/gen.py -m fast",
                &["python <path> -m <string>"],
            ),
            ("make -j8 test", &["make test -j <number>"]),
            (
                "make -j 8 build CC=clang",
                &["make build -j <number> CC=<string>"],
            ),
            (
                "docker compose -f dev.yml up -d",
                &["docker compose up -d -f <path>"],
            ),
            ("docker logs -f web", &["docker logs -f <string>"]),
            (
                "kubectl get pods -n prod",
                &["kubectl get pods -n <string>"],
            ),
            (
                "kubectl rollout status deployment/api",
                &["kubectl rollout status <path>"],
            ),
            (
                "gh pr create --title 'x' --body y",
                &["gh pr create --body <string> --title <string>"],
            ),
            (
                "sudo apt-get install -y curl",
                &["sudo apt-get install -y <string>"],
            ),
            ("time cargo build", &["cargo build"]),
            ("timeout 30 npm test", &["npm test"]),
            ("env -i FOO=1 make", &["FOO=<number> make"]),
            ("nohup ./server --port 8080 &", &["server --port <number>"]),
            ("grep -rn 'fn main' src/", &["grep -rn <string> <path>"]),
            (
                "grep -e 'a.*' -e b *.rs",
                &["grep -e <string> -e <string> <glob>"],
            ),
            ("rg -t rust TODO", &["rg -t <string> <string>"]),
            (
                "find . -name '*.rs' -exec wc -l {} \\;",
                &["find -exec <string> -name <glob> <path>"],
            ),
            (
                "find . \\( -name a -o -name b \\) -type f",
                &["find -name <string> -name <string> -o -type <string> <path> ( )"],
            ),
            (
                "jq -r '.items[] | .name' data.json",
                &["jq -r <string> <path>"],
            ),
            (
                "jq --arg n 1 '.x' f.json",
                &["jq --arg <string> <number> <string> <path>"],
            ),
            (
                "curl -s -X POST -H 'Content-Type: application/json' https://api.x.com/v1",
                &["curl -H <string> -X <string> -s <url>"],
            ),
            ("tar -czf out.tgz src", &["tar -czf <path> <string>"]),
            (
                "head -20 src/main.rs | wc -l",
                &["head <number> <path>", "wc -l"],
            ),
            ("ls | wc -l", &["ls", "wc -l"]),
            ("cargo test 2>/dev/null | head -20", &["cargo test"]),
            ("cargo test > out.txt 2>&1", &["cargo test > <path>"]),
            (
                "cat > types/state.ts << 'EOF'\nexport type X = 1;\nEOF",
                &["cat > <path> <<EOF"],
            ),
            ("echo hi >> notes.md", &["echo <string> >> <path>"]),
            ("sort < in.txt", &["sort < <path>"]),
            ("xargs -I{} rm {}", &["xargs -I <string> rm {}"]),
            (
                "mysql -uroot -psecret db",
                &["mysql -p <string> -u <string> <string>"],
            ),
            (
                "git commit -m \"$(cat <<'EOF'\nFix it\nEOF\n)\" && git push",
                &["git commit -m <string>", "git push"],
            ),
            (
                "for f in *.rs; do rustfmt \"$f\"; done",
                &["rustfmt <string>"],
            ),
            ("/usr/bin/python3.12 -V", &["python3.12 -V"]),
            ("hub pull-request -m x", &["hub pull-request -m <string>"]),
            (
                "hg commit -m 'x' && jj git push",
                &["hg commit -m <string>", "jj git push"],
            ),
            (
                "npx next dev --port 3000",
                &["npx next dev --port <number>"],
            ),
            ("pyenv install 3.12.1", &["pyenv install <string>"]),
            ("screen -S build make all", &["screen -S <string> make all"]),
        ];
        for (command, expected) in cases {
            assert_eq!(&keys(command), expected, "{command:?}");
        }
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
            .flags
            .iter()
            .map(|f| {
                (
                    f.name.as_str(),
                    f.values.iter().map(|v| v.1.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(flags, [("-C", vec!["../r"]), ("-am", vec!["fix it"])]);
        assert!(
            matches!(&seg.args[..], [ArgPart::Slot { kind: SlotKind::Path, value, .. }] if value == "src/a.rs"),
            "{:?}",
            seg.args
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
        assert_eq!(d.segments[1].flags[0].name, "--nocapture");
    }
}
