//! The registry in git, end to end through the CLI: proposals as commits on review branches,
//! approval (by toolsmith and by `git merge`), rejection, tags never moved, rollback (by
//! toolsmith and by `git revert`), tampering refused, `verify`, and approvals killed half-way.

use crate::common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{TestEnv, json_of};
use serde_json::Value;

/// The registry: beside the state, since every command names it with `--state`.
fn registry_dir(env: &TestEnv) -> PathBuf {
    env.state().join("registry")
}

/// `git -C <registry> ARGS…` as a person with a name would run it; its stdout.
fn git(env: &TestEnv, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(registry_dir(env))
        .args(args)
        .env("GIT_AUTHOR_NAME", "Ada Reviewer")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_NAME", "Ada Reviewer")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .env("HOME", env.path().join("home"))
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asks for a tool running `make TARGET -C <dir>`; returns (candidate, tool, version).
fn request(env: &TestEnv, what: &str, target: &str) -> (String, String, String) {
    let out = env
        .cli()
        .args(["--json", "new", what, "--example"])
        .arg(format!("make {target} -C core"))
        .arg("--example")
        .arg(format!("make {target} -C cli"))
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    let s = |v: &Value| v.as_str().expect("string").to_owned();
    (s(&made["id"]), s(&made["tool"]), s(&made["version"]))
}

fn reviews(env: &TestEnv) -> Vec<Value> {
    let out = env.cli().args(["--json", "review"]).assert().success();
    json_of(out.get_output())
        .as_array()
        .cloned()
        .expect("array")
}

fn tools(env: &TestEnv) -> Vec<Value> {
    let out = env.cli().args(["--json", "tools"]).assert().success();
    json_of(out.get_output())
        .as_array()
        .cloned()
        .expect("array")
}

fn candidate_state(env: &TestEnv, id: &str) -> (String, String) {
    let out = env.cli().args(["--json", "candidates"]).assert().success();
    let all = json_of(out.get_output());
    let c = all
        .as_array()
        .expect("array")
        .iter()
        .find(|c| c["id"] == id)
        .cloned()
        .expect("candidate listed");
    (
        c["state"].as_str().unwrap_or_default().to_owned(),
        c["reason"].as_str().unwrap_or_default().to_owned(),
    )
}

/// A workspace whose packages have a Makefile with `build` and `test` targets.
fn workspace(env: &TestEnv) -> PathBuf {
    let ws = env.path().join("ws");
    for package in ["core", "cli"] {
        std::fs::create_dir_all(ws.join(package)).expect("mkdir");
        std::fs::write(
            ws.join(package).join("Makefile"),
            "build:\n\t@echo built $(notdir $(CURDIR))\ntest:\n\t@echo tested $(notdir $(CURDIR))\n",
        )
        .expect("write Makefile");
    }
    ws
}

#[test]
fn propose_approve_tag_run_and_the_run_is_recorded() {
    let env = TestEnv::new();
    let (id, name, version) = request(&env, "Build one package", "build");
    assert_eq!(version, "1.0.0");

    // The proposal: one commit on review/<name>/<version> on top of main.
    let listed = reviews(&env);
    assert_eq!(listed.len(), 1, "{listed:#?}");
    let branch = format!("review/{name}/1.0.0");
    assert_eq!(listed[0]["branch"], branch.as_str());
    assert_eq!(listed[0]["candidate"], id.as_str());
    let message = git(&env, &["log", "-1", "--format=%B", &branch]);
    assert!(
        message.starts_with(&format!("tool({name}): add 1.0.0\n")),
        "{message}"
    );
    for trailer in [
        "Origin: request",
        "Tests: ",
        "Generator: template/sh@1",
        "Candidate: ",
    ] {
        assert!(message.contains(trailer), "{trailer} missing:\n{message}");
    }
    assert!(
        message.contains("Requested: \"Build one package\""),
        "{message}"
    );
    let parent = git(&env, &["rev-parse", &format!("{branch}^")]);
    assert_eq!(parent, git(&env, &["rev-parse", "main"]));
    let files = git(&env, &["ls-tree", "-r", "--name-only", &branch]);
    for f in [
        "tools/build-one-package/tool.yaml",
        "tools/build-one-package/run.sh",
        "tools/build-one-package/tests/cases.json",
        "tools/build-one-package/README.md",
        "TOOLS.md",
        "registry.toml",
        ".gitattributes",
        "README.md",
    ] {
        assert!(files.lines().any(|l| l == f), "{f} not in {files}");
    }
    let mode = git(
        &env,
        &["ls-tree", &branch, "tools/build-one-package/run.sh"],
    );
    assert!(mode.starts_with("100755"), "{mode}");

    // `show` of a candidate awaiting review: its diff against main.
    let out = env.cli().args(["show", &id]).assert().success();
    let shown = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(shown.contains(&format!("proposed on {branch}")), "{shown}");
    assert!(
        shown.contains("+++ b/tools/build-one-package/run.sh"),
        "{shown}"
    );

    // Nothing on main yet: running it is refused with a clear message.
    let out = env.cli().args(["run", &name]).assert().code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("no tool"));

    env.cli()
        .args(["approve", &id, "--note", "looks right"])
        .assert()
        .success();
    assert!(reviews(&env).is_empty());
    assert!(
        git(&env, &["branch", "--list", "review/*"])
            .trim()
            .is_empty()
    );
    let message = git(&env, &["log", "-1", "--format=%B", "main"]);
    assert!(message.contains("Approved-by: "), "{message}");
    assert!(message.contains("Review note: looks right"), "{message}");
    let tag = format!("{name}/v1.0.0");
    assert_eq!(
        git(&env, &["cat-file", "-t", &tag]).trim(),
        "tag",
        "annotated"
    );
    assert_eq!(
        git(&env, &["rev-parse", &format!("{tag}^{{commit}}")]),
        git(&env, &["rev-parse", "main"])
    );
    assert_eq!(candidate_state(&env, &id).0, "approved");
    let index = std::fs::read_to_string(registry_dir(&env).join("TOOLS.md")).expect("TOOLS.md");
    assert!(
        index.contains(&format!("[{name}](tools/{name}/README.md) | 1.0.0 |")),
        "{index}"
    );

    // Listed and run, without restarting anything; the run is recorded.
    let listed = tools(&env);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["name"], name.as_str());
    assert_eq!(listed[0]["version"], "1.0.0");
    assert!(
        listed[0]["params"]["properties"]["dir"].is_object(),
        "{listed:#?}"
    );
    let ws = workspace(&env);
    let out = env
        .cli()
        .args(["run", &name, "--param", "dir=core", "--workspace"])
        .arg(&ws)
        .assert()
        .success();
    let printed = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(printed.lines().any(|l| l == "built core"), "{printed}");
    let out = env
        .cli()
        .args([
            "--json",
            "run",
            &name,
            "--input",
            r#"{"dir": "nowhere"}"#,
            "--workspace",
        ])
        .arg(&ws)
        .assert()
        .code(2);
    let report = json_of(out.get_output());
    assert_eq!(report["ok"], false);
    assert_eq!(report["version"], "1.0.0");
    let out = env
        .cli()
        .args(["run", &name, "--param", "nope=1"])
        .assert()
        .code(2);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("nope"));
    let conn = rusqlite::Connection::open(env.state().join("state.db")).expect("store");
    let runs: Vec<(String, String, i64)> = toolsmith::health::executions::list(&conn, None)
        .expect("rows")
        .into_iter()
        .map(|run| (run.tool, run.version, i64::from(run.ok)))
        .collect();
    assert_eq!(
        runs,
        [
            (name.clone(), "1.0.0".to_owned(), 1),
            (name.clone(), "1.0.0".to_owned(), 0)
        ]
    );
    // Each run is also logged as a native action, which ingest reads like any agent's log.
    let log = env.state().join("runs/toolsmith-runs.jsonl");
    let text = std::fs::read_to_string(&log).expect("runs log");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["v"], 1);
    let command = format!("toolsmith run {name} --param dir=core");
    assert_eq!(lines[0]["input"]["command"], command.as_str());
    assert_eq!(lines[0]["ok"], true);
    assert_eq!(lines[1]["ok"], false);
    assert_eq!(lines[0]["source"], "toolsmith-cli");
    env.cli()
        .args(["ingest", "--format", "native"])
        .arg(&log)
        .assert()
        .success();
    let out = env.cli().args(["--json", "actions"]).assert().success();
    let actions = json_of(out.get_output()).to_string();
    assert!(actions.contains(&command), "{actions}");

    // The same request again proposes a new version; the interface is unchanged: a patch.
    let (id2, name2, version2) = request(&env, "build one  package", "build");
    assert_eq!(
        (name2.as_str(), version2.as_str()),
        (name.as_str(), "1.0.1")
    );
    assert_eq!(reviews(&env)[0]["bump"], "patch");
    // A tag for that version made by hand: approving is refused, nothing moves.
    let main_before = git(&env, &["rev-parse", "main"]);
    git(
        &env,
        &[
            "tag",
            "-a",
            "-m",
            "squatting",
            &format!("{name}/v1.0.1"),
            "main",
        ],
    );
    let out = env.cli().args(["approve", &id2]).assert().code(1);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        err.contains("exists already") && err.contains("never moved"),
        "{err}"
    );
    assert_eq!(git(&env, &["rev-parse", "main"]), main_before);
    assert_eq!(reviews(&env).len(), 1, "the proposal is still there");
}

