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

#[test]
fn install_needs_user() {
    let env = TestEnv::new();
    env.cli().arg("install").assert().code(2);
}
