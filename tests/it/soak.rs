//! A week in a day: the daemon runs while a writer appends agent sessions in every format at a
//! high rate, a client subscribes to events and approves candidates, tools run through the CLI
//! and MCP, and the daemon is killed with `kill -9` and restarted at random moments. At the end:
//! every appended action stored exactly once (equal to a one-shot ingest of the same files), the
//! registry passes `toolsmith verify`, no candidate stuck, the daemon's memory and open files
//! flat over the steady phase — and the figures printed.
//!
//! `cargo test --test it soak::` runs it for `TOOLSMITH_SOAK_SECS` (30 by default: the shortened
//! form `.ci/run` runs); `scripts/soak.sh` runs it at full length (an hour, release build).

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Daemon, PATIENCE, TestEnv, append, stored};
use nix::sys::signal::Signal;
use serde_json::{Value, json};

/// A small deterministic random source (the run can be replayed from its seed).
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound.max(1)
    }
}

const PACKAGES: [&str; 4] = ["core", "cli", "web", "store"];

/// The daemon's descriptors at most: the tailer's 256 open log files, and the rest (store,
/// sockets, inotify, timers, the runs log, a sandbox run's pipes).
const OPEN_FILES_BOUND: u64 = 256 + 64;

/// The commands of one agent session: build then test a package (the habit), some noise, and
/// now and then the pytest failure and its fix. Each command is unique (`# n`), so every
/// action can be told apart.
fn session_commands(rng: &mut Rng, n: &mut u64) -> Vec<(String, bool, String)> {
    let pkg = PACKAGES[rng.below(4) as usize];
    let mut out = Vec::new();
    let mut push = |cmd: String, ok: bool, output: &str| {
        *n += 1;
        out.push((format!("{cmd} # {n}"), ok, output.to_owned()));
    };
    if rng.below(2) == 0 {
        push("git status --short".into(), true, " M src/lib.c");
    }
    push(format!("make build -C {pkg}"), true, "built");
    push(format!("make test -C {pkg}"), true, "12 passed");
    if rng.below(3) == 0 {
        push(
            "python3 -m pytest tests/".into(),
            false,
            "E   ModuleNotFoundError: No module named 'requests'",
        );
        push(
            "pip install requests".into(),
            true,
            "Successfully installed",
        );
        push("python3 -m pytest tests/".into(), true, "24 passed");
    }
    out
}

/// Where the writer appends, one place per format.
struct Logs {
    native: PathBuf,
    claude: PathBuf,
    codex: PathBuf,
    bash: PathBuf,
    zsh: PathBuf,
    fish: PathBuf,
}

impl Logs {
    fn new(root: &Path) -> Logs {
        let logs = Logs {
            native: root.join("native"),
            claude: root.join("claude/projects/-soak"),
            codex: root.join("codex/sessions/2026/11/23"),
            bash: root.join("shell/bash_history"),
            zsh: root.join("shell/zsh_history"),
            fish: root.join("shell/fish_history"),
        };
        for dir in [&logs.native, &logs.claude, &logs.codex] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        std::fs::create_dir_all(root.join("shell")).expect("mkdir");
        for file in [&logs.bash, &logs.zsh, &logs.fish] {
            std::fs::write(file, "").expect("create history");
        }
        logs
    }