#[test]
fn reject_keeps_the_commit_and_the_habit_is_not_proposed_again() {
    let env = TestEnv::new();
    let (id, name, _) = request(&env, "Test one package", "test");
    let commit = git(&env, &["rev-parse", &format!("review/{name}/1.0.0")]);
    let out = env
        .cli()
        .args(["reject", &id, "--reason", "   "])
        .assert()
        .code(2);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("--reason"));
    env.cli()
        .args(["reject", &id, "--reason", "we have a make target for this"])
        .assert()
        .success();
    assert!(reviews(&env).is_empty());
    assert_eq!(
        git(
            &env,
            &["rev-parse", &format!("refs/toolsmith/rejected/{id}")]
        ),
        commit
    );
    let (state, reason) = candidate_state(&env, &id);
    assert_eq!(state, "rejected");
    assert!(
        reason.contains("we have a make target for this"),
        "{reason}"
    );
    assert!(tools(&env).is_empty());
    // Unknown proposals are clear errors.
    let out = env.cli().args(["approve", &id]).assert().code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("toolsmith review"));

    // Rejecting with git, as the registry's README says: the branch deleted by hand.
    let (id2, name2, _) = request(&env, "Build one package", "build");
    git(&env, &["branch", "-D", &format!("review/{name2}/1.0.0")]);
    assert!(reviews(&env).is_empty());
    let (state, reason) = candidate_state(&env, &id2);
    assert_eq!(state, "rejected");
    assert!(reason.contains("deleted with git"), "{reason}");
}

#[test]
fn a_git_merge_by_hand_is_an_approval_and_a_git_revert_a_rollback() {
    let env = TestEnv::new();
    let (id, name, _) = request(&env, "Build one package", "build");
    git(
        &env,
        &["merge", "--ff-only", &format!("review/{name}/1.0.0")],
    );
    // The next command sees it: tagged, branch gone, candidate approved, tool listed.
    assert!(reviews(&env).is_empty());
    let tag = format!("{name}/v1.0.0");
    assert_eq!(git(&env, &["cat-file", "-t", &tag]).trim(), "tag");
    let (state, reason) = candidate_state(&env, &id);
    assert_eq!(state, "approved");
    assert!(
        reason.contains("Ada Reviewer") && reason.contains("(git)"),
        "{reason}"
    );
    assert_eq!(tools(&env).len(), 1);

    // A second version, approved with toolsmith, then reverted by hand with git.
    let (id2, _, v2) = request(&env, "build one package", "build");
    assert_eq!(v2, "1.0.1");
    env.cli().args(["approve", &id2]).assert().success();
    assert_eq!(tools(&env)[0]["version"], "1.0.1");
    git(&env, &["revert", "--no-edit", "main"]);
    assert_eq!(tools(&env)[0]["version"], "1.0.0");
    env.cli().arg("verify").assert().success();

    // toolsmith rollback reverts the commit that brought the current version: 1.0.0 was the
    // first, so the tool goes.
    env.cli().args(["rollback", &name]).assert().success();
    assert!(tools(&env).is_empty());
    let subject = git(&env, &["log", "-1", "--format=%s", "main"]);
    assert_eq!(subject.trim(), format!("tool({name}): revert 1.0.0"));
    assert!(!registry_dir(&env).join("tools").join(&name).exists());
    let out = env.cli().args(["rollback", &name]).assert().code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("no tool"));
    // Tags stay: history is never rewritten.
    assert_eq!(git(&env, &["tag", "--list"]).lines().count(), 2);
    env.cli().arg("verify").assert().success();
}

#[test]
fn tampered_tools_are_refused_and_verify_finds_bad_tags_and_manifests() {
    let env = TestEnv::new();
    let (id, name, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &id]).assert().success();
    let ws = workspace(&env);
    let run = |env: &TestEnv| {
        env.cli()
            .args(["run", &name, "--param", "dir=core", "--workspace"])
            .arg(&ws)
            .assert()
    };
    run(&env).success();
    let script = registry_dir(&env).join(format!("tools/{name}/run.sh"));
    let original = std::fs::read_to_string(&script).expect("read");
    std::fs::write(&script, format!("{original}\necho pwned\n")).expect("tamper");
    let out = run(&env).code(1);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        err.contains("differ from main") && err.contains("run.sh"),
        "{err}"
    );
    // An extra file is a difference too.
    std::fs::write(&script, &original).expect("restore");
    std::fs::write(script.with_file_name("extra.sh"), "x").expect("extra");
    run(&env).code(1);
    std::fs::remove_file(script.with_file_name("extra.sh")).expect("rm");
    run(&env).success();

    // A change committed by hand that skips validation: main's manifest digest no longer
    // matches; run refuses and verify reports it.
    std::fs::write(&script, format!("{original}\necho changed\n")).expect("edit");
    git(&env, &["commit", "-am", "tweak by hand"]);
    let out = run(&env).code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("digest"));
    let out = env.cli().args(["--json", "verify"]).assert().code(1);
    let report: Value = serde_json::from_slice(&out.get_output().stdout).expect("verify JSON");
    let problems = report["problems"].to_string();
    assert!(
        problems.contains(&format!("main: tools/{name}")),
        "{problems}"
    );
    git(&env, &["revert", "--no-edit", "HEAD"]);
    env.cli().arg("verify").assert().success();

    // A tag pointing at a tree whose files do not match its manifest.
    git(&env, &["checkout", "-q", "-b", "scratch"]);
    std::fs::write(&script, "echo forged\n").expect("forge");
    git(&env, &["commit", "-qam", "forged"]);
    git(
        &env,
        &["tag", "-a", "-m", "forged", &format!("{name}/v9.9.9")],
    );
    git(&env, &["checkout", "-q", "main"]);
    let out = env.cli().args(["--json", "verify"]).assert().code(1);
    let report: Value = serde_json::from_slice(&out.get_output().stdout).expect("verify JSON");
    let problems = report["problems"].to_string();
    assert!(
        problems.contains(&format!("tag {name}/v9.9.9")) && problems.contains("9.9.9"),
        "{problems}"
    );

    // A manifest broken by hand on main: listed as invalid, never run.
    let manifest = registry_dir(&env).join(format!("tools/{name}/tool.yaml"));
    std::fs::write(&manifest, "name: [unclosed\n").expect("break");
    git(&env, &["commit", "-qam", "break the manifest"]);
    let listed = tools(&env);
    assert!(listed[0]["problem"].as_str().is_some(), "{listed:#?}");
    let out = run(&env).code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("not run until"));
}

#[test]
fn deprecation_is_a_tagged_version_that_names_its_replacement() {
    let env = TestEnv::new();
    let (a, name_a, _) = request(&env, "Build one package", "build");
    let (b, name_b, _) = request(&env, "Test one package", "test");
    env.cli().args(["approve", &a]).assert().success();
    env.cli().args(["approve", &b]).assert().success();
    let out = env
        .cli()
        .args([
            "deprecate",
            &name_a,
            "--replaced-by",
            "no-such-tool",
            "--reason",
            "x",
        ])
        .assert()
        .code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("no-such-tool"));
    env.cli()
        .args([
            "deprecate",
            &name_a,
            "--replaced-by",
            &name_b,
            "--reason",
            "merged into tests",
        ])
        .assert()
        .success();
    let listed = tools(&env);
    let a_entry = listed
        .iter()
        .find(|t| t["name"] == name_a.as_str())
        .expect("a");
    assert_eq!(a_entry["deprecated"], true);
    assert_eq!(a_entry["version"], "1.0.1");
    assert_eq!(
        git(&env, &["cat-file", "-t", &format!("{name_a}/v1.0.1")]).trim(),
        "tag"
    );
    let manifest =
        std::fs::read_to_string(registry_dir(&env).join(format!("tools/{name_a}/tool.yaml")))
            .expect("manifest");
    assert!(
        manifest.contains(&format!("replaced_by: {name_b}")),
        "{manifest}"
    );
    env.cli().arg("verify").assert().success();
}

/// Runs `toolsmith approve` and kills it with SIGKILL after `delay`.
fn approve_killed(env: &TestEnv, id: &str, delay: Duration) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
    env.apply(&mut cmd);
    cmd.arg("--state").arg(env.state()).args(["approve", id]);
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().expect("spawn approve");
    std::thread::sleep(delay);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn approvals_killed_half_way_leave_a_consistent_registry() {
    let env = TestEnv::new();
    let mut ids = Vec::new();
    for (what, target) in [
        ("Build one package", "build"),
        ("Test one package", "test"),
        ("Clean one package", "clean"),
        ("Install one package", "install"),
        ("Check one package", "check"),
        ("Lint one package", "lint"),
    ] {
        ids.push(request(&env, what, target).0);
    }
    // How long one approval takes here, then each of the others killed at a different moment
    // of that span, from before it starts to after it ends.
    let started = std::time::Instant::now();
    env.cli().args(["approve", &ids[0]]).assert().success();
    let span = started.elapsed();
    let rest = &ids[1..];
    for (i, id) in rest.iter().enumerate() {
        approve_killed(&env, id, span.mul_f64((i as f64 + 0.5) / rest.len() as f64));
    }
    // Whatever was interrupted: every proposal is either still awaiting review or fully
    // approved (on main, tagged, branch gone, candidate approved); verify passes.
    let pending: Vec<String> = reviews(&env)
        .iter()
        .filter_map(|r| r["candidate"].as_str().map(str::to_owned))
        .collect();
    let on_main = tools(&env);
    assert_eq!(
        pending.len() + on_main.len(),
        ids.len(),
        "{pending:?} {on_main:#?}"
    );
    for t in &on_main {
        let tag = format!(
            "{}/v{}",
            t["name"].as_str().expect("name"),
            t["version"].as_str().expect("v")
        );
        assert_eq!(git(&env, &["cat-file", "-t", &tag]).trim(), "tag", "{tag}");
    }
    let branches = git(&env, &["branch", "--list", "review/*"]);
    assert_eq!(branches.lines().count(), pending.len(), "{branches}");
    for id in &ids {
        let (state, _) = candidate_state(&env, id);
        let expected = if pending.contains(id) {
            "awaiting-review"
        } else {
            "approved"
        };
        assert_eq!(state, expected, "{id}");
    }
    assert!(
        !registry_dir(&env)
            .join(".git/toolsmith-landing.json")
            .exists()
    );
    let status = git(&env, &["status", "--porcelain"]);
    assert!(
        status.trim().is_empty(),
        "work tree differs from main:\n{status}"
    );
    env.cli().arg("verify").assert().success();
    // The rest approve cleanly.
    for id in &pending {
        env.cli().args(["approve", id]).assert().success();
    }
    assert_eq!(tools(&env).len(), ids.len());
    env.cli().arg("verify").assert().success();
}

