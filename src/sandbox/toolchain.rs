//! The user's toolchains: where a program a tool requires comes from when the user's own shell
//! runs it, and what of it the sandbox must show for the tool to run it too.
//!
//! [`resolve`] looks a program up on the user's `PATH` (recorded at `toolsmith install --user`
//! or set as the configuration's `[sandbox] path`: the daemon itself runs under systemd with a
//! minimal one), follows shims and links to the real binary the way the shell and the
//! toolchain's launcher would, and names the toolchain's root:
//!
//! - **rustup**: a proxy in `$CARGO_HOME/bin` (a link to `rustup`) runs the active toolchain
//!   (`RUSTUP_TOOLCHAIN`, else `default_toolchain` of `$RUSTUP_HOME/settings.toml`): its
//!   directory under `$RUSTUP_HOME/toolchains` and `$CARGO_HOME/bin` are bound;
//! - **pyenv**: a shim in `$PYENV_ROOT/shims` runs the selected version (`PYENV_VERSION`, else
//!   `$PYENV_ROOT/version`): `$PYENV_ROOT/versions/<v>` is bound (a pyenv-virtualenv version
//!   with its base Python);
//! - **venv**: a program in `<venv>/bin` beside `pyvenv.cfg`: the environment and the base
//!   Python its `home` names are bound, `VIRTUAL_ENV` set;
//! - **nvm**: a program of `<nvm>/versions/node/<v>/bin`: that version is bound;
//! - **local-bin**: a program of `~/.local/bin`: the file itself, or the virtual environment it
//!   links into (pipx).
//!
//! Never the whole home directory. A program in a system directory needs nothing (the sandbox
//! shows those). The caches a toolchain writes go to the run's work directory (`/work`, the
//! sandbox's `HOME`): `CARGO_HOME=/work/.cargo`, and `CARGO_TARGET_DIR=/work/target` when the
//! workspace is not writable.
//!
//! [`check`] is what every run and validation apply to a manifest's toolchains, which may have
//! been edited by hand: plain absolute paths of the shapes above, owned by the caller or root,
//! never the home directory or a directory holding it, never a system or sandbox directory,
//! and only the toolchains' own variables.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use super::mounts::{TOOL, WORK, WORKSPACE};
use super::profile::{Toolchain, ToolchainKind};

/// Directories the sandbox shows anyway: a program resolving into one needs no toolchain.
const SYSTEM: [&str; 7] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// Where a toolchain path may never be, besides the system directories: what the view makes
/// itself. (`/tmp` and `/work` are tmpfs in the view, mounted before the toolchains: a
/// toolchain beneath one of those host paths is bound read-only inside it.)
const RESERVED: [&str; 7] = ["/etc", "/dev", "/proc", "/sys", "/run", WORKSPACE, TOOL];

/// The variables a toolchain entry may set inside the sandbox.
pub const ALLOWED_ENV: [&str; 12] = [
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "CARGO_HOME",
    "CARGO_TARGET_DIR",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "VIRTUAL_ENV",
    "PIP_CACHE_DIR",
    "PYTHONPYCACHEPREFIX",
    "NVM_DIR",
    "NVM_BIN",
    "npm_config_cache",
];

/// Most paths one toolchain entry binds.
const MAX_PATHS: usize = 8;

/// The user's variables [`resolve`] reads (from the process, or as recorded).
const USER_VARS: [&str; 7] = [
    "RUSTUP_HOME",
    "CARGO_HOME",
    "RUSTUP_TOOLCHAIN",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "NVM_DIR",
    "VIRTUAL_ENV",
];

/// What [`resolve`] knows of the user: their `PATH` (and where it came from), their home
/// directory and the variables that locate toolchains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserEnv {
    /// The `PATH`, as the user's shell has it.
    pub path: String,
    /// Where `path` came from, for `toolsmith doctor` (`[sandbox] path in …`, `$PATH of the
    /// daemon`).
    pub origin: String,
    /// The user's home directory, never bound whole.
    pub home: Option<PathBuf>,
    /// `RUSTUP_HOME`, `CARGO_HOME`, `RUSTUP_TOOLCHAIN`, `PYENV_ROOT`, `PYENV_VERSION`,
    /// `NVM_DIR`, `VIRTUAL_ENV`, when set.
    pub vars: BTreeMap<String, String>,
    /// The directory the shell would be in, when known: pyenv reads `.python-version` from it
    /// and its parents before the global version file.
    pub cwd: Option<PathBuf>,
}

impl UserEnv {
    /// The user's environment: `path` when one is recorded (with its origin), else this
    /// process's `PATH`; the home directory and the toolchain variables from `get`.
    pub fn new(path: Option<(&str, &str)>, get: &dyn Fn(&str) -> Option<String>) -> UserEnv {
        let (path, origin) = match path {
            Some((path, origin)) => (path.to_owned(), origin.to_owned()),
            None => (
                get("PATH").unwrap_or_default(),
                "this process's $PATH (set [sandbox] path in the configuration, or run \
                 `toolsmith install --user` from your shell, to use your shell's)"
                    .to_owned(),
            ),
        };
        let vars = USER_VARS
            .iter()
            .filter_map(|name| {
                get(name)
                    .filter(|v| !v.is_empty())
                    .map(|v| ((*name).to_owned(), v))
            })
            .collect();
        UserEnv {
            path,
            origin,
            home: get("HOME")
                .filter(|h| h.starts_with('/'))
                .map(PathBuf::from),
            vars,
            cwd: None,
        }
    }

