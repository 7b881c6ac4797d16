//! Secrets in everyday forms, through the real binaries: Claude Code sessions holding an AWS
//! secret key given to `aws configure set`, a password exported then echoed, a `.netrc` written
//! by the agent's `Write` tool, a `.pgpass` read with `cat`, and a deploy habit that passes a
//! token each time. After `toolsmith ingest`, `mine` and `generate`, no secret is found in any
//! file toolsmith wrote — the store and its WAL, staging, the registry's git objects — and the
//! habit became a tool that asks for the token as a parameter instead of replaying the
//! redaction placeholder.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{TestEnv, json_of};
use serde_json::{Value, json};

/// A fake secret (xorshift over letters and digits): the right shape, never a real one.
pub(crate) fn fake(seed: u64, alphabet: &str, n: usize) -> String {
    let chars: Vec<char> = alphabet.chars().collect();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    loop {
        let s: String = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chars[(x % chars.len() as u64) as usize]
            })
            .collect();
        let classes = [
            s.bytes().any(|b| b.is_ascii_uppercase()),
            s.bytes().any(|b| b.is_ascii_lowercase()),
            s.bytes().any(|b| b.is_ascii_digit()),
        ];
        if classes.iter().filter(|c| **c).count() >= 2 {
            return s;
        }
    }
}

pub(crate) const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_DIGIT: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// One tool call of a session and its output.
struct Call {
    tool: &'static str,
    input: Value,
    output: String,
}

fn bash(command: &str, output: &str) -> Call {
    Call {
        tool: "Bash",
        input: json!({"command": command, "description": "run"}),
        output: output.to_owned(),
    }
}

/// A Claude Code session file: per call, the assistant's tool_use and the user's tool_result.
fn session_file(dir: &Path, n: usize, calls: &[Call]) {
    let session = format!("7e1f0c2a-0000-4000-8000-{n:012}");
    let mut text = String::new();
    for (i, call) in calls.iter().enumerate() {
        let id = format!("toolu_s{n}c{i}");
        let base = json!({"isSidechain": false, "userType": "external",
                          "cwd": "/home/dev/shop", "sessionId": session, "version": "2.0.14"});
        let ts = format!("2026-02-0{}T10:{:02}:00Z", n + 1, i);
        let mut a = base.clone();
        a["parentUuid"] = if i == 0 {
            Value::Null
        } else {
            json!(format!("u-{n}-{}", i - 1))
        };
        a["type"] = json!("assistant");
        a["uuid"] = json!(format!("a-{n}-{i}"));
        a["timestamp"] = json!(ts);
        a["message"] = json!({"id": format!("msg_{n}_{i}"), "type": "message",
            "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": id, "name": call.tool, "input": call.input}]});
        let mut u = base;
        u["parentUuid"] = json!(format!("a-{n}-{i}"));
        u["type"] = json!("user");
        u["uuid"] = json!(format!("u-{n}-{i}"));
        u["timestamp"] = json!(ts);
        u["message"] = json!({"role": "user", "content": [
            {"tool_use_id": id, "type": "tool_result", "content": call.output, "is_error": false}]});
        text.push_str(&format!("{a}\n{u}\n"));
    }
    std::fs::write(dir.join(format!("{session}.jsonl")), text).expect("write session");
}

/// Every file under `root` but `skip`, as bytes, with the contents of every object of every
/// git repository there (they are compressed on disk).
pub(crate) fn everything_written(root: &Path, skip: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.starts_with(skip) {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                if path.file_name().is_some_and(|n| n == ".git") || path.join("HEAD").is_file() {
                    let objects = Command::new("git")
                        .arg("--git-dir")
                        .arg(&path)
                        .args(["cat-file", "--batch-all-objects", "--batch"])
                        .output()
                        .expect("git cat-file");
                    out.push((format!("{} (objects)", path.display()), objects.stdout));
                }
                stack.push(path);
            } else if meta.is_file()
                && let Ok(bytes) = std::fs::read(&path)
            {
                out.push((path.display().to_string(), bytes));
            }
        }
    }
    out
}

