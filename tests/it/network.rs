//! Network by grant, end to end through the daemon: a `pip install` recovery habit (Claude Code
//! sessions in which `python3 -m unittest` fails with `ModuleNotFoundError`, `pip install` of
//! the module fixes it, and the tests pass) asks for the host of the package index pip is
//! configured with (`PIP_INDEX_URL`, a PEP 503 index this test serves on 127.0.0.1). Under a
//! policy that lists no host and denies the others (`[grants.levels] hosts = "deny"`) the
//! candidate is refused with the line that denies it and the line to add; once the policy
//! grants the index, the tool is validated, approved, and installs a wheel from the index
//! through toolsmith's proxy — while the package's own call to a second host is refused.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Daemon, TestEnv, json_of};
use serde_json::{Value, json};

/// The package the test's index serves.
const PACKAGE: &str = "tsproxy_probe";

/// Whether the system's Python has pip (the sandbox sees /usr/bin/python3 only).
fn system_pip() -> bool {
    Command::new("/usr/bin/python3")
        .args(["-m", "pip", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Builds `tsproxy_probe-1.0-py3-none-any.whl` in `dir` with the host's Python (the test's own
/// code, not a generated tool's): on import, the module calls `ping` (the second host) and
/// notes whether it got through.
fn build_wheel(dir: &Path, ping: &str) -> PathBuf {
    let script = r#"
import base64, hashlib, sys, zipfile
out, ping = sys.argv[1], sys.argv[2]
name, version = "tsproxy_probe", "1.0"
dist = f"{name}-{version}.dist-info"
files = {
    f"{name}/__init__.py": (
        "import urllib.request\nVALUE = 42\nPHONED = False\n"
        "try:\n    urllib.request.urlopen(%r, timeout=5)\n    PHONED = True\n"
        "except Exception:\n    pass\n" % ping
    ),
    f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: toolsmith-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for path, text in files.items():
    data = text.encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(data)}")
record.append(f"{dist}/RECORD,,")
files[f"{dist}/RECORD"] = "\n".join(record) + "\n"
with zipfile.ZipFile(f"{out}/{name}-{version}-py3-none-any.whl", "w") as z:
    for path, text in files.items():
        z.writestr(path, text)
"#;
    let status = Command::new("/usr/bin/python3")
        .args(["-c", script])
        .arg(dir)
        .arg(ping)
        .status()
        .expect("python3");
    assert!(status.success(), "building the wheel");
    dir.join(format!("{PACKAGE}-1.0-py3-none-any.whl"))
}

/// A small HTTP server on 127.0.0.1: a PEP 503 index of one wheel (or, without one, a host
/// that answers everything), recording the paths asked for.
struct Index {
    port: u16,
    paths: Arc<Mutex<Vec<String>>>,
    hits: Arc<AtomicUsize>,
}

impl Index {
    fn serve(wheel: Option<PathBuf>) -> Index {
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = listener.local_addr().expect("address").port();
        let paths = Arc::new(Mutex::new(Vec::new()));
        let hits = Arc::new(AtomicUsize::new(0));
        let (seen, counted) = (Arc::clone(&paths), Arc::clone(&hits));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                counted.fetch_add(1, Ordering::SeqCst);
                let wheel = wheel.clone();
                let seen = Arc::clone(&seen);
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
                    seen.lock().unwrap().push(path.clone());
                    let (status, kind, body) = respond(&path, wheel.as_deref());
                    let _ = stream.write_all(
                        format!(
                            "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                             Connection: close\r\n\r\n",
                            body.len()
                        )
                        .as_bytes(),
                    );
                    let _ = stream.write_all(&body);
                });
            }
        });
        Index { port, paths, hits }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/simple", self.port)
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn paths(&self) -> Vec<String> {
        self.paths.lock().unwrap().clone()
    }
}

/// The index's answer for `path`: the project page, the wheel, or 404.
fn respond(path: &str, wheel: Option<&Path>) -> (&'static str, &'static str, Vec<u8>) {
    let Some(wheel) = wheel else {
        return ("200 OK", "text/plain", b"pong".to_vec());
    };
    let file = wheel.file_name().unwrap().to_string_lossy().into_owned();
    let bytes = std::fs::read(wheel).unwrap();
    if path.trim_end_matches('/') == "/simple/tsproxy-probe" {
        use sha2::Digest;
        let hash: String = sha2::Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let page = format!(
            "<!DOCTYPE html><html><body><a href=\"/files/{file}#sha256={hash}\">{file}</a>\
             </body></html>\n"
        );
        return ("200 OK", "text/html", page.into_bytes());
    }
    if path == format!("/files/{file}") {
        return ("200 OK", "application/octet-stream", bytes);
    }
    ("404 Not Found", "text/plain", b"not here".to_vec())
}

