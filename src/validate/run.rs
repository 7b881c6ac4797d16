//! The validation runner: every check a candidate's files go through, in order, each with a
//! verdict a person (and, in the repair loop, a model) can read.
//!
//! 1. **manifest**: `tool.yaml` parses and passes its checks; the entry point is among the
//!    files; its limits are within the policy's maxima; `tests/cases.json` is readable.
//! 2. **static**: `sh -n` on shell code, `shellcheck` when installed, `py_compile` on Python
//!    code, `ruff` when installed. These only read the code, yet they run in the sandbox too:
//!    generated code and the tools that parse it never meet outside it.
//! 3. **policy**: the code policy's capability domains and rules ([`super::policy`]).
//! 4. **requires**: every program of `runtime.requires` is found on the sandbox's `PATH`,
//!    looked up with `command -v` inside the sandbox (never on the host).
//! 5. **tests**: each case of `tests/cases.json`, run in the sandbox with the tool's profile,
//!    the tool's files read-only at `/tool` and an empty scratch workspace.
//! 6. **schema**: for a JSON tool, the output of every real run that succeeded is JSON and
//!    matches the manifest's output schema.
//!
//! Code that failed the static checks or the policy, or that needs a program the sandbox
//! lacks, does not run. When everything passes,
//! the result is the manifest's `validation:` (the checks passed, the test counts, the total
//! runtime, the peak memory and the digest of the profile and the files, `sha256v2:`).
//!
//! [`Validator::validate`] blocks (each sandbox run does): call it from a thread that lives
//! until it returns, e.g. `tokio::task::spawn_blocking`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::report::{CheckLayer, CheckReport, Diagnostics};
use crate::package::digest::digest_v2;
use crate::package::manifest::{self, Language, Manifest, OutputKind, TestCounts};
use crate::sandbox::Limits;
use crate::sandbox::Need;
use crate::sandbox::{self, Exit, OwnPlaces, Profile, SandboxPolicy, SandboxSpec, WorkspaceAccess};
use crate::validate::cases::{self, CASES_FILE, Cases, Observed};
use crate::validate::policy::{CodePolicy, Severity};

/// The built-in policy file's text: the `[validate]` rules and the `[sandbox]` table.
pub const DEFAULT_POLICY: &str = include_str!("../../policies/default.toml");

/// The built-in policy with `hosts` (`host:port` patterns) granted in its `[grants]` table, as a
/// user would add them there (the table already holds the toolchains' grant, so a second
/// `[grants]` table may not be appended): the demo's policy, and tests'.
pub fn default_policy_granting(hosts: &[String]) -> String {
    let listed: Vec<String> = hosts
        .iter()
        .map(|h| toml::Value::String(h.clone()).to_string())
        .collect();
    DEFAULT_POLICY.replacen(
        "\n[grants]\n",
        &format!("\n[grants]\nhosts = [{}]\n", listed.join(", ")),
        1,
    )
}

/// The longest a test case may run, seconds, whatever the profile allows: derived tests are
/// dry runs and `--help`, which take milliseconds.
pub const MAX_CASE_WALL_S: u32 = 60;

/// Stdin of a test case handed to the tool, at most (it travels in an environment variable).
pub const MAX_STDIN_BYTES: usize = 64 * 1024;

/// How long a static check may run, seconds.
const STATIC_WALL_S: u32 = 30;

/// Directories of the sandbox's `PATH` that the host shares with it, where checkers are looked
/// for.
const CHECKER_DIRS: [&str; 4] = ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin"];

/// The script that looks the required programs up in the sandbox: it prints the sandbox's
/// `PATH`, then each program `command -v` does not find, one a line.
const REQUIRES_SCRIPT: &str = "printf 'PATH=%s\\n' \"$PATH\"; for p do command -v \"$p\" >/dev/null 2>&1 || \
     printf '%s\\n' \"$p\"; done";

/// The variable a case's stdin travels in, to the wrapper that feeds it to the tool.
const STDIN_VAR: &str = "TOOLSMITH_TEST_STDIN";

/// What validation found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Every check's verdict, in order.
    pub checks: Vec<CheckReport>,
    /// The manifest, when it could be read.
    pub manifest: Option<Manifest>,
    /// The `validation:` of the manifest, when every check passed.
    pub validation: Option<manifest::Validation>,
    /// Test counts.
    pub tests: TestCounts,
    /// What the tool needs that the policy asks a person to grant at review (programs of
    /// `ask` domains, hosts, host sockets, credential files), sorted; validation ran without
    /// them and counted nothing that needs them as a failure.
    pub needs: Vec<Need>,
}

