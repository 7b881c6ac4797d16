//! `toolsmith install --user` and `toolsmith uninstall --user`: the per-user systemd units and a
//! commented default configuration, and the `systemctl --user` commands that start them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use super::{Failure, output};
use crate::exit::ExitCode;

/// The user service, as shipped in `systemd/`.
const SERVICE: &str = include_str!("../../systemd/toolsmith.service");
/// The user socket.
const SOCKET: &str = include_str!("../../systemd/toolsmith.socket");
/// The first line of a unit file this command wrote.
const MARKER: &str =
    "# Installed by `toolsmith install --user`; `toolsmith uninstall --user` removes it.";

fn fail(message: impl Into<String>) -> Failure {
    Failure::new(ExitCode::Failure, message)
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
fn config_home() -> Result<PathBuf, Failure> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".config"))
        .ok_or_else(|| fail("neither $XDG_CONFIG_HOME nor $HOME is set: cannot find your systemd user directory"))
}

/// `toolsmithd` beside this `toolsmith`.
fn daemon_binary() -> Result<PathBuf, Failure> {
    let me =
        std::env::current_exe().map_err(|e| fail(format!("cannot find this executable: {e}")))?;
    let daemon = me.with_file_name("toolsmithd");
    if !daemon.is_file() {
        return Err(fail(format!(
            "toolsmithd is not next to toolsmith (looked for {}); install both, e.g. with \
             `cargo install --locked --path .`",
            daemon.display()
        )));
    }
    Ok(daemon)
}

/// The service unit with `ExecStart=` pointing at `daemon`.
fn service_text(daemon: &Path) -> String {
    let mut out = format!("{MARKER}\n");
    for line in SERVICE.lines() {
        if line.starts_with("ExecStart=") {
            out.push_str(&format!("ExecStart={}\n", daemon.display()));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Writes `text` to `path` unless a file not written by this command is there.
fn write_ours(path: &Path, text: &str) -> Result<&'static str, Failure> {
    write_marked(path, MARKER, text)
}

/// Writes `text` (which starts with `marker`) to `path` unless a file there was not written by
/// toolsmith (its first line is not `marker`); says whether it was written or unchanged.
fn write_marked(path: &Path, marker: &str, text: &str) -> Result<&'static str, Failure> {
    if let Ok(old) = std::fs::read_to_string(path) {
        if !old.starts_with(marker) {
            return Err(fail(format!(
                "{} exists and was not installed by toolsmith; move it away or edit it by hand",
                path.display()
            )));
        }
        if old == text {
            return Ok("unchanged");
        }
    }
    std::fs::write(path, text)
        .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
    Ok("written")
}

/// The `path = …` line recording the user's `PATH`, quoted as TOML.
fn path_line(path: &str) -> String {
    format!("path = {}", toml::Value::String(path.to_owned()))
}

/// Writes the commented default configuration with the user's `PATH` recorded as
/// `[sandbox] path` (the daemon runs under systemd with a minimal one, and the programs a tool
/// requires are looked up on the user's). An existing file is kept; a `[sandbox]` table is
/// added to it when it has none.
fn write_config(config: &Path, path: Option<&str>) -> Result<&'static str, Failure> {
    let write = |text: &str| {
        std::fs::write(config, text)
            .map_err(|e| fail(format!("cannot write {}: {e}", config.display())))
    };
    let commented = "# path = \"/home/you/.cargo/bin:/usr/local/bin:/usr/bin:/bin\"";
    match std::fs::read_to_string(config) {
        Ok(old) => {
            let has_table = old.lines().any(|l| l.trim() == "[sandbox]");
            match path {
                Some(p) if !has_table => {
                    let sep = if old.ends_with('\n') || old.is_empty() {
                        ""
                    } else {
                        "\n"
                    };
                    write(&format!(
                        "{old}{sep}\n# Written by `toolsmith install --user`: your shell's PATH, \
                         where a tool's programs are looked up.\n[sandbox]\n{}\n",
                        path_line(p)
                    ))?;
                    Ok("updated")
                }
                _ => Ok("kept"),
            }
        }
        Err(_) => {
            if let Some(dir) = config.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
            }
            let text = crate::config::DEFAULT_CONFIG_TOML;
            let text = match path {
                Some(p) => text.replacen(commented, &path_line(p), 1),
                None => text.to_owned(),
            };
            write(&text)?;
            Ok("written")
        }
    }
}