#[test]
fn the_daemon_picks_up_changes_made_with_plain_git() {
    use common::Daemon;
    let env = TestEnv::new();
    let mut daemon = Daemon::start(&env, env.daemon_command());
    let mut sub = daemon.connect();
    let ack = sub.call(
        1,
        "events.subscribe",
        serde_json::json!({"kinds": ["tool.", "registry.", "candidate.proposed", "ingest.actions"]}),
    );
    assert_eq!(ack["result"]["subscribed"], true, "{ack}");
    // With the daemon up, the request runs in it; the proposal is announced.
    let (id, name, _) = request(&env, "Build one package", "build");
    let event = sub.read();
    assert_eq!(event["params"]["kind"], "candidate.proposed", "{event}");
    assert_eq!(event["params"]["data"]["id"], id.as_str());

    // Merged by hand: the daemon tags it and marks the candidate approved, unasked.
    git(
        &env,
        &["merge", "--ff-only", &format!("review/{name}/1.0.0")],
    );
    let mut kinds = Vec::new();
    while !kinds.contains(&"tool.approved".to_owned()) {
        let event = sub.read();
        kinds.push(
            event["params"]["kind"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        if event["params"]["kind"] == "tool.approved" {
            assert_eq!(event["params"]["data"]["via"], "git", "{event}");
            assert_eq!(
                event["params"]["data"]["tag"],
                format!("{name}/v1.0.0").as_str()
            );
        }
    }
    assert_eq!(
        git(&env, &["cat-file", "-t", &format!("{name}/v1.0.0")]).trim(),
        "tag"
    );
    assert_eq!(candidate_state(&env, &id).0, "approved");

    // A manifest broken in a commit by hand: reported, not run.
    let manifest = registry_dir(&env).join(format!("tools/{name}/tool.yaml"));
    std::fs::write(&manifest, "apiVersion: nope\n").expect("break");
    git(&env, &["commit", "-qam", "break it"]);
    let event = loop {
        let event = sub.read();
        if event["params"]["kind"] == "tool.invalid" {
            break event;
        }
    };
    assert_eq!(event["params"]["data"]["tool"], name.as_str(), "{event}");
    // Reverted by hand: main changes again, and the tool is valid again.
    git(&env, &["revert", "--no-edit", "HEAD"]);
    let main = git(&env, &["rev-parse", "main"]).trim().to_owned();
    let event = loop {
        let event = sub.read();
        if event["params"]["kind"] == "registry.changed"
            && event["params"]["data"]["main"] == main.as_str()
        {
            break event;
        }
    };
    assert_eq!(
        event["params"]["data"]["invalid"],
        serde_json::json!([]),
        "{event}"
    );
    assert_eq!(
        event["params"]["data"]["changed"][0],
        name.as_str(),
        "{event}"
    );

    // `toolsmith approve` with the daemon up: the daemon approves and says so.
    let (id2, name2, _) = request(&env, "Test one package", "test");
    env.cli().args(["approve", &id2]).assert().success();
    let event = loop {
        let event = sub.read();
        if event["params"]["kind"] == "tool.approved" {
            break event;
        }
    };
    assert_eq!(event["params"]["data"]["name"], name2.as_str(), "{event}");
    assert_eq!(event["params"]["data"]["via"], "toolsmith", "{event}");
    assert_eq!(candidate_state(&env, &id2).0, "approved");

    // A run is logged where the daemon reads: it becomes an action like any agent's.
    env.cli()
        .args(["run", &name2, "--param", "dir=cli", "--workspace"])
        .arg(workspace(&env))
        .assert()
        .success();
    loop {
        let event = sub.read();
        if event["params"]["kind"] == "ingest.actions" {
            break;
        }
    }
    let out = env.cli().args(["--json", "actions"]).assert().success();
    let actions = json_of(out.get_output()).to_string();
    assert!(
        actions.contains(&format!("toolsmith run {name2} --param dir=cli")),
        "{actions}"
    );
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(daemon.wait_exit(), Some(0));
}

/// `git init --bare` of a shared remote.
fn bare_remote(dir: &std::path::Path) -> PathBuf {
    let remote = dir.join("shared.git");
    let out = Command::new("git")
        .args(["init", "--bare", "-q", "-b", "main"])
        .arg(&remote)
        .output()
        .expect("git init");
    assert!(out.status.success());
    remote
}

fn sync(env: &TestEnv, remote: Option<&std::path::Path>) -> Value {
    let mut cmd = env.cli();
    cmd.args(["--json", "sync"]);
    if let Some(r) = remote {
        cmd.arg("--remote").arg(r);
    }
    json_of(cmd.assert().success().get_output())
}

fn tool_names(env: &TestEnv) -> Vec<String> {
    tools(env)
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn two_clones_share_through_a_remote_and_a_conflict_loses_nothing() {
    let shared = tempfile::tempdir().expect("tempdir");
    let remote = bare_remote(shared.path());
    let alice = TestEnv::new();
    let bob = TestEnv::new();

    // Alice approves a tool and shares it; Bob receives it.
    let (a1, build, _) = request(&alice, "Build one package", "build");
    alice.cli().args(["approve", &a1]).assert().success();
    assert_eq!(sync(&alice, Some(&remote))["main"], "pushed");
    // Bob's registry was just created: every registry starts from the same first commit, so
    // his simply catches up.
    bob.cli().arg("tools").assert().success();
    assert_eq!(sync(&bob, Some(&remote))["main"], "fast-forward");
    assert_eq!(tool_names(&bob), std::slice::from_ref(&build));
    assert_eq!(sync(&bob, None)["main"], "up to date");
    bob.cli()
        .args(["run", &build, "--param", "dir=core", "--workspace"])
        .arg(workspace(&bob))
        .assert()
        .success();

    // Both approve different tools meanwhile: the second to sync merges.
    let (b1, test, _) = request(&bob, "Test one package", "test");
    bob.cli().args(["approve", &b1]).assert().success();
    let (a2, clean, _) = request(&alice, "Clean one package", "clean");
    alice.cli().args(["approve", &a2]).assert().success();
    assert_eq!(sync(&alice, None)["main"], "pushed");
    let report = sync(&bob, None);
    assert_eq!(report["main"], "merged", "{report:#}");
    assert_eq!(report["received"], serde_json::json!([clean.clone()]));
    let mut all = vec![build.clone(), clean.clone(), test.clone()];
    all.sort();
    assert_eq!(tool_names(&bob), all);
    let index = std::fs::read_to_string(registry_dir(&bob).join("TOOLS.md")).expect("index");
    for name in &all {
        assert!(
            index.contains(&format!("[{name}](tools/{name}/README.md)")),
            "{index}"
        );
    }
    bob.cli().arg("verify").assert().success();
    assert_eq!(sync(&alice, None)["main"], "fast-forward");
    assert_eq!(tool_names(&alice), all);
    assert_eq!(
        git(&alice, &["tag", "--list"]).lines().count(),
        3,
        "tags travel"
    );

    // A proposal made by Alice is reviewed by Bob; the approval travels back.
    let (a3, install, _) = request(&alice, "Install one package", "install");
    sync(&alice, None);
    let report = sync(&bob, None);
    assert_eq!(
        report["new_reviews"],
        serde_json::json!([format!("review/{install}/1.0.0")]),
        "{report:#}"
    );
    bob.cli().args(["approve", &install]).assert().success();
    sync(&bob, None);
    sync(&alice, None);
    assert!(
        reviews(&alice).is_empty(),
        "the approved proposal's branch is gone here too"
    );
    assert_eq!(candidate_state(&alice, &a3).0, "approved");
    assert!(
        git(
            &alice,
            &["ls-remote", "--heads", remote.to_str().expect("utf-8")]
        )
        .lines()
        .all(|l| !l.contains("review/"))
    );

    // Both change the same tool: the sync stops, naming it, and nothing is lost.
    alice
        .cli()
        .args([
            "deprecate",
            &build,
            "--reason",
            "alice: replaced by make all",
        ])
        .assert()
        .success();
    bob.cli()
        .args(["deprecate", &build, "--reason", "bob: no longer used"])
        .assert()
        .success();
    sync(&alice, None);
    let bob_main = git(&bob, &["rev-parse", "main"]);
    let out = bob.cli().arg("sync").assert().code(1);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        err.contains(&format!("tool {build}")) && err.contains("nothing was merged"),
        "{err}"
    );
    assert_eq!(
        git(&bob, &["rev-parse", "main"]),
        bob_main,
        "Bob's main is as it was"
    );
    let theirs = git(
        &bob,
        &["log", "-1", "--format=%B", "refs/remotes/origin/main"],
    );
    assert!(theirs.contains("alice: replaced by make all"), "{theirs}");
    bob.cli().arg("verify").assert().success();

    // Bob keeps Alice's side: he rolls his change back and syncs. Both made a tag for 1.0.1;
    // tags are never moved, so each keeps its own and the sync says so, every time.
    bob.cli().args(["rollback", &build]).assert().success();
    for _ in 0..2 {
        let report = sync(&bob, None);
        assert_eq!(
            report["tag_conflicts"],
            serde_json::json!([format!("{build}/v1.0.1")]),
            "{report:#}"
        );
    }
    let listed = tools(&bob);
    let entry = listed
        .iter()
        .find(|t| t["name"] == build.as_str())
        .expect("build");
    assert_eq!(
        entry["deprecated"], true,
        "Alice's deprecation is on Bob's main"
    );
    bob.cli().arg("verify").assert().success();
    assert_eq!(sync(&alice, None)["main"], "fast-forward");
}

#[test]
fn registries_made_apart_merge_and_an_unrelated_repository_is_refused() {
    let shared = tempfile::tempdir().expect("tempdir");
    let remote = bare_remote(shared.path());
    let alice = TestEnv::new();
    let bob = TestEnv::new();
    let (a1, build, _) = request(&alice, "Build one package", "build");
    alice.cli().args(["approve", &a1]).assert().success();
    sync(&alice, Some(&remote));
    let (b1, test, _) = request(&bob, "Test one package", "test");
    bob.cli().args(["approve", &b1]).assert().success();
    assert_eq!(sync(&bob, Some(&remote))["main"], "merged");
    assert_eq!(tool_names(&bob), [build, test]);

    // A git repository that is not a registry of this format shares no history.
    let other = shared.path().join("other");
    for args in [
        vec!["init", "-q", "-b", "main"],
        vec!["commit", "-q", "--allow-empty", "-m", "unrelated"],
    ] {
        let out = Command::new("git")
            .arg("-C")
            .arg(if args[0] == "init" {
                shared.path()
            } else {
                &other
            })
            .args(&args)
            .args(if args[0] == "init" {
                vec![other.to_str().expect("utf-8")]
            } else {
                vec![]
            })
            .env("GIT_AUTHOR_NAME", "x")
            .env("GIT_AUTHOR_EMAIL", "x@example.com")
            .env("GIT_COMMITTER_NAME", "x")
            .env("GIT_COMMITTER_EMAIL", "x@example.com")
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let main = git(&bob, &["rev-parse", "main"]);
    let out = bob
        .cli()
        .args(["sync", "--remote"])
        .arg(&other)
        .assert()
        .code(1);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("no history"), "{err}");
    assert_eq!(git(&bob, &["rev-parse", "main"]), main);
}

#[test]
fn auto_approval_only_by_an_explicit_policy_rule() {
    let env = TestEnv::new();
    let default = include_str!("../../policies/default.toml");
    let policy = env.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "{default}\n[[review.auto_approve]]\nid = \"requested-tools\"\norigins = [\"request\"]\n\
             max_bump = \"patch\"\nnew_tools = true\nmax_workspace = \"write\"\n"
        ),
    )
    .expect("policy");
    let config = env.write_config(&format!("[generate]\npolicy = \"{}\"\n", policy.display()));
    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .args([
            "--json",
            "new",
            "Build one package",
            "--example",
            "make build -C core",
            "--example",
            "make build -C cli",
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let report = json_of(out.get_output());
    assert_eq!(report["candidates"][0]["state"], "approved", "{report:#}");
    let message = git(&env, &["log", "-1", "--format=%B", "main"]);
    assert!(
        message.contains("Approved-by: toolsmith policy rule requested-tools"),
        "{message}"
    );
    assert_eq!(tools(&env).len(), 1);
    // Without the rule (the default policy), the next one waits for a person.
    let (_, _, _) = request(&env, "Test one package", "test");
    assert_eq!(reviews(&env).len(), 1);
}

#[test]
fn uncommitted_edits_in_a_tool_block_changes_to_it_and_lose_nothing() {
    let env = TestEnv::new();
    let (a, name, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &a]).assert().success();
    let (b, _, v) = request(&env, "build one package", "build");
    assert_eq!(v, "1.0.1");
    let script = registry_dir(&env).join(format!("tools/{name}/run.sh"));
    let mine = format!(
        "{}\n# my local note\n",
        std::fs::read_to_string(&script).expect("read")
    );
    std::fs::write(&script, &mine).expect("edit");
    let main = git(&env, &["rev-parse", "main"]);
    let out = env.cli().args(["approve", &b]).assert().code(1);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        err.contains("uncommitted changes") && err.contains(&format!("tools/{name}/run.sh")),
        "{err}"
    );
    assert_eq!(git(&env, &["rev-parse", "main"]), main);
    assert_eq!(
        std::fs::read_to_string(&script).expect("read"),
        mine,
        "the edit is kept"
    );
    git(&env, &["checkout", "--", &format!("tools/{name}/run.sh")]);
    env.cli().args(["approve", &b]).assert().success();
    assert!(git(&env, &["status", "--porcelain"]).trim().is_empty());
}