impl Outcome {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.validation.is_some()
    }

    /// One line: what passed, or the first failures.
    pub fn summary(&self) -> String {
        if self.passed() {
            let mut text = format!(
                "passed {} checks and {} tests",
                self.checks
                    .iter()
                    .filter(|c| c.layer != CheckLayer::Tests)
                    .count(),
                self.tests.passed
            );
            if !self.needs.is_empty() {
                text.push_str(&format!(
                    "; needs a grant at review: {}",
                    crate::sandbox::needs::list(&self.needs)
                ));
            }
            return text;
        }
        let failed: Vec<String> = self
            .checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| {
                let first = c.details.first().map(|d| {
                    let line = d.lines().next().unwrap_or_default();
                    format!(": {}", clip_at_word(line, 160))
                });
                format!("[{}] {}{}", c.layer, c.name, first.unwrap_or_default())
            })
            .collect();
        let shown: Vec<&String> = failed.iter().take(3).collect();
        let more = failed.len().saturating_sub(3);
        let mut text = format!(
            "failed {}",
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
        if more > 0 {
            text.push_str(&format!(" (and {more} more)"));
        }
        text
    }

    /// The verdicts as staged diagnostics.
    pub fn diagnostics(&self, generator: &str) -> Diagnostics {
        Diagnostics {
            generator: generator.to_owned(),
            passed: self.passed(),
            checks: self.checks.clone(),
            finished: jiff::Timestamp::now().to_string(),
        }
    }
}

/// Runs the checks.
#[derive(Debug, Clone)]
pub struct Validator {
    /// The code policy.
    pub code_policy: CodePolicy,
    /// The sandbox policy every run is under.
    pub sandbox_policy: SandboxPolicy,
    /// The binary that serves as the sandbox helper (`None`: this process's own executable).
    pub helper: Option<PathBuf>,
    /// Where scratch workspaces are made (one per test case, removed after it).
    pub scratch: PathBuf,
    /// toolsmith's own places, which no run may see (the scratch workspaces under the state
    /// directory excepted); none unless the caller sets them.
    pub own: OwnPlaces,
}

/// A validator that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ValidatorError {
    /// The code policy is unusable.
    #[error(transparent)]
    Code(#[from] crate::validate::policy::PolicyError),
    /// The sandbox policy is unusable.
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxPolicyError),
    /// The policy file could not be read.
    #[error(
        "cannot read the policy file {file}: {source}; fix generate.policy in the configuration, \
         or remove it to use the built-in policy"
    )]
    Read {
        /// The policy file.
        file: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The `[review]` table (auto-approval rules) is unusable.
    #[error("invalid auto-approval rules: {0}")]
    Review(String),
}

fn check(layer: CheckLayer, name: &str, passed: bool, details: Vec<String>) -> CheckReport {
    CheckReport {
        layer,
        name: name.to_owned(),
        passed,
        details,
    }
}

