//! The systemd units in `systemd/`: they load without complaint (`systemd-analyze verify`), the
//! system service rates at most 3.0 in `systemd-analyze security --offline=true`, and they carry
//! the settings the daemon and its sandbox rely on.
//!
//! The checks that run `systemd-analyze` are skipped with a note when it is not installed, except
//! under `CI=true`, where its absence is a failure (`.ci/run` installs Debian's `systemd`).

use std::collections::BTreeMap;
use std::env;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The highest overall exposure `systemd-analyze security` may give the system service.
const MAX_EXPOSURE: f64 = 3.0;
/// `systemd-analyze security --offline=` exists since systemd 250.
const MIN_SECURITY_VERSION: u32 = 250;

const SYSTEM_SERVICE: &str = "toolsmithd.service";
const SYSTEM_SOCKET: &str = "toolsmithd.socket";
const USER_SERVICE: &str = "toolsmith.service";
const USER_SOCKET: &str = "toolsmith.socket";
const ALL_UNITS: [&str; 4] = [SYSTEM_SERVICE, SYSTEM_SOCKET, USER_SERVICE, USER_SOCKET];

// ---------------------------------------------------------------------------------------------
// Unit files
// ---------------------------------------------------------------------------------------------

fn unit_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("systemd")
        .join(name)
}