#[test]
fn a_registry_held_open_sees_what_another_process_changed() {
    use toolsmith::registry::repo::Registry;
    let env = TestEnv::new();
    let (a, _, _) = request(&env, "Build one package", "build");
    let (b, _, _) = request(&env, "Test one package", "test");
    let held = Registry::open(&registry_dir(&env), &env.state()).expect("open");
    env.cli().args(["approve", &a]).assert().success();
    held.approve(&b, "Ada Reviewer <ada@example.com>", None)
        .expect("approve after another process moved main");
    assert!(git(&env, &["status", "--porcelain"]).trim().is_empty());
    assert_eq!(tools(&env).len(), 2);
}

#[test]
fn a_handle_held_open_checks_the_disk_on_every_run_and_each_new_tree_anew() {
    use toolsmith::registry::repo::Registry;
    let env = TestEnv::new();
    let (a, name, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &a]).assert().success();
    // As an MCP session holds it: a version found valid is not checked again…
    let held = Registry::open(&registry_dir(&env), &env.state()).expect("open");
    let (first, dir) = held.runnable(&name).expect("runnable");
    assert_eq!(held.runnable(&name).expect("runnable again").0, first);
    // …but its files on disk are, on every run.
    let script = dir.join("run.sh");
    let original = std::fs::read_to_string(&script).expect("read");
    std::fs::write(&script, format!("{original}\necho pwned\n")).expect("tamper");
    let err = held
        .runnable(&name)
        .expect_err("tampered on disk")
        .to_string();
    assert!(
        err.contains("differ from main") && err.contains("run.sh"),
        "{err}"
    );
    // A change committed by hand is a new tree, checked anew: its digest does not match.
    git(&env, &["commit", "-qam", "tweak by hand"]);
    let err = held.runnable(&name).expect_err("not validated").to_string();
    assert!(err.contains("digest"), "{err}");
    // Reverted, the validated tree is back, and runs.
    git(&env, &["revert", "--no-edit", "HEAD"]);
    assert_eq!(held.runnable(&name).expect("reverted").0, first);
}