    /// The `[[source]]` tables for them.
    fn sources(&self, root: &Path) -> String {
        [
            ("native", self.native.clone()),
            ("claude-code", root.join("claude/projects")),
            ("codex", root.join("codex/sessions")),
            ("bash", self.bash.clone()),
            ("zsh", self.zsh.clone()),
            ("fish", self.fish.clone()),
        ]
        .iter()
        .map(|(format, path)| {
            format!(
                "[[source]]\nformat = \"{format}\"\npath = \"{}\"\n",
                path.display()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
    }

    /// Appends one session in `format` (0–5); returns how many actions it holds.
    fn write_session(&self, format: u64, id: u64, commands: &[(String, bool, String)]) -> u64 {
        let ts = |i: usize| format!("2026-11-23T10:{:02}:{:02}.000Z", (id / 60) % 60, i % 60);
        let epoch = 1_795_000_000 + id * 10;
        let mut text = String::new();
        match format {
            0 => {
                for (i, (cmd, ok, output)) in commands.iter().enumerate() {
                    text.push_str(
                        &json!({"v": 1, "session": format!("native-{id}"), "seq": i + 1,
                                "ts": ts(i), "tool": "shell", "input": {"command": cmd},
                                "ok": ok, "exit_code": i32::from(!ok), "output": output,
                                "duration_ms": 40})
                        .to_string(),
                    );
                    text.push('\n');
                }
                append(&self.native.join("agent.jsonl"), text.as_bytes());
            }
            1 => {
                let session = format!("00000000-0000-4000-8000-{id:012}");
                for (i, (cmd, ok, output)) in commands.iter().enumerate() {
                    let call = format!("toolu_soak{id}x{i}");
                    let base = json!({"isSidechain": false, "userType": "external",
                                      "cwd": "/home/dev/webshop", "sessionId": session,
                                      "version": "1.0.98"});
                    let mut call_rec = base.clone();
                    call_rec["parentUuid"] = if i == 0 {
                        Value::Null
                    } else {
                        json!(format!("u-{id}-{}", i - 1))
                    };
                    call_rec["type"] = json!("assistant");
                    call_rec["uuid"] = json!(format!("a-{id}-{i}"));
                    call_rec["timestamp"] = json!(ts(i));
                    call_rec["message"] = json!({"id": format!("msg_{id}_{i}"), "type": "message",
                        "role": "assistant", "model": "claude-sonnet-4-20250514",
                        "content": [{"type": "tool_use", "id": call, "name": "Bash",
                                     "input": {"command": cmd, "description": "soak"}}]});
                    let mut result = base;
                    result["parentUuid"] = json!(format!("a-{id}-{i}"));
                    result["type"] = json!("user");
                    result["uuid"] = json!(format!("u-{id}-{i}"));
                    result["timestamp"] = json!(ts(i));
                    let content = if *ok {
                        output.clone()
                    } else {
                        format!("Exit code 1\n{output}")
                    };
                    result["message"] = json!({"role": "user", "content": [
                        {"tool_use_id": call, "type": "tool_result", "content": content,
                         "is_error": !ok}]});
                    text.push_str(&format!("{call_rec}\n{result}\n"));
                }
                append(
                    &self.claude.join(format!("{session}.jsonl")),
                    text.as_bytes(),
                );
            }
            2 => {
                let session = format!("019aad50-0000-7000-8000-{id:012}");
                text.push_str(
                    &json!({"timestamp": ts(0), "type": "session_meta", "payload": {
                        "id": session, "timestamp": ts(0), "cwd": "/home/dev/webshop",
                        "originator": "codex_cli_rs", "cli_version": "0.60.1"}})
                    .to_string(),
                );
                text.push('\n');
                for (i, (cmd, ok, output)) in commands.iter().enumerate() {
                    let call = format!("call_soak{id}x{i}");
                    let args = json!({"command": cmd}).to_string();
                    text.push_str(
                        &json!({"timestamp": ts(i), "type": "response_item", "payload": {
                            "type": "function_call", "name": "shell_command",
                            "arguments": args, "call_id": call}})
                        .to_string(),
                    );
                    text.push('\n');
                    text.push_str(
                        &json!({"timestamp": ts(i), "type": "response_item", "payload": {
                            "type": "function_call_output", "call_id": call,
                            "output": format!("Exit code: {}\nWall time: 0.1 seconds\nOutput:\n{output}",
                                              i32::from(!ok))}})
                        .to_string(),
                    );
                    text.push('\n');
                }
                append(
                    &self
                        .codex
                        .join(format!("rollout-2026-11-23T10-00-00-{session}.jsonl")),
                    text.as_bytes(),
                );
            }
            3 => {
                for (i, (cmd, _, _)) in commands.iter().enumerate() {
                    text.push_str(&format!("#{}\n{cmd}\n", epoch + i as u64));
                }
                append(&self.bash, text.as_bytes());
            }
            4 => {
                for (i, (cmd, _, _)) in commands.iter().enumerate() {
                    text.push_str(&format!(": {}:0;{cmd}\n", epoch + i as u64));
                }
                append(&self.zsh, text.as_bytes());
            }
            _ => {
                for (i, (cmd, _, _)) in commands.iter().enumerate() {
                    text.push_str(&format!("- cmd: {cmd}\n  when: {}\n", epoch + i as u64));
                }
                append(&self.fish, text.as_bytes());
            }
        }
        commands.len() as u64
    }
}

fn start_daemon(env: &TestEnv, config: &Path) -> Daemon {
    let mut cmd = env.daemon_command();
    cmd.arg("--config").arg(config);
    Daemon::start(env, cmd)
}

/// The daemon's resident memory (KiB) and open files, from /proc.
fn sample(pid: i32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some((rss, fds))
}

/// What the daemon's descriptors point at, counted by kind (directory of a file, socket, …).
fn open_files(pid: i32) -> std::collections::BTreeMap<String, usize> {
    let mut kinds = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let target = std::fs::read_link(entry.path())
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        let kind = match target.rsplit_once('/') {
            Some((dir, _)) if target.starts_with('/') => dir.to_owned(),
            _ => target.split(':').next().unwrap_or("?").to_owned(),
        };
        *kinds.entry(kind).or_default() += 1;
    }
    kinds
}

/// The median: a sample taken during a sandbox run or a git write (a burst of descriptors, a
/// transient allocation) does not move it.
fn median(values: &[u64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied().unwrap_or(0) as f64
}

/// Subscribes to candidate events and approves what is proposed; also approves whatever waits
/// in review now and then (an event sent while the daemon was being killed is lost, not the
/// proposal). Reconnects after each kill.
fn approver(env: &TestEnv, config: PathBuf, stop: Arc<AtomicBool>, approved: Arc<AtomicU64>) {
    let socket = env.socket();
    let approve = |id: &str| {
        let ok = env
            .cli()
            .arg("--config")
            .arg(&config)
            .args(["approve", id])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            approved.fetch_add(1, Ordering::Relaxed);
        }
    };
    let mut last_poll = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut stream) = UnixStream::connect(&socket) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "events.subscribe",
                             "params": {"kinds": ["candidate."]}});
        if stream.write_all(format!("{request}\n").as_bytes()).is_err() {
            continue;
        }
        let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
        let mut lines = BufReader::new(stream);
        let mut line = String::new();
        loop {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            line.clear();
            match lines.read_line(&mut line) {
                Ok(0) => break,
                Ok(_) => {
                    let Ok(message) = serde_json::from_str::<Value>(&line) else {
                        continue;
                    };
                    let event = &message["params"];
                    if event["kind"] == "candidate.proposed"
                        && event["data"]["branch"].is_string()
                        && let Some(id) = event["data"]["id"].as_str()
                    {
                        approve(id);
                    }
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => break,
            }
            if last_poll.elapsed() > Duration::from_secs(2) {
                last_poll = Instant::now();
                let listed = env
                    .cli()
                    .arg("--config")
                    .arg(&config)
                    .args(["--json", "review"])
                    .output();
                if let Ok(out) = listed
                    && let Ok(Value::Array(reviews)) = serde_json::from_slice::<Value>(&out.stdout)
                {
                    for r in reviews {
                        if let Some(id) = r["candidate"].as_str() {
                            approve(id);
                        }
                    }
                }
            }
        }
    }
}

