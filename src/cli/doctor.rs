//! `toolsmith doctor`: what the host offers the sandbox, whether the configuration is valid and
//! whether the daemon answers — each line saying what is missing and how to fix it.

use std::io::Write;

use serde_json::{Value, json};

use super::output::Style;
use super::{Cli, Failure, config_request, socket_path};
use crate::control::Client;
use crate::host::{self, IsolationLevel, Layer};
use crate::sandbox::SandboxPolicy;
use crate::sandbox::toolchain::{Resolution, UserEnv, resolve};

/// Programs whose toolchains `doctor` looks for.
const PROBED: [&str; 8] = [
    "cargo", "rustc", "python", "python3", "pip", "pytest", "node", "npm",
];

/// Where each probed program comes from for the user, and which kinds the policy grants.
fn toolchains(user: &UserEnv, policy: &SandboxPolicy) -> Value {
    let programs: Vec<Value> = PROBED
        .iter()
        .map(|p| json!({"program": p, "resolution": resolve(p, user, true)}))
        .collect();
    json!({
        "path": user.path,
        "path_origin": user.origin,
        "programs": programs,
        "granted": policy.grants.toolchains,
        "policy": policy.file,
    })
}

/// One line per probed program: its toolchain and what is bound, or where it is otherwise.
fn toolchain_lines(user: &UserEnv, policy: &SandboxPolicy, style: Style) -> Vec<String> {
    let mut lines = vec![
        format!("  PATH      {}", user.path),
        format!("  from      {}", user.origin),
    ];
    for program in PROBED {
        let (mark, detail) = match resolve(program, user, true) {
            Resolution::Toolchain { toolchain, .. } => {
                let paths: Vec<String> = toolchain
                    .paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                let granted = policy.grants.allows(toolchain.kind);
                let note = if granted {
                    String::new()
                } else {
                    format!(
                        " — not granted: add \"{}\" to [grants] toolchains in {}",
                        toolchain.kind,
                        crate::sandbox::grants::policy_place(&policy.file)
                    )
                };
                let mark = if granted {
                    style.good("ok     ")
                } else {
                    style.warn("refused")
                };
                (
                    mark,
                    format!("{}: {}{note}", toolchain.kind, paths.join(", ")),
                )
            }
            Resolution::System { found } => (
                style.good("ok     "),
                format!("system: {}", found.display()),
            ),
            Resolution::NotFound => ("-      ".to_owned(), "not on the PATH".to_owned()),
            Resolution::Unusable { why, .. } => (style.bad("unusable"), why),
        };
        lines.push(format!("  {mark}  {program:<8} {detail}"));
    }
    lines
}