    /// From this process's environment, with `path` when one is recorded.
    pub fn from_process(path: Option<(&str, &str)>) -> UserEnv {
        UserEnv::new(path, &|name| std::env::var(name).ok())
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// The `PATH`'s directories, in order (empty and relative entries are skipped: they name
    /// the shell's working directory, which a tool does not share).
    pub fn dirs(&self) -> impl Iterator<Item = &Path> {
        self.path
            .split(':')
            .filter(|d| d.starts_with('/'))
            .map(Path::new)
    }
}

/// Where a program comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Resolution {
    /// Not on the user's `PATH`.
    NotFound,
    /// In a system directory: the sandbox shows it without a toolchain.
    System {
        /// Where it was found.
        found: PathBuf,
    },
    /// In one of the user's toolchains.
    Toolchain {
        /// Where it was found on the `PATH`.
        found: PathBuf,
        /// The real binary it runs.
        real: PathBuf,
        /// What to bind.
        toolchain: Toolchain,
    },
    /// Found, but in nothing the sandbox knows how to show.
    Unusable {
        /// Where it was found.
        found: PathBuf,
        /// Why, and what to do.
        why: String,
    },
}

/// Whether `path` lies in a system directory.
fn in_system(path: &Path) -> bool {
    SYSTEM.iter().any(|d| path.starts_with(d))
}

fn executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The first `program` on the user's `PATH`, as the shell finds it (skipping `skip`).
fn find(program: &str, user: &UserEnv, skip: Option<&Path>) -> Option<PathBuf> {
    user.dirs()
        .filter(|d| Some(*d) != skip)
        .map(|d| d.join(program))
        .find(|p| executable(p))
}

/// Where `program` comes from for the user, and, for a toolchain, what the sandbox binds and
/// sets. `workspace_writable`: whether the tool writes its workspace (else a build's output
/// goes to the run's work directory).
pub fn resolve(program: &str, user: &UserEnv, workspace_writable: bool) -> Resolution {
    if program.is_empty() || program.contains('/') {
        return Resolution::NotFound;
    }
    let Some(found) = find(program, user, None) else {
        return Resolution::NotFound;
    };
    classify(program, &found, user, workspace_writable)
}

fn unusable(found: &Path, why: String) -> Resolution {
    Resolution::Unusable {
        found: found.to_owned(),
        why,
    }
}

fn classify(program: &str, found: &Path, user: &UserEnv, writable: bool) -> Resolution {
    let real = found.canonicalize().unwrap_or_else(|_| found.to_owned());
    let dir = found.parent().unwrap_or(Path::new("/"));
    if in_system(dir) && in_system(&real) {
        return Resolution::System {
            found: found.to_owned(),
        };
    }
    let made = if real.file_name().is_some_and(|n| n == "rustup") && program != "rustup" {
        rustup(program, found, user, writable)
    } else if dir.file_name().is_some_and(|n| n == "shims")
        && dir.parent().is_some_and(|r| r.join("versions").is_dir())
    {
        return pyenv(program, found, user, writable);
    } else if let Some((version_dir, version)) = pyenv_version_bin(dir) {
        // A version's own `bin` on the PATH (`pyenv exec` puts it first for what it runs).
        venv(version_dir, ToolchainKind::Pyenv, program).map(|mut t| {
            t.env.insert("PYENV_VERSION".into(), version);
            t
        })
    } else if dir.file_name().is_some_and(|n| n == "bin")
        && dir.parent().is_some_and(|v| v.join("pyvenv.cfg").is_file())
    {
        venv(dir.parent().unwrap_or(dir), ToolchainKind::Venv, program)
    } else if let Some(version) = nvm_version(&real) {
        Ok(entry(program, ToolchainKind::Nvm, vec![version], []))
    } else if user
        .home
        .as_ref()
        .is_some_and(|h| dir == h.join(".local/bin"))
    {
        local_bin(program, &real)
    } else if in_system(&real) {
        // A link from elsewhere to a system program: the sandbox shows the target only under
        // its own name.
        return unusable(
            found,
            format!(
                "{} is a link to {}, which the sandbox shows only as {}: require that name",
                found.display(),
                real.display(),
                real.file_name().unwrap_or_default().to_string_lossy()
            ),
        );
    } else {
        Err(format!(
            "{} (really {}) is in no toolchain toolsmith knows (rustup, pyenv, a venv, nvm, \
             ~/.local/bin) nor in a system directory, so the sandbox cannot show it: install \
             it in /usr/local/bin, or drop it from the tool",
            found.display(),
            real.display()
        ))
    };
    match made {
        Ok(toolchain) => Resolution::Toolchain {
            found: found.to_owned(),
            real,
            toolchain: with_interpreter(toolchain, found, user),
        },
        Err(why) => unusable(found, why),
    }
}