pub(crate) fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn no_secret_reaches_disk_and_a_redacted_value_becomes_a_parameter() {
    let env = TestEnv::new();
    let logs = env.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir logs");
    let mut secrets: Vec<String> = Vec::new();
    for (n, dir) in ["core", "web", "core", "api"].iter().enumerate() {
        let seed = n as u64 * 100;
        let key_id = format!("AKIA{}", fake(seed + 1, UPPER_DIGIT, 16));
        let aws_secret = fake(seed + 2, ALNUM, 40);
        let db_password = fake(seed + 3, ALNUM, 18);
        let netrc_password = fake(seed + 4, ALNUM, 20);
        let pgpass_password = fake(seed + 5, ALNUM, 16);
        let deploy_token = fake(seed + 6, ALNUM, 32);
        secrets.extend([
            key_id.clone(),
            aws_secret.clone(),
            db_password.clone(),
            netrc_password.clone(),
            pgpass_password.clone(),
            deploy_token.clone(),
        ]);
        // The secrets come in three sessions of four; every session builds then deploys one
        // directory, passing a token, after a command that varies: that pair is a habit.
        let mut calls = Vec::new();
        if n < 3 {
            calls.extend([
                bash(&format!("aws configure set aws_access_key_id {key_id}"), ""),
                bash(
                    &format!("aws configure set aws_secret_access_key {aws_secret}"),
                    "",
                ),
                bash(&format!("export DB_PASSWORD={db_password}"), ""),
                bash("echo $DB_PASSWORD", &format!("{db_password}\n")),
                Call {
                    tool: "Write",
                    input: json!({"file_path": "/home/dev/.netrc",
                        "content": format!("machine api.shop.example\n  login ci\n  password {netrc_password}\n")}),
                    output: "File created successfully at: /home/dev/.netrc".into(),
                },
                bash(
                    "cat ~/.pgpass",
                    &format!("db.internal:5432:shop:app:{pgpass_password}\n"),
                ),
            ]);
        }
        calls.push(if n % 2 == 0 {
            bash("git log --oneline -n 5", "3f2a9c1 fix\n")
        } else {
            bash("git fetch origin", "")
        });
        calls.push(bash(&format!("make build -C {dir}"), "built\n"));
        if n == 1 {
            calls.push(bash("git status --short", " M src/app.rs\n"));
        }
        calls.push(bash(
            &format!("make deploy -C {dir} DEPLOY_TOKEN={deploy_token}"),
            &format!("deploying {dir} with token {deploy_token}\ndone\n"),
        ));
        session_file(&logs, n, &calls);
    }

    env.cli().arg("ingest").arg(&logs).assert().success();
    env.cli().arg("mine").assert().success();
    let out = env
        .cli()
        .args(["--json", "generate"])
        .timeout(Duration::from_secs(300))
        .assert()
        .success();
    let report = json_of(out.get_output());

    // Nothing toolsmith wrote holds a secret: the store (and its WAL), staging, the registry.
    let written = everything_written(env.path(), &logs);
    assert!(
        written.iter().any(|(p, _)| p.ends_with("state.db")),
        "no store among {:?}",
        written.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    assert!(
        written.iter().any(|(p, _)| p.contains("staging")),
        "nothing staged: {report:#}\npatterns: {}",
        String::from_utf8_lossy(
            &env.cli()
                .args(["--json", "patterns"])
                .output()
                .expect("patterns")
                .stdout
        )
    );
    assert!(
        written.iter().any(|(p, _)| p.ends_with("(objects)")),
        "no registry: {:?}",
        written.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    let mut leaks = Vec::new();
    for (path, bytes) in &written {
        for secret in &secrets {
            if contains(bytes, secret) {
                leaks.push(format!("{secret} in {path}"));
            }
        }
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n"));

    // What was stored says where the secrets were.
    let actions = common::stored(&env, &env.state());
    let texts: Vec<String> = actions.iter().map(Value::to_string).collect();
    for want in [
        "aws configure set aws_secret_access_key [REDACTED:",
        "aws configure set aws_access_key_id [REDACTED:aws-access-key]",
        "[REDACTED:secret-output]",
        "password [REDACTED:password-file]",
        "db.internal:5432:shop:app:[REDACTED:password-file]",
        "DEPLOY_TOKEN=[REDACTED:secret-assignment]",
        "with token [REDACTED:secret-assignment]",
    ] {
        assert!(
            texts.iter().any(|t| t.contains(want)),
            "{want:?} not stored:\n{}",
            texts.join("\n")
        );
    }

    // The deploy habit: a tool with the token as a parameter, validated in the sandbox.
    let made = report["candidates"].as_array().expect("candidates");
    let deploy = made
        .iter()
        .find(|c| {
            c["tool"]
                .as_str()
                .is_some_and(|t| t.starts_with("make-build") && t.contains("deploy"))
        })
        .unwrap_or_else(|| panic!("no make build/deploy candidate in {report:#}"));
    assert_eq!(deploy["state"], "awaiting-review", "{deploy:#}");
    let id = deploy["id"].as_str().expect("id");
    let shown = json_of(
        env.cli()
            .args(["--json", "show", id, "--attempts"])
            .assert()
            .success()
            .get_output(),
    );
    let params = shown["spec"]["params"].as_array().expect("params");
    let secret = params
        .iter()
        .find(|p| {
            p["description"]
                .as_str()
                .is_some_and(|d| d.contains("a secret (secret-assignment)"))
        })
        .unwrap_or_else(|| panic!("no secret parameter in {params:#?}"));
    assert_eq!(secret["required"], true, "{secret:#}");
    assert_eq!(secret["examples"], json!([]), "{secret:#}");
    let files = shown["attempts"][0]["files"]
        .as_object()
        .expect("attempt files");
    for (name, text) in files {
        let text = text.as_str().unwrap_or_default();
        assert!(
            !text.contains("[REDACTED:"),
            "{name} replays a placeholder:\n{text}"
        );
    }
    let run = files["run.sh"].as_str().expect("run.sh");
    let option = format!(
        "--{}",
        secret["name"].as_str().expect("name").replace('_', "-")
    );
    assert!(run.contains(&option), "{option} not in run.sh:\n{run}");
    let cases = files["tests/cases.json"].as_str().expect("cases");
    assert!(
        cases.contains("DEPLOY_TOKEN=example-secret-assignment"),
        "the dry runs use a stand-in:\n{cases}"
    );
}

/// What secret stores print and what is fed to password prompts, through the real `toolsmith
/// ingest`: a Terraform output, an AWS secret read back, a decryption to the terminal, a
/// password fed to `sudo -S` on a here-string, a setup script's answers, an `expect` script and
/// a `pexpect` script the agent wrote. None of the secrets is in any file toolsmith wrote; the
/// look-alikes (a region, a VPC id, a decryption to a file, the names in a password store, a
/// script's plain answers) are stored as they were logged.
#[test]
fn secret_stores_and_prompts_stay_out_of_the_store() {
    let env = TestEnv::new();
    let logs = env.path().join("logs");
    std::fs::create_dir_all(&logs).expect("mkdir logs");
    let s: Vec<String> = (0..8).map(|i| fake(900 + i, ALNUM, 22)).collect();
    let calls = vec![
        bash("terraform output -raw db_password", &s[0]),
        bash(
            "aws configure get aws_secret_access_key",
            &format!("{}\n", s[1]),
        ),
        bash(
            "gpg --quiet -d notes.txt.gpg",
            &format!("smtp relay\n{}\n", s[2]),
        ),
        bash(
            &format!("sudo -S systemctl restart app <<< '{}'", s[3]),
            "[sudo] password for dev: ",
        ),
        bash(
            &format!(
                "./scripts/setup.sh <<EOF\nadmin\nadmin@example.com\n{0}\n{0}\nEOF",
                s[4]
            ),
            "Admin created.\n",
        ),
        bash(
            &format!(
                "expect -c 'spawn ssh admin@db1; expect \"assword:\"; send \"{}\\r\"; interact'",
                s[5]
            ),
            "",
        ),
        Call {
            tool: "Write",
            input: json!({"file_path": "/home/dev/shop/tools/login.py",
                "content": format!("import pexpect\nchild = pexpect.spawn('psql -h db -U app')\nchild.expect('Password for user app:')\nchild.sendline('{}')\nchild.interact()\n", s[6])}),
            output: "File created successfully at: /home/dev/shop/tools/login.py".into(),
        },
        bash(
            &format!(
                "printf 'protocol=https\\nhost=git.example.com\\nusername=ci\\npassword={}\\n' | git credential approve",
                s[7]
            ),
            "",
        ),
        // Look-alikes.
        bash("aws configure get region", "eu-west-1\n"),
        bash("terraform output -raw vpc_id", "vpc-0a1b2c3d4e5f60718"),
        bash(
            "gpg -d backup.tar.gpg -o backup.tar",
            "gpg: encrypted with cv25519 key\n",
        ),
        bash(
            "pass ls",
            "Password Store\n├── infra\n│   └── db\n└── web\n",
        ),
        bash(
            "./scripts/setup.sh <<EOF\nadmin\nyes\n/srv/shop\nEOF",
            "Installed to /srv/shop\n",
        ),
    ];
    session_file(&logs, 7, &calls);
    env.cli().arg("ingest").arg(&logs).assert().success();

    let written = everything_written(env.path(), &logs);
    assert!(
        written.iter().any(|(p, _)| p.ends_with("state.db")),
        "no store"
    );
    let mut leaks = Vec::new();
    for (path, bytes) in &written {
        for secret in &s {
            if contains(bytes, secret) {
                leaks.push(format!("{secret} in {path}"));
            }
        }
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n"));

    let actions = common::stored(&env, &env.state());
    let texts: Vec<String> = actions.iter().map(Value::to_string).collect();
    let all = texts.join("\n");
    for want in [
        // Only the secret's characters became the placeholder.
        "sudo -S systemctl restart app <<< '[REDACTED:stdin-secret]'",
        "admin@example.com\\n[REDACTED:prompt-answer]\\n[REDACTED:prompt-answer]\\nEOF",
        "send \\\"[REDACTED:expect-send]\\\\r\\\"; interact",
        "child.sendline('[REDACTED:expect-send]')",
        "\"output\":\"[REDACTED:secret-output]\\n[REDACTED:secret-output]\\n\"",
        // The look-alikes, as logged.
        "eu-west-1",
        "vpc-0a1b2c3d4e5f60718",
        "gpg: encrypted with cv25519 key",
        "├── infra\\n│   └── db",
        "admin\\nyes\\n/srv/shop\\nEOF",
    ] {
        assert!(all.contains(want), "{want:?} not stored:\n{all}");
    }
}
