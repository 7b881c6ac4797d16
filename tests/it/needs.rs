//! Needs are proposed, not failed (issue 29, item 6), through the real binaries: Claude Code
//! sessions (written here) in which the agent checks a service on 127.0.0.1 with `curl`, and
//! looks at pods with `kubectl`. Under a policy whose `network` domain and hosts are at level
//! `ask` (the built-in levels), each habit becomes a candidate awaiting review with its needs
//! listed — never a failed one; `toolsmith approve` refuses without `--grant` for each need,
//! naming the missing grants and the command that passes them, and refuses a grant the policy
//! denies, naming the line; approved with the grants, the commit records each `Granted:`, the
//! approved manifest lists them, and the tool's run reaches the granted host through the
//! proxy. Under a policy that denies the `network` domain, the candidate fails naming the line.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{TestEnv, json_of};
use serde_json::{Value, json};

/// A service on 127.0.0.1 answering `/health` and `/version`, counting the requests.
struct Service {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl Service {
    fn serve() -> Service {
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = listener.local_addr().expect("address").port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&hits);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                counted.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                    let mut head = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let text = String::from_utf8_lossy(&head).into_owned();
                    let path = text.split(' ').nth(1).unwrap_or("").to_owned();
                    let body = match path.as_str() {
                        "/health" => "service ok\n",
                        "/version" => "version 1.4.2\n",
                        _ => "not here\n",
                    };
                    let _ = stream.write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                             Connection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    );
                });
            }
        });
        Service { port, hits }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

/// One Claude Code session of `commands` (each succeeded with its output), as the agent
/// writes it: an assistant `tool_use` of Bash, then the user's `tool_result`.
fn session(dir: &Path, n: usize, commands: &[(String, String)]) {
    let session = format!("00000000-0000-4000-9000-{n:012}");
    let mut text = String::new();
    for (i, (cmd, output)) in commands.iter().enumerate() {
        let ts = format!("2026-11-{:02}T10:00:{:02}.000Z", 10 + n, i * 5);
        let call = format!("toolu_need{n}x{i}");
        let base = json!({"isSidechain": false, "userType": "external",
                          "cwd": "/home/dev/shop", "sessionId": session,
                          "version": "2.1.3"});
        let mut record = base.clone();
        record["parentUuid"] = if i == 0 {
            Value::Null
        } else {
            json!(format!("u-{n}-{}", i - 1))
        };
        record["type"] = json!("assistant");
        record["uuid"] = json!(format!("a-{n}-{i}"));
        record["timestamp"] = json!(ts);
        record["message"] = json!({"id": format!("msg_{n}_{i}"), "type": "message",
            "role": "assistant", "model": "claude-sonnet-4-20250514",
            "content": [{"type": "tool_use", "id": call, "name": "Bash",
                         "input": {"command": cmd, "description": "run"}}]});
        let mut result = base;
        result["parentUuid"] = json!(format!("a-{n}-{i}"));
        result["type"] = json!("user");
        result["uuid"] = json!(format!("u-{n}-{i}"));
        result["timestamp"] = json!(ts);
        result["message"] = json!({"role": "user", "content": [
            {"tool_use_id": call, "type": "tool_result", "content": output,
             "is_error": false}]});
        text.push_str(&format!("{record}\n{result}\n"));
    }
    std::fs::create_dir_all(dir).expect("logs");
    std::fs::write(dir.join(format!("{session}.jsonl")), text).expect("session");
}

