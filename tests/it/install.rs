//! `toolsmith install --user` and `uninstall --user` on a temporary home: the units and the
//! default configuration it writes, what it refuses to overwrite, and what it removes.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::TestEnv;

fn units(env: &TestEnv) -> std::path::PathBuf {
    env.path().join("config/systemd/user")
}

#[test]
fn install_writes_units_and_a_config_and_uninstall_removes_the_units() {
    let env = TestEnv::new();
    let out = env.cli().args(["install", "--user"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("systemctl --user enable --now toolsmith.socket toolsmith.service"),
        "{text}"
    );
    let service = std::fs::read_to_string(units(&env).join("toolsmith.service")).expect("service");
    let daemon = Path::new(env!("CARGO_BIN_EXE_toolsmithd"));
    assert!(
        service.contains(&format!("\nExecStart={}\n", daemon.display())),
        "ExecStart names the toolsmithd beside toolsmith:\n{service}"
    );
    assert!(service.contains("Type=notify"));
    assert!(units(&env).join("toolsmith.socket").is_file());
    // The default configuration is valid as written.
    let config = env.path().join("config/toolsmith/config.toml");
    env.cli()
        .arg("config")
        .arg("check")
        .arg(&config)
        .assert()
        .success();

    // Again: nothing changes, the configuration is kept.
    let out = env
        .cli()
        .args(["install", "--user", "--json"])
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).expect("json");
    let statuses: Vec<&str> = report["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter_map(|f| f["status"].as_str())
        .collect();
    assert_eq!(statuses, ["unchanged", "unchanged", "kept"]);

    // The written unit passes systemd's own check, when systemd-analyze is here.
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_ok()
    {
        let runtime = env.path().join("runtime");
        let out = Command::new("systemd-analyze")
            .args(["--user", "verify"])
            .arg(units(&env).join("toolsmith.service"))
            .arg(units(&env).join("toolsmith.socket"))
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("XDG_CONFIG_HOME", env.path().join("config"))
            .env("HOME", env.path().join("home"))
            .output()
            .expect("systemd-analyze");
        let text = String::from_utf8_lossy(&out.stderr);
        let ours: Vec<&str> = text.lines().filter(|l| l.contains("toolsmith.")).collect();
        assert!(out.status.success() && ours.is_empty(), "verify:\n{text}");
    } else {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "systemd-analyze missing under CI"
        );
        eprintln!("skipped: systemd-analyze not installed");
    }

    let out = env.cli().args(["uninstall", "--user"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("removed"), "{text}");
    assert!(!units(&env).join("toolsmith.service").exists());
    assert!(!units(&env).join("toolsmith.socket").exists());
    assert!(config.exists(), "the configuration stays");
}

/// The daemon runs under systemd with a minimal PATH: install records the user's own as
/// `[sandbox] path`, which `config show` then reports as coming from the file; a configuration
/// without a `[sandbox]` table gets one, one with it is kept.
#[test]
fn install_records_the_users_path() {
    let env = TestEnv::new();
    let user_path = "/home/u/.cargo/bin:/home/u/.pyenv/shims:/usr/bin:/bin";
    env.cli()
        .args(["install", "--user"])
        .env("PATH", user_path)
        .assert()
        .success();
    let config = env.path().join("config/toolsmith/config.toml");
    let text = std::fs::read_to_string(&config).expect("config");
    assert!(text.contains("\n[sandbox]\n"), "{text}");
    assert!(
        text.contains(&format!("\npath = \"{user_path}\"\n")),
        "{text}"
    );
    let shown = env
        .cli()
        .arg("--config")
        .arg(&config)
        .args(["config", "show"])
        .assert()
        .success();
    let shown = String::from_utf8_lossy(&shown.get_output().stdout).into_owned();
    let line = shown
        .lines()
        .skip_while(|l| *l != "[sandbox]")
        .find(|l| l.starts_with("path = "))
        .unwrap_or_else(|| panic!("no [sandbox] path in:\n{shown}"));
    assert!(
        line.contains(user_path) && line.contains("config.toml:"),
        "{line}"
    );

    // A configuration of the user's own without the table gets it, once.
    std::fs::write(&config, "[mine]\nmin_support = 4\n").expect("write");
    let out = env
        .cli()
        .args(["install", "--user", "--json"])
        .env("PATH", user_path)
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).expect("json");
    assert_eq!(report["files"][2]["status"], "updated");
    let text = std::fs::read_to_string(&config).expect("config");
    assert!(text.starts_with("[mine]\nmin_support = 4\n"), "{text}");
    assert!(
        text.contains(&format!("[sandbox]\npath = \"{user_path}\"\n")),
        "{text}"
    );
    let out = env
        .cli()
        .args(["install", "--user", "--json"])
        .env("PATH", "/other")
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).expect("json");
    assert_eq!(report["files"][2]["status"], "kept");
}

