//! Each shell's files, written in their real formats (`tests/fixtures/shell_defs/`), read into
//! definitions and classified; and lines expanded with them.

use std::path::{Path, PathBuf};

use super::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/shell_defs")
        .join(name)
}

/// Copies fixture `from` to `to` under `home`, making its directories.
fn place(home: &Path, from: &str, to: &str) {
    let target = home.join(to);
    std::fs::create_dir_all(target.parent().expect("a parent")).expect("mkdir");
    std::fs::copy(fixture(from), &target).expect("copy the fixture");
}

fn env_of(home: &Path) -> HomeEnv {
    HomeEnv {
        home: Some(home.to_owned()),
        ..HomeEnv::default()
    }
}

fn meaning(defs: &ShellDefinitions, shell: DefShell, name: &str) -> Meaning {
    defs.get(shell, name)
        .unwrap_or_else(|| panic!("{name} is defined for {shell:?}: {:?}", defs.definitions()))
        .meaning
        .clone()
}

fn expands(text: &str) -> Meaning {
    Meaning::Expands(text.to_owned())
}

#[test]
fn bash_files_and_the_files_they_source_are_read_and_classified() {
    let home = tempfile::tempdir().expect("a temporary home");
    place(home.path(), "bashrc", ".bashrc");
    place(home.path(), "bash_aliases", ".bash_aliases");
    let defs = discover(&env_of(home.path()));
    assert!(defs.notes.is_empty(), "{:?}", defs.notes);
    let b = DefShell::Bash;
    // Sourced with `. ~/.bash_aliases`, from inside an `if`.
    let gia = defs.get(b, "gia").expect("gia from .bash_aliases");
    assert_eq!((gia.kind, gia.line), (DefKind::Alias, 1));
    assert!(gia.file.ends_with(".bash_aliases"), "{:?}", gia.file);
    assert_eq!(gia.meaning, expands("git add"));
    assert_eq!(meaning(&defs, b, "gs"), expands("git status"));
    assert_eq!(meaning(&defs, b, "py"), expands("python3"));
    // An editor, a REPL with no script: driven by hand.
    assert_eq!(meaning(&defs, b, "v"), Meaning::Interactive);
    // A function forwarding its arguments is its command.
    let gco = defs.get(b, "gco").expect("gco");
    assert_eq!((gco.kind, gco.line), (DefKind::Function, 21));
    assert_eq!(gco.meaning, expands("git checkout"));
    // Reaching `cd`, or a fuzzy finder inside a substitution: interactive.
    assert_eq!(meaning(&defs, b, "mkcd"), Meaning::Interactive);
    assert_eq!(meaning(&defs, b, "proj"), Meaning::Interactive);
    assert_eq!(meaning(&defs, b, "pick"), Meaning::Interactive);
    // Two commands: what it does is not guessed.
    assert_eq!(meaning(&defs, b, "backup"), Meaning::Opaque);
}

#[test]
fn alias_expansion_follows_the_shells_rules() {
    let home = tempfile::tempdir().expect("a temporary home");
    place(home.path(), "bashrc", ".bashrc");
    place(home.path(), "bash_aliases", ".bash_aliases");
    let defs = discover(&env_of(home.path()));
    let line = |l: &str| defs.expand_line(Source::Bash, l).map(|e| e.line);
    assert_eq!(line("gia src/x.rs").as_deref(), Some("git add src/x.rs"));
    // Recursive, and a self-reference stops.
    assert_eq!(line("kgp -A").as_deref(), Some("kubectl get pods -A"));
    assert_eq!(line("ls -la").as_deref(), Some("ls --color=auto -la"));
    // A value ending in a blank expands the next word too.
    assert_eq!(line("sudo gia x").as_deref(), Some("sudo git add x"));
    // Only command words, only unquoted ones; every command of the line.
    assert_eq!(line("echo gia"), None);
    assert_eq!(line("'gia' x"), None);
    assert_eq!(
        line("gia a && gco -b x | gs").as_deref(),
        Some("git add a && git checkout -b x | git status")
    );
    // An interactive or opaque one stays as typed: it is a boundary.
    assert_eq!(line("v notes.md"), None);
    assert!(defs.is_boundary(Source::Bash, "v"));
    assert!(defs.is_boundary(Source::Bash, "backup"));
    assert!(!defs.is_boundary(Source::Bash, "gia"));
    // Another shell's definitions do not apply; agents other than Claude Code use none.
    assert_eq!(defs.expand_line(Source::Zsh, "gia x"), None);
    assert_eq!(defs.expand_line(Source::Codex, "gia x"), None);
    let used = defs
        .expand_line(Source::Bash, "kgp")
        .expect("expanded")
        .used;
    let names: Vec<&str> = used
        .iter()
        .map(|&i| defs.definitions()[i as usize].name.as_str())
        .collect();
    assert_eq!(names, ["kgp", "k"]);
    let record = defs.expansion(used[0]).expect("a record");
    // Each record shows its own definition.
    assert_eq!(record.text, "k get pods");
    assert!(
        record.defined_at.ends_with(".bashrc:18"),
        "{}",
        record.defined_at
    );
}