/// Sessions of two habits, each in sessions of its own between varied look-arounds: the
/// service checked with `curl` (the time limit varies), and, when `kubectl` is wanted, pods
/// listed then a deployment's logs read (the namespace varies).
fn write_sessions(dir: &Path, port: u16, kubectl: bool) {
    let before = [
        "git status --short",
        "ls",
        "git log --oneline -n 3",
        "cat README.md",
        "git diff --stat",
        "ls src",
    ];
    let after = [
        "git branch",
        "wc -l src/main.rs",
        "git stash list",
        "ls tests",
        "git remote -v",
        "cat Makefile",
    ];
    for n in 0..6 {
        let commands = vec![
            (before[n].to_owned(), "x".to_owned()),
            (
                format!(
                    "curl -fsS --max-time {} http://127.0.0.1:{port}/health",
                    [5, 10, 3, 8, 15, 20][n]
                ),
                "service ok".to_owned(),
            ),
            (
                format!("curl -fsS http://127.0.0.1:{port}/version"),
                "version 1.4.2".to_owned(),
            ),
            (after[n].to_owned(), "y".to_owned()),
        ];
        session(dir, n, &commands);
        if kubectl {
            let ns = ["shop", "billing", "search", "auth", "mail", "cart"][n];
            let commands = vec![
                (after[(n + 2) % 6].to_owned(), "x".to_owned()),
                (
                    format!("kubectl get pods -n {ns}"),
                    format!("NAME READY STATUS\nweb-1 1/1 Running\n{ns}-0 1/1 Running"),
                ),
                (
                    format!("kubectl logs deploy/web -n {ns} --tail 20"),
                    "GET /health 200".to_owned(),
                ),
                (before[(n + 3) % 6].to_owned(), "z".to_owned()),
            ];
            session(dir, n + 6, &commands);
        }
    }
}

/// Whether `kubectl` is a program the sandbox finds (its system directories).
fn kubectl_installed() -> bool {
    ["/usr/local/bin", "/usr/bin", "/bin"]
        .iter()
        .any(|d| Path::new(d).join("kubectl").is_file())
}

/// A test home with sessions ingested and mined under a copy of the built-in policy (the
/// file the configuration names); returns the configuration and the policy file.
fn mined(env: &TestEnv, service: &Service, kubectl: bool, policy_text: &str) -> (PathBuf, PathBuf) {
    let logs = env.path().join("logs");
    write_sessions(&logs, service.port, kubectl);
    let policy = env.path().join("policy.toml");
    std::fs::write(&policy, policy_text).expect("policy");
    let config = env.write_config(&format!(
        "[generate]\nbackend = \"template\"\npolicy = \"{}\"\n",
        policy.display()
    ));
    cli(env, &config)
        .args(["ingest", "--format", "claude-code"])
        .arg(&logs)
        .assert()
        .success();
    cli(env, &config).arg("mine").assert().success();
    (config, policy)
}

fn cli(env: &TestEnv, config: &Path) -> assert_cmd::Command {
    let mut cmd = env.cli();
    cmd.arg("--config").arg(config);
    cmd
}

fn generate(env: &TestEnv, config: &Path) -> Vec<Value> {
    cli(env, config)
        .args(["--json", "generate"])
        .timeout(Duration::from_secs(300))
        .assert()
        .success();
    let out = cli(env, config)
        .args(["--json", "candidates"])
        .assert()
        .success();
    json_of(out.get_output())
        .as_array()
        .cloned()
        .expect("candidates")
}

/// The candidate whose tool's spec runs `program`.
fn candidate_running<'a>(
    env: &TestEnv,
    config: &Path,
    all: &'a [Value],
    program: &str,
) -> &'a Value {
    all.iter()
        .find(|c| {
            let id = c["id"].as_str().unwrap_or_default();
            let shown = show(env, config, id);
            shown["spec"]["steps"]
                .as_array()
                .is_some_and(|steps| steps.iter().any(|s| s.to_string().contains(program)))
        })
        .unwrap_or_else(|| panic!("no candidate runs {program}: {all:#?}"))
}

fn show(env: &TestEnv, config: &Path, id: &str) -> Value {
    let out = cli(env, config)
        .args(["--json", "show", id, "--attempts"])
        .assert()
        .success();
    json_of(out.get_output())
}

/// The 1-based line of `wanted` in `text`.
fn line_of(text: &str, wanted: &str) -> usize {
    text.lines()
        .position(|l| l == wanted)
        .unwrap_or_else(|| panic!("no line `{wanted}`"))
        + 1
}