pub(super) fn run(cli: &Cli, out: &mut impl Write, style: Style) -> Result<(), Failure> {
    let report = host::probe();
    let config = config_request(cli).load(&crate::daemon::checks::STAGES);
    // The configured policy (generate.policy), else the built-in one.
    let policy = match config
        .as_ref()
        .ok()
        .and_then(|c| c.generate.policy.value.clone())
    {
        Some(file) => SandboxPolicy::load(&file).unwrap_or_default(),
        None => SandboxPolicy::default(),
    };
    let sandbox = policy.plan(&report);
    let user = match &config {
        Ok(c) => c.user_env(),
        Err(_) => UserEnv::from_process(None),
    };
    let config_check = match &config {
        Ok(c) => Layer {
            available: true,
            detail: match &c.file {
                Some(f) => format!("{} is valid", f.path.display()),
                None => "no config file: embedded defaults".into(),
            },
        },
        Err(e) => Layer {
            available: false,
            detail: e.to_string(),
        },
    };
    let daemon_check = match socket_path(cli) {
        Ok(socket) => {
            match Client::connect(&socket).and_then(|mut c| c.call("status", Value::Null)) {
                Ok(status) => Layer {
                    available: true,
                    detail: format!(
                        "running, pid {}, socket {}",
                        status["pid"],
                        socket.display()
                    ),
                },
                Err(e) => Layer {
                    available: false,
                    detail: e.to_string(),
                },
            }
        }
        Err(e) => Layer {
            available: false,
            detail: e.message,
        },
    };
    // The registry is looked at, never created, by doctor.
    let registry_check = match &config {
        Ok(c) => registry_layer(&c.paths.registry.value, &c.paths.state.value),
        Err(_) => Layer {
            available: false,
            detail: "unknown: the configuration does not load".into(),
        },
    };
    let model_check = match &config {
        Ok(c) => model_layer(c),
        Err(_) => Layer {
            available: false,
            detail: "unknown: the configuration does not load".into(),
        },
    };
    let grants = network_grants(config.as_ref().ok());
    if cli.global.json {
        return super::output::json(
            out,
            &json!({
                "network": grants,
                "host": report,
                "isolation": report.isolation_level(),
                "missing": report.missing(),
                "verdict": report.verdict(),
                "sandbox": sandbox,
                "config": config_check,
                "daemon": daemon_check,
                "registry": registry_check,
                "model": model_check,
                "toolchains": toolchains(&user, &policy),
            }),
        );
    }
    let sections: [(&str, Vec<(&str, &Layer)>); 3] = [
        (
            "Sandbox layers",
            vec![
                ("landlock", &report.landlock),
                ("user namespace", &report.user_namespace),
                ("mount namespace", &report.mount_namespace),
                ("pid namespace", &report.pid_namespace),
                ("net namespace", &report.net_namespace),
                ("ipc namespace", &report.ipc_namespace),
                ("uts namespace", &report.uts_namespace),
                ("seccomp", &report.seccomp),
                ("no_new_privs", &report.no_new_privs),
                ("cgroup v2", &report.cgroup_v2),
            ],
        ),
        (
            "Programs",
            vec![("git", &report.git), ("sqlite", &report.sqlite)],
        ),
        (
            "toolsmith",
            vec![
                ("config", &config_check),
                ("daemon", &daemon_check),
                ("registry", &registry_check),
                ("model", &model_check),
            ],
        ),
    ];
    writeln!(
        out,
        "kernel {}{}",
        report.kernel,
        if report.running_as_root {
            ", running as root"
        } else {
            ""
        }
    )?;
    for (title, rows) in sections {
        writeln!(out, "\n{title}")?;
        for (name, layer) in rows {
            let mark = if layer.available {
                style.good("ok     ")
            } else {
                style.bad("missing")
            };
            writeln!(out, "  {mark}  {name:<16} {}", layer.detail)?;
        }
    }
    writeln!(
        out,
        "\nToolchains (programs a tool may require, as the user's shell finds them)"
    )?;
    for line in toolchain_lines(&user, &policy, style) {
        writeln!(out, "{line}")?;
    }
    let verdict = report.verdict();
    let verdict = match report.isolation_level() {
        IsolationLevel::Full => style.good(&verdict),
        IsolationLevel::Reduced => style.warn(&verdict),
        IsolationLevel::Insufficient => style.bad(&verdict),
    };
    writeln!(out, "\nverdict: {verdict}")?;
    let summary = match sandbox.refused {
        Some(_) => style.bad(&sandbox.summary),
        None => style.good(&sandbox.summary),
    };
    writeln!(out, "sandbox: {summary}")?;
    writeln!(out, "\nNetwork grants (policy {})", grants.policy)?;
    if grants.granted.is_empty() {
        writeln!(
            out,
            "  none: tools get no network (hosts are granted in the policy's [grants] hosts)"
        )?;
    } else {
        writeln!(out, "  granted: {}", grants.granted.join(", "))?;
    }
    for index in &grants.indexes {
        let granted = grants.granted.contains(&index.host);
        let note = if granted {
            style.good("granted")
        } else {
            style.warn(&format!(
                "add \"{}\" to [grants] hosts in {} to let tools that run {} use it",
                index.host,
                crate::sandbox::grants::policy_place(&grants.policy),
                index.manager
            ))
        };
        writeln!(
            out,
            "  {:<6} index {} ({}): {note}",
            index.manager, index.host, index.source
        )?;
    }
    Ok(())
}

/// The network grants of the policy in force and the package indexes configured here.
#[derive(serde::Serialize)]
struct NetworkGrants {
    policy: String,
    granted: Vec<String>,
    indexes: Vec<IndexRow>,
}

#[derive(serde::Serialize)]
struct IndexRow {
    manager: &'static str,
    host: String,
    source: String,
}