fn unit_text(name: &str) -> String {
    let path = unit_path(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A unit file as systemd reads it: sections of `Key=value` assignments, in order.
#[derive(Debug)]
struct Unit {
    name: String,
    sections: BTreeMap<String, Vec<(String, String)>>,
}

impl Unit {
    fn load(name: &str) -> Unit {
        Unit::parse(name, &unit_text(name))
    }

    /// Parses the subset of the unit file syntax systemd accepts: comments (`#`, `;`), section
    /// headers, `Key=value` lines and backslash continuations. Anything else is a test failure.
    fn parse(name: &str, text: &str) -> Unit {
        let mut sections: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        let mut current: Option<String> = None;
        let mut lines = text.lines().enumerate();
        while let Some((index, raw)) = lines.next() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if let Some(header) = line.strip_prefix('[') {
                let header = header
                    .strip_suffix(']')
                    .unwrap_or_else(|| panic!("{name}:{}: bad section header {raw:?}", index + 1));
                current = Some(header.to_owned());
                sections.entry(header.to_owned()).or_default();
                continue;
            }
            let section = current
                .clone()
                .unwrap_or_else(|| panic!("{name}:{}: assignment outside a section", index + 1));
            let mut logical = line.to_owned();
            while logical.ends_with('\\') {
                logical.pop();
                let (_, next) = lines
                    .next()
                    .unwrap_or_else(|| panic!("{name}: continuation at end of file"));
                logical.push(' ');
                logical.push_str(next.trim());
            }
            let (key, value) = logical
                .split_once('=')
                .unwrap_or_else(|| panic!("{name}:{}: not Key=value: {raw:?}", index + 1));
            sections
                .entry(section)
                .or_default()
                .push((key.trim().to_owned(), value.trim().to_owned()));
        }
        Unit {
            name: name.to_owned(),
            sections,
        }
    }

    fn assignments(&self, section: &str, key: &str) -> Vec<&str> {
        self.sections
            .get(section)
            .map(|entries| {
                entries
                    .iter()
                    .filter(|(k, _)| k == key)
                    .map(|(_, v)| v.as_str())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The effective value of a single-valued setting: the last assignment wins.
    fn get(&self, section: &str, key: &str) -> Option<&str> {
        self.assignments(section, key).last().copied()
    }

    fn require(&self, section: &str, key: &str) -> &str {
        self.get(section, key)
            .unwrap_or_else(|| panic!("{}: [{section}] {key}= is missing", self.name))
    }

    fn assert_eq(&self, section: &str, key: &str, expected: &str) {
        assert_eq!(
            self.require(section, key),
            expected,
            "{}: [{section}] {key}=",
            self.name
        );
    }

    /// The effective items of a list setting: assignments accumulate and an empty one resets.
    fn list(&self, section: &str, key: &str) -> Vec<String> {
        let mut items = Vec::new();
        for value in self.assignments(section, key) {
            if value.is_empty() {
                items.clear();
            } else {
                items.extend(value.split_whitespace().map(str::to_owned));
            }
        }
        items
    }

    /// A boolean setting as systemd reads it; `None` when unset.
    fn flag(&self, section: &str, key: &str) -> Option<bool> {
        self.get(section, key)
            .map(|value| match value.to_ascii_lowercase().as_str() {
                "1" | "yes" | "y" | "true" | "t" | "on" => true,
                "0" | "no" | "n" | "false" | "f" | "off" => false,
                other => panic!("{}: [{section}] {key}={other} is not a boolean", self.name),
            })
    }
}

/// Parses a systemd time span made of `<number><unit>` parts ("30s", "1min 30s", "30").
fn time_span_seconds(span: &str) -> f64 {
    let mut total = 0.0;
    for part in span.split_whitespace() {
        let split = part
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(part.len());
        let (number, unit) = part.split_at(split);
        let number: f64 = number
            .parse()
            .unwrap_or_else(|_| panic!("bad time span {span:?}"));
        let scale = match unit {
            "" | "s" | "sec" | "second" | "seconds" => 1.0,
            "ms" | "msec" => 0.001,
            "m" | "min" | "minute" | "minutes" => 60.0,
            "h" | "hr" | "hour" | "hours" => 3600.0,
            other => panic!("unexpected time unit {other:?} in {span:?}"),
        };
        total += number * scale;
    }
    total
}

// ---------------------------------------------------------------------------------------------
// systemd-analyze
// ---------------------------------------------------------------------------------------------

/// `systemd-analyze` from PATH; `None` (with a note) when absent outside CI.
fn systemd_analyze() -> Option<PathBuf> {
    let found = env::var_os("PATH").and_then(|paths| {
        env::split_paths(&paths)
            .map(|dir| dir.join("systemd-analyze"))
            .find(|candidate| {
                fs::metadata(candidate)
                    .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                    .unwrap_or(false)
            })
    });
    if found.is_none() {
        assert_ne!(
            env::var("CI").as_deref(),
            Ok("true"),
            "systemd-analyze not found on PATH, and CI=true: install Debian's `systemd` package"
        );
        println!("skipped: systemd-analyze not found");
    }
    found
}

/// The major version `systemd-analyze --version` reports ("systemd 252 (252.38-1~deb12u1)").
fn systemd_version(analyze: &Path) -> u32 {
    let out = run(Command::new(analyze).arg("--version"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("cannot read the systemd version from {stdout:?}"))
}

fn run(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"))
}

fn combined_output(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A scratch directory holding copies of units in which ExecStart= names the toolsmithd binary
/// cargo built for this test (`verify` insists that it exists), plus an `XDG_RUNTIME_DIR` for
/// `--user` runs.
struct Staged {
    dir: tempfile::TempDir,
}

impl Staged {
    fn new(units: &[&str]) -> Staged {
        let dir = tempfile::tempdir().expect("tempdir");
        let runtime = dir.path().join("xdg-runtime");
        fs::create_dir(&runtime).expect("create runtime dir");
        fs::set_permissions(&runtime, fs::Permissions::from_mode(0o700)).expect("chmod 0700");
        let units_dir = dir.path().join("units");
        fs::create_dir(&units_dir).expect("create units dir");
        for name in units {
            let staged = substitute_binaries(name, &unit_text(name));
            fs::write(units_dir.join(name), staged).expect("write staged unit");
        }
        Staged { dir }
    }

    fn unit(&self, name: &str) -> PathBuf {
        self.dir.path().join("units").join(name)
    }

    fn runtime_dir(&self) -> PathBuf {
        self.dir.path().join("xdg-runtime")
    }

    fn units_dir(&self) -> PathBuf {
        self.dir.path().join("units")
    }
}

fn substitute_binaries(name: &str, text: &str) -> String {
    let daemon = env!("CARGO_BIN_EXE_toolsmithd");
    let daemon = if daemon.contains(char::is_whitespace) {
        format!("\"{daemon}\"")
    } else {
        daemon.to_owned()
    };
    let mut out = String::with_capacity(text.len());
    let mut replaced = false;
    for line in text.lines() {
        if line.starts_with("ExecStart=") {
            out.push_str(&format!("ExecStart={daemon}\n"));
            replaced = true;
        } else if line.starts_with("ExecReload=/bin/kill ") && !Path::new("/bin/kill").exists() {
            // procps is on every real system, not in every minimal container image.
            println!(
                "note: /bin/kill is not installed here; {name}'s ExecReload= is verified with /bin/true in its place"
            );
            out.push_str(&line.replacen("/bin/kill", "/bin/true", 1));
            out.push('\n');
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    if name.ends_with(".service") {
        assert!(replaced, "{name} has no ExecStart= line to substitute");
    }
    out
}

/// Runs `systemd-analyze [--user] verify` on staged copies of `units` and fails on any complaint
/// about them: a non-zero exit, or any output line that names one of our units.
fn verify(analyze: &Path, units: &[&str], user: bool) {
    let staged = Staged::new(units);
    let mut command = Command::new(analyze);
    if user {
        command
            .arg("--user")
            .env("XDG_RUNTIME_DIR", staged.runtime_dir());
    }
    command.arg("verify");
    for name in units {
        command.arg(staged.unit(name));
    }
    let out = run(&mut command);
    let text = combined_output(&out);
    for line in text.lines() {
        println!("systemd-analyze verify: {line}");
    }
    assert!(
        out.status.success(),
        "systemd-analyze verify {units:?} failed ({}):\n{text}",
        out.status
    );
    let staged_dir = staged.units_dir().display().to_string();
    let complaints: Vec<&str> = text
        .lines()
        .filter(|line| line.contains(&staged_dir) || ALL_UNITS.iter().any(|u| line.contains(u)))
        .collect();
    assert!(
        complaints.is_empty(),
        "systemd-analyze verify complains about {units:?}:\n{}",
        complaints.join("\n")
    );
}

/// The overall exposure `systemd-analyze security --offline=true` gives a staged copy of `unit`.
fn exposure(analyze: &Path, unit: &str, user: bool) -> f64 {
    let staged = Staged::new(&[unit]);
    let mut command = Command::new(analyze);
    if user {
        command
            .arg("--user")
            .env("XDG_RUNTIME_DIR", staged.runtime_dir());
    }
    command
        .args(["security", "--offline=true", "--no-pager"])
        .arg(staged.unit(unit));
    let out = run(&mut command);
    let text = combined_output(&out);
    assert!(
        out.status.success(),
        "systemd-analyze security {unit} failed ({}):\n{text}",
        out.status
    );
    let marker = format!("Overall exposure level for {unit}:");
    let line = text
        .lines()
        .find(|line| line.contains(&marker))
        .unwrap_or_else(|| panic!("no {marker:?} line in:\n{text}"));
    let (_, rest) = line.split_once(&marker).expect("marker present");
    rest.split_whitespace()
        .next()
        .and_then(|figure| figure.parse().ok())
        .unwrap_or_else(|| panic!("cannot read the exposure figure from {line:?}"))
}

// ---------------------------------------------------------------------------------------------
// Tests that need systemd-analyze
// ---------------------------------------------------------------------------------------------

#[test]
fn system_units_pass_systemd_analyze_verify() {
    let Some(analyze) = systemd_analyze() else {
        return;
    };
    verify(&analyze, &[SYSTEM_SERVICE, SYSTEM_SOCKET], false);
}

#[test]
fn user_units_pass_systemd_analyze_verify() {
    let Some(analyze) = systemd_analyze() else {
        return;
    };
    verify(&analyze, &[USER_SERVICE, USER_SOCKET], true);
}

#[test]
fn system_service_exposure_is_at_most_three() {
    let Some(analyze) = systemd_analyze() else {
        return;
    };
    let version = systemd_version(&analyze);
    if version < MIN_SECURITY_VERSION {
        assert_ne!(
            env::var("CI").as_deref(),
            Ok("true"),
            "systemd {version} is too old for `security --offline=true` (needs {MIN_SECURITY_VERSION})"
        );
        println!("skipped: systemd {version} has no `security --offline=true`");
        return;
    }
    let system = exposure(&analyze, SYSTEM_SERVICE, false);
    println!("overall exposure of {SYSTEM_SERVICE}: {system:.1} (at most {MAX_EXPOSURE})");
    // For information only: a user service cannot drop capabilities it never had, and the
    // analysis counts them against it anyway.
    let user = exposure(&analyze, USER_SERVICE, true);
    println!("overall exposure of {USER_SERVICE} (informational): {user:.1}");
    assert!(
        system <= MAX_EXPOSURE,
        "{SYSTEM_SERVICE} is rated {system}, above {MAX_EXPOSURE}"
    );
}

// ---------------------------------------------------------------------------------------------
// Settings the daemon relies on (no systemd needed)
// ---------------------------------------------------------------------------------------------

/// What both services share: the systemd protocol the daemon speaks, its directories, and the
/// settings its sandbox cannot live with.
fn assert_common_service_settings(unit: &Unit) {
    let s = "Service";
    unit.assert_eq(s, "Type", "notify");
    unit.assert_eq(s, "NotifyAccess", "main");
    unit.assert_eq(s, "Restart", "on-failure");
    unit.assert_eq(s, "UMask", "0077");
    unit.assert_eq(s, "RuntimeDirectory", "toolsmith");
    unit.assert_eq(s, "RuntimeDirectoryMode", "0700");
    // The socket unit keeps listening in the runtime directory across service restarts.
    assert_eq!(
        unit.flag(s, "RuntimeDirectoryPreserve"),
        Some(true),
        "{}",
        unit.name
    );
    unit.assert_eq(s, "ConfigurationDirectory", "toolsmith");

    let watchdog = time_span_seconds(unit.require(s, "WatchdogSec"));
    assert!(
        (2.0..=300.0).contains(&watchdog),
        "{}: WatchdogSec={watchdog}s is not a sensible ping interval",
        unit.name
    );
    let stop = time_span_seconds(unit.require(s, "TimeoutStopSec"));
    assert!(
        stop > 10.0,
        "{}: TimeoutStopSec={stop}s leaves no room for the daemon's 10 s shutdown grace",
        unit.name
    );
    let reload = unit.require(s, "ExecReload");
    assert!(
        reload.contains("-HUP") && reload.contains("$MAINPID"),
        "{}: ExecReload={reload} must send SIGHUP to the main process",
        unit.name
    );
    // Exit codes that restarting cannot fix: usage, invalid config, already running, damaged store.
    let no_restart = unit.list(s, "RestartPreventExitStatus");
    for code in ["2", "4", "5", "6"] {
        assert!(
            no_restart.iter().any(|c| c == code),
            "{}: RestartPreventExitStatus= lacks {code}",
            unit.name
        );
    }

    // The sandbox creates user, mount, pid, net, ipc and uts namespaces.
    let namespaces = unit.list(s, "RestrictNamespaces");
    assert!(
        !namespaces
            .iter()
            .any(|n| n == "yes" || n == "true" || n == "1"),
        "{}: RestrictNamespaces=yes forbids the sandbox's namespaces",
        unit.name
    );
    if !namespaces.is_empty() {
        assert!(
            !namespaces[0].starts_with('~'),
            "{}: use an allow list in RestrictNamespaces=",
            unit.name
        );
        for ns in ["user", "mnt", "pid", "net", "ipc", "uts"] {
            assert!(
                namespaces.iter().any(|n| n == ns),
                "{}: RestrictNamespaces= must allow {ns}",
                unit.name
            );
        }
    }

    // The sandbox mounts, applies Landlock, installs its own seccomp filter and sets the hostname
    // of its UTS namespace; systemd's filter is inherited and cannot be lifted.
    let filter = unit.list(s, "SystemCallFilter");
    assert!(
        !filter.is_empty(),
        "{}: SystemCallFilter= is missing",
        unit.name
    );
    assert!(
        !filter.iter().any(|f| f.starts_with('~')),
        "{}: SystemCallFilter= should be an allow list",
        unit.name
    );
    for needed in [
        "@system-service",
        "@mount",
        "landlock_create_ruleset",
        "landlock_add_rule",
        "landlock_restrict_self",
        "seccomp",
        "sethostname",
    ] {
        assert!(
            filter.iter().any(|f| f == needed),
            "{}: SystemCallFilter= must allow {needed}",
            unit.name
        );
    }
    assert_ne!(
        unit.flag(s, "ProtectHostname"),
        Some(true),
        "{}: ProtectHostname=yes denies sethostname(2) to the sandbox",
        unit.name
    );
    assert_ne!(
        unit.flag(s, "MemoryDenyWriteExecute"),
        Some(true),
        "{}: MemoryDenyWriteExecute=yes breaks JIT runtimes inside tools",
        unit.name
    );
    assert_ne!(
        unit.flag(s, "PrivateNetwork"),
        Some(true),
        "{}: `toolsmith sync` and LLM APIs need the network",
        unit.name
    );

    let families = unit.list(s, "RestrictAddressFamilies");
    for family in ["AF_UNIX", "AF_INET", "AF_INET6"] {
        assert!(
            families.iter().any(|f| f == family),
            "{}: RestrictAddressFamilies= must allow {family}",
            unit.name
        );
    }

    // Child cgroups per sandboxed run.
    assert_eq!(unit.flag(s, "Delegate"), Some(true), "{}", unit.name);
    assert_ne!(
        unit.flag(s, "ProtectControlGroups"),
        Some(true),
        "{}: ProtectControlGroups=yes makes the delegated cgroup read-only",
        unit.name
    );
}

#[test]
fn system_service_has_the_required_settings() {
    let unit = Unit::load(SYSTEM_SERVICE);
    assert_common_service_settings(&unit);
    let s = "Service";
    unit.assert_eq(s, "ExecStart", "/usr/local/bin/toolsmithd");
    unit.assert_eq(s, "StateDirectory", "toolsmith");
    unit.assert_eq(s, "StateDirectoryMode", "0700");
    unit.assert_eq(s, "User", "toolsmith");
    unit.assert_eq("Install", "WantedBy", "multi-user.target");

    // A fresh procfs in the sandbox needs a fully visible procfs in the service: the over-mounts of
    // ProtectKernelTunables=/ProtectKernelLogs= are only harmless under ProcSubset=pid.
    let hides_proc_files = unit.flag(s, "ProtectKernelTunables") == Some(true)
        || unit.flag(s, "ProtectKernelLogs") == Some(true);
    if hides_proc_files {
        assert_eq!(
            unit.get(s, "ProcSubset"),
            Some("pid"),
            "ProtectKernelTunables=/ProtectKernelLogs= without ProcSubset=pid break the sandbox's /proc"
        );
    }
    // PrivateUsers= would leave the owners of the logs we read unmapped.
    assert_ne!(unit.flag(s, "PrivateUsers"), Some(true));
    // The one capability, and only that one.
    assert_eq!(
        unit.list(s, "CapabilityBoundingSet"),
        ["CAP_DAC_READ_SEARCH"]
    );
    assert_eq!(unit.list(s, "AmbientCapabilities"), ["CAP_DAC_READ_SEARCH"]);
    assert_eq!(unit.flag(s, "NoNewPrivileges"), Some(true));
    unit.assert_eq(s, "ProtectSystem", "strict");
    unit.assert_eq(s, "ProtectHome", "read-only");
}

#[test]
fn user_service_has_the_required_settings() {
    let unit = Unit::load(USER_SERVICE);
    assert_common_service_settings(&unit);
    let s = "Service";
    unit.assert_eq(s, "ExecStart", "%h/.cargo/bin/toolsmithd");
    unit.assert_eq("Install", "WantedBy", "default.target");
    // Before systemd 254, StateDirectory= of a user unit is $XDG_CONFIG_HOME, the same directory
    // as ConfigurationDirectory= and not where the CLI looks; the daemon's XDG default is used.
    assert!(
        unit.get(s, "StateDirectory").is_none(),
        "{USER_SERVICE}: StateDirectory= maps to ~/.config before systemd 254"
    );
    // A user manager cannot shrink the bounding set: the service would fail with 218/CAPABILITIES.
    assert!(unit.get(s, "CapabilityBoundingSet").is_none());
    // Anything that needs a mount namespace would need an implicit PrivateUsers= namespace and
    // stop the unit from starting where user namespaces are restricted.
    for key in [
        "ProtectSystem",
        "ProtectHome",
        "PrivateTmp",
        "PrivateDevices",
        "PrivateUsers",
        "ProtectKernelTunables",
        "ProtectKernelLogs",
        "ProtectKernelModules",
        "ProtectProc",
        "ProcSubset",
    ] {
        assert!(
            unit.get(s, key).is_none(),
            "{USER_SERVICE}: {key}= needs a mount namespace in a user manager"
        );
    }
}

fn assert_socket(unit: &Unit, listen: &str) {
    let s = "Socket";
    unit.assert_eq(s, "ListenStream", listen);
    unit.assert_eq(s, "SocketMode", "0600");
    unit.assert_eq(s, "DirectoryMode", "0700");
    assert_ne!(
        unit.flag(s, "Accept"),
        Some(true),
        "{}: one daemon serves all connections",
        unit.name
    );
    unit.assert_eq("Install", "WantedBy", "sockets.target");
}

#[test]
fn sockets_listen_where_the_daemon_binds() {
    let system = Unit::load(SYSTEM_SOCKET);
    assert_socket(&system, "/run/toolsmith/control.sock");
    // The protocol admits the daemon's user and root; the file says the same.
    system.assert_eq("Socket", "SocketUser", "toolsmith");
    system.assert_eq("Socket", "SocketGroup", "toolsmith");
    let user = Unit::load(USER_SOCKET);
    assert_socket(&user, "%t/toolsmith/control.sock");

    // The socket file lives in the service's RuntimeDirectory=, under the name the daemon uses.
    let service = Unit::load(SYSTEM_SERVICE);
    let dir = service.require("Service", "RuntimeDirectory");
    assert_eq!(
        Path::new("/run").join(dir).join("control.sock").as_path(),
        Path::new(system.require("Socket", "ListenStream"))
    );
}

#[test]
fn unit_parser_reads_lists_and_resets() {
    let unit = Unit::parse(
        "example.service",
        "# comment\n[Service]\nSystemCallFilter=@a @b\n; other comment\nSystemCallFilter=c \\\n  d\n\
         ProtectHome=read-only\nRestrictAddressFamilies=AF_UNIX\nRestrictAddressFamilies=\n\
         RestrictAddressFamilies=AF_INET\nDelegate=yes\nWatchdogSec=1min 30s\n",
    );
    assert_eq!(
        unit.list("Service", "SystemCallFilter"),
        ["@a", "@b", "c", "d"]
    );
    assert_eq!(unit.list("Service", "RestrictAddressFamilies"), ["AF_INET"]);
    assert_eq!(unit.get("Service", "ProtectHome"), Some("read-only"));
    assert_eq!(unit.flag("Service", "Delegate"), Some(true));
    assert_eq!(unit.flag("Service", "PrivateUsers"), None);
    assert_eq!(
        time_span_seconds(unit.require("Service", "WatchdogSec")),
        90.0
    );
}
