//! A person's edit is a candidate (`toolsmith edit`, issue 33 item 6), through the real
//! binaries and the daemon: the review branch in a worktree, a commit there validated in the
//! sandbox (origin `edit`, the author from git), shown with its diff and approved like any
//! candidate; a branch pushed by hand works too; a bad edit fails and cannot be approved; a
//! branch that moves is validated again.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{self, PATIENCE, TestEnv, json_of};

/// `git -C DIR ARGS…` as Ann (who edits), its stdout.
fn git_in(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Ann Editor")
        .env("GIT_AUTHOR_EMAIL", "ann@example.org")
        .env("GIT_COMMITTER_NAME", "Ann Editor")
        .env("GIT_COMMITTER_EMAIL", "ann@example.org")
        .env("HOME", env.path().join("home"))
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn candidates(env: &TestEnv) -> Vec<Value> {
    let out = env.cli().args(["--json", "candidates"]).assert().success();
    json_of(out.get_output())
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Waits until the daemon made a candidate of `commit` that is done validating.
fn settled(env: &TestEnv, daemon: &common::Daemon, commit: &str) -> Value {
    let deadline = Instant::now() + PATIENCE * 3;
    loop {
        let all = candidates(env);
        if let Some(c) = all.iter().find(|c| c["edit"]["commit"] == commit)
            && matches!(c["state"].as_str(), Some("awaiting-review" | "failed"))
        {
            return c.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no settled candidate of {commit}: {all:#?}\n{}",
            daemon.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Writes `text` after the first line (the shebang) of `file`.
fn insert_after_first_line(file: &Path, text: &str) {
    let old = std::fs::read_to_string(file).expect("read");
    let (first, rest) = old.split_once('\n').expect("a shebang line");
    std::fs::write(file, format!("{first}\n{text}\n{rest}")).expect("write");
}

#[test]
fn a_persons_edit_is_validated_shown_with_its_diff_and_approved_like_any_candidate() {
    let env = TestEnv::new();
    let made = json_of(
        env.cli()
            .args([
                "--json",
                "new",
                "Show the disk use of a folder",
                "--example",
                "du -sh src",
                "--example",
                "du -sh tests",
            ])
            .timeout(Duration::from_secs(120))
            .assert()
            .success()
            .get_output(),
    );
    let first = made["candidates"][0]["id"].as_str().expect("id").to_owned();
    let tool = made["candidates"][0]["tool"]
        .as_str()
        .expect("tool")
        .to_owned();
    env.cli().args(["approve", &first]).assert().success();
    let daemon = common::Daemon::start(&env, env.daemon_command());

    // `toolsmith edit` prepares the review branch in a worktree and prints its path first.
    let out = env.cli().args(["edit", &tool]).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let worktree = PathBuf::from(stdout.lines().next().expect("the path"));
    let branch = format!("review/{tool}/1.0.1");
    assert!(stdout.contains(&branch), "{stdout}");
    assert_eq!(
        git_in(&env, &worktree, &["rev-parse", "--abbrev-ref", "HEAD"]),
        branch
    );
    // A commit there is validated: origin edit, the author from git.
    let script = worktree.join(format!("tools/{tool}/run.sh"));
    insert_after_first_line(
        &script,
        "# Ann: du counts what the folder holds, links not followed",
    );
    git_in(
        &env,
        &worktree,
        &["commit", "-qam", "explain what du counts"],
    );
    let edited = git_in(&env, &worktree, &["rev-parse", "HEAD"]);
    let c = settled(&env, &daemon, &edited);
    assert_eq!(c["state"], "awaiting-review", "{c:#}\n{}", daemon.log());
    assert_eq!(c["origin"], "edit");
    assert_eq!(c["edit"]["author"], "Ann Editor <ann@example.org>");
    assert_eq!(c["version"], "1.0.1");
    let id = c["id"].as_str().expect("id").to_owned();
    let shown = json_of(
        env.cli()
            .args(["--json", "show", &id])
            .assert()
            .success()
            .get_output(),
    );
    let diff = shown["proposal"]["diff"].as_str().unwrap_or_default();
    assert!(
        diff.contains("+# Ann: du counts what the folder holds, links not followed"),
        "{shown:#}"
    );
    let human = env.cli().args(["show", &id]).assert().success();
    let human = String::from_utf8_lossy(&human.get_output().stdout).into_owned();
    assert!(
        human.contains(&format!(
            "edited by: Ann Editor <ann@example.org> (commit {edited})"
        )),
        "{human}"
    );

    // Approved the same way: on main, Ann its author, with the usual trailers.
    env.cli().args(["approve", &id]).assert().success();
    let registry = env.state().join("registry");
    let message = git_in(&env, &registry, &["log", "-1", "--format=%B", "main"]);
    for line in [
        "Origin: edit".to_owned(),
        "Edited-by: Ann Editor <ann@example.org>".to_owned(),
        format!("Edited-in: {edited}"),
        format!("Candidate: {id}"),
        "Approved-by: ".to_owned(),
    ] {
        assert!(message.contains(&line), "{line} in {message}");
    }
    assert_eq!(
        git_in(
            &env,
            &registry,
            &["log", "-1", "--format=%an <%ae>", "main"]
        ),
        "Ann Editor <ann@example.org>"
    );
    let on_main = git_in(
        &env,
        &registry,
        &["show", &format!("main:tools/{tool}/run.sh")],
    );
    assert!(on_main.contains("# Ann: du counts"), "{on_main}");
    env.cli().arg("verify").assert().success();

    // By hand: a clone, a bad commit pushed to a review branch. It is validated, fails its
    // tests, is shown failing, and cannot be approved.
    let clone = env.path().join("clone");
    git_in(
        &env,
        env.path(),
        &[
            "clone",
            "-q",
            &registry.display().to_string(),
            &clone.display().to_string(),
        ],
    );
    let script = clone.join(format!("tools/{tool}/run.sh"));
    insert_after_first_line(&script, "exit 3");
    git_in(&env, &clone, &["commit", "-qam", "stop early"]);
    let hand = format!("review/{tool}/1.0.2");
    git_in(
        &env,
        &clone,
        &["push", "-q", "origin", &format!("HEAD:{hand}")],
    );
    let bad = git_in(&env, &clone, &["rev-parse", "HEAD"]);
    let c = settled(&env, &daemon, &bad);
    assert_eq!(c["state"], "failed", "{c:#}");
    assert_eq!(c["origin"], "edit");
    let reason = c["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("failed") && reason.contains(&hand),
        "{reason}"
    );
    let refused = env.cli().args(["approve", &hand]).assert().code(1);
    let err = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(err.contains("not proposed by toolsmith"), "{err}");

    // The branch moves (the fix pushed): the new commit is validated again and proposed.
    let fixed = std::fs::read_to_string(&script)
        .expect("read")
        .replace("exit 3\n", "");
    std::fs::write(&script, fixed).expect("write");
    insert_after_first_line(&script, "# by hand, without the early exit");
    git_in(&env, &clone, &["commit", "-qam", "no early exit"]);
    git_in(
        &env,
        &clone,
        &["push", "-q", "origin", &format!("HEAD:{hand}")],
    );
    let good = git_in(&env, &clone, &["rev-parse", "HEAD"]);
    let c = settled(&env, &daemon, &good);
    assert_eq!(c["state"], "awaiting-review", "{c:#}\n{}", daemon.log());
    let reviews = json_of(
        env.cli()
            .args(["--json", "review"])
            .assert()
            .success()
            .get_output(),
    );
    let review = reviews
        .as_array()
        .and_then(|r| r.iter().find(|r| r["branch"] == hand.as_str()))
        .cloned()
        .unwrap_or_default();
    assert_eq!(review["candidate"], c["id"], "{reviews:#}");
    // The person's commits are kept, the proposal is toolsmith's own commit on main.
    assert_ne!(review["commit"], good.as_str());
    env.cli()
        .args(["approve", c["id"].as_str().expect("id")])
        .assert()
        .success();
    env.cli().arg("verify").assert().success();
}