#[test]
fn a_unit_not_written_by_toolsmith_is_never_overwritten_or_removed() {
    let env = TestEnv::new();
    std::fs::create_dir_all(units(&env)).expect("mkdir");
    let mine = "[Service]\nExecStart=/opt/my/toolsmithd\n";
    std::fs::write(units(&env).join("toolsmith.service"), mine).expect("write");
    let out = env.cli().args(["install", "--user"]).assert().failure();
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("was not installed by toolsmith"), "{err}");
    env.cli().args(["uninstall", "--user"]).assert().success();
    assert_eq!(
        std::fs::read_to_string(units(&env).join("toolsmith.service")).expect("read"),
        mine
    );
}

/// Ubuntu 23.10 on restricts unprivileged user namespaces through AppArmor; `install
/// --apparmor` writes the profile lifting it for the sandbox helper alone (into a stand-in for
/// `/etc/apparmor.d`: the machine's profiles are not touched), never loads it, keeps a profile
/// of someone else's, and is refused beside the other installs.
#[test]
fn install_apparmor_writes_the_sandbox_helpers_profile_and_says_how_to_load_it() {
    let env = TestEnv::new();
    let dir = env.path().join("apparmor.d");
    let run = |dir: &Path| {
        let mut cmd = env.cli();
        cmd.env("TOOLSMITH_APPARMOR_D", dir)
            .args(["install", "--apparmor"]);
        cmd
    };
    // No AppArmor here: nothing to lift, and said so.
    let out = run(&dir).assert().failure();
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("AppArmor is not installed here"), "{err}");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let out = run(&dir).assert().success();
    let said = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let profile = dir.join("toolsmith-sandbox-helper");
    assert!(
        said.contains(&format!("apparmor_parser -r {}", profile.display())),
        "{said}"
    );
    let text = std::fs::read_to_string(&profile).expect("the profile");
    let helper = std::fs::canonicalize(
        Path::new(env!("CARGO_BIN_EXE_toolsmith")).with_file_name("toolsmith-sandbox-helper"),
    )
    .expect("the helper beside toolsmith");
    assert!(
        text.contains(&format!(
            "profile toolsmith-sandbox-helper {} flags=(unconfined) {{",
            helper.display()
        )),
        "{text}"
    );
    assert!(text.contains("\n  userns,\n"), "{text}");
    // Again: unchanged.
    let out = run(&dir).assert().success();
    assert!(String::from_utf8_lossy(&out.get_output().stdout).starts_with("unchanged"));
    // Someone else's profile under that name is never overwritten.
    let theirs = "profile toolsmith-sandbox-helper /opt/x flags=(complain) {}\n";
    std::fs::write(&profile, theirs).expect("write");
    let out = run(&dir).assert().failure();
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(err.contains("was not installed by toolsmith"), "{err}");
    assert_eq!(std::fs::read_to_string(&profile).expect("read"), theirs);
    // Not with the user's units or the agents' set-up in one go.
    env.cli()
        .args(["install", "--apparmor", "--user"])
        .assert()
        .code(2);
}

