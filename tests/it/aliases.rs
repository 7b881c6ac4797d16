//! Issue 30, item 2: the user's aliases and functions understood. A zsh history typed through
//! `.zshrc` aliases (`gia <path>` → `gc -m …` → `gp`) is the git add / commit / push habit,
//! shown with each expansion and where it is defined; the `g` function (`cd` through a fuzzy
//! finder) and the `v` alias (an editor) sit between everything and no habit crosses them;
//! without the `.zshrc`, nothing with `gia`/`gc` is proposed, and the reason names the word.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::common::{TestEnv, json_of};

const ZSHRC: &str = "\
# aliases of my own
alias gia='git add'
alias gc='git commit'
alias gp='git push'
g(){ cd \"$(ghq list|fzf)\"; }
alias v=nvim
";

/// Six sessions (two hours apart) of a zsh history in EXTENDED_HISTORY format
/// (`: <start>:<elapsed>;<command>`): the commit habit through the aliases, `g` and `v`
/// between every other step.
fn history(dir: &Path) -> PathBuf {
    let mut lines = Vec::new();
    for i in 0..6u64 {
        let mut t = 1_764_300_000 + i * 7_200;
        let commands = [
            "g".to_owned(),
            format!("v notes/day{i}.md"),
            format!("gia src/mod{i}.rs"),
            format!("gc -m 'fix parser case {i}'"),
            "gp".to_owned(),
            "g".to_owned(),
            "cargo build --release".to_owned(),
            "v src/main.rs".to_owned(),
            "cargo fmt --all".to_owned(),
            "g".to_owned(),
            "make lint".to_owned(),
        ];
        for command in commands {
            lines.push(format!(": {t}:3;{command}"));
            t += 40;
        }
    }
    let path = dir.join("zsh_history");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write the history");
    path
}

fn ingest_and_mine(env: &TestEnv, config: Option<&Path>) -> String {
    let history = history(env.path());
    let with_config = |cmd: &mut assert_cmd::Command| {
        if let Some(config) = config {
            cmd.arg("--config").arg(config);
        }
    };
    let mut ingest = env.cli();
    with_config(&mut ingest);
    ingest
        .args(["ingest", "--format", "zsh"])
        .arg(&history)
        .assert()
        .success();
    let mut mine = env.cli();
    with_config(&mut mine);
    let out = mine.arg("mine").assert().success();
    String::from_utf8_lossy(&out.get_output().stdout).into_owned()
}

fn patterns(env: &TestEnv) -> Vec<Value> {
    let out = env
        .cli()
        .args(["--json", "patterns", "--limit", "200"])
        .assert()
        .success();
    json_of(out.get_output())
        .as_array()
        .cloned()
        .expect("a JSON array")
}

/// Each step's canonical key.
fn keys(p: &Value) -> Vec<String> {
    p["step_detail"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["key"].as_str().map(str::to_owned))
        .collect()
}

fn program(key: &str) -> &str {
    key.split(' ').next().unwrap_or_default()
}

#[test]
fn a_habit_typed_through_zsh_aliases_is_proposed_as_what_the_shell_ran() {
    let env = TestEnv::new();
    std::fs::write(env.path().join("home/.zshrc"), ZSHRC).expect("write .zshrc");
    let said = ingest_and_mine(&env, None);
    assert!(said.contains("shell definitions read: 5"), "{said}");
    let all = patterns(&env);
    let summary: Vec<Vec<String>> = all.iter().map(keys).collect();
    let commit = all
        .iter()
        .find(|p| {
            p["status"] != "folded"
                && keys(p)
                    .iter()
                    .map(|k| program(k).to_owned())
                    .collect::<Vec<_>>()
                    == ["git", "git", "git"]
        })
        .unwrap_or_else(|| panic!("no git add → commit → push habit in {summary:#?}"));
    let k = keys(commit);
    assert!(
        k[0].starts_with("git add") && k[1].starts_with("git commit -m") && k[2] == "git push",
        "{k:?}"
    );
    assert_eq!(commit["support"], 6, "{commit:#}");
    // Its lines are what the shell ran.
    let evidence = commit["evidence"][0]["commands"].to_string();
    assert!(evidence.contains("git add src/mod"), "{evidence}");
    assert!(!evidence.contains("gia"), "{evidence}");
    // Each expansion, with where it is defined.
    let zshrc = env.path().join("home/.zshrc");
    let expansions: Vec<(String, String, String)> = commit["expansions"]
        .as_array()
        .expect("expansions")
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap_or_default().to_owned(),
                e["text"].as_str().unwrap_or_default().to_owned(),
                e["defined_at"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let at = |line: u32| format!("{}:{line}", zshrc.display());
    assert_eq!(
        expansions,
        [
            ("gia".into(), "git add".into(), at(2)),
            ("gc".into(), "git commit".into(), at(3)),
            ("gp".into(), "git push".into(), at(4)),
        ]
    );
    // No habit crosses `g` or `v`: none holds them, none runs from one side to the other.
    for (p, k) in all.iter().zip(&summary) {
        for key in k {
            assert!(
                !matches!(program(key), "g" | "v" | "nvim" | "cd" | "fzf"),
                "{key} in {k:?}"
            );
        }
        let programs: Vec<&str> = k.iter().map(|k| program(k)).collect();
        let sides = [
            programs.contains(&"git"),
            programs.contains(&"cargo"),
            programs.contains(&"make"),
        ];
        assert!(
            sides.iter().filter(|&&s| s).count() <= 1,
            "{k:?} crosses a by-hand step: {p:#}"
        );
        let fmt_and_build = k.iter().any(|k| k.starts_with("cargo build"))
            && k.iter().any(|k| k.starts_with("cargo fmt"));
        assert!(!fmt_and_build, "{k:?} crosses `v`");
    }
    // `toolsmith patterns ID` shows each expansion.
    let id = commit["id"].as_str().expect("id");
    let out = env.cli().args(["patterns", id]).assert().success();
    let shown = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        shown.contains("typed through your shell's definitions:"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("gia = git add  (alias at {})", at(2))),
        "{shown}"
    );
    assert!(shown.contains("git add src/"), "{shown}");
    // Proposed: a candidate whose review shows each expansion and where it is defined.
    let out = env
        .cli()
        .args(["--json", "generate", "--pattern", id])
        .timeout(Duration::from_secs(180))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let candidate = report["candidates"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no candidate: {report:#}"))
        .to_owned();
    let out = env.cli().args(["show", &candidate]).assert().success();
    let review = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    for (name, text, line) in [
        ("gia", "git add", 2),
        ("gc", "git commit", 3),
        ("gp", "git push", 4),
    ] {
        assert!(
            review.contains(&format!("`{name}` is `{text}` (alias at {})", at(line))),
            "{review}"
        );
    }
    // `[mine] shell_definitions = false`: the lines are read as typed again.
    let config = env.write_config("[mine]\nshell_definitions = false\n");
    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .arg("mine")
        .assert()
        .success();
    let said = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(!said.contains("shell definitions read"), "{said}");
    let typed = patterns(&env)
        .iter()
        .any(|p| keys(p).iter().any(|k| k.starts_with("gia ")));
    assert!(
        typed,
        "no pattern through `gia` once the definitions are not read"
    );
}

#[test]
fn without_the_zshrc_an_unknown_short_word_is_never_guessed() {
    let env = TestEnv::new();
    // Programs are looked up on this PATH only: none of the short words is there.
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let config = env.write_config(&format!("[sandbox]\npath = \"{}\"\n", bin.display()));
    let said = ingest_and_mine(&env, Some(&config));
    assert!(!said.contains("shell definitions read"), "{said}");
    let all = patterns(&env);
    let typed: Vec<&Value> = all
        .iter()
        .filter(|p| {
            keys(p)
                .iter()
                .any(|k| matches!(program(k), "gia" | "gc" | "gp"))
        })
        .collect();
    assert!(!typed.is_empty(), "the habit is still seen: {all:#?}");
    // Every pattern through a short word nothing defines names it, and none of them is
    // proposed: each is refused, or folded into one that is.
    for p in &typed {
        let unknown: Vec<&str> = p["unknown_programs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for key in keys(p) {
            if matches!(program(&key), "gia" | "gc" | "gp" | "g" | "v") {
                assert!(unknown.contains(&program(&key)), "{key} not named: {p:#}");
            }
        }
    }
    let first = typed[0];
    let word = first["unknown_programs"][0]
        .as_str()
        .expect("a word")
        .to_owned();
    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .args(["patterns", first["id"].as_str().expect("id")])
        .assert()
        .success();
    let shown = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        shown.contains(&format!("`{word}` is no program on your PATH")),
        "{shown}"
    );
    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .args(["--json", "generate"])
        .timeout(Duration::from_secs(180))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let after = patterns(&env);
    for c in report["candidates"].as_array().into_iter().flatten() {
        let from = after.iter().find(|p| p["id"] == c["pattern"]);
        let unknown = from.map(|p| p["unknown_programs"].clone());
        assert!(
            unknown
                .as_ref()
                .is_none_or(|u| u.as_array().is_none_or(Vec::is_empty)),
            "a candidate from a pattern with an unknown word: {c:#} {from:#?}"
        );
    }
    // The one the habit's patterns fold into is refused too, the reason naming its word.
    let head = after
        .iter()
        .find(|p| {
            p["status"] != "folded"
                && p["unknown_programs"]
                    .as_array()
                    .is_some_and(|u| !u.is_empty())
        })
        .unwrap_or_else(|| panic!("a pattern standing for the habit: {after:#?}"));
    let word = head["unknown_programs"][0].as_str().expect("a word");
    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .args(["generate", "--pattern", head["id"].as_str().expect("id")])
        .timeout(Duration::from_secs(180))
        .assert();
    let output = out.get_output();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        said.contains(&format!(
            "its command word `{word}` is no program on your PATH"
        )),
        "{said}"
    );
}