/// Four Claude Code sessions: `python3 -m unittest` fails on a missing module (another each
/// time), `pip install` of it fixes it, the tests pass.
fn write_sessions(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for (n, module) in ["requests", "attrs", "tomli", "idna"].iter().enumerate() {
        let session = format!("00000000-0000-4000-8000-{n:012}");
        let failure = format!(
            "E\n======================================================================\n\
             ERROR: test_app (unittest.loader._FailedTest.test_app)\n\
             ----------------------------------------------------------------------\n\
             ImportError: Failed to import test module: test_app\n\
             Traceback (most recent call last):\n  File \"/home/dev/shop/test_app.py\", line 2, \
             in <module>\n    import {module}\nModuleNotFoundError: No module named \
             '{module}'\n\n\n----------------------------------------------------------------------\n\
             Ran 1 test in 0.000s\n\nFAILED (errors=1)"
        );
        let commands = [
            (
                "git status --short".to_owned(),
                true,
                " M app.py".to_owned(),
            ),
            ("python3 -m unittest".to_owned(), false, failure),
            (
                format!("pip install {module}"),
                true,
                format!("Successfully installed {module}-1.0"),
            ),
            (
                "python3 -m unittest".to_owned(),
                true,
                "----------------------------------------------------------------------\n\
                 Ran 1 test in 0.001s\n\nOK"
                    .to_owned(),
            ),
        ];
        let mut text = String::new();
        for (i, (cmd, ok, output)) in commands.iter().enumerate() {
            let ts = format!("2026-11-2{n}T10:00:{:02}.000Z", i * 5);
            let call = format!("toolu_net{n}x{i}");
            let base = json!({"isSidechain": false, "userType": "external",
                              "cwd": "/home/dev/shop", "sessionId": session,
                              "version": "1.0.98"});
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
            let content = if *ok {
                output.clone()
            } else {
                format!("Exit code 1\n{output}")
            };
            result["message"] = json!({"role": "user", "content": [
                {"tool_use_id": call, "type": "tool_result", "content": content,
                 "is_error": !ok}]});
            text.push_str(&format!("{record}\n{result}\n"));
        }
        std::fs::write(dir.join(format!("{session}.jsonl")), text).unwrap();
    }
}