#[test]
fn approved_tools_export_as_agent_skills_and_re_exporting_tidies_up() {
    let env = TestEnv::new();
    let (a, build, _) = request(&env, "Build one package", "build");
    let (b, test, _) = request(&env, "Test one package", "test");
    env.cli().args(["approve", &a]).assert().success();
    env.cli().args(["approve", &b]).assert().success();
    let skills = env.path().join("skills");
    // A skill of the user's own, which toolsmith must never touch.
    std::fs::create_dir_all(skills.join("my-skill")).expect("mkdir");
    std::fs::write(
        skills.join("my-skill/SKILL.md"),
        "---\nname: my-skill\ndescription: mine\n---\n",
    )
    .expect("write");
    let out = env
        .cli()
        .args(["--json", "export", "skills", "--to"])
        .arg(&skills)
        .assert()
        .success();
    let report = json_of(out.get_output());
    assert_eq!(
        report["written"],
        serde_json::json!([build.clone(), test.clone()])
    );
    for name in [&build, &test] {
        let text = std::fs::read_to_string(skills.join(name).join("SKILL.md")).expect("skill");
        let front = text.split("\n---").next().expect("frontmatter");
        assert!(
            front.lines().any(|l| l == format!("name: {name}")),
            "{text}"
        );
        let description = front
            .lines()
            .find_map(|l| l.strip_prefix("description: "))
            .expect("description");
        let description: String = serde_json::from_str(description).expect("quoted");
        assert!(!description.is_empty() && description.chars().count() <= 1024);
        assert!(!description.contains('<') && !description.contains('>'));
        assert!(
            name.len() <= 64
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
        assert!(text.contains(&format!("toolsmith run {name}")), "{text}");
    }
    // Deprecated tools are not offered: re-exporting removes the skill, the user's stays.
    env.cli()
        .args(["deprecate", &build, "--reason", "use make all"])
        .assert()
        .success();
    let out = env
        .cli()
        .args(["--json", "export", "skills", "--to"])
        .arg(&skills)
        .assert()
        .success();
    let report = json_of(out.get_output());
    assert_eq!(report["removed"], serde_json::json!([build.clone()]));
    assert_eq!(report["unchanged"], serde_json::json!([test.clone()]));
    assert!(!skills.join(&build).exists());
    assert!(skills.join("my-skill/SKILL.md").exists());
}

#[test]
fn approved_versions_leave_packed_tags_and_no_empty_ref_directories() {
    // Ten thousand loose tags, or their empty directories, made every command walk as many
    // files: tags are packed after each approval, the directories libgit2 leaves removed.
    let env = TestEnv::new();
    let (a, build, _) = request(&env, "Build one package", "build");
    let (b, test, _) = request(&env, "Test one package", "test");
    env.cli().args(["approve", &a]).assert().success();
    env.cli().args(["approve", &b]).assert().success();
    let git = registry_dir(&env).join(".git");
    let packed = std::fs::read_to_string(git.join("packed-refs")).expect("packed-refs");
    for name in [&build, &test] {
        assert!(
            packed.contains(&format!("refs/tags/{name}/v1.0.0")),
            "{packed}"
        );
    }
    let left: Vec<_> = std::fs::read_dir(git.join("refs/tags"))
        .expect("refs/tags")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `toolsmith --json verify`: its exit code and its problems, as one text.
fn verify_problems(env: &TestEnv) -> (i32, String) {
    let out = env
        .cli()
        .args(["--json", "verify"])
        .output()
        .expect("verify");
    let report: Value = serde_json::from_slice(&out.stdout).expect("verify JSON");
    (
        out.status.code().unwrap_or(-1),
        report["problems"].to_string(),
    )
}

/// `toolsmith run NAME --param dir=core` in the test workspace.
fn run_build(env: &TestEnv, name: &str) -> assert_cmd::assert::Assert {
    env.cli()
        .args(["run", name, "--param", "dir=core", "--workspace"])
        .arg(workspace(env))
        .assert()
}

fn stderr_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

/// Skills exported now: the names written or unchanged.
fn exported_skills(env: &TestEnv) -> Vec<String> {
    let dir = env.path().join("skills");
    let out = env
        .cli()
        .args(["--json", "export", "skills", "--to"])
        .arg(&dir)
        .assert()
        .success();
    let report = json_of(out.get_output());
    let mut names: Vec<String> = ["written", "unchanged"]
        .iter()
        .flat_map(|k| report[*k].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// Asserts that `name` is refused everywhere it can be used (but MCP, see tests/it/mcp.rs), each
/// refusal naming the tool and saying what to do; `expect` is in every message.
fn refused_everywhere(env: &TestEnv, name: &str, expect: &str) {
    let (code, problems) = verify_problems(env);
    assert_eq!(code, 1, "{problems}");
    assert!(
        problems.contains(&format!("main: tools/{name}"))
            && problems.contains(expect)
            && problems.contains(&format!("toolsmith adopt {name}"))
            && problems.contains(&format!("toolsmith rollback {name}")),
        "{problems}"
    );
    let err = stderr_of(&run_build(env, name).code(1));
    assert!(
        err.contains(name) && err.contains(expect) && err.contains("not run until"),
        "{err}"
    );
    let listed = tools(env);
    let entry = listed
        .iter()
        .find(|t| t["name"] == name)
        .expect("still listed, as invalid");
    assert!(
        entry["problem"]
            .as_str()
            .unwrap_or_default()
            .contains(expect),
        "{entry:#}"
    );
    assert!(!exported_skills(env).contains(&name.to_owned()));
    // Nor can a deprecation tag the unreviewed files.
    let err = stderr_of(
        &env.cli()
            .args(["deprecate", name, "--reason", "launder"])
            .assert()
            .code(1),
    );
    assert!(err.contains(expect), "{err}");
}

#[test]
fn a_hand_commit_with_its_digest_recomputed_is_refused_everywhere() {
    use common::tamper::{Form, commit_by_hand, edit};
    let env = TestEnv::new();
    let (id, name, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &id]).assert().success();
    run_build(&env, &name).success();
    assert_eq!(exported_skills(&env), std::slice::from_ref(&name));

    for form in [Form::V2, Form::V1] {
        // The digest as toolsmith computes it, in either form: only the tag tells.
        edit(&env, &name, "run.sh", |t| format!("{t}\necho injected\n"));
        commit_by_hand(&env, &name, form, "tweak run.sh");
        let err = stderr_of(&run_build(&env, &name).code(1));
        assert!(
            !err.contains("digest"),
            "the digest matches ({form:?}): {err}"
        );
        assert!(
            err.contains(&format!("differ from what was approved as {name}/v1.0.0"))
                && err.contains("run.sh changed"),
            "{err}"
        );
        refused_everywhere(&env, &name, "run.sh changed");
        // Reverted by hand: main holds what was approved again.
        git(&env, &["revert", "--no-edit", "HEAD"]);
        env.cli().arg("verify").assert().success();
        run_build(&env, &name).success();
    }

    // A version bumped by hand has no tag at all.
    edit(&env, &name, "tool.yaml", |t| {
        t.replace("version: \"1.0.0\"", "version: \"1.0.1\"")
    });
    edit(&env, &name, "run.sh", |t| format!("{t}\necho injected\n"));
    commit_by_hand(&env, &name, Form::V2, "a new version by hand");
    refused_everywhere(&env, &name, &format!("there is no tag {name}/v1.0.1"));
}

#[test]
fn a_widened_manifest_with_its_digest_recomputed_is_refused_everywhere() {
    use common::tamper::{Form, commit_by_hand, edit};
    use toolsmith::package::manifest::Manifest;
    use toolsmith::sandbox::WorkspaceAccess;
    let env = TestEnv::new();
    let (id, name, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &id]).assert().success();
    for form in [Form::V2, Form::V1] {
        edit(&env, &name, "tool.yaml", |t| {
            let mut m = Manifest::parse(&t, "tool.yaml").expect("manifest");
            m.sandbox.workspace = WorkspaceAccess::Write;
            m.sandbox.limits.memory_mb = 8192;
            m.sandbox.limits.wall_s = 3600;
            m.runtime.requires.push("curl".into());
            m.to_yaml()
        });
        commit_by_hand(&env, &name, form, "more room for the build");
        refused_everywhere(&env, &name, "tool.yaml changed");
        git(&env, &["revert", "--no-edit", "HEAD"]);
        env.cli().arg("verify").assert().success();
    }
}

#[test]
fn a_symlinked_entry_point_is_refused_by_verify_and_run() {
    use common::tamper::{Form, commit_by_hand};
    let env = TestEnv::new();
    let (id, name, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &id]).assert().success();
    let script = registry_dir(&env).join(format!("tools/{name}/run.sh"));
    std::fs::remove_file(&script).expect("rm");
    std::os::unix::fs::symlink("/bin/sh", &script).expect("symlink");
    // The digest of a link is the digest of its target's text, as git stores it.
    commit_by_hand(&env, &name, Form::V2, "run.sh is sh");
    let (code, problems) = verify_problems(&env);
    assert_eq!(code, 1, "{problems}");
    assert!(
        problems.contains(&format!("main: tools/{name}"))
            && problems.contains("run.sh is a symbolic link"),
        "{problems}"
    );
    let err = stderr_of(&run_build(&env, &name).code(1));
    assert!(err.contains("run.sh is a symbolic link"), "{err}");
    assert!(!exported_skills(&env).contains(&name));
}

#[test]
fn submodules_modes_and_gitattributes_cannot_swap_a_tool_s_files() {
    use common::tamper::{Form, commit_by_hand};
    let env = TestEnv::new();
    let (id, name, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &id]).assert().success();
    let tool = registry_dir(&env).join(format!("tools/{name}"));

    // A submodule (a gitlink entry) in the tool's directory.
    let head = git(&env, &["rev-parse", "HEAD"]).trim().to_owned();
    std::fs::create_dir_all(tool.join("vendor")).expect("mkdir");
    git(
        &env,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{head},tools/{name}/vendor"),
        ],
    );
    commit_by_hand(&env, &name, Form::V2, "vendor a submodule");
    let (code, problems) = verify_problems(&env);
    assert_eq!(code, 1, "{problems}");
    assert!(problems.contains("vendor is a submodule"), "{problems}");
    let err = stderr_of(&run_build(&env, &name).code(1));
    assert!(err.contains("vendor is a submodule"), "{err}");
    git(&env, &["revert", "--no-edit", "HEAD"]);
    env.cli().arg("verify").assert().success();

    // A mode changed: the same bytes, another tree.
    let script = tool.join("run.sh");
    std::fs::set_permissions(
        &script,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o644),
    )
    .expect("chmod");
    commit_by_hand(&env, &name, Form::V2, "not executable");
    let (code, problems) = verify_problems(&env);
    assert_eq!(code, 1, "{problems}");
    assert!(
        problems.contains("run.sh changed from an executable file to a file"),
        "{problems}"
    );
    run_build(&env, &name).code(1);
    git(&env, &["revert", "--no-edit", "HEAD"]);
    env.cli().arg("verify").assert().success();

    // A .gitattributes in the tool's directory: never a tool's file.
    std::fs::write(tool.join(".gitattributes"), "*.sh ident\n").expect("attributes");
    commit_by_hand(&env, &name, Form::V2, "attributes");
    let (code, problems) = verify_problems(&env);
    assert_eq!(code, 1, "{problems}");
    assert!(
        problems.contains(".gitattributes is a git control file"),
        "{problems}"
    );
    run_build(&env, &name).code(1);
    git(&env, &["revert", "--no-edit", "HEAD"]);
    env.cli().arg("verify").assert().success();
    run_build(&env, &name).success();

    // Attributes at the registry's root that change the bytes git checks out: an eol
    // conversion, then a smudge filter. main is untouched; the bytes on disk differ.
    for (attributes, config) in [
        ("*.sh text eol=crlf\n", None),
        (
            "*.sh filter=swap\n",
            Some(("filter.swap.smudge", "sed s/make/rm/g")),
        ),
    ] {
        if let Some((key, value)) = config {
            git(&env, &["config", key, value]);
            git(&env, &["config", "filter.swap.clean", "cat"]);
        }
        let root = registry_dir(&env).join(".gitattributes");
        let before = std::fs::read_to_string(&root).expect("attributes");
        std::fs::write(&root, format!("{before}{attributes}")).expect("write");
        git(&env, &["commit", "-qam", "checkout attributes"]);
        std::fs::remove_file(&script).expect("rm");
        git(&env, &["checkout", "--", &format!("tools/{name}/run.sh")]);
        let on_disk = std::fs::read_to_string(&script).expect("read");
        assert!(
            on_disk.contains('\r') || !on_disk.contains("make"),
            "git changed the bytes it checked out: {on_disk}"
        );
        let err = stderr_of(&run_build(&env, &name).code(1));
        assert!(
            err.contains("differ from main") && err.contains("run.sh was changed"),
            "{err}"
        );
        let (code, problems) = verify_problems(&env);
        assert_eq!(code, 1, "{problems}");
        assert!(problems.contains("run.sh was changed"), "{problems}");
        git(&env, &["revert", "--no-edit", "HEAD"]);
        if config.is_some() {
            git(&env, &["config", "--unset", "filter.swap.smudge"]);
        }
        std::fs::remove_file(&script).expect("rm");
        git(&env, &["checkout", "--", &format!("tools/{name}/run.sh")]);
        env.cli().arg("verify").assert().success();
        run_build(&env, &name).success();
    }
}