/// Whether `program` is installed where the sandbox can run it.
fn installed(program: &str) -> bool {
    CHECKER_DIRS
        .iter()
        .any(|dir| Path::new(dir).join(program).is_file())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh, empty directory under `root`.
fn scratch_dir(root: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(root)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for n in 0u32.. {
        let dir = root.join(format!("ws-{}-{nanos:x}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free scratch directory name"))
}

impl Validator {
    /// A validator under the policy file's text (`file` names it in errors), making scratch
    /// workspaces under `scratch`.
    pub fn new(policy_text: &str, file: &str, scratch: PathBuf) -> Result<Self, ValidatorError> {
        Ok(Validator {
            code_policy: CodePolicy::from_toml(policy_text, file)?,
            sandbox_policy: SandboxPolicy::from_toml(policy_text, file)?,
            helper: None,
            scratch,
            own: OwnPlaces::none(),
        })
    }

    /// A validator under the policy file at `path` (both its `[validate]` and its `[sandbox]`
    /// tables), making scratch workspaces under `scratch`.
    pub fn from_file(path: &Path, scratch: PathBuf) -> Result<Self, ValidatorError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ValidatorError::Read {
            file: file.clone(),
            source,
        })?;
        Validator::new(&text, &file, scratch)
    }

    /// A validator under the built-in policy.
    pub fn with_default_policy(scratch: PathBuf) -> Result<Self, ValidatorError> {
        Validator::new(
            DEFAULT_POLICY,
            crate::sandbox::policy::DEFAULT_FILE,
            scratch,
        )
    }

    fn spec(&self, command: Vec<String>, tool_dir: &Path, profile: Profile) -> SandboxSpec {
        let mut spec = SandboxSpec::new(command);
        spec.profile = profile;
        spec.tool_dir = Some(tool_dir.to_owned());
        spec.policy = self.sandbox_policy.clone();
        spec.helper = self.helper.clone();
        spec.own = self.own.clone();
        spec
    }

    /// Validates the tool whose `files` are written in `tool_dir`.
    pub fn validate(&self, tool_dir: &Path, files: &BTreeMap<String, String>) -> Outcome {
        self.validate_until(tool_dir, files, &|| false)
    }

    /// Like [`Validator::validate`], stopping between test cases once `stop` says so (the
    /// daemon is shutting down); the outcome then fails with an `interrupted` check.
    pub fn validate_until(
        &self,
        tool_dir: &Path,
        files: &BTreeMap<String, String>,
        stop: &dyn Fn() -> bool,
    ) -> Outcome {
        let mut outcome = Outcome {
            checks: Vec::new(),
            manifest: None,
            validation: None,
            tests: TestCounts {
                passed: 0,
                failed: 0,
            },
            needs: Vec::new(),
        };
        let Some((manifest, cases)) =
            self.manifest_layer(files, &mut outcome.checks, &mut outcome.needs)
        else {
            return outcome;
        };
        // Needs are found here and grants given at approval, never taken from the files: what
        // the manifest said of them is dropped from what is staged and proposed.
        let mut staged = manifest.clone();
        staged.needs.clear();
        staged.granted.clear();
        outcome.manifest = Some(staged);
        let static_ok = self.static_layer(&manifest, tool_dir, files, &mut outcome.checks);
        let policy_ok =
            self.policy_layer(&manifest, files, &mut outcome.checks, &mut outcome.needs);
        outcome.needs.sort();
        outcome.needs.dedup();
        if !(static_ok && policy_ok) {
            outcome.checks.push(check(
                CheckLayer::Tests,
                "not run",
                false,
                vec![format!(
                    "the tests do not run while the {} checks fail",
                    match (static_ok, policy_ok) {
                        (false, false) => "static and policy",
                        (false, true) => "static",
                        _ => "policy",
                    }
                )],
            ));
            return outcome;
        }
        if !self.requires_layer(&manifest, tool_dir, &mut outcome.checks) {
            outcome.checks.push(check(
                CheckLayer::Tests,
                "not run",
                false,
                vec!["the tests do not run while a required program is missing".into()],
            ));
            return outcome;
        }
        let runs = self.test_layer(&manifest, &cases, tool_dir, stop, &mut outcome);
        let schema_ok = self.schema_layer(&manifest, &runs, &mut outcome.checks);
        if outcome.checks.iter().all(|c| c.passed) && schema_ok {
            let mut names: Vec<String> = Vec::new();
            for c in outcome
                .checks
                .iter()
                .filter(|c| c.layer != CheckLayer::Tests)
            {
                // Static checks are named by checker and file; the other layers by layer.
                let name = if c.layer != CheckLayer::Static {
                    c.layer.as_str().to_owned()
                } else {
                    c.name.clone()
                };
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            names.push("tests".into());
            outcome.validation = Some(manifest::Validation {
                checks: names,
                tests: outcome.tests,
                runtime_ms: runs.iter().map(|r| r.runtime_ms).sum(),
                peak_memory_kb: runs.iter().filter_map(|r| r.peak_memory_kb).max(),
                digest: digest_v2(files, &manifest),
            });
        }
        outcome
    }

    /// The manifest and the cases, or `None` after reporting why not.
    fn manifest_layer(
        &self,
        files: &BTreeMap<String, String>,
        checks: &mut Vec<CheckReport>,
        needs: &mut Vec<Need>,
    ) -> Option<(Manifest, Cases)> {
        let Some(text) = files.get(manifest::FILE_NAME) else {
            checks.push(check(
                CheckLayer::Manifest,
                manifest::FILE_NAME,
                false,
                vec!["the tool has no tool.yaml".into()],
            ));
            return None;
        };
        let manifest = match Manifest::parse(text, manifest::FILE_NAME) {
            Ok(m) => m,
            Err(e) => {
                checks.push(check(
                    CheckLayer::Manifest,
                    manifest::FILE_NAME,
                    false,
                    vec![e.to_string()],
                ));
                return None;
            }
        };
        let mut problems = Vec::new();
        let entry = &manifest.runtime.entrypoint;
        if !files.contains_key(entry) {
            problems.push(format!(
                "the entry point `{entry}` named by runtime.entrypoint is not among the files \
                 ({})",
                files.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        let expected_ext = match manifest.runtime.language {
            Language::Sh | Language::Bash => ".sh",
            Language::Python => ".py",
        };
        if !entry.ends_with(expected_ext) {
            problems.push(format!(
                "the entry point `{entry}` does not end in {expected_ext}, as a {:?} tool's does",
                manifest.runtime.language
            ));
        }
        // A profile asking for more than the policy allows would run with less than it says
        // (the sandbox lowers it): refused here, so that what is reviewed is what runs.
        // Validation runs with the grants: a toolchain the policy does not allow is refused
        // with the line that would allow it, before anything runs.
        let grants = &self.sandbox_policy.grants;
        for toolchain in &manifest.sandbox.toolchains {
            if let Some(why) = grants.toolchain_refusal(toolchain, &self.sandbox_policy.file) {
                problems.push(why);
            }
        }
        for above in self.sandbox_policy.above_max(&manifest.sandbox.limits) {
            problems.push(format!(
                "{above} is above the maximum of the policy {} ([sandbox.max]): lower it in \
                 the manifest, or raise the maximum in the policy",
                self.sandbox_policy.file
            ));
        }
        // What the tool may reach must be grantable under this policy: what it denies is
        // refused here, with the line that denies it and the line that would allow it, before
        // anything of the tool runs; what it asks for is a need, granted at review.
        let (asked, refused) = super::needs::reach_needs(&manifest, &self.sandbox_policy);
        needs.extend(asked);
        problems.extend(refused);
        checks.push(check(
            CheckLayer::Manifest,
            manifest::FILE_NAME,
            problems.is_empty(),
            problems,
        ));
        let cases = match files.get(CASES_FILE) {
            None => Err(format!("there is no {CASES_FILE}: a tool needs tests")),
            Some(text) => Cases::parse(text, CASES_FILE).map_err(|e| e.to_string()),
        };
        match cases {
            Ok(cases) => {
                checks.push(check(CheckLayer::Manifest, CASES_FILE, true, Vec::new()));
                if checks.iter().all(|c| c.passed) {
                    Some((manifest, cases))
                } else {
                    None
                }
            }
            Err(problem) => {
                checks.push(check(
                    CheckLayer::Manifest,
                    CASES_FILE,
                    false,
                    vec![problem],
                ));
                None
            }
        }
    }

    /// Runs a checker over one file in the sandbox: `(exit code, stdout and stderr)`.
    fn run_checker(
        &self,
        command: Vec<String>,
        tool_dir: &Path,
    ) -> Result<(Option<i32>, String), String> {
        self.run_checker_with(command, tool_dir, Vec::new())
    }

    /// [`Validator::run_checker`] with the user's `toolchains` bound (the requires layer looks
    /// programs up where the tool's runs will).
    fn run_checker_with(
        &self,
        command: Vec<String>,
        tool_dir: &Path,
        toolchains: Vec<sandbox::Toolchain>,
    ) -> Result<(Option<i32>, String), String> {
        let profile = Profile {
            toolchains,
            workspace: WorkspaceAccess::None,
            limits: Limits {
                wall_s: STATIC_WALL_S,
                cpu_s: STATIC_WALL_S,
                ..Limits::default()
            },
            ..Profile::default()
        };
        let spec = self.spec(command, tool_dir, profile);
        let report = sandbox::run(&spec).map_err(|e| e.to_string())?;
        let mut output = text(&report.stdout.bytes);
        output.push_str(&text(&report.stderr.bytes));
        let code = match report.exit {
            Exit::Code(c) if report.limit.is_none() => Some(c),
            _ => None,
        };
        Ok((code, output.trim().to_owned()))
    }

    fn static_layer(
        &self,
        manifest: &Manifest,
        tool_dir: &Path,
        files: &BTreeMap<String, String>,
        checks: &mut Vec<CheckReport>,
    ) -> bool {
        let mut ok = true;
        let mut push = |c: CheckReport, checks: &mut Vec<CheckReport>| {
            ok &= c.passed;
            checks.push(c);
        };
        let code_files = files.keys().filter(|name| {
            name.ends_with(".sh") || name.ends_with(".py") || **name == manifest.runtime.entrypoint
        });
        for name in code_files {
            let path = format!("{}/{name}", sandbox::TOOL_DIR);
            let is_python = name.ends_with(".py")
                || (*name == manifest.runtime.entrypoint
                    && manifest.runtime.language == Language::Python);
            let mut checkers: Vec<(&str, Vec<String>)> = Vec::new();
            if is_python {
                checkers.push((
                    "py_compile",
                    vec![
                        "python3".into(),
                        "-c".into(),
                        // Compiles to a file in the sandbox's /tmp: /tool is read-only.
                        "import py_compile, sys; py_compile.compile(sys.argv[1], \
                         cfile='/tmp/check.pyc', doraise=True)"
                            .into(),
                        path.clone(),
                    ],
                ));
                if installed("ruff") {
                    checkers.push((
                        "ruff",
                        vec![
                            "ruff".into(),
                            "check".into(),
                            "--no-cache".into(),
                            "--quiet".into(),
                            // Tools run through their interpreter: file modes are not the
                            // code's concern (the registry sets them).
                            "--extend-ignore=EXE".into(),
                            path.clone(),
                        ],
                    ));
                }
            } else {
                // A bash tool's entry point is read by bash; any other shell file by sh.
                let shell = if *name == manifest.runtime.entrypoint
                    && manifest.runtime.language == Language::Bash
                {
                    "bash"
                } else {
                    "sh"
                };
                checkers.push((
                    if shell == "bash" { "bash -n" } else { "sh -n" },
                    vec![shell.into(), "-n".into(), path.clone()],
                ));
                if installed("shellcheck") {
                    checkers.push((
                        "shellcheck",
                        vec![
                            "shellcheck".into(),
                            format!("--shell={shell}"),
                            "--format=gcc".into(),
                            "--severity=warning".into(),
                            path.clone(),
                        ],
                    ));
                }
            }
            for (checker, command) in checkers {
                let label = format!("{checker} {name}");
                match self.run_checker(command, tool_dir) {
                    Err(e) => push(
                        check(
                            CheckLayer::Static,
                            &label,
                            false,
                            vec![format!("could not run in the sandbox: {e}")],
                        ),
                        checks,
                    ),
                    Ok((Some(0), _)) => {
                        push(check(CheckLayer::Static, &label, true, Vec::new()), checks)
                    }
                    Ok((code, output)) => {
                        // shellcheck's warnings are reported; only its errors fail the check.
                        let passed = checker == "shellcheck"
                            && code == Some(1)
                            && !output.lines().any(|l| l.contains(": error:"));
                        let mut details: Vec<String> = output
                            .lines()
                            .take(20)
                            .map(|l| l.replace(&format!("{}/", sandbox::TOOL_DIR), ""))
                            .collect();
                        if details.is_empty() {
                            details.push(match code {
                                Some(c) => format!("exited {c} without saying why"),
                                None => "was killed (a limit or a signal)".into(),
                            });
                        }
                        push(check(CheckLayer::Static, &label, passed, details), checks);
                    }
                }
            }
        }
        ok
    }

    /// Looks every program of `runtime.requires` up on the sandbox's `PATH`, inside the
    /// sandbox: a tool calling a program its runs cannot find fails here, before its tests,
    /// with the program named.
    fn requires_layer(
        &self,
        manifest: &Manifest,
        tool_dir: &Path,
        checks: &mut Vec<CheckReport>,
    ) -> bool {
        let requires = &manifest.runtime.requires;
        if requires.is_empty() {
            checks.push(check(
                CheckLayer::Requires,
                "runtime.requires",
                true,
                Vec::new(),
            ));
            return true;
        }
        let mut command = vec![
            "/bin/sh".to_owned(),
            "-c".to_owned(),
            REQUIRES_SCRIPT.to_owned(),
            "sh".to_owned(),
        ];
        command.extend(requires.iter().cloned());
        let toolchains = manifest.sandbox.toolchains.clone();
        let (code, output) = match self.run_checker_with(command, tool_dir, toolchains) {
            Ok(result) => result,
            Err(e) => {
                checks.push(check(
                    CheckLayer::Requires,
                    "runtime.requires",
                    false,
                    vec![format!(
                        "could not look the required programs up in the sandbox: {e}"
                    )],
                ));
                return false;
            }
        };
        let mut path = String::new();
        let mut missing: Vec<&str> = Vec::new();
        for line in output.lines() {
            match line.strip_prefix("PATH=") {
                Some(p) if path.is_empty() => path = p.to_owned(),
                _ => missing.extend(requires.iter().map(String::as_str).find(|r| *r == line)),
            }
        }
        if code != Some(0) || path.is_empty() {
            checks.push(check(
                CheckLayer::Requires,
                "runtime.requires",
                false,
                vec![format!(
                    "the lookup of the required programs in the sandbox did not finish \
                     ({}): {}",
                    code.map_or_else(|| "killed".to_owned(), |c| format!("exit {c}")),
                    output.lines().take(5).collect::<Vec<_>>().join("; ")
                )],
            ));
            return false;
        }
        let details: Vec<String> = missing
            .iter()
            .map(|program| {
                format!(
                    "`{program}` (runtime.requires) is not a program on the sandbox's PATH; \
                     an alias, function or builtin of your shell (`history`) is no program a \
                     tool can run (write the command it stands for), and a program is looked \
                     for in {path}: \
                     install it in one of those directories; a program of the \
                     user's own toolchains (rustup, pyenv, a venv, nvm, ~/.local/bin) is shown \
                     only when it is found on the user's PATH ([sandbox] path in the \
                     configuration; `toolsmith doctor` says what it finds) and the manifest's \
                     sandbox.toolchains binds it; else drop it from the tool"
                )
            })
            .collect();
        let passed = details.is_empty();
        checks.push(check(
            CheckLayer::Requires,
            "runtime.requires",
            passed,
            details,
        ));
        passed
    }

    fn policy_layer(
        &self,
        manifest: &Manifest,
        files: &BTreeMap<String, String>,
        checks: &mut Vec<CheckReport>,
        needs: &mut Vec<Need>,
    ) -> bool {
        let mut findings = Vec::new();
        let mut programs: Vec<String> = Vec::new();
        let mut requires_checked = false;
        for (name, code) in files {
            let language = if name.ends_with(".py") {
                Language::Python
            } else if name.ends_with(".sh") {
                Language::Sh
            } else if *name == manifest.runtime.entrypoint {
                manifest.runtime.language
            } else {
                continue;
            };
            // The declared programs are checked once, with the entry point.
            let requires: &[String] = if requires_checked {
                &[]
            } else {
                requires_checked = true;
                &manifest.runtime.requires
            };
            findings.extend(self.code_policy.check(language, name, code, requires));
            let called = match language {
                Language::Sh | Language::Bash => crate::validate::policy::shell_programs(code),
                Language::Python => crate::validate::policy::python_programs(code),
            };
            for program in requires
                .iter()
                .cloned()
                .chain(called.into_iter().map(|(_, p)| p))
            {
                if !programs.contains(&program) {
                    programs.push(program);
                }
            }
        }
        // A program of an `ask` domain is a need, listed for review; so are the credential
        // files of every program the tool runs, whatever its domain's level.
        for f in findings.iter().filter(|f| f.severity == Severity::Ask) {
            needs.push(Need::Program(f.excerpt.clone()));
        }
        let (credentials, refused) =
            super::needs::credential_needs(&programs, &self.code_policy, &self.sandbox_policy);
        needs.extend(credentials);
        let denied: Vec<_> = findings
            .iter()
            .filter(|f| f.severity == Severity::Deny)
            .collect();
        // The rule is the check's name; the details say where and why.
        let detail = |f: &crate::validate::policy::Finding| {
            let place = if f.line == 0 {
                format!("{} (runtime.requires)", f.file)
            } else {
                format!("{}:{}", f.file, f.line)
            };
            format!("{place}: `{}`: {}", f.excerpt, f.reason)
        };
        let warned: Vec<String> = findings
            .iter()
            .filter(|f| f.severity != Severity::Deny)
            .map(|f| format!("[{}] {}", f.rule, detail(f)))
            .collect();
        if denied.is_empty() && refused.is_empty() {
            checks.push(check(CheckLayer::Policy, "policy", true, warned));
            return true;
        }
        let mut by_rule: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for f in &denied {
            by_rule.entry(f.rule.as_str()).or_default().push(detail(f));
        }
        for (rule, details) in by_rule {
            checks.push(check(CheckLayer::Policy, rule, false, details));
        }
        if !refused.is_empty() {
            checks.push(check(CheckLayer::Policy, "credentials", false, refused));
        }
        if !warned.is_empty() {
            checks.push(check(CheckLayer::Policy, "warnings", true, warned));
        }
        false
    }

    fn test_layer(
        &self,
        manifest: &Manifest,
        cases: &Cases,
        tool_dir: &Path,
        stop: &dyn Fn() -> bool,
        outcome: &mut Outcome,
    ) -> Vec<CaseRun> {
        let mut runs = Vec::new();
        let mut profile = match Profile::try_from(&manifest.sandbox) {
            Ok(p) => p,
            Err(e) => {
                outcome.checks.push(check(
                    CheckLayer::Tests,
                    "sandbox profile",
                    false,
                    vec![e.to_string()],
                ));
                return runs;
            }
        };
        profile.limits.wall_s = profile.limits.wall_s.min(MAX_CASE_WALL_S);
        // What waits for a person's grant is not given to the tests: they run as far as the
        // sandbox allows without it (dry runs and `--help` need none of it).
        let needs = &outcome.needs;
        profile
            .hosts
            .retain(|h| !needs.contains(&Need::Host(h.clone())));
        profile
            .host_sockets
            .retain(|s| !needs.contains(&Need::Socket(s.clone())));
        let entry = format!("{}/{}", sandbox::TOOL_DIR, manifest.runtime.entrypoint);
        for case in &cases.cases {
            if stop() {
                outcome.checks.push(check(
                    CheckLayer::Tests,
                    "interrupted",
                    false,
                    vec!["validation was stopped before every case ran".into()],
                ));
                break;
            }
            let invocation = case.invocation();
            let mut command = vec![
                manifest.runtime.language.interpreter().to_owned(),
                entry.clone(),
            ];
            command.extend(invocation.args);
            let mut env = invocation.env;
            if !invocation.stdin.is_empty() {
                if invocation.stdin.len() > MAX_STDIN_BYTES {
                    outcome.tests.failed += 1;
                    outcome.checks.push(check(
                        CheckLayer::Tests,
                        &case.name,
                        false,
                        vec![format!(
                            "its stdin is {} bytes; a test case's stdin is at most \
                             {MAX_STDIN_BYTES}",
                            invocation.stdin.len()
                        )],
                    ));
                    continue;
                }
                // The sandbox's stdin is /dev/null: a small wrapper of ours feeds the case's.
                let mut wrapped = vec![
                    "/bin/sh".to_owned(),
                    "-c".to_owned(),
                    format!("printf '%s' \"${STDIN_VAR}\" | {{ unset {STDIN_VAR}; exec \"$@\"; }}"),
                    "sh".to_owned(),
                ];
                wrapped.extend(command);
                command = wrapped;
                env.push((
                    STDIN_VAR.to_owned(),
                    String::from_utf8_lossy(&invocation.stdin).into_owned(),
                ));
            }
            let workspace = match scratch_dir(&self.scratch) {
                Ok(dir) => dir,
                Err(e) => {
                    outcome.checks.push(check(
                        CheckLayer::Tests,
                        &case.name,
                        false,
                        vec![format!(
                            "cannot make a scratch workspace under {}: {e}",
                            self.scratch.display()
                        )],
                    ));
                    outcome.tests.failed += 1;
                    continue;
                }
            };
            let mut spec = self.spec(command, tool_dir, profile.clone());
            spec.env = env;
            spec.workspace = Some(workspace.clone());
            let result = sandbox::run(&spec);
            // A tool may leave read-only directories behind; make them removable first.
            let _ = make_writable(&workspace);
            let _ = std::fs::remove_dir_all(&workspace);
            let report = match result {
                Ok(r) => r,
                Err(e) => {
                    outcome.tests.failed += 1;
                    outcome.checks.push(check(
                        CheckLayer::Tests,
                        &case.name,
                        false,
                        vec![format!("the sandbox could not run it: {e}")],
                    ));
                    // A refusal or a set-up failure is the same for every case.
                    break;
                }
            };
            let (exit_code, mut ended_by) = match report.exit {
                Exit::Code(c) => (Some(c), None),
                Exit::Signal(s) => (None, Some(format!("signal {s}"))),
            };
            if let Some(limit) = report.limit {
                ended_by = Some(format!(
                    "the {} limit{}",
                    limit.as_str(),
                    if limit == sandbox::LimitHit::Wall {
                        format!(" ({} s)", profile.limits.wall_s)
                    } else {
                        String::new()
                    }
                ));
            }
            let observed = Observed {
                exit_code,
                ended_by,
                stdout: text(&report.stdout.bytes),
                stderr: text(&report.stderr.bytes),
            };
            let result = cases::check(case, manifest, &observed);
            if result.passed {
                outcome.tests.passed += 1;
            } else {
                outcome.tests.failed += 1;
            }
            outcome.checks.push(check(
                CheckLayer::Tests,
                &result.name,
                result.passed,
                result.problems,
            ));
            runs.push(CaseRun {
                name: case.name.clone(),
                dry_run: case.dry_run,
                help: invocation_is_help(case),
                exit_code,
                stdout: observed.stdout,
                runtime_ms: report.runtime_ms,
                peak_memory_kb: report.peak_memory_kb,
            });
        }
        runs
    }

    fn schema_layer(
        &self,
        manifest: &Manifest,
        runs: &[CaseRun],
        checks: &mut Vec<CheckReport>,
    ) -> bool {
        if manifest.interface.output != OutputKind::Json {
            return true;
        }
        let validator = match &manifest.interface.output_schema {
            None => None,
            Some(schema) => match jsonschema::validator_for(schema) {
                Ok(v) => Some(v),
                Err(e) => {
                    checks.push(check(
                        CheckLayer::Schema,
                        "output schema",
                        false,
                        vec![format!("the manifest's output schema is invalid: {e}")],
                    ));
                    return false;
                }
            },
        };
        let mut problems = Vec::new();
        let mut checked = 0;
        for run in runs
            .iter()
            .filter(|r| !r.dry_run && !r.help && r.exit_code == Some(0))
        {
            checked += 1;
            match serde_json::from_str::<serde_json::Value>(&run.stdout) {
                Err(e) => problems.push(format!("`{}`: stdout is not JSON: {e}", run.name)),
                Ok(doc) => {
                    if let Some(v) = &validator {
                        problems.extend(v.iter_errors(&doc).take(3).map(|e| {
                            format!(
                                "`{}`: stdout does not match the output schema: {e}",
                                run.name
                            )
                        }));
                    }
                }
            }
        }
        let passed = problems.is_empty();
        let mut details = problems;
        if checked == 0 {
            details.push(
                "no test case runs the tool for real and succeeds, so no output was checked".into(),
            );
        }
        checks.push(check(CheckLayer::Schema, "output", passed, details));
        passed
    }
}

/// What one test run left for the schema layer and the measurements.
#[derive(Debug, Clone)]
struct CaseRun {
    name: String,
    dry_run: bool,
    help: bool,
    exit_code: Option<i32>,
    stdout: String,
    runtime_ms: u64,
    peak_memory_kb: Option<u64>,
}

fn invocation_is_help(case: &cases::Case) -> bool {
    case.args
        .as_ref()
        .is_some_and(|a| a.iter().any(|x| x == "--help" || x == "-h"))
}

/// Gives the owner write permission on every directory under `dir`, so it can be removed.
fn make_writable(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(dir)?;
    if meta.is_dir() {
        let mut perms = meta.permissions();
        perms.set_mode(perms.mode() | 0o700);
        std::fs::set_permissions(dir, perms)?;
        for entry in std::fs::read_dir(dir)?.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                make_writable(&entry.path())?;
            }
        }
    }
    Ok(())
}

/// `line` cut to at most `max` characters at a word's end, with `…` where it was cut: a summary
/// line names a check's first detail without ending mid-word.
fn clip_at_word(line: &str, max: usize) -> String {
    if line.chars().count() <= max {
        return line.to_owned();
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    let kept = match cut.rfind(char::is_whitespace) {
        Some(at) if at > 0 => cut[..at].trim_end(),
        _ => cut.as_str(),
    };
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_cuts_a_long_detail_at_a_word() {
        let detail = "`gia` (runtime.requires) is not a program on the sandbox's PATH; an alias, function or builtin of your shell (`history`) is no program a tool can run (write the command it stands for)";
        assert_eq!(
            clip_at_word(detail, 110),
            "`gia` (runtime.requires) is not a program on the sandbox's PATH; an alias, function or builtin of your shell…"
        );
        assert_eq!(clip_at_word("short", 160), "short");
        // One word longer than the room is cut inside it.
        assert_eq!(clip_at_word("abcdefgh", 5), "abcd…");
    }

    #[test]
    fn the_default_policy_grants_hosts_in_its_own_table() {
        let text = default_policy_granting(&["pypi.org:443".into(), "127.0.0.1:8080".into()]);
        let policy = crate::sandbox::SandboxPolicy::from_toml(&text, "p.toml").expect("valid");
        let hosts: Vec<String> = policy.grants.hosts.iter().map(|h| h.to_string()).collect();
        assert_eq!(hosts, ["pypi.org:443", "127.0.0.1:8080"]);
        assert_eq!(
            policy.grants.toolchains,
            crate::sandbox::SandboxPolicy::default().grants.toolchains
        );
    }
}