/// What `toolsmith doctor` says of the network: the policy's `[grants] hosts` and the
/// package indexes the package managers here are configured with — the hosts a `pip install`
/// or `npm install` habit's tool would ask for.
fn network_grants(config: Option<&crate::config::Config>) -> NetworkGrants {
    let policy = config
        .and_then(|c| c.generate.policy.value.as_deref())
        .map_or_else(
            || Ok(crate::sandbox::SandboxPolicy::default()),
            crate::sandbox::SandboxPolicy::load,
        )
        .unwrap_or_default();
    let indexes = crate::generate::reach::configured_indexes(&crate::generate::reach::current())
        .into_iter()
        .map(|i| IndexRow {
            manager: i.manager.as_str(),
            host: i.host.to_string(),
            source: i.source,
        })
        .collect();
    NetworkGrants {
        granted: policy
            .grants
            .hosts
            .iter()
            .map(ToString::to_string)
            .collect(),
        policy: policy.file,
        indexes,
    }
}

/// Longest `doctor` waits for the model server: a check, not a generation.
const MODEL_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The model generation uses (`generate.backend = "llm"`): its endpoint, and whether the server
/// answers — asked for its list of models, which costs no tokens.
fn model_layer(config: &crate::config::Config) -> Layer {
    let backend = &config.generate.backend.value;
    if backend != "llm" {
        return Layer {
            available: true,
            detail: format!(
                "none: generate.backend is \"{backend}\" ({}); set it to \"llm\" with an [llm] \
                 table to have a model write tools",
                config.generate.backend.origin
            ),
        };
    }
    let credentials = std::env::var_os("CREDENTIALS_DIRECTORY").map(std::path::PathBuf::from);
    let client = crate::generate::pipeline::llm_client(&config.llm, credentials.as_deref(), |n| {
        std::env::var(n).ok()
    })
    .and_then(|client| {
        let mut settings = client.settings().clone();
        settings.timeout = settings.timeout.min(MODEL_PROBE_TIMEOUT);
        crate::generate::llm::LlmClient::new(settings).map_err(|e| e.to_string())
    });
    let client = match client {
        Ok(client) => client,
        Err(problem) => {
            return Layer {
                available: false,
                detail: problem,
            };
        }
    };
    let model = client.settings().model.clone();
    let place = format!(
        "{} model `{model}` at {}",
        client.settings().provider.as_str(),
        client.endpoint()
    );
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            return Layer {
                available: false,
                detail: format!("{place}: cannot start the runtime to ask it: {e}"),
            };
        }
    };
    match runtime.block_on(client.list_models()) {
        Ok(ids) if ids.contains(&model) => Layer {
            available: true,
            detail: format!("{place}: answers, and lists the model"),
        },
        Ok(ids) => Layer {
            available: true,
            detail: format!(
                "{place}: answers, but lists {} rather than `{model}` (check llm.model)",
                if ids.is_empty() {
                    "no model".to_owned()
                } else {
                    ids.iter()
                        .take(5)
                        .map(|id| format!("`{id}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
        },
        Err(e) => Layer {
            available: false,
            detail: format!("{place}: does not answer: {e}"),
        },
    }
}

/// Whether the registry is there and usable: its path, tools, proposals and remote.
fn registry_layer(dir: &std::path::Path, state: &std::path::Path) -> Layer {
    use crate::registry::repo::Registry;
    let is_empty = std::fs::read_dir(dir).map_or(true, |mut d| d.next().is_none());
    if is_empty {
        return Layer {
            available: true,
            detail: format!(
                "{} does not exist yet: the first proposal or `toolsmith tools` creates it",
                dir.display()
            ),
        };
    }
    match Registry::open(dir, state) {
        Ok(r) => {
            let tools = r.tools().map(|t| t.len()).unwrap_or(0);
            let reviews = r.reviews().map(|v| v.len()).unwrap_or(0);
            let remote = r
                .remote_url(None)
                .ok()
                .flatten()
                .map_or_else(|| "no remote".to_owned(), |u| format!("remote {u}"));
            Layer {
                available: true,
                detail: format!(
                    "{}: {tools} tools, {reviews} awaiting review, {remote}",
                    dir.display()
                ),
            }
        }
        Err(e) => Layer {
            available: false,
            detail: e.to_string(),
        },
    }
}