fn entry<const N: usize>(
    program: &str,
    kind: ToolchainKind,
    paths: Vec<PathBuf>,
    env: [(&str, String); N],
) -> Toolchain {
    Toolchain {
        program: program.to_owned(),
        kind,
        paths,
        env: env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
    }
}

/// A rustup proxy: the active toolchain's directory and `$CARGO_HOME/bin`.
fn rustup(
    program: &str,
    found: &Path,
    user: &UserEnv,
    writable: bool,
) -> Result<Toolchain, String> {
    let bin = found.parent().unwrap_or(Path::new("/"));
    let cargo_home = user
        .var("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| bin.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    // rustup's default is `~/.rustup`, beside `~/.cargo`.
    let rustup_home = user
        .var("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| cargo_home.parent().map(|p| p.join(".rustup")))
        .unwrap_or_default();
    // rustup's order: RUSTUP_TOOLCHAIN, a `rust-toolchain(.toml)` in the directory or a
    // parent, the default.
    let name = match (
        user.var("RUSTUP_TOOLCHAIN"),
        project_toolchain(user.cwd.as_deref()),
    ) {
        (Some(name), _) => name.to_owned(),
        (None, Some(name)) => name,
        (None, None) => default_toolchain(&rustup_home)?,
    };
    let toolchains = rustup_home.join("toolchains");
    let dir = [name.clone(), format!("{name}-{}", host_triple())]
        .iter()
        .map(|n| toolchains.join(n))
        .find(|d| d.is_dir())
        .ok_or_else(|| {
            format!(
                "rustup's active toolchain `{name}` is not installed under {} (`rustup \
                 toolchain install {name}`)",
                toolchains.display()
            )
        })?;
    let dir = dir.canonicalize().unwrap_or(dir);
    if !executable(&dir.join("bin").join(program)) {
        return Err(format!(
            "rustup's toolchain {} has no `{program}` (`rustup component add` it)",
            dir.display()
        ));
    }
    let toolchain_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or(name);
    let bin = bin.canonicalize().unwrap_or_else(|_| bin.to_owned());
    let mut env = vec![
        ("CARGO_HOME", format!("{WORK}/.cargo")),
        ("RUSTUP_TOOLCHAIN", toolchain_name),
    ];
    if !writable {
        env.push(("CARGO_TARGET_DIR", format!("{WORK}/target")));
    }
    let mut t = entry(program, ToolchainKind::Rustup, vec![dir, bin], []);
    t.env = env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    Ok(t)
}

/// The toolchain a project's `rust-toolchain.toml` (`[toolchain] channel`) or `rust-toolchain`
/// names, in `cwd` or a parent.
fn project_toolchain(cwd: Option<&Path>) -> Option<String> {
    for dir in cwd?.ancestors() {
        if let Ok(text) = std::fs::read_to_string(dir.join("rust-toolchain.toml")) {
            let table: toml::Table = toml::from_str(&text).ok()?;
            return table
                .get("toolchain")
                .and_then(|t| t.get("channel"))
                .and_then(toml::Value::as_str)
                .map(str::to_owned);
        }
        if let Ok(text) = std::fs::read_to_string(dir.join("rust-toolchain")) {
            return text
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_owned);
        }
    }
    None
}

/// `default_toolchain` of rustup's `settings.toml`.
fn default_toolchain(rustup_home: &Path) -> Result<String, String> {
    let file = rustup_home.join("settings.toml");
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("cannot read rustup's settings {}: {e}", file.display()))?;
    let table: toml::Table = toml::from_str(&text)
        .map_err(|e| format!("rustup's settings {} do not parse: {e}", file.display()))?;
    table
        .get("default_toolchain")
        .and_then(toml::Value::as_str)
        .filter(|n| !n.is_empty() && !n.contains('/'))
        .map(str::to_owned)
        .ok_or_else(|| {
            format!(
                "rustup has no default toolchain in {} (`rustup default stable`)",
                file.display()
            )
        })
}

/// The target triple rustup appends to a short toolchain name.
fn host_triple() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "aarch64-unknown-linux-gnu"
    } else {
        "x86_64-unknown-linux-gnu"
    }
}

/// `dir` as `$PYENV_ROOT/versions/<version>/bin` of a pyenv installation (its root has
/// `shims`): the version's directory and name.
fn pyenv_version_bin(dir: &Path) -> Option<(&Path, String)> {
    if dir.file_name()? != "bin" {
        return None;
    }
    let version_dir = dir.parent()?;
    let versions = version_dir.parent()?;
    let root = versions.parent()?;
    if versions.file_name()? != "versions" || !root.join("shims").is_dir() {
        return None;
    }
    let version = version_dir.file_name()?.to_string_lossy().into_owned();
    Some((version_dir, version))
}