/// Waits until `done` finds what it wants in `toolsmith --json candidates`.
fn wait_candidates(env: &TestEnv, config: &Path, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + common::PATIENCE * 3;
    loop {
        let out = env
            .cli()
            .arg("--config")
            .arg(config)
            .args(["--json", "candidates"])
            .output()
            .expect("candidates");
        let all: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let list = all.as_array().cloned().unwrap_or_default();
        if done(&list) {
            return list;
        }
        assert!(Instant::now() < deadline, "{all:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn is_pip_recovery(c: &Value) -> bool {
    c["origin"] == "error-recovery"
        && c["tool"]
            .as_str()
            .is_some_and(|t| t.contains("pip-install"))
}

#[test]
fn a_pip_install_recovery_asks_for_the_index_and_installs_through_the_proxy() {
    if !system_pip() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "/usr/bin/python3 has no pip: `.ci/run` installs python3-pip"
        );
        println!("skipped: /usr/bin/python3 has no pip (apt-get install python3-pip)");
        return;
    }
    let env = TestEnv::new();
    let second = Index::serve(None);
    let wheel_dir = env.path().join("wheels");
    std::fs::create_dir_all(&wheel_dir).unwrap();
    let wheel = build_wheel(
        &wheel_dir,
        &format!("http://127.0.0.1:{}/ping", second.port),
    );
    let index = Index::serve(Some(wheel.clone()));
    let logs = env.path().join("logs");
    write_sessions(&logs);

    // pip is configured with the test's index, as the user's shell would have it; Debian's
    // pip installs into the user's site only when told to.
    let pip_env = [
        ("PIP_INDEX_URL", index.url()),
        ("PIP_BREAK_SYSTEM_PACKAGES", "1".to_owned()),
        ("PIP_DISABLE_PIP_VERSION_CHECK", "1".to_owned()),
    ];
    // A policy that lists no host and denies the others (the built-in one asks a person).
    let policy = env.path().join("policy.toml");
    let denying = toolsmith::validate::run::DEFAULT_POLICY.replace(
        "[grants.levels]\nhosts = \"ask\"",
        "[grants.levels]\nhosts = \"deny\"",
    );
    assert_ne!(denying, toolsmith::validate::run::DEFAULT_POLICY);
    std::fs::write(&policy, &denying).unwrap();
    let config = env.write_config(&format!(
        "[generate]\nbackend = \"template\"\npolicy = \"{}\"\n\n\
         [[source]]\nformat = \"claude-code\"\npath = \"{}\"\n",
        policy.display(),
        logs.display()
    ));
    let mut command = env.daemon_command();
    command.arg("--config").arg(&config);
    for (name, value) in &pip_env {
        command.env(name, value);
    }
    let _daemon = Daemon::start(&env, command);
    let cli = || {
        let mut cmd = env.cli();
        cmd.arg("--config").arg(&config);
        for (name, value) in &pip_env {
            cmd.env(name, value);
        }
        cmd
    };

    // `toolsmith doctor` suggests the index pip is configured with.
    let doctor = cli().arg("doctor").output().expect("doctor");
    let text = String::from_utf8_lossy(&doctor.stdout).into_owned();
    let line = format!(
        "add \"{}\" to [grants] hosts in {}",
        index.host(),
        policy.display()
    );
    assert!(
        text.contains(&format!("index {} (PIP_INDEX_URL)", index.host())) && text.contains(&line),
        "{text}"
    );

    // Under a policy that grants no host and denies the others, the recovery asks for the
    // index's host and is refused with the line that denies it and the line that would allow
    // it.
    let deadline = Instant::now() + common::PATIENCE;
    loop {
        let out = cli().args(["sources"]).output().expect("sources");
        if String::from_utf8_lossy(&out.stdout).contains("16 actions") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    cli().arg("mine").assert().success();
    let refused = wait_candidates(&env, &config, |all| {
        all.iter()
            .any(|c| is_pip_recovery(c) && c["state"] == "failed")
    });
    let failed = refused.iter().find(|c| is_pip_recovery(c)).unwrap();
    let reason = failed["reason"].as_str().unwrap_or_default();
    let deny_line = denying
        .lines()
        .position(|l| l == "hosts = \"deny\"")
        .unwrap()
        + 1;
    assert!(
        reason.contains(&format!(
            "the tool needs the network host {}, which the policy does not grant ({}:{deny_line} \
             (grants.levels.hosts = \"deny\"))",
            index.host(),
            policy.display()
        )),
        "{failed:#}"
    );
    let full = cli()
        .args([
            "--json",
            "show",
            failed["id"].as_str().unwrap(),
            "--attempts",
        ])
        .assert()
        .success();
    let shown = json_of(full.get_output()).to_string();
    assert!(shown.contains(&line.replace('"', "\\\"")), "{shown}");

    // The policy grants the index: generated again, the tool is validated and proposed, and
    // the review says what it may reach.
    std::fs::write(
        &policy,
        toolsmith::validate::run::default_policy_granting(&[index.host()]),
    )
    .unwrap();
    let patterns = json_of(
        cli()
            .args(["--json", "patterns", "--kind", "recovery"])
            .assert()
            .success()
            .get_output(),
    );
    let pattern = patterns
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == failed["pattern"])
        .unwrap_or_else(|| panic!("{patterns:#}"));
    let out = cli()
        .args(["--json", "generate", "--pattern"])
        .arg(pattern["id"].as_str().unwrap())
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let report = json_of(out.get_output());
    let made = &report["candidates"][0];
    assert_eq!(made["state"], "awaiting-review", "{report:#}");
    let (id, tool) = (made["id"].as_str().unwrap(), made["tool"].as_str().unwrap());
    let review = cli().arg("review").assert().success();
    let text = String::from_utf8_lossy(&review.get_output().stdout).into_owned();
    assert!(
        text.contains(&format!("Network: may reach {}", index.host())),
        "{text}"
    );
    cli().args(["approve", id]).assert().success();

    // The approved tool, in a project whose tests need the package: the tests fail, pip
    // installs it from the index through the proxy, the tests pass. The package's call to the
    // second host is refused, and the run's report says so.
    let workspace = env.path().join("shop");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(
        workspace.join("test_app.py"),
        format!(
            "import unittest\nimport {PACKAGE}\n\n\nclass T(unittest.TestCase):\n    \
             def test_value(self):\n        self.assertEqual({PACKAGE}.VALUE, 42)\n        \
             self.assertFalse({PACKAGE}.PHONED)\n"
        ),
    )
    .unwrap();
    let out = cli()
        .args(["--json", "run", tool, "--workspace"])
        .arg(&workspace)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("run");
    let ran = json_of(&out);
    assert_eq!(ran["ok"], true, "{ran:#}");
    let said = format!(
        "{}{}",
        ran["stdout"].as_str().unwrap_or_default(),
        ran["stderr"].as_str().unwrap_or_default()
    );
    assert!(
        said.contains(&format!("No module named '{PACKAGE}'"))
            && said.contains(&format!("Successfully installed {PACKAGE}-1.0"))
            && said.ends_with("OK\n"),
        "{ran:#}"
    );
    let connections = ran["connections"].as_array().cloned().unwrap_or_default();
    let wheel_size = std::fs::metadata(&wheel).unwrap().len();
    let allowed: Vec<&Value> = connections
        .iter()
        .filter(|c| c["verdict"] == "allowed")
        .collect();
    assert!(
        !allowed.is_empty()
            && allowed
                .iter()
                .all(|c| c["host"] == "127.0.0.1" && c["port"] == index.port)
            && allowed
                .iter()
                .map(|c| c["bytes_down"].as_u64().unwrap_or(0))
                .sum::<u64>()
                > wheel_size,
        "{connections:#?}"
    );
    assert!(
        connections.iter().any(|c| c["verdict"] == "denied"
            && c["port"] == second.port
            && c["reason"]
                .as_str()
                .is_some_and(|r| r.contains("not granted"))),
        "{connections:#?}"
    );
    assert_eq!(second.hits.load(Ordering::SeqCst), 0, "the second host");
    let paths = index.paths();
    assert!(
        paths.iter().any(|p| p.starts_with("/simple/tsproxy-probe"))
            && paths.iter().any(|p| p.starts_with("/files/")),
        "{paths:?}"
    );
}