#[test]
fn a_habit_needing_the_network_awaits_review_with_its_needs_and_runs_with_what_was_granted() {
    let env = TestEnv::new();
    let service = Service::serve();
    let kubectl = kubectl_installed();
    if !kubectl {
        println!("note: kubectl is not installed: its habit (a credential need) is not checked");
    }
    let default = toolsmith::validate::run::DEFAULT_POLICY;
    let (config, policy) = mined(&env, &service, kubectl, default);
    let all = generate(&env, &config);

    // The curl habit awaits review with its needs — it is not failed.
    let curl = candidate_running(&env, &config, &all, "curl");
    let id = curl["id"].as_str().expect("id").to_owned();
    let host = service.host();
    assert_eq!(curl["state"], "awaiting-review", "{curl:#}");
    let needs = format!("program:curl, host:{host}");
    assert!(
        curl["reason"]
            .as_str()
            .is_some_and(|r| r.contains(&format!("needs a grant at review: {needs}"))),
        "{curl:#}"
    );
    let shown = show(&env, &config, &id);
    assert_eq!(
        shown["needs"],
        json!(["program:curl", format!("host:{host}")]),
        "{shown:#}"
    );
    let text = cli(&env, &config).args(["show", &id]).assert().success();
    let text = String::from_utf8_lossy(&text.get_output().stdout).into_owned();
    let command = format!("toolsmith approve {id} --grant program:curl --grant host:{host}");
    assert!(
        text.contains(&format!(
            "needs (the policy asks a person to grant them at approval): {needs}"
        )) && text.contains(&command),
        "{text}"
    );

    let review = cli(&env, &config).arg("review").assert().success();
    let listed = String::from_utf8_lossy(&review.get_output().stdout).into_owned();
    assert!(
        listed.contains(&format!(
            "Grants needed at approval: {needs} (`toolsmith approve {id} --grant NEED` for each)."
        )),
        "{listed}"
    );

    if kubectl {
        let kube = candidate_running(&env, &config, &all, "kubectl");
        assert_eq!(kube["state"], "awaiting-review", "{kube:#}");
        let kube_needs = show(&env, &config, kube["id"].as_str().expect("id"))["needs"].clone();
        assert_eq!(
            kube_needs,
            json!(["program:kubectl", "credential:~/.kube/config"]),
            "{kube:#}"
        );
    }
    assert!(
        all.iter().all(|c| c["state"] != "failed"),
        "no candidate fails for what the policy asks: {all:#?}"
    );

    // Approving without the grants is refused, naming them and the command that passes them.
    let refused = cli(&env, &config).args(["approve", &id]).assert().failure();
    let said = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(
        said.contains(&format!("does not grant {needs}")) && said.contains(&command),
        "{said}"
    );
    // Half the grants is no better.
    let refused = cli(&env, &config)
        .args(["approve", &id, "--grant", "program:curl"])
        .assert()
        .failure();
    let said = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(
        said.contains(&format!("does not grant host:{host}")) && said.contains(&command),
        "{said}"
    );

    // A policy that now denies the network refuses the grant, naming its line.
    let denying = default.replace("network = \"ask\"", "network = \"deny\"");
    std::fs::write(&policy, &denying).expect("policy");
    let refused = cli(&env, &config)
        .args(["approve", &id, "--grant", "program:curl", "--grant"])
        .arg(format!("host:{host}"))
        .assert()
        .failure();
    let said = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    let line = line_of(&denying, "network = \"deny\"");
    assert!(
        said.contains(&format!(
            "--grant program:curl is refused: `curl` is in the `network` domain, which the \
             policy denies: {}:{line} (validate.levels.network = \"deny\")",
            policy.display()
        )),
        "{said}"
    );

    // Granted, it lands: the commit records each grant, the manifest lists them.
    std::fs::write(&policy, default).expect("policy");
    let approved = cli(&env, &config)
        .args(["approve", &id, "--grant", "program:curl", "--grant"])
        .arg(format!("host:{host}"))
        .assert()
        .success();
    let said = String::from_utf8_lossy(&approved.get_output().stdout).into_owned();
    assert!(said.contains(&format!("granted: {needs}")), "{said}");
    let registry = env.state().join("registry");
    let log = Command::new("git")
        .arg("-C")
        .arg(&registry)
        .args(["log", "-1", "--format=%B", "main"])
        .output()
        .expect("git log");
    let message = String::from_utf8_lossy(&log.stdout).into_owned();
    assert!(
        message.contains("Granted: program:curl\n")
            && message.contains(&format!("Granted: host:{host}\n"))
            && message.contains("Needs: program:curl\n"),
        "{message}"
    );
    let tool = curl["tool"].as_str().expect("tool");
    let tool_shown = json_of(
        cli(&env, &config)
            .args(["--json", "show", tool])
            .assert()
            .success()
            .get_output(),
    );
    assert_eq!(
        tool_shown["manifest"]["granted"],
        json!(["program:curl", format!("host:{host}")]),
        "{tool_shown:#}"
    );

    // Its run reaches the granted host through the proxy, and gets nothing more.
    let before = service.hits.load(Ordering::SeqCst);
    let params = tool_shown["manifest"]["interface"]["params"]["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut run = cli(&env, &config);
    run.args(["--json", "run", tool]);
    for name in params.keys() {
        run.arg("--param").arg(format!("{name}=5"));
    }
    let out = run.timeout(Duration::from_secs(120)).output().expect("run");
    let ran = json_of(&out);
    assert_eq!(ran["ok"], true, "{ran:#}");
    let stdout = ran["stdout"].as_str().unwrap_or_default();
    assert!(
        stdout.contains("service ok") && stdout.contains("version 1.4.2"),
        "{ran:#}"
    );
    assert!(service.hits.load(Ordering::SeqCst) >= before + 2);
    let connections = ran["connections"].as_array().cloned().unwrap_or_default();
    assert!(
        !connections.is_empty()
            && connections.iter().all(|c| c["verdict"] == "allowed"
                && c["host"] == "127.0.0.1"
                && c["port"] == service.port),
        "{connections:#?}"
    );

    if kubectl {
        // The kubectl tool, granted its credential file, reads it in its run: the only place
        // the cluster's address is written is the user's ~/.kube/config.
        let kube = candidate_running(&env, &config, &all, "kubectl");
        let kube_id = kube["id"].as_str().expect("id");
        let kube_tool = kube["tool"].as_str().expect("tool");
        let kube_dir = env.path().join("home/.kube");
        std::fs::create_dir_all(&kube_dir).expect("mkdir");
        std::fs::write(
            kube_dir.join("config"),
            "apiVersion: v1\nkind: Config\nclusters:\n- cluster: {server: \"https://127.0.0.1:16443\"}\n  \
             name: test\ncontexts:\n- context: {cluster: test, user: test}\n  name: test\n\
             current-context: test\nusers:\n- name: test\n  user: {token: t}\n",
        )
        .expect("kubeconfig");
        cli(&env, &config)
            .args(["approve", kube_id, "--grant", "program:kubectl"])
            .args(["--grant", "credential:~/.kube/config"])
            .assert()
            .success();
        let shown = json_of(
            cli(&env, &config)
                .args(["--json", "show", kube_tool])
                .assert()
                .success()
                .get_output(),
        );
        let mut run = cli(&env, &config);
        run.args(["--json", "run", kube_tool]);
        for name in shown["manifest"]["interface"]["params"]["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default()
            .keys()
        {
            run.arg("--param").arg(format!("{name}=shop"));
        }
        let out = run.timeout(Duration::from_secs(120)).output().expect("run");
        let ran = json_of(&out);
        let said = format!("{}{}", ran["stdout"], ran["stderr"]);
        assert!(said.contains("127.0.0.1:16443"), "{ran:#}");
    }
}

#[test]
fn a_denied_domain_fails_the_candidate_naming_the_policy_line() {
    let default = toolsmith::validate::run::DEFAULT_POLICY;
    // The level written in [validate.levels], and the older list, which still works.
    let levels = default.replace("network = \"ask\"", "network = \"deny\"");
    let older = "# A policy of the older form.\n[validate]\ndeny_domains = [\"network\", \"privilege\", \"system\"]\n".to_owned();
    for (policy_text, wanted, origin) in [
        (
            &older,
            "deny_domains = [\"network\", \"privilege\", \"system\"]",
            "validate.deny_domains lists it",
        ),
        (
            &levels,
            "network = \"deny\"",
            "validate.levels.network = \\\"deny\\\"",
        ),
    ] {
        let env = TestEnv::new();
        let service = Service::serve();
        let (config, policy) = mined(&env, &service, false, policy_text);
        let all = generate(&env, &config);
        let curl = candidate_running(&env, &config, &all, "curl");
        assert_eq!(curl["state"], "failed", "{curl:#}");
        let shown = show(&env, &config, curl["id"].as_str().expect("id")).to_string();
        let line = line_of(policy_text, wanted);
        let expected = format!(
            "`curl` is in the `network` domain, which the policy denies: {}:{line} \
             ({origin})",
            policy.display()
        );
        assert!(shown.contains(&expected), "{expected}\n{shown}");
    }
}

#[test]
fn through_the_daemon_approve_asks_for_the_grants_and_records_them() {
    let env = TestEnv::new();
    let service = Service::serve();
    let (config, policy) = mined(
        &env,
        &service,
        false,
        toolsmith::validate::run::DEFAULT_POLICY,
    );
    let all = generate(&env, &config);
    let curl = candidate_running(&env, &config, &all, "curl");
    assert_eq!(curl["state"], "awaiting-review", "{curl:#}");
    let id = curl["id"].as_str().expect("id").to_owned();
    let host = service.host();
    let mut command = env.daemon_command();
    command.arg("--config").arg(&config);
    let _daemon = common::Daemon::start(&env, command);

    // The daemon answers `registry.approve`: without the grants, refused with the command.
    let refused = cli(&env, &config).args(["approve", &id]).assert().failure();
    let said = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    // The daemon answered (a JSON-RPC error, with its code), not a one-shot approval.
    assert!(
        said.contains(&format!(
            "toolsmith approve {id} --grant program:curl --grant host:{host}"
        )) && said.contains("(code -"),
        "{said}"
    );
    // A grant the policy denies, named with its line (the daemon reads the policy file).
    let denying = toolsmith::validate::run::DEFAULT_POLICY.replace(
        "[grants.levels]\nhosts = \"ask\"",
        "[grants.levels]\nhosts = \"deny\"",
    );
    std::fs::write(&policy, &denying).expect("policy");
    let refused = cli(&env, &config)
        .args(["approve", &id, "--grant", "program:curl", "--grant"])
        .arg(format!("host:{host}"))
        .assert()
        .failure();
    let said = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(
        said.contains(&format!(
            "--grant host:{host} is refused: host:{host} is a need which the policy denies: \
             {}:{} (grants.levels.hosts = \"deny\")",
            policy.display(),
            line_of(&denying, "hosts = \"deny\"")
        )),
        "{said}"
    );
    std::fs::write(&policy, toolsmith::validate::run::DEFAULT_POLICY).expect("policy");
    // A grant it does not need is refused too: exactly what it needs is granted.
    let refused = cli(&env, &config)
        .args(["approve", &id, "--grant", "program:curl", "--grant"])
        .arg(format!("host:{host}"))
        .args(["--grant", "socket:/var/run/docker.sock"])
        .assert()
        .failure();
    let said = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(
        said.contains("does not need socket:/var/run/docker.sock"),
        "{said}"
    );
    let approved = cli(&env, &config)
        .args([
            "--json",
            "approve",
            &id,
            "--grant",
            "program:curl",
            "--grant",
        ])
        .arg(format!("host:{host}"))
        .assert()
        .success();
    let landed = json_of(approved.get_output());
    let commit = landed["commit"].as_str().expect("commit").to_owned();
    let log = Command::new("git")
        .arg("-C")
        .arg(env.state().join("registry"))
        .args(["log", "-1", "--format=%B", &commit])
        .output()
        .expect("git log");
    let message = String::from_utf8_lossy(&log.stdout).into_owned();
    assert!(
        message.contains(&format!("Granted: program:curl\nGranted: host:{host}\n")),
        "{message}"
    );
}