#[test]
fn tags_and_review_branches_made_with_git_approve_nothing() {
    use common::tamper::{Form, commit_by_hand, edit};
    let env = TestEnv::new();
    let (id, name, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &id]).assert().success();

    // A hand commit of a new version, with an annotated tag made by hand.
    edit(&env, &name, "tool.yaml", |t| {
        t.replace("version: \"1.0.0\"", "version: \"1.0.1\"")
    });
    edit(&env, &name, "run.sh", |t| format!("{t}\necho injected\n"));
    commit_by_hand(&env, &name, Form::V2, "a new version");
    let tag = format!("{name}/v1.0.1");
    git(&env, &["tag", "-a", "-m", "approved", &tag]);
    let (code, problems) = verify_problems(&env);
    assert_eq!(code, 1, "{problems}");
    assert!(
        problems.contains(&format!("tag {tag}: not made or received by toolsmith"))
            && problems.contains(&format!("main: tools/{name}")),
        "{problems}"
    );
    let err = stderr_of(&run_build(&env, &name).code(1));
    assert!(
        err.contains(&format!("tag {tag} was not made by toolsmith")),
        "{err}"
    );
    // A lightweight tag instead.
    git(&env, &["tag", "-d", &tag]);
    git(&env, &["tag", &tag]);
    let err = stderr_of(&run_build(&env, &name).code(1));
    assert!(err.contains("lightweight tag"), "{err}");
    git(&env, &["tag", "-d", &tag]);
    git(&env, &["revert", "--no-edit", "HEAD"]);
    env.cli().arg("verify").assert().success();

    // A review branch made by hand and merged: not taken for an approval.
    git(
        &env,
        &["checkout", "-q", "-b", &format!("review/{name}/1.0.1")],
    );
    edit(&env, &name, "tool.yaml", |t| {
        t.replace("version: \"1.0.0\"", "version: \"1.0.1\"")
    });
    edit(&env, &name, "run.sh", |t| format!("{t}\necho injected\n"));
    commit_by_hand(
        &env,
        &name,
        Form::V2,
        "tool: update 1.0.1\n\nCandidate: c-000000000000",
    );
    git(&env, &["checkout", "-q", "main"]);
    git(
        &env,
        &["merge", "--ff-only", "-q", &format!("review/{name}/1.0.1")],
    );
    let err = stderr_of(&run_build(&env, &name).code(1));
    assert!(err.contains(&format!("there is no tag {tag}")), "{err}");
    assert!(
        git(&env, &["tag", "--list", &tag]).trim().is_empty(),
        "not tagged"
    );
    let out = env
        .cli()
        .args(["approve", &format!("review/{name}/1.0.1")])
        .assert()
        .code(1);
    assert!(
        stderr_of(&out).contains("was not proposed by toolsmith"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn a_tool_changed_by_hand_is_adopted_through_validation_and_review() {
    use common::tamper::{Form, commit_by_hand, edit};
    let env = TestEnv::new();
    let (id, name, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &id]).assert().success();
    // Nothing to adopt while main is what was approved.
    let out = env.cli().args(["adopt", &name]).assert().code(1);
    assert!(
        stderr_of(&out).contains("nothing to adopt"),
        "{}",
        stderr_of(&out)
    );

    edit(&env, &name, "run.sh", |t| {
        t.replacen("\n", "\n# tuned by hand\n", 1)
    });
    commit_by_hand(&env, &name, Form::V2, "a tweak by hand");
    run_build(&env, &name).code(1);

    let out = env
        .cli()
        .args(["--json", "adopt", &name])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    assert_eq!(made["tool"], name.as_str());
    assert_eq!(made["version"], "1.0.1");
    let candidate = made["id"].as_str().expect("id").to_owned();
    // Adopting it twice is refused while the first waits.
    let out = env.cli().args(["adopt", &name]).assert().code(1);
    assert!(
        stderr_of(&out).contains("adopted already"),
        "{}",
        stderr_of(&out)
    );

    // Awaiting review: the diff against the version approved, which shows the hand change.
    let out = env.cli().args(["show", &candidate]).assert().success();
    let shown = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        shown.contains(&format!("approved as {name}/v1.0.0")) && shown.contains("+# tuned by hand"),
        "{shown}"
    );
    let branch = format!("review/{name}/1.0.1");
    let message = git(&env, &["log", "-1", "--format=%B", &branch]);
    assert!(
        message.contains("Origin: adopt") && message.contains("Adopted-from: "),
        "{message}"
    );
    let manifest = git(&env, &["show", &format!("{branch}:tools/{name}/tool.yaml")]);
    assert!(
        manifest.contains("generator: human") && manifest.contains("digest: sha256v2:"),
        "{manifest}"
    );

    env.cli().args(["approve", &candidate]).assert().success();
    assert_eq!(candidate_state(&env, &candidate).0, "approved");
    assert_eq!(
        git(&env, &["cat-file", "-t", &format!("{name}/v1.0.1")]).trim(),
        "tag"
    );
    run_build(&env, &name).success();
    env.cli().arg("verify").assert().success();
    assert!(exported_skills(&env).contains(&name));

    // A manifest widened beyond the policy's maxima is adopted only as far as validation:
    // what the policy would lower is refused there, not run silently with less.
    edit(&env, &name, "tool.yaml", |t| {
        let mut m =
            toolsmith::package::manifest::Manifest::parse(&t, "tool.yaml").expect("manifest");
        m.sandbox.limits.memory_mb = 8192;
        m.to_yaml()
    });
    commit_by_hand(&env, &name, Form::V2, "more memory");
    let out = env
        .cli()
        .args(["--json", "adopt", &name])
        .timeout(Duration::from_secs(60))
        .assert()
        .code(1);
    let err = stderr_of(&out);
    assert!(
        err.contains("sandbox.limits.memory_mb = 8192") && err.contains("maximum"),
        "{err}"
    );
}

#[test]
fn limits_above_the_policy_are_said_not_lowered_silently() {
    let env = TestEnv::new();
    let (id, name, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &id]).assert().success();
    // A policy lowered since the tool was approved.
    let default = include_str!("../../policies/default.toml");
    let policy = env.path().join("policy.toml");
    assert!(default.contains("\nmemory_mb = 4096\n"));
    std::fs::write(
        &policy,
        default.replace("\nmemory_mb = 4096\n", "\nmemory_mb = 256\n"),
    )
    .expect("policy");
    let config = env.write_config(&format!("[generate]\npolicy = \"{}\"\n", policy.display()));
    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .args(["run", &name, "--param", "dir=core", "--workspace"])
        .arg(workspace(&env))
        .assert()
        .success();
    let err = stderr_of(&out);
    assert!(
        err.contains(&format!("toolsmith run: {name}: limit memory_mb"))
            && err.contains("lowered to 256"),
        "{err}"
    );
    let out = env
        .cli()
        .arg("--config")
        .arg(&config)
        .args(["--json", "verify"])
        .assert()
        .success();
    let report = json_of(out.get_output());
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains(&format!("tools/{name}")) && warnings.contains("memory_mb"),
        "{report:#}"
    );
}