/// A pyenv shim: the selected version (`system` sends the shell on down the `PATH`).
fn pyenv(program: &str, found: &Path, user: &UserEnv, writable: bool) -> Resolution {
    let shims = found.parent().unwrap_or(Path::new("/"));
    let root = shims.parent().unwrap_or(Path::new("/")).to_path_buf();
    // pyenv's order: PYENV_VERSION, `.python-version` in the directory or a parent, the
    // global version file, else `system`.
    let local = user.cwd.as_deref().and_then(|cwd| {
        cwd.ancestors()
            .map(|d| d.join(".python-version"))
            .find_map(|f| std::fs::read_to_string(&f).ok().map(|t| (t, f)))
    });
    let (version, from) = match (user.var("PYENV_VERSION"), local) {
        (Some(v), _) => (v.to_owned(), "PYENV_VERSION".to_owned()),
        (None, Some((text, file))) => (text, file.display().to_string()),
        (None, None) => {
            let file = root.join("version");
            match std::fs::read_to_string(&file) {
                Ok(text) => (text, file.display().to_string()),
                Err(_) => ("system".to_owned(), "no version file".to_owned()),
            }
        }
    };
    // Several versions may be listed (`3.11.7:3.10.13`, or one a line): the first that has
    // the program runs it, as pyenv does.
    let versions: Vec<&str> = version
        .split([':', '\n', ' '])
        .map(str::trim)
        .filter(|v| !v.is_empty() && !v.starts_with('#'))
        .collect();
    for v in &versions {
        if *v == "system" {
            return match find(program, user, Some(shims)) {
                Some(next) => classify(program, &next, user, writable),
                None => Resolution::NotFound,
            };
        }
        if v.contains('/') || *v == ".." {
            continue;
        }
        let dir = root.join("versions").join(v);
        if !executable(&dir.join("bin").join(program)) {
            continue;
        }
        let made = venv(&dir, ToolchainKind::Pyenv, program).map(|mut t| {
            t.env.insert("PYENV_VERSION".into(), (*v).to_owned());
            t
        });
        return match made {
            Ok(toolchain) => Resolution::Toolchain {
                found: found.to_owned(),
                real: dir.join("bin").join(program),
                toolchain: with_interpreter(toolchain, found, user),
            },
            Err(why) => unusable(found, why),
        };
    }
    unusable(
        found,
        format!(
            "pyenv's selected version ({}, from {from}) has no `{program}`: install it there, \
             or select a version that has it",
            versions.join(", ")
        ),
    )
}

/// A Python prefix or virtual environment `dir` (canonical), with the base Python a
/// `pyvenv.cfg` names when that is outside the system directories.
fn venv(dir: &Path, kind: ToolchainKind, program: &str) -> Result<Toolchain, String> {
    let shown = dir.to_path_buf();
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut paths = vec![dir.clone()];
    let mut env = BTreeMap::new();
    let cfg = dir.join("pyvenv.cfg");
    if cfg.is_file() {
        let text = std::fs::read_to_string(&cfg)
            .map_err(|e| format!("cannot read {}: {e}", cfg.display()))?;
        let home = text.lines().find_map(|l| {
            let (key, value) = l.split_once('=')?;
            (key.trim() == "home").then(|| PathBuf::from(value.trim()))
        });
        if let Some(home) = home {
            let base = home.canonicalize().unwrap_or(home);
            let prefix = if base.file_name().is_some_and(|n| n == "bin") {
                base.parent().map(Path::to_path_buf).unwrap_or(base)
            } else {
                base
            };
            if !in_system(&prefix) && !paths.contains(&prefix) {
                paths.push(prefix);
            }
        }
        if kind == ToolchainKind::Venv {
            env.insert("VIRTUAL_ENV".into(), shown.display().to_string());
        }
    }
    Ok(Toolchain {
        program: program.to_owned(),
        kind,
        paths,
        env,
    })
}

/// `<nvm>/versions/node/<v>` holding `real`.
fn nvm_version(real: &Path) -> Option<PathBuf> {
    real.ancestors()
        .find(|a| {
            a.parent().is_some_and(|p| {
                p.file_name().is_some_and(|n| n == "node")
                    && p.parent()
                        .is_some_and(|v| v.file_name().is_some_and(|n| n == "versions"))
            })
        })
        .map(Path::to_path_buf)
}

/// A program of `~/.local/bin`: the virtual environment it links into (pipx), else the file.
fn local_bin(program: &str, real: &Path) -> Result<Toolchain, String> {
    if let Some(env) = real
        .ancestors()
        .skip(1)
        .find(|a| a.join("pyvenv.cfg").is_file())
    {
        return venv(env, ToolchainKind::LocalBin, program);
    }
    if real.file_name().is_none_or(|n| n != program) {
        return Err(format!(
            "~/.local/bin/{program} is a link to {}, another name: the sandbox would not find \
             it as `{program}`",
            real.display()
        ));
    }
    Ok(entry(
        program,
        ToolchainKind::LocalBin,
        vec![real.to_path_buf()],
        [],
    ))
}