#[test]
fn zsh_with_oh_my_zsh_reads_the_plugins_named_and_the_users_own_last() {
    let home = tempfile::tempdir().expect("a temporary home");
    place(home.path(), "zshrc", ".zshrc");
    for (from, to) in [
        (
            "omz/plugins/git/git.plugin.zsh",
            ".oh-my-zsh/plugins/git/git.plugin.zsh",
        ),
        (
            "omz/plugins/fzf/fzf.plugin.zsh",
            ".oh-my-zsh/plugins/fzf/fzf.plugin.zsh",
        ),
        ("omz/lib/directories.zsh", ".oh-my-zsh/lib/directories.zsh"),
        ("omz/custom/mine.zsh", ".oh-my-zsh/custom/mine.zsh"),
        // A plugin not in `plugins=(…)` is not read.
        (
            "omz/plugins/git/git.plugin.zsh",
            ".oh-my-zsh/plugins/other/other.plugin.zsh",
        ),
    ] {
        place(home.path(), from, to);
    }
    let defs = discover(&env_of(home.path()));
    assert!(defs.notes.is_empty(), "{:?}", defs.notes);
    let z = DefShell::Zsh;
    assert_eq!(meaning(&defs, z, "ga"), expands("git add"));
    assert_eq!(meaning(&defs, z, "gst"), expands("git status"));
    // `.zshrc` after oh-my-zsh: its `gc` wins over the plugin's; the custom file over the plugin.
    let gc = defs.get(z, "gc").expect("gc");
    assert_eq!(gc.meaning, expands("git commit -v"));
    assert!(gc.file.ends_with(".zshrc"));
    assert_eq!(meaning(&defs, z, "gp"), expands("git push origin HEAD"));
    // zsh's global and suffix aliases are not command words.
    assert!(
        defs.get(z, "G").is_none() && defs.get(z, "md").is_some_and(|d| d.kind == DefKind::Alias)
    );
    assert_eq!(meaning(&defs, z, "md"), expands("mkdir -p"));
    // `.zshrc`'s `g` function replaces the plugin's `alias g=git`; it moves the shell.
    let g = defs.get(z, "g").expect("g");
    assert_eq!(
        (g.kind, g.meaning.clone()),
        (DefKind::Function, Meaning::Interactive)
    );
    // zsh's `{ code … }` (no `;` before `}`) is no sh: that one function is lost, not guessed
    // (an unknown short word, then), and the next one is still read.
    assert!(defs.get(z, "c").is_none());
    assert_eq!(meaning(&defs, z, "q"), Meaning::Interactive);
    assert_eq!(meaning(&defs, z, "d"), Meaning::Opaque);
    assert_eq!(meaning(&defs, z, "-"), Meaning::Interactive);
    assert_eq!(meaning(&defs, z, "git_current_branch"), Meaning::Opaque);
    assert!(defs.get(z, "fzf_setup_using_base_dir").is_some());
    assert_eq!(
        defs.expand_line(Source::Zsh, "gc -m 'fix: x' && gp")
            .map(|e| e.line)
            .as_deref(),
        Some("git commit -v -m 'fix: x' && git push origin HEAD")
    );
}

#[test]
fn zdotdir_and_a_missing_plugin_are_honoured_and_noted() {
    let home = tempfile::tempdir().expect("a temporary home");
    let dot = home.path().join("zdot");
    place(home.path(), "zshrc", "zdot/.zshrc");
    std::fs::create_dir_all(home.path().join("omz")).expect("mkdir");
    let env = HomeEnv {
        home: Some(home.path().to_owned()),
        zdotdir: Some(dot),
        zsh: Some(home.path().join("omz")),
        ..HomeEnv::default()
    };
    let defs = discover(&env);
    assert_eq!(meaning(&defs, DefShell::Zsh, "gia"), expands("git add"));
    assert_eq!(defs.notes.len(), 2, "{:?}", defs.notes);
    assert!(defs.notes[0].contains("plugins/git/git.plugin.zsh: not found"));
}