#[test]
fn the_daemon_reports_a_hand_commit_with_a_recomputed_digest() {
    use common::Daemon;
    use common::tamper::{Form, commit_by_hand, edit};
    let env = TestEnv::new();
    let mut daemon = Daemon::start(&env, env.daemon_command());
    let mut sub = daemon.connect();
    let ack = sub.call(
        1,
        "events.subscribe",
        serde_json::json!({"kinds": ["tool."]}),
    );
    assert_eq!(ack["result"]["subscribed"], true, "{ack}");
    let (id, name, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &id]).assert().success();
    edit(&env, &name, "run.sh", |t| format!("{t}\necho injected\n"));
    commit_by_hand(&env, &name, Form::V2, "tweak");
    // Between the edit and the commit the daemon may see the files differ from main and say
    // so (a `tool.invalid` of its own); the commit's report follows.
    let event = loop {
        let event = sub.read();
        let kind = &event["params"]["kind"];
        let problem = event["params"]["data"]["problem"].to_string();
        if kind == "tool.invalid" && !problem.contains("its files on disk differ from main") {
            break event;
        }
    };
    assert_eq!(event["params"]["data"]["tool"], name.as_str(), "{event}");
    let problem = event["params"]["data"]["problem"].to_string();
    assert!(
        problem.contains("run.sh changed") && problem.contains(&format!("toolsmith adopt {name}")),
        "{problem}"
    );
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(daemon.wait_exit(), Some(0));
}

#[test]
fn a_registry_from_before_the_binding_keeps_working() {
    use toolsmith::generate::spec::ToolSpec;
    use toolsmith::generate::template;
    use toolsmith::package::digest;
    use toolsmith::package::manifest::{Manifest, TestCounts, Validation};
    use toolsmith::registry::repo::{Proposal, Registry};
    let env = TestEnv::new();
    // A version validated by an older toolsmith: its digest covers the files only.
    let spec = ToolSpec::from_request(
        "Build one package",
        &[
            "make build -C core".to_owned(),
            "make build -C cli".to_owned(),
        ],
        &|_| false,
    )
    .expect("spec");
    let mut files = template::generate(&spec, semver::Version::new(1, 0, 0)).expect("files");
    let mut manifest = Manifest::parse(&files["tool.yaml"], "tool.yaml").expect("manifest");
    manifest.validation = Some(Validation {
        checks: vec!["manifest".into()],
        tests: TestCounts {
            passed: 1,
            failed: 0,
        },
        runtime_ms: 1,
        peak_memory_kb: None,
        digest: digest::digest(&files),
    });
    files.insert("tool.yaml".into(), manifest.to_yaml());
    let name = manifest.name.clone();
    {
        let registry = Registry::open_or_init(&registry_dir(&env), &env.state()).expect("registry");
        registry
            .propose(&Proposal {
                candidate: "c-0ld0ld0ld0ld".into(),
                files,
                why: "made by an older toolsmith".into(),
                trailers: Vec::new(),
            })
            .expect("propose");
    }
    env.cli()
        .args(["approve", "c-0ld0ld0ld0ld"])
        .assert()
        .success();
    let manifest =
        std::fs::read_to_string(registry_dir(&env).join(format!("tools/{name}/tool.yaml")))
            .expect("manifest");
    assert!(manifest.contains("digest: sha256:"), "{manifest}");
    env.cli().arg("verify").assert().success();
    run_build(&env, &name).success();

    // A registry without a ledger (made before it existed, cloned with git, or its ledger
    // removed) trusts none of its tags until a person re-approves them; then its approved
    // tools are valid again, and a tag made by hand afterwards is not.
    let ledger = registry_dir(&env).join(".git/toolsmith-ledger");
    assert!(ledger.exists());
    std::fs::remove_file(&ledger).expect("rm ledger");
    let (code, problems) = verify_problems(&env);
    assert_eq!(code, 1);
    assert!(problems.contains("toolsmith reapprove"), "{problems}");
    assert!(!ledger.exists(), "not started over the tags");
    env.cli().args(["reapprove", "--yes"]).assert().success();
    env.cli().arg("verify").assert().success();
    assert!(ledger.exists(), "started again");
    run_build(&env, &name).success();
    git(
        &env,
        &["tag", "-a", "-m", "by hand", &format!("{name}/v9.0.0")],
    );
    let (code, problems) = verify_problems(&env);
    assert_eq!(code, 1);
    assert!(
        problems.contains("not made or received by toolsmith"),
        "{problems}"
    );
}

/// Asks for a tool sorting a file (`sort notes.txt`, `sort todo.txt`: no value of its path
/// ever began with `-`) and approves it; its name, and a workspace with `notes.txt`.
fn sort_tool(env: &TestEnv) -> (String, PathBuf) {
    let out = env
        .cli()
        .args(["--json", "new", "Sort a file"])
        .args(["--example", "sort notes.txt", "--example", "sort todo.txt"])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    let id = made["id"].as_str().expect("id");
    env.cli().args(["approve", id]).assert().success();
    let ws = env.path().join("project");
    std::fs::create_dir_all(&ws).expect("mkdir");
    std::fs::write(ws.join("notes.txt"), "b\na\n").expect("write");
    (made["tool"].as_str().expect("tool").to_owned(), ws)
}

#[test]
fn a_parameter_value_that_looks_like_an_option_is_refused() {
    let env = TestEnv::new();
    let (name, ws) = sort_tool(&env);
    let manifest =
        std::fs::read_to_string(registry_dir(&env).join(format!("tools/{name}/tool.yaml")))
            .expect("manifest");
    assert!(manifest.contains("pattern: ^-"), "{manifest}");
    for how in [
        vec!["--param", "path=--version"],
        vec!["--input", r#"{"path": "-r"}"#],
    ] {
        let out = env
            .cli()
            .args(["run", &name])
            .args(&how)
            .arg("--workspace")
            .arg(&ws)
            .assert()
            .code(2);
        let output = out.get_output();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("parameter `path`") && stderr.contains("begins with `-`"),
            "{how:?}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{how:?}: sort ran");
    }
    // The tool itself refuses it too (its own tests say so), and a real value runs.
    let cases =
        std::fs::read_to_string(registry_dir(&env).join(format!("tools/{name}/tests/cases.json")))
            .expect("cases");
    assert!(
        cases.contains("a value beginning with `-` for --path is refused"),
        "{cases}"
    );
    let out = env
        .cli()
        .args(["run", &name, "--param", "path=notes.txt", "--workspace"])
        .arg(&ws)
        .assert()
        .success();
    assert_eq!(String::from_utf8_lossy(&out.get_output().stdout), "a\nb\n");
}

#[test]
fn run_refuses_a_workspace_that_reaches_toolsmiths_own_files() {
    let env = TestEnv::new();
    let (name, ws) = sort_tool(&env);
    let registry = registry_dir(&env);
    for dir in ["state/run", "config/toolsmith", "state/runs"] {
        std::fs::create_dir_all(env.path().join(dir)).expect("mkdir");
    }
    std::os::unix::fs::symlink(&registry, ws.join("registry")).expect("symlink");
    let cases = [
        (env.state(), "is toolsmith's state directory"),
        (
            env.path().join("state/run"),
            "is toolsmith's runtime directory",
        ),
        (registry.clone(), "is toolsmith's registry"),
        (
            env.path().join("config/toolsmith"),
            "is toolsmith's configuration directory",
        ),
        (env.path().to_path_buf(), "contains toolsmith's"),
        (
            env.path().join("state/runs"),
            "lies inside toolsmith's state directory",
        ),
        // The registry is beside the state (`--state`), so inside both: the state is named.
        (
            registry.join("tools"),
            "lies inside toolsmith's state directory",
        ),
        (ws.join("registry"), "is toolsmith's registry"),
    ];
    for (dir, says) in &cases {
        let out = env
            .cli()
            .args(["run", &name, "--param", "path=notes.txt", "--workspace"])
            .arg(dir)
            .assert()
            .code(1);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr);
        assert!(stderr.contains(says), "{}: {stderr}", dir.display());
    }
    // Without --workspace the current directory is the workspace: the same check.
    let out = env
        .cli()
        .args(["run", &name, "--param", "path=notes.txt"])
        .current_dir(env.path())
        .assert()
        .code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr);
    assert!(stderr.contains("contains toolsmith's"), "{stderr}");
    let out = env
        .cli()
        .args(["run", &name, "--param", "path=notes.txt"])
        .current_dir(&ws)
        .assert()
        .success();
    assert_eq!(String::from_utf8_lossy(&out.get_output().stdout), "a\nb\n");
}

/// The registry's ledger.
fn ledger_path(env: &TestEnv) -> PathBuf {
    registry_dir(env).join(".git/toolsmith-ledger")
}

/// The tag object a tag ref names.
fn tag_object(env: &TestEnv, tag: &str) -> String {
    git(env, &["rev-parse", &format!("refs/tags/{tag}")])
        .trim()
        .to_owned()
}

