//! What one sandboxed run costs: the time for `/bin/true` under every layer of toolsmith's
//! sandbox (user, mount, pid, net, ipc, uts namespaces, the minimal view, rlimits, Landlock,
//! seccomp), beside plain `/bin/true` and beside
//! `bwrap --unshare-all --new-session --die-with-parent --ro-bind / / --dev /dev --proc /proc
//! /bin/true` (Debian's `bubblewrap`; bwrap does neither Landlock nor seccomp here).
//!
//! The contenders alternate within each round, so all see the same machine load; the figures
//! are the median and the spread (10th–90th percentile) over the rounds, and the ratio of the
//! medians. Our sandbox is measured as the daemon uses it, `toolsmith::sandbox::run` (which
//! starts the helper binary), and also through the CLI (`toolsmith sandbox -- /bin/true`,
//! adding the CLI's own start-up).
//!
//! `cargo bench --bench sandbox_startup` (`TOOLSMITH_BENCH_ROUNDS`, default 200).
//! `scripts/install-bench-peers.sh` installs bubblewrap.

use std::process::{Command, Stdio};
use std::time::Instant;

use toolsmith::sandbox::{self, SandboxSpec};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn run_quiet(cmd: &mut Command) -> bool {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn main() {
    let rounds: usize = std::env::var("TOOLSMITH_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    let toolsmith = env!("CARGO_BIN_EXE_toolsmith");
    let bwrap_args = [
        "--unshare-all",
        "--new-session",
        "--die-with-parent",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "/bin/true",
    ];
    let have_bwrap = run_quiet(Command::new("bwrap").args(bwrap_args));
    if !have_bwrap {
        println!("bwrap not available (scripts/install-bench-peers.sh installs it): peer skipped");
    }
    let mut spec = SandboxSpec::new(vec!["/bin/true".into()]);
    spec.helper = Some(toolsmith.into());
    // One run first: it must work, and it says which layers are in force.
    let first = match sandbox::run(&spec) {
        Ok(report) => report,
        Err(err) => {
            println!("the sandbox cannot run here ({err}): nothing to measure");
            return;
        }
    };
    println!(
        "layers in force: {}",
        serde_json::to_string(&first.layers).unwrap_or_default()
    );

    let mut plain = Vec::with_capacity(rounds);
    let mut ours = Vec::with_capacity(rounds);
    let mut cli = Vec::with_capacity(rounds);
    let mut bwrap = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let t = Instant::now();
        assert!(run_quiet(&mut Command::new("/bin/true")));
        plain.push(t.elapsed().as_secs_f64() * 1e3);

        let t = Instant::now();
        let report = sandbox::run(&spec).expect("sandboxed /bin/true");
        ours.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(report.exit.status(), 0);

        let t = Instant::now();
        assert!(run_quiet(Command::new(toolsmith).args([
            "sandbox",
            "--",
            "/bin/true"
        ])));
        cli.push(t.elapsed().as_secs_f64() * 1e3);

        if have_bwrap {
            let t = Instant::now();
            assert!(run_quiet(Command::new("bwrap").args(bwrap_args)));
            bwrap.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    let report = |name: &str, samples: &mut Vec<f64>| -> f64 {
        samples.sort_by(f64::total_cmp);
        let median = percentile(samples, 0.5);
        println!(
            "{name:<44} median {median:7.2} ms   p10 {:7.2}   p90 {:7.2}",
            percentile(samples, 0.1),
            percentile(samples, 0.9)
        );
        median
    };
    println!("{rounds} rounds, contenders alternating within each round");
    let plain_m = report("plain /bin/true", &mut plain);
    let ours_m = report("toolsmith::sandbox::run(/bin/true), all layers", &mut ours);
    let cli_m = report("toolsmith sandbox -- /bin/true (CLI)", &mut cli);
    println!("sandbox overhead over plain: {:.2} ms", ours_m - plain_m);
    if have_bwrap {
        let bwrap_m = report("bwrap --unshare-all … /bin/true", &mut bwrap);
        println!(
            "ratio sandbox::run / bwrap: {:.2} (goal: at most 1.0); CLI / bwrap: {:.2}",
            ours_m / bwrap_m,
            cli_m / bwrap_m
        );
    }
}