/// A JSON-lines MCP client on `toolsmith mcp`.
struct Mcp {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Mcp {
    fn start(env: &TestEnv, config: &Path, workspace: &Path) -> Mcp {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolsmith"));
        env.apply(&mut cmd);
        let mut child = cmd
            .arg("--state")
            .arg(env.state())
            .arg("--config")
            .arg(config)
            .args(["mcp", "--workspace"])
            .arg(workspace)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("toolsmith mcp");
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut mcp = Mcp {
            child,
            out,
            next: 1,
        };
        mcp.call(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "soak", "version": "1"}}),
        );
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .expect("write to mcp");
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            if self.out.read_line(&mut line).expect("read mcp") == 0 {
                panic!("toolsmith mcp ended");
            }
            let message: Value = serde_json::from_str(&line).expect("mcp JSON");
            if message["id"] == id {
                return message;
            }
        }
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_week_in_a_day() {
    let secs: u64 = std::env::var("TOOLSMITH_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let rate: u64 = std::env::var("TOOLSMITH_SOAK_RATE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150);
    let env = TestEnv::new();
    let logs_root = env.path().join("logs");
    let logs = Logs::new(&logs_root);
    let project = env.path().join("project");
    for package in PACKAGES {
        std::fs::create_dir_all(project.join(package)).expect("mkdir");
        std::fs::write(
            project.join(package).join("Makefile"),
            format!("build:\n\t@echo built {package}\ntest: build\n\t@echo 12 passed\n"),
        )
        .expect("write Makefile");
    }
    let config = env.write_config(&format!(
        "[ingest]\ndebounce_ms = 20\n\n[mine]\nafter_new_actions = 300\n\n\
         [generate]\nmin_score = 20\n\n{}",
        logs.sources(&logs_root)
    ));

    let mut daemon = start_daemon(&env, &config);
    let stop = Arc::new(AtomicBool::new(false));
    let approved = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let total = Duration::from_secs(secs);
    // Kills happen in the first 60% of the run; the rest is the steady phase, sampled.
    let chaos_until = total.mul_f64(0.6);

    std::thread::scope(|scope| {
        let written = Arc::new(Mutex::new([0u64; 6]));
        {
            let (stop, written, logs) = (Arc::clone(&stop), Arc::clone(&written), &logs);
            scope.spawn(move || {
                let mut rng = Rng(0x50a6);
                let (mut n, mut id) = (0u64, 0u64);
                let tick = Duration::from_millis(50);
                let mut due = 0.0f64;
                while !stop.load(Ordering::Relaxed) {
                    due += rate as f64 * tick.as_secs_f64();
                    while due >= 1.0 {
                        id += 1;
                        let format = id % 6;
                        let commands = session_commands(&mut rng, &mut n);
                        let count = logs.write_session(format, id, &commands);
                        written.lock().expect("lock")[format as usize] += count;
                        due -= count as f64;
                    }
                    std::thread::sleep(tick);
                }
            });
        }
        {
            let (env, config, stop, approved) = (
                &env,
                config.clone(),
                Arc::clone(&stop),
                Arc::clone(&approved),
            );
            scope.spawn(move || approver(env, config, stop, approved));
        }

        let mut rng = Rng(0x9e37);
        let mut kills = 0u32;
        let mut next_kill = Duration::from_millis(2000 + rng.below(3000));
        let (mut cli_runs, mut mcp_calls) = (0u32, 0u32);
        let mut mcp: Option<Mcp> = None;
        let mut last_use = Instant::now();
        let mut samples: Vec<(u64, u64)> = Vec::new();
        while started.elapsed() < total {
            std::thread::sleep(Duration::from_millis(250));
            let now = started.elapsed();
            if now < chaos_until && now >= next_kill {
                daemon.signal(Signal::SIGKILL);
                daemon.wait_exit();
                kills += 1;
                std::thread::sleep(Duration::from_millis(rng.below(300)));
                daemon = start_daemon(&env, &config);
                next_kill = now + Duration::from_millis(1500 + rng.below(4000));
            }
            if now >= chaos_until
                && let Some(s) = sample(daemon.pid())
            {
                samples.push(s);
            }
            // Use the approved tools, both ways, every second or so.
            if last_use.elapsed() > Duration::from_secs(1) {
                last_use = Instant::now();
                let ran = env
                    .cli()
                    .arg("--config")
                    .arg(&config)
                    .args([
                        "run",
                        "make-build-test",
                        "--param",
                        "dir=core",
                        "--workspace",
                    ])
                    .arg(&project)
                    .output()
                    .expect("toolsmith run");
                if ran.status.success() {
                    cli_runs += 1;
                    let client = mcp.get_or_insert_with(|| Mcp::start(&env, &config, &project));
                    let called = client.call(
                        "tools/call",
                        json!({"name": "make-build-test", "arguments": {"dir": "web"}}),
                    );
                    if called["result"]["isError"] == false {
                        mcp_calls += 1;
                    }
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        drop(mcp);
        let elapsed = started.elapsed();
        let written = *written.lock().expect("lock");

        // The writer has stopped: the daemon catches up, and holds exactly what a one-shot
        // ingest of the same files holds.
        let expected_state = env.path().join("expected");
        for (format, path) in [
            ("native", logs.native.clone()),
            ("claude-code", logs_root.join("claude/projects")),
            ("codex", logs_root.join("codex/sessions")),
            ("bash", logs.bash.clone()),
            ("zsh", logs.zsh.clone()),
            ("fish", logs.fish.clone()),
            // Every run of a tool is logged as a native action, which the daemon reads too.
            ("native", env.state().join("runs")),
        ] {
            if !path.exists() {
                continue;
            }
            let out = env
                .cli_at(&expected_state)
                .args(["ingest", "--format", format])
                .arg(&path)
                .output()
                .expect("ingest");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let expected = stored(&env, &expected_state);
        let total_written: u64 = written.iter().sum();
        let logged_runs = expected
            .iter()
            .filter(|a| {
                a["input"]["command"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("toolsmith run "))
            })
            .count() as u64;
        assert_eq!(
            expected.len() as u64,
            total_written + logged_runs,
            "the one-shot ingest reads every action written ({written:?} by format)"
        );
        let caught_up = Instant::now();
        let deadline = caught_up + PATIENCE * 3;
        loop {
            let got = stored(&env, &env.state());
            if got == expected {
                break;
            }
            if Instant::now() >= deadline {
                let by_source = |actions: &[Value]| {
                    let mut counts = std::collections::BTreeMap::<String, usize>::new();
                    for a in actions {
                        *counts
                            .entry(a["source"].as_str().unwrap_or("?").to_owned())
                            .or_default() += 1;
                    }
                    counts
                };
                let missing: Vec<&Value> = expected
                    .iter()
                    .filter(|a| !got.contains(a))
                    .take(3)
                    .collect();
                let extra: Vec<&Value> = got
                    .iter()
                    .filter(|a| !expected.contains(a))
                    .take(3)
                    .collect();
                let sources = env.cli().args(["sources"]).output().expect("sources");
                panic!(
                    "the daemon holds {} actions {:?}, the files {} {:?}; missing {missing:#?}; \
                     extra {extra:#?}; sources:\n{}\nlog:\n{}",
                    got.len(),
                    by_source(&got),
                    expected.len(),
                    by_source(&expected),
                    String::from_utf8_lossy(&sources.stdout),
                    daemon.log()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let catch_up = caught_up.elapsed();

        // No candidate stuck half-way once the daemon has settled.
        let deadline = Instant::now() + PATIENCE * 3;
        let candidates = loop {
            let out = env
                .cli()
                .arg("--config")
                .arg(&config)
                .args(["--json", "candidates"])
                .output()
                .expect("candidates");
            let all: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            let moving = all.as_array().map_or(0, |a| {
                a.iter()
                    .filter(|c| {
                        matches!(
                            c["state"].as_str(),
                            Some("proposed" | "generating" | "validating")
                        )
                    })
                    .count()
            });
            if moving == 0 {
                break all;
            }
            assert!(Instant::now() < deadline, "candidates stuck: {all:#}");
            std::thread::sleep(Duration::from_millis(200));
        };
        let verify = env
            .cli()
            .arg("--config")
            .arg(&config)
            .arg("verify")
            .output()
            .expect("verify");
        assert!(
            verify.status.success(),
            "{}{}",
            String::from_utf8_lossy(&verify.stdout),
            String::from_utf8_lossy(&verify.stderr)
        );

        // Flat: the steady phase's last quarter against its first.
        let quarter = (samples.len() / 4).max(1);
        let rss: Vec<u64> = samples.iter().map(|s| s.0).collect();
        let fds: Vec<u64> = samples.iter().map(|s| s.1).collect();
        let (rss_first, rss_last) = (median(&rss[..quarter]), median(&rss[rss.len() - quarter..]));
        let (fds_first, fds_last) = (median(&fds[..quarter]), median(&fds[fds.len() - quarter..]));
        println!(
            "soak: {:.0} s, {total_written} actions written ({written:?}: native, claude-code, \
             codex, bash, zsh, fish), {:.0} actions/s sustained; {kills} kill -9 and restarts; \
             daemon caught up {:.1} s after the writer stopped; {} candidates, {} approvals, {} \
             CLI runs, {} MCP calls; daemon memory {:.1} MiB → {:.1} MiB, open files {:.0} → \
             {:.0} (medians of the first and last quarter; at most {}) over the steady phase ({} \
             samples)",
            elapsed.as_secs_f64(),
            total_written as f64 / elapsed.as_secs_f64(),
            catch_up.as_secs_f64(),
            candidates.as_array().map_or(0, Vec::len),
            approved.load(Ordering::Relaxed),
            cli_runs,
            mcp_calls,
            rss_first / 1024.0,
            rss_last / 1024.0,
            fds_first,
            fds_last,
            fds.iter().max().unwrap_or(&0),
            samples.len()
        );
        assert!(kills >= 1, "the daemon was killed at least once");
        assert!(
            approved.load(Ordering::Relaxed) >= 1,
            "a candidate was approved"
        );
        assert!(
            cli_runs >= 1 && mcp_calls >= 1,
            "the tool was run both ways"
        );
        assert!(
            rss_last <= rss_first * 1.3 + 4096.0,
            "memory grew over the steady phase: {rss:?}"
        );
        // The tailer keeps at most 256 log files open (the least recently read are closed):
        // until that many sessions were seen the count rises to that bound, then stays.
        assert!(
            fds_last <= fds_first + 4.0 || fds_last <= OPEN_FILES_BOUND as f64,
            "open files grew over the steady phase past the tailer's bound: {fds:?}; open now: \
             {:?}",
            open_files(daemon.pid())
        );
    });
}