#[test]
fn fish_aliases_abbreviations_and_functions() {
    let home = tempfile::tempdir().expect("a temporary home");
    for f in ["config.fish", "functions/gp.fish", "conf.d/nav.fish"] {
        place(
            home.path(),
            &format!("fish/{f}"),
            &format!(".config/fish/{f}"),
        );
    }
    let defs = discover(&env_of(home.path()));
    assert!(defs.notes.is_empty(), "{:?}", defs.notes);
    let f = DefShell::Fish;
    let gco = defs.get(f, "gco").expect("gco");
    assert_eq!((gco.kind, gco.line), (DefKind::Abbreviation, 3));
    assert_eq!(gco.meaning, expands("git checkout"));
    assert_eq!(meaning(&defs, f, "gd"), expands("git diff"));
    assert_eq!(meaning(&defs, f, "nv"), Meaning::Interactive);
    assert!(defs.get(f, "old").is_none());
    assert_eq!(meaning(&defs, f, "gia"), expands("git add"));
    assert_eq!(meaning(&defs, f, "ll"), expands("ls -lh"));
    // What `alias --save` writes: a function forwarding `$argv`.
    let gp = defs.get(f, "gp").expect("gp");
    assert_eq!(
        (gp.kind, gp.meaning.clone()),
        (DefKind::Function, expands("git push"))
    );
    assert_eq!(meaning(&defs, f, "mkcd"), Meaning::Interactive);
    assert_eq!(meaning(&defs, f, "y"), Meaning::Interactive);
    assert_eq!(
        defs.expand_line(Source::Fish, "gia x; and gp")
            .map(|e| e.line)
            .as_deref(),
        Some("git add x; and git push")
    );
}

#[test]
fn a_claude_code_snapshot_with_encoded_functions() {
    let home = tempfile::tempdir().expect("a temporary home");
    let name = "snapshot-bash-1764300000000-abc123.sh";
    place(
        home.path(),
        name,
        &format!(".claude/shell-snapshots/{name}"),
    );
    let defs = discover(&env_of(home.path()));
    assert!(defs.notes.is_empty(), "{:?}", defs.notes);
    let s = DefShell::Snapshot;
    assert_eq!(meaning(&defs, s, "gc"), expands("git commit"));
    assert_eq!(meaning(&defs, s, "gp"), expands("git push"));
    assert_eq!(meaning(&defs, s, "-"), Meaning::Interactive);
    assert_eq!(meaning(&defs, s, "v"), Meaning::Interactive);
    assert_eq!(meaning(&defs, s, "gia"), expands("git add"));
    // Decoded from base64, as data: one forwarding, one not; on the `eval`'s line.
    let gl = defs.get(s, "gl").expect("gl, decoded");
    assert_eq!(
        (gl.line, gl.meaning.clone()),
        (8, expands("git log --oneline"))
    );
    assert_eq!(meaning(&defs, s, "gawklibpath_append"), Meaning::Opaque);
    assert_eq!(
        defs.expand_line(Source::ClaudeCode, "gia a.rs && gc -m x")
            .map(|e| e.line)
            .as_deref(),
        Some("git add a.rs && git commit -m x")
    );
    // CLAUDE_CONFIG_DIR's snapshots are read too.
    let other = tempfile::tempdir().expect("a temporary directory");
    place(other.path(), name, &format!("shell-snapshots/{name}"));
    let env = HomeEnv {
        claude_config_dir: Some(other.path().to_owned()),
        ..HomeEnv::default()
    };
    assert!(discover(&env).get(s, "gl").is_some());
}