fn systemctl(args: &[&str]) -> Result<(), String> {
    let out = Command::new("systemctl")
        .arg("--user")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run systemctl: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`systemctl --user {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

const START: [&str; 4] = ["enable", "--now", "toolsmith.socket", "toolsmith.service"];
const STOP: [&str; 4] = ["disable", "--now", "toolsmith.service", "toolsmith.socket"];

/// toolsmith's MCP set-up for each agent found here; with `write`, merged into each agent's
/// file, with the session-start hook of those that have one. The words (or JSON) go to `out`;
/// a file refused (one that does not parse) makes the command fail once every agent is done.
fn agents_setup(
    json_out: bool,
    write: bool,
    out: &mut impl Write,
) -> Result<(Value, Option<Failure>), Failure> {
    let (rows, hooks, failure) = agents_and_hooks(json_out, write, out)?;
    let rows = match hooks {
        Some(hooks) if json_out => json!({"agents": rows, "hooks": hooks}),
        _ => json!({ "agents": rows }),
    };
    Ok((rows, failure))
}

/// The rows of [`agents_setup`]: the MCP set-up's and, when written, the hooks'.
fn agents_and_hooks(
    json_out: bool,
    write: bool,
    out: &mut impl Write,
) -> Result<(Value, Option<Value>, Option<Failure>), Failure> {
    use crate::mcp::agents::{self, Agent, Homes, Merged};
    let homes = Homes::from_env().ok_or_else(|| {
        fail("$HOME is not set: cannot find the agents' configuration; set it and run again")
    })?;
    let toolsmith =
        std::env::current_exe().map_err(|e| fail(format!("cannot find this executable: {e}")))?;
    let found: Vec<Agent> = Agent::ALL.into_iter().filter(|a| a.found(&homes)).collect();
    let mut rows = Vec::new();
    let mut refused = Vec::new();
    if !json_out {
        if found.is_empty() {
            writeln!(
                out,
                "no agent found here (looked for ~/.claude, $CODEX_HOME or ~/.codex, ~/.gemini, \
                 ~/.config/opencode, ~/.cursor, Cline's settings): no MCP set-up to give"
            )?;
        } else if !write {
            writeln!(
                out,
                "MCP set-up for the agents found here (`toolsmith install --agents` writes it):"
            )?;
        }
    }
    for agent in found {
        let setup = agents::mcp_setup(agent, &homes, &toolsmith);
        if !write {
            if !json_out {
                writeln!(
                    out,
                    "\n{}: in {}, at {}",
                    agent.as_str(),
                    setup.file.display(),
                    setup.at
                )?;
                if let Some(command) = &setup.command {
                    writeln!(out, "  or run: {command}")?;
                }
                for line in setup.text.lines() {
                    writeln!(out, "    {line}")?;
                }
            }
            rows.push(json!(setup));
            continue;
        }
        let result = agents::merge(&setup);
        let (status, detail) = match &result {
            Ok(Merged::Unchanged) => ("unchanged", String::new()),
            Ok(Merged::Created) => ("created", String::new()),
            Ok(Merged::Updated { backup }) => {
                ("updated", format!(" (was kept as {})", backup.display()))
            }
            Err(e) => ("refused", format!(": {e}")),
        };
        let error = result.as_ref().err().map(ToString::to_string);
        if let Some(e) = &error {
            refused.push(e.clone());
        }
        if !json_out {
            writeln!(
                out,
                "{:<12} {status:<9} {}{detail}",
                agent.as_str(),
                setup.file.display()
            )?;
        }
        rows.push(
            json!({"agent": agent, "file": setup.file, "at": setup.at, "status": status, "error": error}),
        );
    }
    let hooks = if write {
        let mut hooks = Vec::new();
        for agent in Agent::ALL.into_iter().filter(|a| a.found(&homes)) {
            let Some(setup) = agents::session_start_hook(agent, &homes, &toolsmith) else {
                continue;
            };
            let result = agents::merge_hook(&setup);
            let (status, detail) = match &result {
                Ok(Merged::Unchanged) => ("unchanged", String::new()),
                Ok(Merged::Created) => ("created", String::new()),
                Ok(Merged::Updated { backup }) => {
                    ("updated", format!(" (was kept as {})", backup.display()))
                }
                Err(e) => ("refused", format!(": {e}")),
            };
            let error = result.as_ref().err().map(ToString::to_string);
            if let Some(e) = &error {
                refused.push(e.clone());
            }
            if !json_out {
                writeln!(
                    out,
                    "{:<12} {status:<9} {} (session-start hook){detail}",
                    agent.as_str(),
                    setup.file.display()
                )?;
            }
            hooks.push(
                json!({"agent": agent, "file": setup.file, "command": setup.command,
                "status": status, "error": error}),
            );
        }
        Some(Value::Array(hooks))
    } else {
        None
    };
    let failure = (!refused.is_empty()).then(|| {
        fail(format!(
            "{} agent configuration(s) left as they were: {}",
            refused.len(),
            refused.join("; ")
        ))
    });
    Ok((Value::Array(rows), hooks, failure))
}

/// The first line of the AppArmor profile `toolsmith install --apparmor` writes.
const APPARMOR_MARKER: &str = "# Installed by `toolsmith install --apparmor`: lets toolsmith's sandbox helper create its namespaces.";

/// Where AppArmor reads profiles from; `$TOOLSMITH_APPARMOR_D` stands for it (packaging into a
/// staging root, and the tests, which must not change the machine's profiles).
fn apparmor_dir() -> PathBuf {
    std::env::var_os("TOOLSMITH_APPARMOR_D")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/etc/apparmor.d"), PathBuf::from)
}

/// The profile granting `userns` to the sandbox helper at `helper`, as Ubuntu ships one for
/// bwrap (`/etc/apparmor.d/bwrap-userns-restrict`'s unconfined form): the restriction of
/// unprivileged user namespaces (`kernel.apparmor_restrict_unprivileged_userns = 1`, Ubuntu
/// 23.10 on) is lifted for that one program, not for the machine.
pub(crate) fn apparmor_profile(helper: &Path) -> String {
    format!(
        "{APPARMOR_MARKER}\n\
         abi <abi/4.0>,\n\
         include <tunables/global>\n\
         \n\
         profile toolsmith-sandbox-helper {} flags=(unconfined) {{\n\
         \x20 userns,\n\
         \n\
         \x20 # Site-specific additions and overrides. See local/README for details.\n\
         \x20 include if exists <local/toolsmith-sandbox-helper>\n\
         }}\n",
        helper.display()
    )
}

/// `toolsmith install --apparmor` (root): writes the AppArmor profile of the installed
/// `toolsmith-sandbox-helper` and says how to load it. It is never loaded from here: loading a
/// profile changes the running kernel's policy, which the person does knowingly.
pub(super) fn install_apparmor(json_out: bool, out: &mut impl Write) -> Result<(), Failure> {
    let me =
        std::env::current_exe().map_err(|e| fail(format!("cannot find this executable: {e}")))?;
    let helper = me.with_file_name("toolsmith-sandbox-helper");
    // AppArmor attaches a profile by the program's real path.
    let helper = std::fs::canonicalize(&helper).map_err(|e| {
        fail(format!(
            "toolsmith-sandbox-helper is not next to toolsmith ({}: {e}); install both, e.g. \
             with `cargo install --locked --path .`",
            helper.display()
        ))
    })?;
    if !nix::unistd::geteuid().is_root() {
        return Err(fail(
            "writing an AppArmor profile needs root: run `sudo toolsmith install --apparmor`",
        ));
    }
    let dir = apparmor_dir();
    if !dir.is_dir() {
        return Err(fail(format!(
            "{} does not exist: AppArmor is not installed here, so it restricts nothing",
            dir.display()
        )));
    }
    let profile = dir.join("toolsmith-sandbox-helper");
    let status = write_marked(&profile, APPARMOR_MARKER, &apparmor_profile(&helper))?;
    let load = format!("apparmor_parser -r {}", profile.display());
    if json_out {
        output::json(
            out,
            &json!({"profile": profile, "helper": helper, "status": status, "load": load}),
        )?;
    } else {
        writeln!(out, "{status} {}", profile.display())?;
        writeln!(
            out,
            "it lets {} create user namespaces; load it now with:\n  {load}",
            helper.display()
        )?;
    }
    Ok(())
}

/// `toolsmith install [--user [--enable]] [--agents]`.
pub(super) fn install(
    json_out: bool,
    user: bool,
    enable: bool,
    write_agents: bool,
    out: &mut impl Write,
) -> Result<(), Failure> {
    if !user {
        let (rows, failure) = agents_setup(json_out, write_agents, out)?;
        if json_out {
            output::json(out, &rows)?;
        }
        return failure.map_or(Ok(()), Err);
    }
    let daemon = daemon_binary()?;
    let home = config_home()?;
    let units = home.join("systemd/user");
    std::fs::create_dir_all(&units)
        .map_err(|e| fail(format!("cannot create {}: {e}", units.display())))?;
    let service = units.join("toolsmith.service");
    let socket = units.join("toolsmith.socket");
    let mut files = vec![
        (
            service.clone(),
            write_ours(&service, &service_text(&daemon))?,
        ),
        (
            socket.clone(),
            write_ours(&socket, &format!("{MARKER}\n{SOCKET}"))?,
        ),
    ];
    let config = home.join("toolsmith/config.toml");
    let path = std::env::var("PATH").ok().filter(|p| !p.is_empty());
    files.push((config.clone(), write_config(&config, path.as_deref())?));
    let commands = vec![
        "systemctl --user daemon-reload".to_owned(),
        format!("systemctl --user {}", START.join(" ")),
    ];
    let ran = if enable {
        systemctl(&["daemon-reload"])
            .and_then(|()| systemctl(&START))
            .map_err(|e| {
                fail(format!(
                    "the units are installed, but starting them failed: {e}"
                ))
            })?;
        true
    } else {
        false
    };
    if json_out {
        let (set_up, failure) = agents_setup(true, write_agents, out)?;
        output::json(
            out,
            &json!({
                "files": files.iter().map(|(p, what)| json!({"path": p, "status": what})).collect::<Vec<_>>(),
                "daemon": daemon,
                "commands": commands,
                "enabled": ran,
                "agents": set_up["agents"],
                "hooks": set_up["hooks"],
            }),
        )?;
        return failure.map_or(Ok(()), Err);
    }
    for (path, what) in &files {
        writeln!(out, "{what:<9} {}", path.display())?;
    }
    if ran {
        writeln!(
            out,
            "\ntoolsmith runs as a user service: `toolsmith status` talks to it."
        )?;
    } else {
        writeln!(out, "\nStart it now and at every login with:")?;
        for c in &commands {
            writeln!(out, "  {c}")?;
        }
        writeln!(
            out,
            "(or run `toolsmith install --user --enable` to have them run for you)"
        )?;
    }
    writeln!(out)?;
    let (_, failure) = agents_setup(false, write_agents, out)?;
    failure.map_or(Ok(()), Err)
}

/// `toolsmith uninstall --user`.
pub(super) fn uninstall(json_out: bool, out: &mut impl Write) -> Result<(), Failure> {
    let units = config_home()?.join("systemd/user");
    // Stop first, while the unit files still exist; no user manager is not an error.
    let stopped = systemctl(&STOP);
    let mut removed = Vec::new();
    let mut kept = Vec::new();
    for name in ["toolsmith.service", "toolsmith.socket"] {
        let path = units.join(name);
        match std::fs::read_to_string(&path) {
            Ok(text) if text.starts_with(MARKER) => {
                std::fs::remove_file(&path)
                    .map_err(|e| fail(format!("cannot remove {}: {e}", path.display())))?;
                removed.push(path);
            }
            Ok(_) => kept.push(path),
            Err(_) => {}
        }
    }
    let reloaded = systemctl(&["daemon-reload"]).is_ok();
    if json_out {
        return output::json(
            out,
            &json!({"removed": removed, "kept": kept, "stopped": stopped.is_ok(), "reloaded": reloaded}),
        );
    }
    for path in &removed {
        writeln!(out, "removed   {}", path.display())?;
    }
    for path in &kept {
        writeln!(
            out,
            "kept      {} (not installed by toolsmith)",
            path.display()
        )?;
    }
    if removed.is_empty() && kept.is_empty() {
        writeln!(out, "no toolsmith user units were installed")?;
    }
    if let Err(e) = stopped {
        writeln!(out, "note: {e}")?;
    }
    writeln!(
        out,
        "Your configuration, state and registry stay where they are (see `toolsmith config show`)."
    )?;
    Ok(())
}