#[test]
fn removing_the_ledger_after_a_hand_change_and_a_recreated_tag_trusts_nothing() {
    use common::tamper::{Form, commit_by_hand, edit};
    let env = TestEnv::new();
    let (id, name, version) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &id]).assert().success();
    run_build(&env, &name).success();
    let tag = format!("{name}/v{version}");

    // The attack, with plain git: the tool's code replaced, its digest recomputed, its tag
    // recreated at the new commit, and the ledger that knew the old tag removed.
    edit(&env, &name, "run.sh", |t| format!("{t}\necho injected\n"));
    commit_by_hand(&env, &name, Form::V2, "a change by hand");
    common::tamper::git(&env, &["tag", "-d", &tag]);
    common::tamper::git(&env, &["tag", "-a", "-m", "approved", &tag]);
    std::fs::remove_file(ledger_path(&env)).expect("rm the ledger");

    let (code, problems) = verify_problems(&env);
    assert_eq!(code, 1, "{problems}");
    assert!(
        problems.contains(&format!("tag {tag}"))
            && problems.contains("toolsmith-ledger is missing")
            && problems.contains("toolsmith reapprove"),
        "{problems}"
    );
    let err = stderr_of(&run_build(&env, &name).code(1));
    assert!(
        err.contains("not run until") && err.contains("toolsmith-ledger is missing"),
        "{err}"
    );
    assert!(!stdout_has(&run_build(&env, &name).code(1), "injected"));
    assert!(
        tools(&env)
            .iter()
            .any(|t| t["name"] == name.as_str() && t["problem"].is_string()),
        "listed as not runnable"
    );
    assert!(
        !ledger_path(&env).exists(),
        "no read starts a ledger over tags"
    );

    // Lines written by hand vouch for nothing: the old format, and a made-up seal.
    let object = tag_object(&env, &tag);
    std::fs::write(
        ledger_path(&env),
        format!(
            "tag {object} refs/tags/{tag}\ntag {object} {} refs/tags/{tag}\n",
            "0f".repeat(32)
        ),
    )
    .expect("forge the ledger");
    let (code, problems) = verify_problems(&env);
    assert_eq!(code, 1, "{problems}");
    assert!(problems.contains("no valid seal"), "{problems}");
    run_build(&env, &name).code(1);

    // A person looks at what would be trusted, and only asking for it trusts it.
    let shown = env.cli().arg("reapprove").assert().code(1);
    let said = String::from_utf8_lossy(&shown.get_output().stdout).into_owned();
    assert!(
        said.contains(&format!("refs/tags/{tag}"))
            && said.contains("Mallory Hand")
            && said.contains("toolsmith reapprove --yes"),
        "{said}"
    );
    run_build(&env, &name).code(1);
    env.cli().args(["reapprove", "--yes"]).assert().success();
    env.cli().arg("verify").assert().success();
    let ran = run_build(&env, &name).success();
    assert!(
        stdout_has(&ran, "injected"),
        "what the person re-approved runs"
    );

    // A ledger that lost the tag's line: refused again, saying what to do.
    let kept: String = std::fs::read_to_string(ledger_path(&env))
        .expect("ledger")
        .lines()
        .filter(|l| !l.contains(&object))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(ledger_path(&env), kept).expect("drop the tag's line");
    let (code, problems) = verify_problems(&env);
    assert_eq!(code, 1, "{problems}");
    assert!(problems.contains("toolsmith reapprove"), "{problems}");
    run_build(&env, &name).code(1);
}

fn stdout_has(assert: &assert_cmd::assert::Assert, text: &str) -> bool {
    String::from_utf8_lossy(&assert.get_output().stdout).contains(text)
}

/// Makes `path`'s modification time `secs` seconds old.
fn age_file(path: &std::path::Path, secs: u64) {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open");
    file.set_modified(std::time::SystemTime::now() - Duration::from_secs(secs))
        .expect("set mtime");
}

#[test]
fn a_stale_git_lock_after_a_failed_approval_stops_no_read() {
    let env = TestEnv::new();
    let (a, name, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &a]).assert().success();
    let (b, _, _) = request(&env, "Test one package", "test");
    // git's index lock, left by a git command that died: the approval fails on it (before it
    // changes anything), naming it, its age and how to clear it.
    let lock = registry_dir(&env).join(".git/index.lock");
    std::fs::write(&lock, b"").expect("lock");
    age_file(&lock, 600);
    let failed = env.cli().args(["approve", &b]).assert().code(1);
    let err = stderr_of(&failed);
    assert!(
        err.contains(&lock.display().to_string())
            && err.contains("10 min ago")
            && err.contains(&format!("rm {}", lock.display())),
        "{err}"
    );
    assert!(
        !registry_dir(&env)
            .join(".git/toolsmith-landing.json")
            .exists(),
        "nothing left half-way"
    );

    // Every read still works, and says which lock stands in the way of changes, and how old.
    let ran = run_build(&env, &name).success();
    let note = stderr_of(&ran);
    assert!(
        note.contains(&lock.display().to_string()) && note.contains("10 min ago"),
        "{note}"
    );
    env.cli().arg("verify").assert().success();
    assert!(
        tools(&env)
            .iter()
            .any(|t| t["name"] == name.as_str() && t["problem"].is_null())
    );

    // Removed as the message says, the next change finishes what was left and approves.
    std::fs::remove_file(&lock).expect("rm the lock");
    env.cli().args(["approve", &b]).assert().success();
    env.cli().arg("verify").assert().success();
}

#[test]
fn a_read_only_registry_is_verified_listed_and_run() {
    let env = TestEnv::new();
    let (a, name, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &a]).assert().success();
    let (b, _, _) = request(&env, "Test one package", "test");
    let Some(_ro) = common::ReadOnlyMount::new(&registry_dir(&env)) else {
        return;
    };
    env.cli().arg("verify").assert().success();
    assert!(
        tools(&env)
            .iter()
            .any(|t| t["name"] == name.as_str() && t["problem"].is_null())
    );
    let ran = run_build(&env, &name).success();
    assert!(stdout_has(&ran, "built core"));
    assert!(
        stderr_of(&ran).contains("cannot be written"),
        "said why nothing was reconciled"
    );
    // A change says why it cannot be made.
    let err = stderr_of(&env.cli().args(["approve", &b]).assert().code(1));
    assert!(err.contains("Read-only file system"), "{err}");
}

#[test]
fn a_remote_tag_planted_by_hand_is_not_sealed_by_a_sync() {
    use common::tamper::{Form, commit_by_hand, edit};
    let env = TestEnv::new();
    let (id, name, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &id]).assert().success();
    let remote = bare_remote(env.path());
    sync(&env, Some(&remote));
    // A new version committed by hand, and a "remote" tag for it made here with git: the
    // remote never had it, so no fetch brings it.
    edit(&env, &name, "run.sh", |t| format!("{t}\necho injected\n"));
    edit(&env, &name, "tool.yaml", |t| {
        t.replace("version: \"1.0.0\"", "version: \"1.0.1\"")
    });
    commit_by_hand(&env, &name, Form::V2, "a new version by hand");
    common::tamper::git(&env, &["tag", "-a", "-m", "approved", "planted"]);
    let object = tag_object(&env, "planted");
    common::tamper::git(
        &env,
        &[
            "update-ref",
            &format!("refs/remotes/origin/tags/{name}/v1.0.1"),
            &object,
        ],
    );
    common::tamper::git(&env, &["tag", "-d", "planted"]);
    sync(&env, None);
    let ledger = std::fs::read_to_string(ledger_path(&env)).expect("ledger");
    assert!(!ledger.contains(&object), "{ledger}");
    let (code, problems) = verify_problems(&env);
    assert_eq!(code, 1, "{problems}");
    assert!(
        problems.contains(&format!(
            "tag {name}/v1.0.1 (the remote's) was not made by toolsmith"
        )),
        "{problems}"
    );
    run_build(&env, &name).code(1);
}

/// `export skills --agents` writes each approved tool into the skill folder of each agent set up
/// here — Claude Code's `~/.claude/skills`, Codex's `$CODEX_HOME/skills`, Gemini CLI's
/// `~/.gemini/skills` — and not into OpenCode's own, since OpenCode reads `~/.claude/skills`.
#[test]
fn approved_tools_export_into_each_agent_s_skill_folder() {
    let env = TestEnv::new();
    let (a, build, _) = request(&env, "Build one package", "build");
    env.cli().args(["approve", &a]).assert().success();
    let home = env.path().join("home");
    let codex = env.path().join("codex-home");
    for dir in [
        home.join(".claude"),
        home.join(".gemini"),
        codex.clone(),
        env.path().join("config/opencode"),
    ] {
        std::fs::create_dir_all(dir).expect("agent dir");
    }
    let out = env
        .cli()
        .env("CODEX_HOME", &codex)
        .args(["export", "skills", "--agents"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    for (dir, agent) in [
        (home.join(".claude/skills"), "claude-code"),
        (codex.join("skills"), "codex"),
        (home.join(".gemini/skills"), "gemini-cli"),
    ] {
        assert!(
            dir.join(&build).join("SKILL.md").is_file(),
            "{} has no {build}: {text}",
            dir.display()
        );
        assert!(
            text.contains(&format!(
                "1 skills in {} ({agent}): 1 written",
                dir.display()
            )),
            "{text}"
        );
    }
    assert!(
        !env.path().join("config/opencode/skills").exists(),
        "{text}"
    );
    // Again: every folder up to date.
    let out = env
        .cli()
        .env("CODEX_HOME", &codex)
        .args(["export", "skills", "--agents"])
        .assert()
        .success();
    let again = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert_eq!(
        again.matches("0 written, 1 unchanged").count(),
        3,
        "{again}"
    );
}