#[test]
fn install_needs_user() {
    let env = TestEnv::new();
    env.cli().arg("install").assert().code(2);
}

/// A home where five agents are set up, each with a configuration of the user's own (Cursor's
/// broken), and Codex's home moved by `$CODEX_HOME`.
fn agents_home(env: &TestEnv) -> (std::path::PathBuf, std::path::PathBuf) {
    let home = env.path().join("home");
    let codex = env.path().join("codex-home");
    for dir in [
        home.join(".claude"),
        codex.clone(),
        home.join(".gemini"),
        env.path().join("config/opencode"),
        home.join(".cursor"),
    ] {
        std::fs::create_dir_all(dir).expect("agent dir");
    }
    std::fs::write(
        home.join(".claude.json"),
        "{\n  \"numStartups\": 41,\n  \"projects\": {\"/w\": {\"allowedTools\": []}},\n  \"oauthAccount\": {\"emailAddress\": \"dev@example.org\"}\n}\n",
    )
    .expect("claude.json");
    std::fs::write(
        codex.join("config.toml"),
        "model = \"gpt-5-codex\"  # my model\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n",
    )
    .expect("config.toml");
    std::fs::write(
        home.join(".cursor/mcp.json"),
        "{\"mcpServers\": {\"a\": 1,,}",
    )
    .expect("cursor");
    (home, codex)
}