#[test]
fn bad_files_are_notes_never_failures() {
    let home = tempfile::tempdir().expect("a temporary home");
    // Too large, binary, not a regular file, a source loop, an unbalanced file.
    std::fs::write(
        home.path().join(".bashrc"),
        "source ~/.bashrc\nalias a1='git add'\n",
    )
    .expect("write");
    std::fs::write(
        home.path().join(".bash_aliases"),
        vec![b'a'; (super::read::MAX_FILE_BYTES_FOR_TEST + 1) as usize],
    )
    .expect("write");
    std::fs::create_dir_all(home.path().join(".profile")).expect("mkdir");
    std::fs::write(
        home.path().join(".zshrc"),
        b"\xff\xfe alias z1='ls'\nif then {{{ ((\n",
    )
    .expect("write");
    nix::unistd::mkfifo(
        &home.path().join(".bash_profile"),
        nix::sys::stat::Mode::S_IRWXU,
    )
    .expect("mkfifo");
    let defs = discover(&env_of(home.path()));
    assert_eq!(meaning(&defs, DefShell::Bash, "a1"), expands("git add"));
    let notes = defs.notes.join("\n");
    assert!(
        notes.contains(".bash_aliases: skipped, it holds"),
        "{notes}"
    );
    assert!(
        notes.contains(".profile: skipped, it is not a regular file"),
        "{notes}"
    );
    assert!(
        notes.contains(".bash_profile: skipped, it is not a regular file"),
        "{notes}"
    );
    assert_eq!(
        super::read::decode_for_test("aGk=\n").as_deref(),
        Some(&b"hi"[..])
    );
    assert_eq!(super::read::decode_for_test("a!b"), None);
}

#[test]
fn a_function_calling_an_interactive_definition_is_interactive() {
    let def = |name: &str, kind, text: &str| Definition {
        name: name.to_owned(),
        kind,
        text: text.to_owned(),
        file: PathBuf::from("/home/u/.bashrc"),
        line: 1,
        shell: DefShell::Bash,
        meaning: Meaning::Opaque,
    };
    let defs = ShellDefinitions::new(
        vec![
            def("pickdir", DefKind::Function, "pickdir() { ghq list | sk; }"),
            def(
                "go2",
                DefKind::Function,
                "go2() {\n  local d\n  d=$(pickdir) && pushd \"$d\"\n}",
            ),
            def("j", DefKind::Alias, "go2 "),
            def("ed2", DefKind::Function, "ed2() { \"$EDITOR\" \"$@\"; }"),
            def("repl", DefKind::Function, "repl() { python3; }"),
            def("run", DefKind::Function, "run() { python3 \"$@\"; }"),
            def(
                "shell",
                DefKind::Function,
                "shell() { exec \"$SHELL\" -l; }",
            ),
            def(
                "pick",
                DefKind::Function,
                "pick() { select x in a b; do echo $x; done; }",
            ),
            def("lsx", DefKind::Function, "lsx() { uses_j; }"),
            def("uses_j", DefKind::Function, "uses_j() { j; }"),
        ],
        Vec::new(),
    );
    let b = DefShell::Bash;
    for name in [
        "pickdir", "go2", "j", "ed2", "repl", "shell", "pick", "lsx", "uses_j",
    ] {
        assert_eq!(meaning(&defs, b, name), Meaning::Interactive, "{name}");
    }
    // A REPL given the arguments is a script runner: it forwards them.
    assert_eq!(meaning(&defs, b, "run"), expands("python3"));
}

#[test]
fn prezto_s_modules_are_read_as_zpreztorc_loads_them() {
    // AnaTofuZ's history in the corpus types `gia`, `gc`, `gp`: Prezto's git module.
    let home = tempfile::tempdir().expect("a temporary home");
    place(home.path(), "zpreztorc", ".zpreztorc");
    place(
        home.path(),
        "prezto/modules/git/alias.zsh",
        ".zprezto/modules/git/alias.zsh",
    );
    place(
        home.path(),
        "prezto/modules/utility/init.zsh",
        ".zprezto/modules/utility/init.zsh",
    );
    let defs = discover(&env_of(home.path()));
    let z = DefShell::Zsh;
    assert_eq!(meaning(&defs, z, "gia"), expands("git add"));
    assert_eq!(meaning(&defs, z, "gc"), expands("git commit --verbose"));
    assert_eq!(meaning(&defs, z, "gp"), expands("git push"));
    assert!(
        defs.get(z, "gia")
            .is_some_and(|d| d.file.ends_with("alias.zsh") && d.line > 0)
    );
    // `mkdcd` moves the shell: a boundary.
    assert!(
        defs.get(z, "mkdcd")
            .is_some_and(|d| d.meaning == Meaning::Interactive)
    );
    // Modules the rc loads but that are not installed are said, once each.
    assert!(
        defs.notes.iter().any(|n| n.contains("`environment`")),
        "{:?}",
        defs.notes
    );
    assert!(
        super::read::prezto_modules("zstyle ':prezto:load' pmodule 'git' # x")
            .contains(&"git".to_owned())
    );
}
