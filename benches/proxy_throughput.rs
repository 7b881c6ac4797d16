//! The filtering proxy's throughput (issue 21): a 100 MB download from a server on 127.0.0.1,
//! by `curl` on the host (direct) and by `curl` in the sandbox through the proxy
//! (`toolsmith sandbox --allow-host 127.0.0.1:PORT`, curl following `HTTP_PROXY`), alternating
//! within each round. The figures are curl's own average download speed (so the sandbox's
//! start-up is not in them) and the whole command's wall time; the ratio is proxied over direct.
//!
//! `cargo bench --bench proxy_throughput` (`TOOLSMITH_BENCH_ROUNDS`, default 5;
//! `TOOLSMITH_BENCH_MB`, default 100).

// A benchmark may panic on what it sets up itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Serves `size` bytes of zeroes to every request, forever, on 127.0.0.1.
fn serve(size: u64) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let header = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\
                     Content-Length: {size}\r\nConnection: close\r\n\r\n"
                );
                if stream.write_all(header.as_bytes()).is_err() {
                    return;
                }
                let chunk = vec![0u8; 256 * 1024];
                let mut left = size;
                while left > 0 {
                    let n = usize::try_from(left.min(chunk.len() as u64)).unwrap();
                    if stream.write_all(&chunk[..n]).is_err() {
                        return;
                    }
                    left -= n as u64;
                }
            });
        }
    });
    port
}

/// Runs a curl command that prints `%{speed_download} %{size_download}`; returns (MB/s, bytes,
/// wall ms).
fn download(cmd: &mut Command) -> (f64, u64, f64) {
    let started = Instant::now();
    let out = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("run curl");
    let wall = started.elapsed().as_secs_f64() * 1e3;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut words = text.split_whitespace();
    let speed: f64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(0.0);
    let bytes: u64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(0);
    (speed / 1e6, bytes, wall)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("TOOLSMITH_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let mb: u64 = std::env::var("TOOLSMITH_BENCH_MB")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(100);
    let size = mb * 1_000_000;
    if !Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        println!("curl is not installed: nothing to measure");
        return;
    }
    let port = serve(size);
    let url = format!("http://127.0.0.1:{port}/big");
    let host = format!("127.0.0.1:{port}");
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, format!("[grants]\nhosts = [\"{host}\"]\n")).expect("policy");
    let format = "%{speed_download} %{size_download}";
    let direct = || {
        let mut cmd = Command::new("curl");
        cmd.args([
            "-s",
            "--noproxy",
            "*",
            "-o",
            "/dev/null",
            "-w",
            format,
            &url,
        ]);
        cmd
    };
    let proxied = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
        cmd.env_remove("RUST_LOG")
            .args(["sandbox", "--timeout", "120", "--policy"])
            .arg(&policy)
            .args(["--allow-host", &host, "--"])
            .args(["curl", "-s", "-o", "/dev/null", "-w", format, &url]);
        cmd
    };
    let (mut direct_speed, mut proxied_speed) = (Vec::new(), Vec::new());
    let (mut direct_wall, mut proxied_wall) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (speed, bytes, wall) = download(&mut direct());
        assert_eq!(bytes, size, "the direct download is whole");
        direct_speed.push(speed);
        direct_wall.push(wall);
        let (speed, bytes, wall) = download(&mut proxied());
        assert_eq!(bytes, size, "the proxied download is whole");
        proxied_speed.push(speed);
        proxied_wall.push(wall);
    }
    let (d, p) = (median(direct_speed), median(proxied_speed));
    let (dw, pw) = (median(direct_wall), median(proxied_wall));
    println!("{rounds} rounds of a {mb} MB download from 127.0.0.1, alternating; medians:");
    println!("direct (curl on the host)            {d:8.1} MB/s   {dw:8.1} ms wall");
    println!("through the proxy (curl in sandbox)  {p:8.1} MB/s   {pw:8.1} ms wall");
    println!("ratio proxied / direct (speed): {:.2}", p / d);
}