fn backups(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .ends_with(".toolsmith-backup")
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn install_agents_merges_toolsmith_into_each_agent_found_and_never_overwrites_a_broken_file() {
    let env = TestEnv::new();
    let (home, codex) = agents_home(&env);
    let claude_before = std::fs::read_to_string(home.join(".claude.json")).expect("read");
    let codex_before = std::fs::read_to_string(codex.join("config.toml")).expect("read");
    let toolsmith = env!("CARGO_BIN_EXE_toolsmith");

    let out = env
        .cli()
        .env("CODEX_HOME", &codex)
        .args(["install", "--agents"])
        .assert()
        .failure();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    // The broken file is named, and left byte for byte; the others are done.
    assert!(
        stderr.contains(".cursor/mcp.json does not parse as JSON"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(home.join(".cursor/mcp.json")).expect("cursor"),
        "{\"mcpServers\": {\"a\": 1,,}"
    );
    for line in [
        "claude-code  updated",
        "codex        updated",
        "gemini-cli   created",
        "opencode     created",
        "cursor       refused",
    ] {
        assert!(stdout.contains(line), "{line} missing in:\n{stdout}");
    }
    // Claude Code: every key of the user's kept as it was, the server added.
    let claude_after = std::fs::read_to_string(home.join(".claude.json")).expect("read");
    let doc: serde_json::Value = serde_json::from_str(&claude_after).expect("json");
    assert_eq!(doc["numStartups"], 41);
    assert_eq!(doc["oauthAccount"]["emailAddress"], "dev@example.org");
    assert_eq!(
        doc["mcpServers"]["toolsmith"],
        serde_json::json!({"type": "stdio", "command": toolsmith, "args": ["mcp"], "env": {}})
    );
    assert!(
        claude_after.ends_with(&claude_before["{".len()..]),
        "the user's text follows the entry unchanged:\n{claude_after}"
    );
    assert_eq!(backups(&home), 1);
    // Codex: the table appended under $CODEX_HOME, the rest (comment included) as it was.
    let codex_after = std::fs::read_to_string(codex.join("config.toml")).expect("read");
    assert!(codex_after.starts_with(&codex_before), "{codex_after}");
    assert!(
        codex_after.ends_with(&format!(
            "\n[mcp_servers.toolsmith]\nargs = [\"mcp\"]\ncommand = \"{toolsmith}\"\n"
        )),
        "{codex_after}"
    );
    assert!(!home.join(".codex").exists(), "$CODEX_HOME is honoured");
    let opencode: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.path().join("config/opencode/opencode.json")).expect("oc"),
    )
    .expect("json");
    assert_eq!(
        opencode["mcp"]["toolsmith"],
        serde_json::json!({"type": "local", "command": [toolsmith, "mcp"], "enabled": true})
    );

    // Fixed by hand: now Cursor is done, and nothing else changes.
    std::fs::write(
        home.join(".cursor/mcp.json"),
        "{\"mcpServers\": {\"a\": {\"command\": \"a\"}}}",
    )
    .expect("fix");
    let out = env
        .cli()
        .env("CODEX_HOME", &codex)
        .args(["install", "--agents"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("cursor       updated"), "{stdout}");
    // The four MCP entries and the three session-start hooks (Claude Code, Codex, Gemini CLI).
    assert_eq!(stdout.matches(" unchanged ").count(), 7, "{stdout}");
    // A third run changes nothing at all: no write, no backup.
    let snapshot = |p: &Path| std::fs::read_to_string(p).expect("read");
    let files = [
        home.join(".claude.json"),
        codex.join("config.toml"),
        home.join(".gemini/settings.json"),
        env.path().join("config/opencode/opencode.json"),
        home.join(".cursor/mcp.json"),
    ];
    let before: Vec<String> = files.iter().map(|p| snapshot(p)).collect();
    let counted = backups(&home) + backups(&codex) + backups(&home.join(".cursor"));
    let out = env
        .cli()
        .env("CODEX_HOME", &codex)
        .args(["--json", "install", "--agents"])
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).expect("json");
    let statuses: Vec<&str> = report["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .filter_map(|a| a["status"].as_str())
        .collect();
    assert_eq!(statuses, ["unchanged"; 5]);
    let after: Vec<String> = files.iter().map(|p| snapshot(p)).collect();
    assert_eq!(before, after);
    assert_eq!(
        backups(&home) + backups(&codex) + backups(&home.join(".cursor")),
        counted
    );
}

#[test]
fn install_user_prints_the_mcp_set_up_of_each_agent_found() {
    let env = TestEnv::new();
    let home = env.path().join("home");
    std::fs::create_dir_all(home.join(".claude")).expect("claude");
    std::fs::create_dir_all(home.join(".codex")).expect("codex");
    std::fs::create_dir_all(
        env.path()
            .join("config/Code/User/globalStorage/saoudrizwan.claude-dev/settings"),
    )
    .expect("cline");
    let out = env
        .cli()
        .env_remove("CODEX_HOME")
        .args(["install", "--user"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout)
        .replace(env!("CARGO_BIN_EXE_toolsmith"), "[TOOLSMITH]")
        .replace(&env.path().display().to_string(), "[TMP]");
    let set_up = text
        .split_once("MCP set-up")
        .map(|(_, rest)| format!("MCP set-up{rest}"))
        .unwrap_or_else(|| panic!("no MCP set-up in:\n{text}"));
    insta::assert_snapshot!(set_up, @r#"
    MCP set-up for the agents found here (`toolsmith install --agents` writes it):

    claude-code: in [TMP]/home/.claude.json, at mcpServers.toolsmith
      or run: claude mcp add --scope user toolsmith -- [TOOLSMITH] mcp
        {
          "mcpServers": {
            "toolsmith": {
              "args": [
                "mcp"
              ],
              "command": "[TOOLSMITH]",
              "env": {},
              "type": "stdio"
            }
          }
        }

    codex: in [TMP]/home/.codex/config.toml, at [mcp_servers.toolsmith]
        [mcp_servers.toolsmith]
        args = ["mcp"]
        command = "[TOOLSMITH]"

    cline: in [TMP]/config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json, at mcpServers.toolsmith
        {
          "mcpServers": {
            "toolsmith": {
              "args": [
                "mcp"
              ],
              "command": "[TOOLSMITH]",
              "disabled": false
            }
          }
        }
    "#);
    // Printing writes nothing.
    assert!(!home.join(".claude.json").exists());
    assert!(!home.join(".codex/config.toml").exists());
}