/// A script's interpreter, when it lies outside the system directories and the toolchain:
/// its toolchain's paths are added (a `~/.local/bin` script run by pyenv's Python).
fn with_interpreter(mut toolchain: Toolchain, found: &Path, user: &UserEnv) -> Toolchain {
    let Some(interpreter) = shebang(found) else {
        return toolchain;
    };
    let covered = |p: &Path| toolchain.paths.iter().any(|t| p.starts_with(t));
    let real = interpreter.canonicalize().unwrap_or(interpreter.clone());
    if in_system(&real) || covered(&interpreter) || covered(&real) {
        return toolchain;
    }
    let name = interpreter
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Resolution::Toolchain { toolchain: t, .. } = classify(&name, &interpreter, user, true) {
        for path in t.paths {
            if !toolchain.paths.contains(&path) && toolchain.paths.len() < MAX_PATHS {
                toolchain.paths.push(path);
            }
        }
    }
    toolchain
}

/// The interpreter of a `#!` script (its first word, an absolute path).
fn shebang(file: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(file).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let word = std::str::from_utf8(line).ok()?.split_whitespace().next()?;
    word.starts_with('/').then(|| PathBuf::from(word))
}

/// The directories a toolchain puts first on the sandbox's `PATH`, in order: each path's
/// `bin`, a `bin` directory itself, a file's directory.
pub(crate) fn bin_dirs(toolchain: &Toolchain) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for path in &toolchain.paths {
        let dir = if path.is_file() {
            path.parent().map(Path::to_path_buf)
        } else if path.file_name().is_some_and(|n| n == "bin") {
            Some(path.clone())
        } else if path.join("bin").is_dir() {
            Some(path.join("bin"))
        } else {
            None
        };
        if let Some(dir) = dir
            && !dirs.contains(&dir)
        {
            dirs.push(dir);
        }
    }
    dirs
}

/// What a manifest's toolchain entry may hold, whatever is on the host: a program name,
/// 1–8 plain absolute paths outside the system and sandbox directories, only the toolchains'
/// own variables. Used on manifests before anything looks at the host.
pub fn check_entry(t: &Toolchain) -> Result<(), String> {
    let name_ok = !t.program.is_empty()
        && t.program.len() <= 64
        && t.program
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b));
    if !name_ok {
        return Err(format!(
            "program `{}` must be a program name (no paths, no spaces)",
            t.program.escape_debug()
        ));
    }
    if t.paths.is_empty() || t.paths.len() > MAX_PATHS {
        return Err(format!("paths: give 1 to {MAX_PATHS} paths"));
    }
    for path in &t.paths {
        let plain = path.is_absolute()
            && path.to_str().is_some()
            && path
                .components()
                .skip(1)
                .all(|c| matches!(c, Component::Normal(_)))
            && path.components().count() > 1;
        if !plain {
            return Err(format!(
                "paths: `{}` must be a plain absolute path (no `.`, `..` or `//`), not `/`",
                path.display()
            ));
        }
        if let Some(dir) = SYSTEM
            .iter()
            .chain(&RESERVED)
            .find(|d| path.starts_with(d) || Path::new(d).starts_with(path))
        {
            return Err(format!(
                "paths: `{}` is or holds {dir}, which the sandbox shows (or hides) itself: \
                 a toolchain lies elsewhere",
                path.display()
            ));
        }
    }
    for (name, value) in &t.env {
        if !ALLOWED_ENV.contains(&name.as_str()) {
            return Err(format!(
                "env: `{}` is not a toolchain's variable (allowed: {})",
                name.escape_debug(),
                ALLOWED_ENV.join(", ")
            ));
        }
        if value.len() > 4096 || value.contains('\0') {
            return Err(format!(
                "env: {name}'s value is too long or holds a NUL byte"
            ));
        }
    }
    Ok(())
}

/// Checks a manifest's toolchain entry against the host before a run binds it: [`check_entry`],
/// then each path exists, is owned by the caller (`uid`) or root, is neither the home directory
/// (`home`) nor holds it, and has the shape of its kind. The message says what is wrong.
pub fn check(t: &Toolchain, uid: u32, home: Option<&Path>) -> Result<(), String> {
    check_entry(t)?;
    for path in &t.paths {
        let meta = std::fs::metadata(path).map_err(|e| {
            format!(
                "`{}` ({} toolchain of `{}`) cannot be used: {e}; generate the tool again \
                 (`toolsmith heal`) if the toolchain moved",
                path.display(),
                t.kind,
                t.program
            )
        })?;
        if meta.uid() != uid && meta.uid() != 0 {
            return Err(format!(
                "`{}` belongs to uid {}, neither the caller ({uid}) nor root: another user's \
                 files are never bound",
                path.display(),
                meta.uid()
            ));
        }
        let real = path.canonicalize().unwrap_or_else(|_| path.clone());
        if real != *path {
            return Err(format!(
                "`{}` is not its real path ({}): a toolchain is bound where it really is",
                path.display(),
                real.display()
            ));
        }
        if let Some(home) = home {
            let home = home.canonicalize().unwrap_or_else(|_| home.to_path_buf());
            if home.starts_with(&real) {
                return Err(format!(
                    "`{}` is or holds the home directory {}: a toolchain is bound, never the \
                     whole home",
                    path.display(),
                    home.display()
                ));
            }
        }
        if !shaped(t.kind, path, &meta, home) {
            return Err(format!(
                "`{}` does not look like part of a {} toolchain ({}): fix the manifest, or \
                 generate the tool again",
                path.display(),
                t.kind,
                shape_of(t.kind)
            ));
        }
    }
    Ok(())
}

