//! `toolsmith demo`: the whole loop on logs that ship with toolsmith, in a directory of its own,
//! with each step's command printed so it can be typed again: ingest five Claude Code sessions,
//! mine them, generate and validate candidates in the sandbox, propose them as commits, approve
//! one, run the new tool, show the registry's `git log`. The directory stays for exploring.
//!
//! Every step is this same binary run as a child process with the demo's configuration, so the
//! demo shows the real commands doing the real work, and nothing of the user's own state is
//! touched.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use super::output::{self, Style};
use super::{Cli, Failure};
use crate::exit::ExitCode;

/// The demo's agent logs, written for it in the Claude Code transcript format
/// (`demo/make-logs.py` made them).
const LOGS: [(&str, &str); 5] = [
    (
        "session-1.jsonl",
        include_str!("../../demo/claude-code/session-1.jsonl"),
    ),
    (
        "session-2.jsonl",
        include_str!("../../demo/claude-code/session-2.jsonl"),
    ),
    (
        "session-3.jsonl",
        include_str!("../../demo/claude-code/session-3.jsonl"),
    ),
    (
        "session-4.jsonl",
        include_str!("../../demo/claude-code/session-4.jsonl"),
    ),
    (
        "session-5.jsonl",
        include_str!("../../demo/claude-code/session-5.jsonl"),
    ),
];

/// The packages of the demo's project, each with a Makefile.
const PACKAGES: [&str; 4] = ["core", "cli", "web", "store"];

/// A step's result.
struct Ran {
    ok: bool,
    stdout: String,
    stderr: String,
    ms: u128,
}

/// The demo's directory and how to run toolsmith in it.
struct Demo {
    dir: PathBuf,
    config: PathBuf,
    exe: PathBuf,
    json: bool,
    steps: Vec<Value>,
}

impl Demo {
    /// Runs `toolsmith --config <demo config> ARGS`, printing the command and its output.
    fn toolsmith(
        &mut self,
        out: &mut impl Write,
        args: &[&str],
        quiet: bool,
    ) -> Result<Ran, Failure> {
        let mut cmd = Command::new(&self.exe);
        cmd.arg("--config").arg(&self.config).args(args);
        self.run(out, cmd, &format!("toolsmith {}", args.join(" ")), quiet)
    }

    fn run(
        &mut self,
        out: &mut impl Write,
        mut cmd: Command,
        shown: &str,
        quiet: bool,
    ) -> Result<Ran, Failure> {
        let started = Instant::now();
        let output = cmd
            .env_remove("TOOLSMITH_CONFIG")
            .env_remove("TOOLSMITH_SOCKET")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Failure::new(ExitCode::Failure, format!("cannot run {shown}: {e}")))?;
        let ran = Ran {
            ok: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            ms: started.elapsed().as_millis(),
        };
        self.steps
            .push(json!({"command": shown, "ok": ran.ok, "ms": ran.ms}));
        if !self.json {
            writeln!(out, "  $ {shown}")?;
            if !quiet || !ran.ok {
                for line in ran.stdout.lines().chain(ran.stderr.lines()).take(40) {
                    writeln!(out, "    {line}")?;
                }
            }
        }
        if !ran.ok {
            return Err(Failure::new(
                ExitCode::Failure,
                format!(
                    "the demo stopped: `{shown}` failed: {}; the directory {} shows how far it got",
                    ran.stderr.trim(),
                    self.dir.display()
                ),
            ));
        }
        Ok(ran)
    }
}

/// Where the demo goes when no `--dir` is given: a new directory under the temporary one.
fn fresh_dir() -> PathBuf {
    let stamp = jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S");
    std::env::temp_dir().join(format!("toolsmith-demo-{stamp}-{}", std::process::id()))
}

