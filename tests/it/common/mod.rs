//! Shared test harness: isolated environments, a real daemon, raw control connections.
#![allow(dead_code)]

pub mod llama_server;
pub mod llm_server;
pub mod tamper;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A command's standard output as JSON; a failure shows both streams.
/// The corpus folder beside the repository (`../shared/corpus`), or `None` (with a message)
/// when it is absent; under `CI=true` its absence fails the test.
pub fn corpus() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if path.is_dir() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "corpus not found at {} (required under CI=true)",
        path.display()
    );
    eprintln!("skipped: corpus not found at {}", path.display());
    None
}

/// `toolsmith --state STATE ingest ARGS… PATHS… --json`, which must succeed: its report.
pub fn oneshot(env: &TestEnv, state: &Path, args: &[&str], paths: &[&Path]) -> Value {
    let out = env
        .cli_at(state)
        .arg("ingest")
        .args(args)
        .args(paths)
        .arg("--json")
        .output()
        .expect("toolsmith ingest");
    assert!(
        out.status.success(),
        "ingest failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("ingest JSON")
}

pub fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// How long a test waits for something that normally takes milliseconds, before failing.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A temporary home with its own XDG directories, so tests never touch the real user's files.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
}

impl TestEnv {
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("ts-")
            .tempdir()
            .expect("create temp dir");
        for sub in ["home", "config", "data", "state", "runtime"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("create sub dir");
        }
        TestEnv { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The state directory tests pass with `--state`.
    pub fn state(&self) -> PathBuf {
        self.path().join("state")
    }

    pub fn socket(&self) -> PathBuf {
        self.state().join("run/control.sock")
    }

    /// Applies the isolated environment to a command.
    pub fn apply(&self, cmd: &mut Command) {
        for var in [
            "TOOLSMITH_CONFIG",
            "TOOLSMITH_SOCKET",
            "STATE_DIRECTORY",
            "RUNTIME_DIRECTORY",
            "CONFIGURATION_DIRECTORY",
            "NOTIFY_SOCKET",
            "WATCHDOG_USEC",
            "WATCHDOG_PID",
            "LISTEN_FDS",
            "LISTEN_PID",
            "JOURNAL_STREAM",
            "RUST_LOG",
            // Where the user's shells read their definitions: the temporary home's only.
            "ZDOTDIR",
            "ZSH",
            "ZSH_CUSTOM",
            "CLAUDE_CONFIG_DIR",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("HOME", self.path().join("home"))
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .env("XDG_DATA_HOME", self.path().join("data"))
            .env("XDG_STATE_HOME", self.path().join("xdg-state"))
            .env("XDG_RUNTIME_DIR", self.path().join("runtime"))
            .env("NO_COLOR", "1");
    }

    /// `toolsmith --state <state> ARGS…`.
    pub fn cli(&self) -> assert_cmd::Command {
        self.cli_at(&self.state())
    }

    /// `toolsmith --state <state> ARGS…` for another state directory.
    pub fn cli_at(&self, state: &Path) -> assert_cmd::Command {
        let mut std_cmd = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
        self.apply(&mut std_cmd);
        std_cmd.arg("--state").arg(state);
        assert_cmd::Command::from_std(std_cmd)
    }

    /// `toolsmithd --state <state> ARGS…`, not yet spawned.
    pub fn daemon_command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolsmithd"));
        self.apply(&mut cmd);
        cmd.arg("--state").arg(self.state());
        cmd
    }

    pub fn write_config(&self, text: &str) -> PathBuf {
        let path = self.path().join("config.toml");
        std::fs::write(&path, text).expect("write config");
        path
    }
}

/// A running daemon, with systemd's notification socket played by the test.
pub struct Daemon {
    pub child: Child,
    pub notify: UnixDatagram,
    pub notify_path: PathBuf,
    pub log_path: PathBuf,
    pub socket: PathBuf,
}

impl Daemon {
    /// Spawns `cmd` with NOTIFY_SOCKET pointing at the test and waits for READY=1.
    pub fn start(env: &TestEnv, mut cmd: Command) -> Daemon {
        let notify_path = env.path().join(format!("notify-{}", rand_suffix()));
        let notify = UnixDatagram::bind(&notify_path).expect("bind notify socket");
        notify
            .set_read_timeout(Some(PATIENCE))
            .expect("set timeout");
        let log_path = env.path().join(format!("daemon-{}.log", rand_suffix()));
        let log = std::fs::File::create(&log_path).expect("create log");
        cmd.env("NOTIFY_SOCKET", &notify_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let child = cmd.spawn().expect("spawn toolsmithd");
        let mut daemon = Daemon {
            child,
            notify,
            notify_path,
            log_path,
            socket: env.socket(),
        };
        let messages = daemon.wait_notify("READY=1");
        assert!(
            messages.iter().any(|m| m.contains("STATUS=")),
            "READY came without STATUS: {messages:?}"
        );
        daemon
    }

    /// Reads notifications until one contains `wanted`; returns all read.
    pub fn wait_notify(&mut self, wanted: &str) -> Vec<String> {
        let mut seen = Vec::new();
        let deadline = Instant::now() + PATIENCE;
        let mut buf = [0u8; 4096];
        while Instant::now() < deadline {
            match self.notify.recv(&mut buf) {
                Ok(n) => {
                    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                    let done = text.lines().any(|l| l == wanted);
                    seen.push(text);
                    if done {
                        return seen;
                    }
                }
                Err(e) => panic!(
                    "no {wanted} from toolsmithd ({e}); got {seen:?}; log:\n{}",
                    self.log()
                ),
            }
        }
        panic!(
            "no {wanted} from toolsmithd; got {seen:?}; log:\n{}",
            self.log()
        );
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid()), sig).expect("send signal");
    }