fn shape_of(kind: ToolchainKind) -> &'static str {
    match kind {
        ToolchainKind::Rustup => {
            "a directory under `toolchains/` with `bin/`, or a `bin` with rustup"
        }
        ToolchainKind::Pyenv => "a directory under `versions/` with `bin/`, or a Python prefix",
        ToolchainKind::Venv => "a directory with `pyvenv.cfg`, or a Python prefix",
        ToolchainKind::Nvm => "a directory under `versions/node/` with `bin/node`",
        ToolchainKind::LocalBin => {
            "a file under ~/.local/bin, or a directory with `pyvenv.cfg`, or a Python prefix"
        }
    }
}

/// Whether `path` has the shape of its kind.
fn shaped(kind: ToolchainKind, path: &Path, meta: &std::fs::Metadata, home: Option<&Path>) -> bool {
    let parent_named = |name: &str| {
        path.parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == name)
    };
    let python_prefix = || {
        path.join("bin").is_dir()
            && std::fs::read_dir(path.join("lib")).is_ok_and(|mut d| {
                d.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("python")))
            })
    };
    let venv = || path.join("pyvenv.cfg").is_file();
    match kind {
        ToolchainKind::Rustup => {
            meta.is_dir()
                && ((parent_named("toolchains") && path.join("bin").is_dir())
                    || (path.file_name().is_some_and(|n| n == "bin")
                        && path.join("rustup").is_file()))
        }
        ToolchainKind::Pyenv => {
            meta.is_dir()
                && ((parent_named("versions") && path.join("bin").is_dir()) || python_prefix())
        }
        ToolchainKind::Venv => meta.is_dir() && (venv() || python_prefix()),
        ToolchainKind::Nvm => {
            meta.is_dir()
                && parent_named("node")
                && path
                    .parent()
                    .and_then(Path::parent)
                    .and_then(Path::file_name)
                    .is_some_and(|n| n == "versions")
                && path.join("bin/node").is_file()
        }
        ToolchainKind::LocalBin => {
            (meta.is_file()
                && home.is_some_and(|h| {
                    path.parent() == Some(h.join(".local/bin").as_path())
                        || path.parent()
                            == h.canonicalize()
                                .ok()
                                .map(|h| h.join(".local/bin"))
                                .as_deref()
                }))
                || (meta.is_dir() && (venv() || python_prefix()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A temporary directory outside /tmp, which a toolchain can never be in (the sandbox
    /// has its own /tmp).
    fn tmp() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("toolchain-test-")
            .tempdir_in("/var/tmp")
            .expect("tmp")
    }

    fn exe(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    fn user(path: String, home: &Path, vars: &[(&str, &str)]) -> UserEnv {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let home = home.to_path_buf();
        UserEnv::new(Some((&path, "test")), &move |name| {
            if name == "HOME" {
                Some(home.display().to_string())
            } else {
                vars.get(name).cloned()
            }
        })
    }

    fn toolchain(r: Resolution) -> Toolchain {
        match r {
            Resolution::Toolchain { toolchain, .. } => toolchain,
            other => panic!("not a toolchain: {other:?}"),
        }
    }

    #[test]
    fn rustup_proxies_resolve_to_the_default_toolchain_and_cargo_bin() {
        let tmp = tmp();
        let home = tmp.path().canonicalize().expect("canonical");
        exe(&home.join(".cargo/bin/rustup"), "");
        symlink("rustup", home.join(".cargo/bin/cargo")).expect("link");
        let tc = home.join(".rustup/toolchains/stable-x86_64-unknown-linux-gnu");
        exe(&tc.join("bin/cargo"), "");
        std::fs::write(
            home.join(".rustup/settings.toml"),
            "version = \"12\"\ndefault_toolchain = \"stable-x86_64-unknown-linux-gnu\"\n",
        )
        .expect("settings");
        let path = format!("{}/.cargo/bin:/usr/bin:/bin", home.display());
        let t = toolchain(resolve("cargo", &user(path.clone(), &home, &[]), false));
        assert_eq!(t.kind, ToolchainKind::Rustup);
        assert_eq!(t.paths, [tc.clone(), home.join(".cargo/bin")]);
        assert_eq!(t.env["CARGO_HOME"], "/work/.cargo");
        assert_eq!(t.env["CARGO_TARGET_DIR"], "/work/target");
        assert_eq!(t.env["RUSTUP_TOOLCHAIN"], "stable-x86_64-unknown-linux-gnu");
        assert_eq!(bin_dirs(&t), [tc.join("bin"), home.join(".cargo/bin")]);
        assert!(check_entry(&t).is_ok(), "{t:?}");
        // A writable workspace keeps the build's output where the user's habit put it.
        let t = toolchain(resolve("cargo", &user(path.clone(), &home, &[]), true));
        assert!(!t.env.contains_key("CARGO_TARGET_DIR"));
        // A toolchain without the program says which component is missing.
        symlink("rustup", home.join(".cargo/bin/rustfmt")).expect("link");
        let r = resolve("rustfmt", &user(path.clone(), &home, &[]), true);
        assert!(
            matches!(&r, Resolution::Unusable { why, .. } if why.contains("rustup component add")),
            "{r:?}"
        );
        // A project's rust-toolchain.toml names another one, by its short name.
        let nightly = home.join(".rustup/toolchains/nightly-x86_64-unknown-linux-gnu");
        exe(&nightly.join("bin/cargo"), "");
        std::fs::create_dir_all(home.join("proj/src")).expect("mkdir");
        std::fs::write(
            home.join("proj/rust-toolchain.toml"),
            "[toolchain]\nchannel = \"nightly\"\n",
        )
        .expect("write");
        let mut inside = user(path.clone(), &home, &[]);
        inside.cwd = Some(home.join("proj/src"));
        assert_eq!(toolchain(resolve("cargo", &inside, true)).paths[0], nightly);
        // RUSTUP_TOOLCHAIN names another one, by its short name.
        let t = toolchain(resolve(
            "cargo",
            &user(path, &home, &[("RUSTUP_TOOLCHAIN", "nightly")]),
            true,
        ));
        assert_eq!(t.paths[0], nightly);
        assert!(check_entry(&t).is_ok());
    }

    #[test]
    fn pyenv_shims_resolve_to_the_selected_version() {
        let tmp = tmp();
        let home = tmp.path().canonicalize().expect("canonical");
        let root = home.join(".pyenv");
        exe(
            &root.join("shims/python"),
            "#!/usr/bin/env bash\nexec pyenv exec python\n",
        );
        exe(&root.join("shims/aws"), "");
        exe(&root.join("versions/3.11.7/bin/python"), "");
        exe(&root.join("versions/3.12.1/bin/python"), "");
        exe(&root.join("versions/3.12.1/bin/aws"), "");
        std::fs::write(root.join("version"), "3.11.7\n").expect("version");
        let path = format!("{}/shims:/usr/bin:/bin", root.display());
        let t = toolchain(resolve("python", &user(path.clone(), &home, &[]), true));
        assert_eq!(t.kind, ToolchainKind::Pyenv);
        assert_eq!(t.paths, [root.join("versions/3.11.7")]);
        assert_eq!(t.env["PYENV_VERSION"], "3.11.7");
        // PYENV_VERSION wins over the global file.
        let t = toolchain(resolve(
            "python",
            &user(path.clone(), &home, &[("PYENV_VERSION", "3.12.1")]),
            true,
        ));
        assert_eq!(t.paths, [root.join("versions/3.12.1")]);
        // A project's `.python-version` wins over the global file, in its directory and below.
        let project = home.join("proj/sub");
        std::fs::create_dir_all(&project).expect("mkdir");
        std::fs::write(home.join("proj/.python-version"), "3.12.1\n").expect("local");
        let mut inside = user(path.clone(), &home, &[]);
        inside.cwd = Some(project);
        let t = toolchain(resolve("python", &inside, true));
        assert_eq!(t.paths, [root.join("versions/3.12.1")]);
        // A shim of a program the selected version lacks is what pyenv says it is.
        let r = resolve("aws", &user(path.clone(), &home, &[]), true);
        assert!(
            matches!(&r, Resolution::Unusable { why, .. } if why.contains("has no `aws`")),
            "{r:?}"
        );
        // `system` goes on down the PATH.
        std::fs::write(root.join("version"), "system\n").expect("version");
        exe(&root.join("shims/sh"), "");
        let r = resolve("sh", &user(path, &home, &[]), true);
        assert!(matches!(r, Resolution::System { .. }), "{r:?}");
    }

    /// What `pyenv exec` runs sees the selected version's `bin` first on its PATH, not the
    /// shims: a program found there is that pyenv version's, not a program of nowhere.
    #[test]
    fn a_pyenv_versions_own_bin_on_the_path_is_that_version() {
        let tmp = tmp();
        let home = tmp.path().canonicalize().expect("canonical");
        let root = home.join(".pyenv");
        exe(&root.join("shims/coverage"), "");
        exe(&root.join("versions/3.11.7/bin/coverage"), "");
        let path = format!(
            "{}/versions/3.11.7/bin:{}/shims:/usr/bin:/bin",
            root.display(),
            root.display()
        );
        let t = toolchain(resolve("coverage", &user(path, &home, &[]), true));
        assert_eq!(t.kind, ToolchainKind::Pyenv);
        assert_eq!(t.paths, [root.join("versions/3.11.7")]);
        assert_eq!(t.env["PYENV_VERSION"], "3.11.7");
        assert!(check_entry(&t).is_ok());
        // A `bin` under some other `versions` directory is no pyenv's.
        let other = home.join("opt/versions/1.0/bin/tool");
        exe(&other, "");
        let path = format!("{}:/usr/bin:/bin", other.parent().expect("bin").display());
        let r = resolve("tool", &user(path, &home, &[]), true);
        assert!(matches!(r, Resolution::Unusable { .. }), "{r:?}");
    }

    #[test]
    fn venvs_bind_themselves_and_their_base_python() {
        let tmp = tmp();
        let home = tmp.path().canonicalize().expect("canonical");
        let base = home.join("py/3.11");
        exe(&base.join("bin/python3"), "");
        std::fs::create_dir_all(base.join("lib/python3.11")).expect("lib");
        let venv = home.join("proj/.venv");
        std::fs::create_dir_all(venv.join("bin")).expect("bin");
        symlink(base.join("bin/python3"), venv.join("bin/python3")).expect("link");
        exe(
            &venv.join("bin/pytest"),
            &format!("#!{}/bin/python3\n", venv.display()),
        );
        std::fs::write(
            venv.join("pyvenv.cfg"),
            format!("home = {}/bin\nversion = 3.11.7\n", base.display()),
        )
        .expect("cfg");
        let path = format!("{}/bin:/usr/bin", venv.display());
        let t = toolchain(resolve("pytest", &user(path, &home, &[]), true));
        assert_eq!(t.kind, ToolchainKind::Venv);
        assert_eq!(t.paths, [venv.clone(), base.clone()]);
        assert_eq!(t.env["VIRTUAL_ENV"], venv.display().to_string());
        assert_eq!(bin_dirs(&t), [venv.join("bin"), base.join("bin")]);
        for p in &t.paths {
            assert!(!home.starts_with(p), "never the home directory");
        }
    }

    #[test]
    fn nvm_and_local_bin() {
        let tmp = tmp();
        let home = tmp.path().canonicalize().expect("canonical");
        let node = home.join(".nvm/versions/node/v20.11.0");
        exe(&node.join("bin/node"), "");
        exe(&home.join("tool-1.2"), "");
        exe(&home.join(".local/bin/mytool"), "");
        symlink(home.join("tool-1.2"), home.join(".local/bin/other")).expect("link");
        let path = format!(
            "{}/bin:{}/.local/bin:/usr/bin",
            node.display(),
            home.display()
        );
        let u = user(path, &home, &[]);
        let t = toolchain(resolve("node", &u, true));
        assert_eq!((t.kind, t.paths.clone()), (ToolchainKind::Nvm, vec![node]));
        let t = toolchain(resolve("mytool", &u, true));
        assert_eq!(t.kind, ToolchainKind::LocalBin);
        assert_eq!(t.paths, [home.join(".local/bin/mytool")]);
        assert!(matches!(
            resolve("other", &u, true),
            Resolution::Unusable { .. }
        ));
        assert_eq!(resolve("no-such-program", &u, true), Resolution::NotFound);
        assert!(matches!(resolve("sh", &u, true), Resolution::System { .. }));
    }

    #[test]
    fn hand_edited_entries_are_refused() {
        let tmp = tmp();
        let home = tmp.path().canonicalize().expect("canonical");
        let tc = |paths: Vec<PathBuf>, env: &[(&str, &str)]| Toolchain {
            program: "cargo".into(),
            kind: ToolchainKind::Rustup,
            paths,
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        };
        for (paths, env, wanted) in [
            (vec![PathBuf::from("/")], vec![], "plain absolute"),
            (vec!["/home/a/../b".into()], vec![], "plain absolute"),
            (vec!["relative".into()], vec![], "plain absolute"),
            (vec!["/usr/lib/rust".into()], vec![], "/usr"),
            (vec!["/workspace/x".into()], vec![], "/workspace"),
            (vec![], vec![], "1 to 8"),
            (
                vec!["/opt/x".into()],
                vec![("LD_PRELOAD", "/x.so")],
                "LD_PRELOAD",
            ),
            (vec!["/opt/x".into()], vec![("PATH", "/x")], "PATH"),
        ] {
            let err = check_entry(&tc(paths, &env)).expect_err(wanted);
            assert!(err.contains(wanted), "{err}");
        }
        // The home directory itself, or anything not shaped like the kind, is refused.
        let err = check(&tc(vec![home.clone()], &[]), 0, Some(&home)).expect_err("home");
        assert!(err.contains("never the whole home"), "{err}");
        std::fs::create_dir_all(home.join(".ssh")).expect("mkdir");
        let err = check(&tc(vec![home.join(".ssh")], &[]), 0, Some(&home)).expect_err("shape");
        assert!(err.contains("does not look like"), "{err}");
        let err = check(&tc(vec![home.join("gone")], &[]), 0, Some(&home)).expect_err("gone");
        assert!(err.contains("cannot be used"), "{err}");
    }

    /// This machine's own toolchains, when it has them: what `toolsmith doctor` shows.
    #[test]
    fn this_machines_cargo_resolves_through_rustup() {
        let u = UserEnv::from_process(None);
        match resolve("cargo", &u, true) {
            Resolution::Toolchain { toolchain, .. } => {
                assert_eq!(toolchain.kind, ToolchainKind::Rustup);
                assert!(toolchain.paths[0].join("bin/cargo").is_file());
                assert!(check_entry(&toolchain).is_ok(), "{toolchain:?}");
            }
            other => eprintln!("cargo is not from rustup here: {other:?}"),
        }
    }
}