/// Writes the logs, the project and the configuration into `dir`.
fn lay_out(dir: &Path) -> std::io::Result<PathBuf> {
    let logs = dir.join("logs/claude-code/-home-dev-webshop");
    std::fs::create_dir_all(&logs)?;
    for (name, text) in LOGS {
        std::fs::write(logs.join(name), text)?;
    }
    for package in PACKAGES {
        let p = dir.join("project").join(package);
        std::fs::create_dir_all(&p)?;
        std::fs::write(
            p.join("Makefile"),
            format!(
                "# The demo project's package {package}: what the agent built and tested.\n\
                 build:\n\t@echo \"built {package}\"\n\ntest: build\n\t@echo \"12 passed ({package})\"\n"
            ),
        )?;
    }
    let config = dir.join("config.toml");
    let quote = |p: &Path| toml::Value::String(p.display().to_string()).to_string();
    // The demo's logs hold a `pip install` recovery: its policy grants the package indexes pip
    // is configured with on this machine (what `toolsmith doctor` suggests), so that tool is
    // proposed needing no grant; the built-in policy lists no host and asks a person for them
    // (`toolsmith approve ID --grant host:…`).
    let mut pip_hosts: Vec<String> =
        crate::generate::reach::configured_indexes(&crate::generate::reach::current())
            .into_iter()
            .filter(|i| i.manager == crate::generate::reach::Manager::Pip)
            .map(|i| i.host.to_string())
            .collect();
    pip_hosts.dedup();
    let policy = dir.join("policy.toml");
    std::fs::write(
        &policy,
        crate::validate::run::default_policy_granting(&pip_hosts),
    )?;
    std::fs::write(
        &config,
        format!(
            "# The demo's configuration: its own state, registry, logs and policy.\n\
             [paths]\nstate = {}\nregistry = {}\n\n\
             [generate]\nbackend = \"template\"\npolicy = {}\n\n\
             [[source]]\nformat = \"claude-code\"\npath = {}\n",
            quote(&dir.join("state")),
            quote(&dir.join("registry")),
            quote(&policy),
            quote(&dir.join("logs/claude-code")),
        ),
    )?;
    Ok(config)
}