    /// Waits for the process to exit and returns its exit code.
    pub fn wait_exit(&mut self) -> Option<i32> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status.code();
            }
            assert!(
                Instant::now() < deadline,
                "toolsmithd did not exit; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    pub fn connect(&self) -> Conn {
        Conn::open(&self.socket)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A raw control connection speaking JSON lines.
pub struct Conn {
    pub reader: BufReader<UnixStream>,
    pub writer: UnixStream,
}

impl Conn {
    pub fn open(path: &Path) -> Conn {
        let stream = UnixStream::connect(path).expect("connect to control socket");
        stream
            .set_read_timeout(Some(PATIENCE))
            .expect("set timeout");
        Conn {
            writer: stream.try_clone().expect("clone"),
            reader: BufReader::new(stream),
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("write to daemon");
    }

    pub fn read(&mut self) -> Value {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).expect("read from daemon");
        assert!(n > 0, "daemon closed the connection");
        serde_json::from_str(&line).expect("daemon sent valid JSON")
    }

    /// Like [`Conn::read`], with `context()` in the failure message.
    pub fn read_or(&mut self, context: impl Fn() -> String) -> Value {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(n) if n > 0 => serde_json::from_str(&line).expect("daemon sent valid JSON"),
            other => panic!(
                "no message from the daemon ({other:?}); context:\n{}",
                context()
            ),
        }
    }

    /// Sends a request and returns the response (skipping notifications).
    pub fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        let req =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(format!("{req}\n").as_bytes());
        loop {
            let msg = self.read();
            if msg.get("method").is_none() {
                return msg;
            }
        }
    }
}

/// Every stored action of a state directory, without row ids, in (session, seq) order.
pub fn stored(env: &TestEnv, state: &Path) -> Vec<Value> {
    let out = env
        .cli_at(state)
        .args(["actions", "--json", "--limit", "10000000"])
        .output()
        .expect("toolsmith actions");
    if !out.status.success() {
        return Vec::new();
    }
    let mut actions: Vec<Value> = serde_json::from_slice(&out.stdout).expect("actions JSON");
    for action in &mut actions {
        if let Some(map) = action.as_object_mut() {
            map.remove("id");
            // The place in its file: the rank above it says in which order files were first
            // read, which two stores reading the same files may number differently.
            if let Some(seq) = map.get("seq").and_then(Value::as_u64) {
                map.insert(
                    "seq".into(),
                    toolsmith::action::stored::place_of(seq).into(),
                );
            }
        }
    }
    actions
}

/// Appends to a file, creating it.
pub fn append(path: &Path, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open log for append");
    file.write_all(bytes).expect("append");
}

/// The toolchain this machine's `program` resolves into for its user, or `None` (said) when it
/// has none; under `CI=true`, where CI is a machine like the developers', its absence fails.
pub fn machine_toolchain(program: &str) -> Option<toolsmith::sandbox::Toolchain> {
    use toolsmith::sandbox::toolchain::{Resolution, UserEnv, resolve};
    match resolve(program, &UserEnv::from_process(None), true) {
        Resolution::Toolchain { toolchain, .. } => Some(toolchain),
        other => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI runs on a machine with `{program}` from a user's toolchain, this one has: \
                 {other:?}"
            );
            eprintln!("skipped: `{program}` is not from a user's toolchain here ({other:?})");
            None
        }
    }
}

/// A directory made read-only where it is, by a read-only bind mount of itself (a shared
/// checkout, a read-only volume) — as root can: chmod does not stop root. Unmounted when
/// dropped. `None` (said) when mounts cannot be made here; under `CI=true`, which runs as root,
/// that fails.
pub struct ReadOnlyMount {
    dir: PathBuf,
}

impl ReadOnlyMount {
    pub fn new(dir: &Path) -> Option<ReadOnlyMount> {
        let mount = |args: &[&str]| {
            Command::new("mount")
                .args(args)
                .arg(dir)
                .arg(dir)
                .status()
                .is_ok_and(|s| s.success())
        };
        if !mount(&["--bind"]) {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI runs as root and can bind-mount"
            );
            eprintln!("skipped: cannot bind-mount {} here", dir.display());
            return None;
        }
        let guard = ReadOnlyMount {
            dir: dir.to_owned(),
        };
        assert!(mount(&["-o", "remount,ro,bind"]), "remount read-only");
        assert!(
            std::fs::write(dir.join(".probe"), b"").is_err(),
            "{} is read-only",
            dir.display()
        );
        Some(guard)
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}