/// `toolsmith demo [--dir DIR]`.
pub(super) fn demo(
    cli: &Cli,
    dir: Option<&Path>,
    out: &mut impl Write,
    style: Style,
) -> Result<(), Failure> {
    let dir = match dir {
        Some(d) => d.to_owned(),
        None => fresh_dir(),
    };
    let dir = if dir.is_absolute() {
        dir
    } else {
        std::env::current_dir()?.join(dir)
    };
    if dir.exists()
        && std::fs::read_dir(&dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(Failure::new(
            ExitCode::Usage,
            format!(
                "{} exists and is not empty: give the demo a new directory with --dir",
                dir.display()
            ),
        ));
    }
    let started = Instant::now();
    let config = lay_out(&dir).map_err(|e| {
        Failure::new(
            ExitCode::Failure,
            format!("cannot write the demo into {}: {e}", dir.display()),
        )
    })?;
    let exe = std::env::current_exe()?;
    let mut demo = Demo {
        dir: dir.clone(),
        config,
        exe,
        json: cli.global.json,
        steps: Vec::new(),
    };
    let say = |out: &mut dyn Write, text: &str| -> Result<(), Failure> {
        if !cli.global.json {
            writeln!(out, "\n{}", style.good(text))?;
        }
        Ok(())
    };

    say(
        out,
        "1. Read five Claude Code sessions of a Makefile project (written for this demo).",
    )?;
    let logs = dir.join("logs/claude-code");
    demo.toolsmith(out, &["ingest", &logs.display().to_string()], false)?;

    say(
        out,
        "2. Mine them: repeated command sequences and error→fix habits, ranked.",
    )?;
    demo.toolsmith(out, &["mine"], false)?;
    demo.toolsmith(out, &["patterns"], false)?;

    say(
        out,
        "3. Generate a tool for each habit, validate it in the sandbox, propose it as a commit.",
    )?;
    let generated = demo.toolsmith(out, &["--json", "generate"], true)?;
    let report: Value = serde_json::from_str(&generated.stdout).unwrap_or(Value::Null);
    let waiting: Vec<&Value> = report["candidates"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["state"] == "awaiting-review")
        .collect();
    let to_review_ms = started.elapsed().as_millis();
    if !cli.global.json {
        for c in &report["candidates"].as_array().cloned().unwrap_or_default() {
            writeln!(
                out,
                "    {}  {} {}  {}",
                c["id"].as_str().unwrap_or("?"),
                c["tool"].as_str().unwrap_or("?"),
                c["version"].as_str().unwrap_or(""),
                c["state"].as_str().unwrap_or("?")
            )?;
            if let Some(reason) = c["reason"].as_str() {
                writeln!(out, "        {reason}")?;
            }
        }
    }
    // The sequence (build then test) is the one the demo approves and runs.
    let Some(chosen) = waiting
        .iter()
        .find(|c| c["tool"].as_str().is_some_and(|t| t.contains("build")))
        .or(waiting.first())
    else {
        return Err(Failure::new(
            ExitCode::Failure,
            format!(
                "the demo stopped: no candidate passed validation (`toolsmith --config {} \
                 candidates` says why)",
                demo.config.display()
            ),
        ));
    };
    let id = chosen["id"].as_str().unwrap_or_default().to_owned();
    let tool = chosen["tool"].as_str().unwrap_or_default().to_owned();
    if !cli.global.json {
        writeln!(
            out,
            "    {} validated candidate(s) awaiting review {:.1} s after the first log line was read",
            waiting.len(),
            to_review_ms as f64 / 1000.0
        )?;
    }

    say(
        out,
        "4. Review: each proposal is a branch in the registry; approving merges it into main.",
    )?;
    demo.toolsmith(out, &["review"], false)?;
    demo.toolsmith(out, &["show", &id], false)?;
    demo.toolsmith(
        out,
        &["approve", &id, "--note", "approved by the demo"],
        false,
    )?;

    say(out, "5. Run the new tool in the sandbox, on the project.")?;
    let param = first_param(&demo.dir.join("state"), &id);
    let project = dir.join("project").display().to_string();
    let mut args = vec!["run".to_owned(), tool.clone()];
    if let Some(p) = &param {
        args.push("--param".into());
        args.push(format!("{p}=core"));
    }
    args.push("--workspace".into());
    args.push(project);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    demo.toolsmith(out, &args, false)?;

    say(out, "6. The registry is a git repository: its history.")?;
    let registry = dir.join("registry");
    let mut git = Command::new("git");
    git.arg("-C").arg(&registry).args([
        "log",
        "--oneline",
        "--decorate",
        "--graph",
        "-n",
        "12",
        "main",
    ]);
    let logged = demo.run(
        out,
        git,
        &format!(
            "git -C {} log --oneline --decorate --graph main",
            registry.display()
        ),
        false,
    );
    if let Err(e) = logged {
        // Without git installed the registry is still there; only the view is missing.
        if !cli.global.json {
            writeln!(out, "    ({})", e.message)?;
        }
    }

    let total_ms = started.elapsed().as_millis();
    if cli.global.json {
        return output::json(
            out,
            &json!({
                "dir": dir,
                "config": demo.config,
                "tool": tool,
                "candidate": id,
                "candidates_awaiting_review": waiting.len(),
                "first_log_line_to_candidate_awaiting_review_ms": to_review_ms,
                "total_ms": total_ms,
                "steps": demo.steps,
            }),
        );
    }
    writeln!(
        out,
        "\n{} in {:.1} s. Everything is in {}; explore it with:\n\
         \n    export TOOLSMITH_CONFIG={}\n    toolsmith tools\n    toolsmith candidates\n    \
         toolsmith health {tool}\n    git -C {} log --stat main\n",
        style.good("Done"),
        total_ms as f64 / 1000.0,
        dir.display(),
        demo.config.display(),
        registry.display(),
    )?;
    Ok(())
}

/// The first parameter of a candidate's tool, from its spec in the staging area.
fn first_param(state: &Path, candidate: &str) -> Option<String> {
    let spec = crate::generate::staging::Staging::new(state, candidate).spec()?;
    spec.params.first().map(|p| p.name.clone())
}
