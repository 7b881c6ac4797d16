//! What is known about each CLI: its sub-commands, which flags take a value, its runners and
//! modules, how its positionals read. One entry per CLI; a program not in the table is read
//! with [`GENERIC`]: its words stay where they were, and which are literals and which parameters
//! is decided across occurrences, by what varies. The tables only say what a word is; no word ever moves because of them.

use std::collections::HashMap;
use std::sync::LazyLock;

/// Whether a CLI's first positional argument is a sub-command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sub {
    /// No sub-commands.
    None,
    /// The first positional is a sub-command (`git commit`).
    First,
    /// The first positional is a program to run with the rest (`sudo`, `xargs`, `npx`).
    Runner,
}

/// What is known about one CLI.
#[derive(Debug)]
pub(super) struct Cli {
    pub(super) names: &'static [&'static str],
    pub(super) sub: Sub,
    /// Flags that take a value.
    pub(super) value: &'static [&'static str],
    /// Flags that take a value only after one sub-command.
    pub(super) sub_value: &'static [(&'static str, &'static [&'static str])],
    /// Flags that take two values.
    pub(super) value2: &'static [&'static str],
    /// Flags whose value is taken only when the next word is a number (`make -j 4`), or
    /// attached (`-j4`).
    pub(super) optional_number: &'static [&'static str],
    /// Flags whose value can only be attached (`mysql -pSECRET`).
    pub(super) attached: &'static [&'static str],
    /// Sub-commands followed by a second-level verb (`git stash pop`); `*`: all of them.
    pub(super) nested: &'static [&'static str],
    /// How many positionals after the sub-command (`""`: without one) stay literal.
    pub(super) literal: &'static [(&'static str, usize)],
    /// Sub-commands (nested ones written `tool run`) whose next positional is a program.
    pub(super) runners: &'static [&'static str],
    /// A flag whose value is a module run with the remaining arguments (`python -m`).
    pub(super) module_flag: Option<&'static str>,
    /// The first positional is a pattern or script (grep, sed, jq): always a string.
    pub(super) pattern_first: bool,
    /// Flags that give the pattern instead, making the first positional an operand.
    pub(super) pattern_flags: &'static [&'static str],
    /// Flags taking every word up to `;` or `+` (`find -exec`).
    pub(super) until_semicolon: &'static [&'static str],
    /// After the first positional, flags belong to the script it names (`python x.py -m`).
    pub(super) script_host: bool,
    /// Words starting with `+` before the sub-command are toolchains (`cargo +nightly`).
    pub(super) plus_toolchain: bool,
    /// Long names of short flags, for template placeholders.
    pub(super) long: &'static [(&'static str, &'static str)],
}

pub(super) const GENERIC: Cli = Cli {
    names: &[],
    sub: Sub::None,
    value: &[],
    sub_value: &[],
    value2: &[],
    optional_number: &[],
    attached: &[],
    nested: &[],
    literal: &[],
    runners: &[],
    module_flag: None,
    pattern_first: false,
    pattern_flags: &[],
    until_semicolon: &[],
    script_host: false,
    plus_toolchain: false,
    long: &[],
};

/// Programs whose positionals are all targets or goals, literal (`make test`, `mvn package`).
const ALL_LITERAL: &[(&str, usize)] = &[("", usize::MAX)];

// One entry per CLI, flags packed on a line: the table is read and extended by CLI, not by flag.
#[rustfmt::skip]
static CLIS: &[Cli] = &[
    Cli {
        names: &["git", "hub"],
        sub: Sub::First,
        value: &["-C", "-c", "--git-dir", "--work-tree", "--namespace"],
        sub_value: &[
            ("commit", &["-m", "--message", "-F", "--file", "-C", "--reuse-message", "-c", "--reedit-message", "--author", "--date", "--fixup", "--squash", "-t", "--template", "--cleanup"]),
            ("log", &["-n", "--max-count", "--author", "--committer", "--since", "--until", "--after", "--before", "--grep", "--format", "--pretty", "--skip", "-S", "-G", "-L", "--date"]),
            ("show", &["--format", "--pretty"]),
            ("checkout", &["-b", "-B", "--orphan"]),
            ("switch", &["-c", "-C", "--orphan"]),
            ("branch", &["-u", "--set-upstream-to"]),
            ("clone", &["--depth", "-b", "--branch", "-o", "--origin", "--reference", "-c", "--config", "--filter", "-j", "--jobs", "--shallow-since"]),
            ("fetch", &["--depth", "--deepen", "--shallow-since", "-j", "--jobs"]),
            ("pull", &["--depth", "-s", "--strategy", "-X", "--strategy-option"]),
            ("push", &["-o", "--push-option", "--repo"]),
            ("merge", &["-m", "-F", "-s", "--strategy", "-X", "--strategy-option"]),
            ("rebase", &["--onto", "-x", "--exec", "-s", "--strategy", "-X", "--strategy-option"]),
            ("tag", &["-m", "--message", "-F", "--file", "-u"]),
            ("stash", &["-m", "--message"]),
            ("grep", &["-e", "-f", "-A", "-B", "-C", "--max-depth", "-m"]),
            ("blame", &["-L"]),
            ("format-patch", &["-o", "--output-directory", "-v"]),
            ("worktree", &["-b", "-B"]),
            ("cherry-pick", &["-m", "--mainline"]),
            ("revert", &["-m", "--mainline"]),
            ("diff", &["-U", "--diff-filter"]),
            ("restore", &["-s", "--source"]),
            ("config", &["--file", "-f"]),
            ("remote", &["-t", "-m"]),
            ("rev-list", &["-n", "--max-count"]),
        ],
        nested: &["stash", "remote", "submodule", "worktree", "bisect", "notes", "lfs", "sparse-checkout", "maintenance"],
        long: &[("-m", "message"), ("-C", "dir"), ("-b", "branch"), ("-n", "count"), ("-c", "config")],
        ..GENERIC
    },
    Cli {
        names: &["hg", "svn", "jj", "fossil", "bzr"],
        sub: Sub::First,
        value: &["-m", "--message", "-r", "--rev", "--revision", "-R", "--repository", "-b", "--branch", "-l", "--limit", "-u", "--user", "-d", "--date", "--cwd"],
        nested: &["git", "op", "bookmark", "branch", "workspace", "file", "util"],
        long: &[("-m", "message"), ("-r", "rev")],
        ..GENERIC
    },
    Cli {
        names: &["cargo"],
        sub: Sub::First,
        plus_toolchain: true,
        value: &["-p", "--package", "--bin", "--example", "--test", "--bench", "--features", "-F", "--target", "--target-dir", "--manifest-path", "-j", "--jobs", "--profile", "--exclude", "--message-format", "--color", "--config", "-Z", "--registry", "--index", "--git", "--branch", "--tag", "--rev", "--path", "--root", "--name", "--edition", "--vcs", "--rename", "--lockfile-path", "-C"],
        sub_value: &[("install", &["--version", "--vers"]), ("add", &["--vers"])],
        nested: &["nextest", "sqlx", "insta", "llvm-cov"],
        long: &[("-p", "package"), ("-F", "features"), ("-j", "jobs")],
        ..GENERIC
    },
    Cli {
        names: &["npm"],
        sub: Sub::First,
        value: &["--prefix", "-w", "--workspace", "--registry", "--tag", "--otp", "--cache", "--loglevel"],
        nested: &["config", "cache", "pkg", "dist-tag", "owner", "access", "team", "token", "profile", "org", "hook"],
        literal: &[("run", 1), ("run-script", 1)],
        runners: &["exec", "x"],
        long: &[("-w", "workspace")],
        ..GENERIC
    },
    Cli {
        names: &["pnpm"],
        sub: Sub::First,
        value: &["-C", "--dir", "--filter", "-F", "--reporter"],
        nested: &["store", "env", "config"],
        literal: &[("run", 1)],
        runners: &["exec", "dlx"],
        long: &[("-C", "dir"), ("-F", "filter")],
        ..GENERIC
    },
    Cli {
        names: &["yarn"],
        sub: Sub::First,
        value: &["--cwd"],
        nested: &["cache", "config", "workspaces", "plugin", "constraints"],
        literal: &[("run", 1), ("workspace", 2)],
        runners: &["dlx", "exec"],
        ..GENERIC
    },
    Cli {
        names: &["bun"],
        sub: Sub::First,
        value: &["--cwd", "--filter"],
        literal: &[("run", 1)],
        runners: &["x", "exec"],
        ..GENERIC
    },
    Cli {
        names: &["deno"],
        sub: Sub::First,
        value: &["--config", "-c", "--import-map", "--env-file", "--filter"],
        ..GENERIC
    },
    Cli {
        names: &["npx", "bunx", "pnpx"],
        sub: Sub::Runner,
        value: &["-p", "--package", "-c", "--call"],
        ..GENERIC
    },
    Cli {
        names: &["uvx"],
        sub: Sub::Runner,
        value: &["--from", "--with", "-p", "--python"],
        ..GENERIC
    },
    Cli {
        names: &["sudo", "doas"],
        sub: Sub::Runner,
        value: &["-u", "--user", "-g", "--group", "-U", "--other-user", "-C", "--close-from", "-h", "--host", "-p", "--prompt", "-D", "--chdir", "-r", "--role", "-t", "--type", "-T", "--command-timeout"],
        ..GENERIC
    },
    Cli {
        names: &["xargs"],
        sub: Sub::Runner,
        value: &["-I", "-n", "--max-args", "-P", "--max-procs", "-d", "--delimiter", "-L", "--max-lines", "-s", "--max-chars", "-E", "-a", "--arg-file"],
        ..GENERIC
    },
    Cli {
        names: &["screen"],
        sub: Sub::Runner,
        value: &["-S", "-c", "-t", "-p", "-X", "-L", "-Logfile"],
        ..GENERIC
    },
    Cli {
        names: &["watch"],
        sub: Sub::Runner,
        value: &["-n", "--interval"],
        ..GENERIC
    },
    Cli {
        names: &["docker", "podman", "nerdctl"],
        sub: Sub::First,
        value: &["-H", "--host", "--context", "--config", "-l", "--log-level"],
        sub_value: &[
            ("run", &["-p", "--publish", "-e", "--env", "--env-file", "-v", "--volume", "-w", "--workdir", "--name", "--network", "--net", "--platform", "-u", "--user", "--entrypoint", "--mount", "--label", "-l", "--add-host", "--cpus", "-m", "--memory", "--restart", "--hostname", "-h", "--device", "--gpus", "--shm-size", "--ulimit", "--pull", "--expose", "--ipc", "--pid", "--security-opt", "--cap-add", "--cap-drop", "--tmpfs", "--runtime"]),
            ("create", &["-p", "--publish", "-e", "--env", "--env-file", "-v", "--volume", "-w", "--workdir", "--name", "--network", "--platform", "-u", "--user", "--entrypoint", "--mount"]),
            ("exec", &["-e", "--env", "-w", "--workdir", "-u", "--user", "--env-file"]),
            ("build", &["-t", "--tag", "-f", "--file", "--build-arg", "--target", "--platform", "--cache-from", "--cache-to", "--progress", "-o", "--output", "--secret", "--ssh", "--label", "--network", "--iidfile", "--builder"]),
            ("buildx", &["-t", "--tag", "-f", "--file", "--build-arg", "--target", "--platform", "--cache-from", "--cache-to", "--progress", "-o", "--output", "--builder"]),
            ("compose", &["-f", "--file", "-p", "--project-name", "--profile", "--env-file", "--project-directory", "--tail", "-e", "--env", "-w", "--workdir", "-u", "--user"]),
            ("logs", &["-n", "--tail", "--since", "--until"]),
            ("ps", &["-f", "--filter", "--format", "-n", "--last"]),
            ("images", &["-f", "--filter", "--format"]),
            ("inspect", &["-f", "--format"]),
            ("stop", &["-t", "--time"]),
            ("push", &["--platform"]),
            ("pull", &["--platform"]),
        ],
        nested: &["compose", "container", "image", "volume", "network", "system", "buildx", "builder", "context", "manifest", "plugin", "swarm", "service", "stack", "secret", "config", "node", "trust", "scout"],
        ..GENERIC
    },
    Cli {
        names: &["docker-compose", "podman-compose"],
        sub: Sub::First,
        value: &["-f", "--file", "-p", "--project-name", "--profile", "--env-file", "--project-directory"],
        sub_value: &[("logs", &["--tail"]), ("exec", &["-e", "--env", "-w", "--workdir", "-u", "--user"]), ("run", &["-e", "--env", "-w", "--workdir", "-u", "--user", "--name"])],
        ..GENERIC
    },
    Cli {
        names: &["kubectl", "oc", "microk8s.kubectl"],
        sub: Sub::First,
        value: &["-n", "--namespace", "--context", "--kubeconfig", "-l", "--selector", "-o", "--output", "--cluster", "--user", "-c", "--container", "--field-selector", "--sort-by", "--timeout"],
        sub_value: &[
            ("apply", &["-f", "--filename", "-k", "--kustomize"]),
            ("create", &["-f", "--filename", "-k", "--kustomize", "--from-literal", "--from-file", "--image"]),
            ("delete", &["-f", "--filename", "-k", "--kustomize"]),
            ("replace", &["-f", "--filename"]),
            ("diff", &["-f", "--filename", "-k", "--kustomize"]),
            ("logs", &["--since", "--tail", "--since-time"]),
            ("patch", &["-p", "--patch", "--type"]),
            ("scale", &["--replicas"]),
            ("rollout", &["--to-revision"]),
            ("port-forward", &["--address"]),
            ("run", &["--image", "--port", "--env"]),
            ("expose", &["--port", "--target-port", "--type", "--name"]),
        ],
        nested: &["rollout", "config", "auth", "certificate", "top", "set", "create", "plugin"],
        literal: &[("get", 1), ("describe", 1), ("delete", 1), ("edit", 1), ("explain", 1), ("label", 1), ("annotate", 1), ("patch", 1), ("scale", 1), ("expose", 1), ("wait", 1)],
        long: &[("-n", "namespace"), ("-l", "selector"), ("-o", "output"), ("-f", "filename"), ("-c", "container")],
        ..GENERIC
    },
    Cli {
        names: &["helm"],
        sub: Sub::First,
        value: &["-n", "--namespace", "-f", "--values", "--set", "--set-string", "--set-file", "--version", "--kube-context", "-o", "--output", "--repo", "--timeout", "--description"],
        nested: &["repo", "plugin", "dependency", "registry", "get", "show", "search"],
        long: &[("-n", "namespace"), ("-f", "values")],
        ..GENERIC
    },
    Cli {
        names: &["go"],
        sub: Sub::First,
        value: &["-o", "-run", "-bench", "-tags", "-ldflags", "-gcflags", "-asmflags", "-count", "-timeout", "-p", "-coverprofile", "-covermode", "-coverpkg", "-cpu", "-benchtime", "-mod", "-C", "-exec", "-modfile", "-skip", "-fuzz", "-fuzztime", "-parallel", "-shuffle", "-outputdir", "-cpuprofile", "-memprofile", "-blockprofile", "-trace", "-vet"],
        nested: &["mod", "work"],
        literal: &[("tool", 1)],
        ..GENERIC
    },
    Cli {
        names: &["python", "python3", "python2", "py", "pypy", "pypy3"],
        value: &["-c", "-W", "-X"],
        module_flag: Some("-m"),
        script_host: true,
        ..GENERIC
    },
    Cli {
        names: &["node", "nodejs"],
        value: &["-e", "--eval", "-p", "--print", "-r", "--require", "--import", "--loader", "--env-file"],
        script_host: true,
        ..GENERIC
    },
    Cli {
        names: &["ruby", "perl", "php", "bash", "sh", "zsh", "dash", "fish", "ksh", "lua", "Rscript"],
        value: &["-e", "-c", "-I", "-r", "-E"],
        script_host: true,
        ..GENERIC
    },
    Cli {
        names: &["pip", "pip3"],
        sub: Sub::First,
        value: &["-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url", "--extra-index-url", "-t", "--target", "--prefix", "-f", "--find-links", "--platform", "--root", "--python-version", "--only-binary", "--no-binary", "--upgrade-strategy", "--log", "--cache-dir", "--python"],
        long: &[("-r", "requirement"), ("-e", "editable"), ("-i", "index_url")],
        ..GENERIC
    },
    Cli {
        names: &["uv"],
        sub: Sub::First,
        value: &["-p", "--python", "--with", "--with-requirements", "--extra", "--group", "--only-group", "--no-group", "-r", "--requirement", "--index-url", "--extra-index-url", "--index", "--directory", "--project", "--package", "-e", "--editable", "--from", "--python-platform", "-c", "--constraint", "-o", "--output-file", "--upgrade-package", "-P", "--refresh-package", "--env-file", "--script"],
        nested: &["pip", "python", "tool", "cache", "self"],
        runners: &["run", "tool run"],
        long: &[("-p", "python"), ("-r", "requirement"), ("-o", "output_file")],
        ..GENERIC
    },
    Cli {
        names: &["poetry"],
        sub: Sub::First,
        value: &["-C", "--directory", "-E", "--extras", "--with", "--without", "--only", "-G", "--group", "-P", "--project"],
        nested: &["env", "self", "cache", "source", "debug"],
        runners: &["run"],
        ..GENERIC
    },
    Cli {
        names: &["pipx"],
        sub: Sub::First,
        value: &["--spec", "--python", "--pip-args"],
        runners: &["run"],
        ..GENERIC
    },
    Cli {
        names: &["conda", "mamba", "micromamba"],
        sub: Sub::First,
        value: &["-n", "--name", "-p", "--prefix", "-c", "--channel", "-f", "--file"],
        nested: &["env"],
        runners: &["run"],
        long: &[("-n", "name"), ("-c", "channel"), ("-f", "file")],
        ..GENERIC
    },
    Cli {
        names: &["pytest", "py.test"],
        value: &["-k", "-m", "-p", "-c", "--maxfail", "-n", "--cov", "--cov-report", "--cov-config", "--rootdir", "--tb", "--junitxml", "--junit-xml", "--deselect", "--ignore", "--ignore-glob", "--durations", "-o", "--override-ini", "--log-level", "--log-cli-level", "--basetemp", "--confcutdir", "-W", "--timeout", "--reruns", "--dist", "--import-mode"],
        long: &[("-k", "keyword"), ("-m", "marker"), ("-n", "workers")],
        ..GENERIC
    },
    Cli {
        names: &["ruff"],
        sub: Sub::First,
        value: &["--select", "--ignore", "--extend-select", "--extend-ignore", "--config", "--target-version", "--line-length", "--exclude", "--extend-exclude", "--output-format", "--per-file-ignores"],
        ..GENERIC
    },
    Cli {
        names: &["black", "isort", "flake8", "mypy", "pylint", "pyright", "pyflakes", "autopep8", "bandit", "pydocstyle"],
        value: &["--config", "--exclude", "--include", "--line-length", "-l", "--target-version", "--max-line-length", "--select", "--ignore", "--extend-ignore", "--rcfile", "--disable", "--enable", "-p", "--package", "-m", "--module", "--python-version", "--cache-dir", "--settings-path", "--profile", "-j", "--jobs"],
        ..GENERIC
    },
    Cli {
        names: &["make", "gmake", "bmake"],
        value: &["-C", "--directory", "-f", "--file", "--makefile", "-o", "-W", "-I", "--include-dir"],
        optional_number: &["-j", "-l"],
        literal: ALL_LITERAL,
        long: &[("-C", "dir"), ("-f", "makefile"), ("-j", "jobs")],
        ..GENERIC
    },
    Cli {
        names: &["ninja"],
        value: &["-C", "-f", "-t", "-k", "-l", "-d"],
        optional_number: &["-j"],
        literal: ALL_LITERAL,
        ..GENERIC
    },
    Cli {
        names: &["just"],
        value: &["-f", "--justfile", "-d", "--working-directory"],
        value2: &["--set"],
        literal: &[("", 1)],
        ..GENERIC
    },
    Cli {
        names: &["task", "mvn", "mvnw", "gradle", "gradlew", "rake", "ant"],
        value: &["-d", "--dir", "-t", "--taskfile", "-f", "--file", "-P", "--activate-profiles", "-pl", "--projects", "-rf", "-T", "--threads", "-s", "--settings", "-D", "-p", "--project-dir", "-x", "--exclude-task", "--tests", "--buildfile"],
        literal: ALL_LITERAL,
        ..GENERIC
    },
    Cli {
        names: &["systemctl"],
        sub: Sub::First,
        value: &["-H", "--host", "-M", "--machine", "-t", "--type", "--state", "-p", "--property", "-n", "--lines", "-o", "--output", "-s", "--signal", "--kill-whom", "--root"],
        ..GENERIC
    },
    Cli {
        names: &["journalctl"],
        value: &["-u", "--unit", "-n", "--lines", "--since", "--until", "-p", "--priority", "-o", "--output", "-t", "--identifier", "-g", "--grep", "--user-unit", "-M", "-D", "--directory", "--file", "-S", "-U"],
        long: &[("-u", "unit"), ("-n", "lines"), ("-p", "priority"), ("-o", "output")],
        ..GENERIC
    },
    Cli {
        names: &["apt", "apt-get", "apt-cache", "aptitude", "dnf", "yum", "zypper", "snap", "apk", "port"],
        sub: Sub::First,
        value: &["-o", "--option", "-t", "--target-release", "-c", "--enablerepo", "--disablerepo", "-x", "--exclude", "--repository", "-X"],
        ..GENERIC
    },
    Cli {
        names: &["brew"],
        sub: Sub::First,
        nested: &["services", "bundle"],
        ..GENERIC
    },
    Cli {
        names: &["gh", "glab"],
        sub: Sub::First,
        value: &["-R", "--repo", "-t", "--title", "-b", "--body", "-F", "--body-file", "--field", "-f", "--raw-field", "-B", "--base", "-H", "--head", "--header", "-l", "--label", "-a", "--assignee", "-m", "--milestone", "-L", "--limit", "--json", "-q", "--jq", "-T", "--template", "-X", "--method", "-s", "--state", "-r", "--reviewer", "--workflow", "--branch", "--job", "--author", "--search", "--commit", "-p", "--project", "--name", "-e", "--env"],
        nested: &["*"],
        long: &[("-R", "repo"), ("-t", "title"), ("-b", "body"), ("-B", "base"), ("-H", "head"), ("-L", "limit"), ("-q", "jq"), ("-l", "label"), ("-X", "method"), ("-F", "field"), ("-f", "raw_field")],
        ..GENERIC
    },
    Cli {
        names: &["rustup"],
        sub: Sub::First,
        value: &["--toolchain", "--target", "--profile", "-c", "--component", "-t"],
        nested: &["toolchain", "target", "component", "override", "self", "set", "show"],
        ..GENERIC
    },
    Cli {
        names: &["rustc"],
        value: &["-o", "--edition", "--crate-type", "--crate-name", "-C", "--cfg", "-L", "-l", "--target", "--emit", "--out-dir", "-A", "-W", "-D", "-F", "--cap-lints", "--explain"],
        ..GENERIC
    },
    Cli {
        names: &["tsc"],
        value: &["-p", "--project", "--outDir", "--outFile", "--target", "-t", "--module", "-m", "--lib", "--jsx", "--rootDir", "--baseUrl", "--declarationDir"],
        long: &[("-p", "project")],
        ..GENERIC
    },
    Cli {
        names: &["next", "vite", "nuxt", "nuxi", "astro", "ng", "nx", "turbo", "expo", "tauri", "nest", "storybook", "react-scripts", "vue-cli-service", "remix", "lerna", "changeset", "electron-builder"],
        sub: Sub::First,
        value: &["--port", "-p", "--host", "--hostname", "-H", "--config", "-c", "--mode", "-m", "--filter", "--project", "--scope", "--base", "--outDir", "--out-dir", "--target"],
        long: &[("-p", "port"), ("-H", "hostname"), ("-c", "config"), ("-m", "mode")],
        ..GENERIC
    },
    Cli {
        names: &["pyenv", "rbenv", "nodenv", "goenv", "plenv", "jenv", "nvm", "fnm", "volta", "asdf", "mise", "rtx", "sdk", "gem", "cpanm", "direnv"],
        sub: Sub::First,
        value: &["-v", "--version"],
        runners: &["exec"],
        ..GENERIC
    },
    Cli {
        names: &["eslint", "prettier", "biome", "stylelint"],
        value: &["-c", "--config", "--ext", "--format", "-f", "-o", "--output-file", "--rule", "--parser", "--max-warnings", "--ignore-path", "--ignore-pattern", "--plugin"],
        ..GENERIC
    },
    Cli {
        names: &["vitest", "jest"],
        value: &["-t", "--testNamePattern", "-c", "--config", "--testPathPattern", "--maxWorkers", "-w", "--coverageDirectory", "--reporters", "--reporter", "--selectProjects", "--shard", "--project", "--dir", "--root", "--environment", "--pool"],
        literal: &[("", 1)],
        long: &[("-t", "test_name"), ("-c", "config")],
        ..GENERIC
    },
    Cli {
        names: &["grep", "egrep", "fgrep", "zgrep"],
        value: &["-e", "--regexp", "-f", "--file", "-m", "--max-count", "-A", "--after-context", "-B", "--before-context", "-C", "--context", "--include", "--exclude", "--exclude-dir", "--label", "-d", "--directories", "-D", "--devices"],
        pattern_first: true,
        pattern_flags: &["-e", "--regexp", "-f", "--file"],
        long: &[("-e", "pattern"), ("-m", "max_count"), ("-A", "after"), ("-B", "before"), ("-C", "context")],
        ..GENERIC
    },
    Cli {
        names: &["rg", "ag", "ack"],
        value: &["-e", "--regexp", "-f", "--file", "-m", "--max-count", "-A", "--after-context", "-B", "--before-context", "-C", "--context", "-t", "--type", "-T", "--type-not", "-g", "--glob", "--iglob", "-r", "--replace", "-j", "--threads", "-M", "--max-columns", "--max-depth", "--max-filesize", "--sort", "--sortr", "--type-add", "--engine", "--pre", "-G", "--file-search-regex", "--ignore", "--depth"],
        pattern_first: true,
        pattern_flags: &["-e", "--regexp", "-f", "--file"],
        long: &[("-e", "pattern"), ("-t", "type"), ("-g", "glob"), ("-r", "replace"), ("-A", "after"), ("-B", "before"), ("-C", "context")],
        ..GENERIC
    },
    Cli {
        names: &["find", "gfind"],
        value: &["-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-type", "-xtype", "-maxdepth", "-mindepth", "-newer", "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-user", "-group", "-perm", "-printf", "-fprint", "-wholename", "-iwholename", "-samefile", "-links", "-inum", "-fstype", "-newermt", "-used", "-uid", "-gid", "-regextype"],
        until_semicolon: &["-exec", "-execdir", "-ok", "-okdir"],
        ..GENERIC
    },
    Cli {
        names: &["fd", "fdfind"],
        value: &["-e", "--extension", "-t", "--type", "-E", "--exclude", "-d", "--max-depth", "--min-depth", "-x", "--exec", "-X", "--exec-batch", "-S", "--size", "--changed-within", "--changed-before", "-j", "--threads", "-c", "--color", "--base-directory", "--search-path", "-o", "--owner"],
        pattern_first: true,
        ..GENERIC
    },
    Cli {
        names: &["sed", "gsed"],
        value: &["-e", "--expression", "-f", "--file", "-l", "--line-length"],
        pattern_first: true,
        pattern_flags: &["-e", "--expression", "-f", "--file"],
        ..GENERIC
    },
    Cli {
        names: &["awk", "gawk", "mawk", "nawk"],
        value: &["-F", "--field-separator", "-v", "--assign", "-f", "--file"],
        pattern_first: true,
        pattern_flags: &["-f", "--file"],
        ..GENERIC
    },
    Cli {
        names: &["jq", "yq", "gojq", "jaq"],
        value: &["--indent", "-f", "--from-file", "-o", "--output-format", "-p", "--input-format"],
        value2: &["--arg", "--argjson", "--slurpfile", "--rawfile"],
        pattern_first: true,
        pattern_flags: &["-f", "--from-file"],
        ..GENERIC
    },
    Cli {
        names: &["curl"],
        value: &["-X", "--request", "-H", "--header", "-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--json", "-o", "--output", "-u", "--user", "-A", "--user-agent", "-F", "--form", "-b", "--cookie", "-c", "--cookie-jar", "-e", "--referer", "-m", "--max-time", "--connect-timeout", "-w", "--write-out", "-x", "--proxy", "--retry", "--retry-delay", "-T", "--upload-file", "--cacert", "--cert", "--key", "-r", "--range", "-K", "--config", "--resolve", "--interface", "--limit-rate", "-C", "--continue-at", "--url"],
        long: &[("-X", "method"), ("-H", "header"), ("-d", "data"), ("-o", "output"), ("-u", "user"), ("-F", "form"), ("-w", "write_out"), ("-m", "max_time"), ("-A", "user_agent")],
        ..GENERIC
    },
    Cli {
        names: &["wget"],
        value: &["-O", "--output-document", "-o", "--output-file", "-P", "--directory-prefix", "--header", "-t", "--tries", "-T", "--timeout", "--user", "--password", "-U", "--user-agent", "--post-data", "--post-file", "-e", "--execute", "-i", "--input-file", "-l", "--level", "-A", "--accept", "-R", "--reject"],
        long: &[("-O", "output"), ("-P", "directory")],
        ..GENERIC
    },
    Cli {
        names: &["ssh"],
        value: &["-i", "-p", "-l", "-o", "-F", "-J", "-L", "-R", "-D", "-b", "-c", "-E", "-W", "-S", "-O", "-Q", "-m", "-w", "-B"],
        script_host: true,
        long: &[("-i", "identity"), ("-p", "port"), ("-l", "login")],
        ..GENERIC
    },
    Cli {
        names: &["scp", "sftp"],
        value: &["-i", "-P", "-o", "-F", "-J", "-l", "-c", "-S"],
        ..GENERIC
    },
    Cli {
        names: &["rsync"],
        value: &["-e", "--rsh", "--exclude", "--include", "--exclude-from", "--include-from", "--filter", "-f", "--files-from", "--chmod", "--chown", "--port", "--password-file", "--log-file", "--backup-dir", "--suffix", "--timeout", "--bwlimit", "--max-size", "--min-size", "--partial-dir", "--temp-dir", "-T", "--link-dest", "--compare-dest", "--copy-dest", "--info", "--debug"],
        ..GENERIC
    },
    Cli {
        names: &["tar", "bsdtar", "gtar"],
        value: &["-f", "--file", "-C", "--directory", "--exclude", "-T", "--files-from", "-X", "--exclude-from", "--strip-components", "--transform", "--owner", "--group", "--mode", "--mtime", "--format", "-b", "--blocking-factor", "-I", "--use-compress-program", "--xform"],
        ..GENERIC
    },
    Cli {
        names: &["unzip"],
        value: &["-d", "-x"],
        ..GENERIC
    },
    Cli {
        names: &["head", "tail"],
        value: &["-n", "--lines", "-c", "--bytes", "--pid", "-s", "--sleep-interval"],
        long: &[("-n", "lines"), ("-c", "bytes")],
        ..GENERIC
    },
    Cli {
        names: &["sort"],
        value: &["-k", "--key", "-t", "--field-separator", "-o", "--output", "-T", "--temporary-directory", "-S", "--buffer-size", "--parallel"],
        ..GENERIC
    },
    Cli {
        names: &["uniq"],
        value: &["-f", "--skip-fields", "-s", "--skip-chars", "-w", "--check-chars"],
        ..GENERIC
    },
    Cli {
        names: &["cut"],
        value: &["-d", "--delimiter", "-f", "--fields", "-c", "--characters", "-b", "--bytes", "--output-delimiter"],
        long: &[("-d", "delimiter"), ("-f", "fields")],
        ..GENERIC
    },
    Cli {
        names: &["cp", "mv", "ln", "install", "mkdir", "touch", "rm", "rmdir", "chmod", "chown", "chgrp"],
        value: &["-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "--owner", "-g", "--group", "--reference", "-d", "--date"],
        ..GENERIC
    },
    Cli {
        names: &["du", "df"],
        value: &["-d", "--max-depth", "-t", "--type", "-B", "--block-size", "--exclude"],
        ..GENERIC
    },
    Cli {
        names: &["ps"],
        value: &["-o", "-p", "-u", "-C", "--sort", "-U", "-G"],
        ..GENERIC
    },
    Cli {
        names: &["kill"],
        value: &["-s", "-n"],
        ..GENERIC
    },
    Cli {
        names: &["pkill", "pgrep"],
        value: &["-u", "-g", "-P", "-s", "-t", "-U", "-G", "--signal"],
        pattern_first: true,
        ..GENERIC
    },
    Cli {
        names: &["lsof"],
        value: &["-p", "-u", "-c", "-g", "-d"],
        ..GENERIC
    },
    Cli {
        names: &["terraform", "tofu", "terragrunt"],
        sub: Sub::First,
        value: &["-var", "-var-file", "-target", "-out", "-parallelism", "-lock-timeout", "-backend-config", "-replace", "-state"],
        nested: &["state", "workspace", "providers"],
        ..GENERIC
    },
    Cli {
        names: &["aws"],
        sub: Sub::First,
        value: &["--region", "--profile", "--output", "--query", "--endpoint-url", "--bucket", "--key", "--function-name", "--stack-name", "--instance-ids", "--filters", "--cluster", "--service", "--name", "--payload", "--log-group-name", "--template-file", "--parameter-overrides", "--capabilities", "--cli-binary-format", "--body", "--secret-id", "--table-name", "--repository-name"],
        nested: &["*"],
        ..GENERIC
    },
    Cli {
        names: &["gcloud", "az"],
        sub: Sub::First,
        value: &["--project", "--region", "--zone", "--format", "--filter", "--limit", "--account", "--configuration", "--image", "--source", "--platform", "--service-account", "--machine-type", "--memory", "--set-env-vars", "-g", "--resource-group", "-n", "--name", "-l", "--location", "--subscription", "-o", "--output", "--query", "--sku"],
        nested: &["*"],
        ..GENERIC
    },
    Cli {
        names: &["firebase", "vercel", "netlify", "fly", "flyctl", "heroku", "wrangler", "supabase"],
        sub: Sub::First,
        value: &["--only", "--project", "-P", "--app", "-a", "--config", "-c", "--region", "--scope", "--env", "--token", "--site", "--dir"],
        nested: &["*"],
        ..GENERIC
    },
    Cli {
        names: &["tmux"],
        sub: Sub::First,
        value: &["-t", "-s", "-n", "-c", "-S", "-L", "-f", "-x", "-y", "-F"],
        ..GENERIC
    },
    Cli {
        names: &["dotnet"],
        sub: Sub::First,
        value: &["-c", "--configuration", "-f", "--framework", "-o", "--output", "-p", "--project", "-r", "--runtime", "--filter", "-v", "--verbosity", "-s", "--source", "-n", "--name"],
        nested: &["ef", "tool", "nuget", "workload", "sln", "user-secrets", "dev-certs"],
        literal: &[("new", 1)],
        ..GENERIC
    },
    Cli {
        names: &["swift"],
        sub: Sub::First,
        value: &["-c", "--configuration", "--product", "--filter"],
        nested: &["package"],
        ..GENERIC
    },
    Cli {
        names: &["mix", "composer", "bundle", "rails", "cabal", "stack", "dune", "opam", "zig", "nix", "flutter", "dart", "perf", "adb", "pre-commit", "hatch", "pdm", "rye", "toolsmith"],
        sub: Sub::First,
        value: &["-e", "--environment", "-d", "--working-dir", "-s", "--hook-stage", "--state", "--config"],
        nested: &["generate", "g", "destroy", "flake", "profile", "env"],
        runners: &["exec", "shell"],
        ..GENERIC
    },
    Cli {
        names: &["psql"],
        value: &["-h", "--host", "-p", "--port", "-U", "--username", "-d", "--dbname", "-c", "--command", "-f", "--file", "-v", "--set", "-o", "--output", "-F", "-R", "-P"],
        long: &[("-h", "host"), ("-p", "port"), ("-U", "user"), ("-d", "database"), ("-c", "command"), ("-f", "file")],
        ..GENERIC
    },
    Cli {
        names: &["mysql", "mariadb"],
        value: &["-u", "--user", "-h", "--host", "-P", "--port", "-D", "--database", "-e", "--execute"],
        attached: &["-p"],
        ..GENERIC
    },
    Cli {
        names: &["redis-cli"],
        value: &["-h", "-p", "-a", "-n", "-u"],
        ..GENERIC
    },
    Cli {
        names: &["openssl"],
        sub: Sub::First,
        value: &["-in", "-out", "-key", "-passin", "-passout", "-subj", "-days", "-newkey", "-keyout", "-CA", "-CAkey", "-config", "-name", "-connect", "-servername", "-inform", "-outform", "-certfile", "-extfile"],
        ..GENERIC
    },
    Cli {
        names: &["gcc", "g++", "clang", "clang++", "cc", "c++"],
        value: &["-o", "-I", "-L", "-D", "-U", "-include", "-x", "-MF", "-MT", "-isystem"],
        attached: &["-l", "-O", "-W", "-f", "-m", "-g"],
        ..GENERIC
    },
    Cli {
        names: &["cmake"],
        value: &["-S", "-B", "-G", "-D", "-C", "-T", "-A", "--build", "--target", "-t", "--config", "--preset", "--install", "--prefix", "--component", "-P"],
        optional_number: &["-j", "--parallel"],
        ..GENERIC
    },
    Cli {
        names: &["ctest"],
        value: &["-R", "-E", "-L", "--test-dir", "-C", "--timeout", "--output-junit", "--repeat"],
        optional_number: &["-j", "--parallel"],
        ..GENERIC
    },
    Cli {
        names: &["java"],
        value: &["-cp", "-classpath", "--class-path", "-jar", "-p", "--module-path", "-m", "--module"],
        attached: &["-D", "-X"],
        script_host: true,
        ..GENERIC
    },
    Cli {
        names: &["javac"],
        value: &["-d", "-cp", "-classpath", "-sourcepath", "-source", "-target", "--release"],
        ..GENERIC
    },
    Cli {
        names: &["str_replace_editor"],
        sub: Sub::First,
        value: &["--old_str", "--new_str", "--file_text", "--insert_line"],
        value2: &["--view_range"],
        ..GENERIC
    },
];

static CLI_INDEX: LazyLock<HashMap<&'static str, &'static Cli>> = LazyLock::new(|| {
    let mut index = HashMap::new();
    for cli in CLIS {
        for name in cli.names {
            index.entry(*name).or_insert(cli);
        }
    }
    index
});

/// What is known about a program, by its basename; versioned names (`python3.12`, `pip3`) and
/// `pkg@version` fall back to the plain name.
pub(super) fn cli(program: &str) -> Option<&'static Cli> {
    let index = &*CLI_INDEX;
    if let Some(cli) = index.get(program) {
        return Some(*cli);
    }
    let unversioned = program
        .split('@')
        .next()
        .unwrap_or(program)
        .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    index.get(unversioned).copied()
}

impl Cli {
    pub(super) fn takes_value(&self, sub: Option<&str>, flag: &str) -> bool {
        self.value.contains(&flag)
            || sub.is_some_and(|sub| {
                self.sub_value
                    .iter()
                    .any(|(s, flags)| *s == sub && flags.contains(&flag))
            })
    }

    pub(super) fn nests(&self, sub: &str) -> bool {
        self.nested.iter().any(|n| *n == "*" || *n == sub)
    }

    pub(super) fn literal_after(&self, sub: &str) -> usize {
        self.literal
            .iter()
            .find(|(s, _)| *s == sub)
            .map_or(0, |(_, n)| *n)
    }

    pub(super) fn long_name(&self, flag: &str) -> String {
        match self.long.iter().find(|(short, _)| *short == flag) {
            Some((_, long)) => (*long).to_owned(),
            None => flag.trim_start_matches('-').replace(['-', '.'], "_"),
        }
    }
}

/// The table entry for a Python module run with `-m` (`pip`, `pytest`, …).
pub(super) fn cli_of_module(module: &str) -> Option<&'static Cli> {
    cli(module.split('.').next().unwrap_or(module))
}

/// Programs that only show the agent something (a count, a size, lines of a file, what a
/// search matched, what the machine is): their output is for the reader's eyes, and they change
/// nothing. `cat`, `head`, `tail` and `ls` are noise already (dropped unless they feed a pipe).
const LOOKING_AROUND: &[&str] = &[
    "wc", "du", "df", "stat", "file", "uname", "nl", "grep", "egrep", "fgrep", "rg", "ag", "ack",
    "tree", "cat", "head", "tail", "ls", "realpath", "readlink", "basename", "dirname", "hostname",
    "id", "free", "uptime", "lsblk", "xxd", "od", "hexdump", "strings", "which", "whereis",
    "where", "type", "whoami", "pwd", "env", "printenv", "date",
];

/// Sub-commands that, whatever the program, only show its state (`docker images`, `hg log`,
/// `brew list`, `kubectl describe`, `npm ls`): the verbs command-line tools give to reading.
/// A program's own verb for changing things is never among them.
const SUB_COMMANDS_LOOKING_AROUND: &[&str] = &[
    "status", "log", "diff", "show", "list", "ls", "images", "ps", "inspect", "describe", "info",
    "versions", "outdated", "top", "history", "summary", "heads", "tags", "branches", "whoami",
];

/// Whether `program` is one this crate knows of (a CLI of the tables, a command that only looks
/// around or shuffles files): a real program, whether or not this machine has it.
pub fn known_program(program: &str) -> bool {
    cli(program).is_some() || LOOKING_AROUND.contains(&program) || FILE_SHUFFLING.contains(&program)
}

/// `git` sub-commands that only show the repository's state.
const GIT_LOOKING_AROUND: &[&str] = &["status", "diff", "log", "show", "grep"];

/// `git branch`'s flags that only list branches (`-D`, `-m` and a name change them).
const GIT_BRANCH_LISTING: &[&str] = &["-a", "--all", "-r", "--remotes", "-v", "-vv", "--list"];

/// `find` actions that change files or write them.
const FIND_ACTIONS: &[&str] = &[
    "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// Programs that only create, move, copy or remove files: on their own, the commands a person
/// types all day, whatever they work on.
const FILE_SHUFFLING: &[&str] = &["mkdir", "mv", "cp", "rm", "rmdir", "touch", "ln", "chmod"];

/// Whether a step (its canonical key: `mkdir <arg>`, `rm -rf <arg>`) only creates, moves,
/// copies or removes files ([`FILE_SHUFFLING`]).
pub fn shuffles_files(key: &str) -> bool {
    key.split(' ')
        .next()
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .is_some_and(|program| FILE_SHUFFLING.contains(&program))
}

/// Whether a step (its canonical key: `wc -l <arg>`, `sed -n <arg> <arg>`) only looks around:
/// one of [`LOOKING_AROUND`], `sed` printing lines (`-n`, not `-i`), `find` without an action
/// ([`FIND_ACTIONS`]), `git status|diff|log|show|grep`, `git branch` listing, a program asked its version (`python3
/// --version`) — and no redirection writing a file. A habit
/// made of these alone is the agent reading, which no tool takes off its hands.
pub fn looks_around(key: &str) -> bool {
    let words: Vec<&str> = key.split(' ').collect();
    let Some(program) = words.first().map(|p| p.rsplit('/').next().unwrap_or(p)) else {
        return false;
    };
    // `> f`, `>> f`, `2> f`, `&> f`: a file written (`<arg>` is a slot). `2>&1` writes none.
    let writes = words
        .iter()
        .any(|w| w.contains('>') && !w.starts_with('<') && !matches!(*w, "2>&1" | "1>&2" | ">&2"));
    if writes {
        return false;
    }
    // `python3 --version`, `go version`: which version is installed.
    if matches!(words[1..], ["--version"] | ["-V"] | ["version"]) {
        return true;
    }
    let flags = || {
        words[1..]
            .iter()
            .filter(|w| w.starts_with('-') && w.len() > 1)
    };
    match program {
        "sed" => {
            let short = |w: &&&str| !w.starts_with("--");
            let quiet = flags()
                .any(|w| matches!(*w, "--quiet" | "--silent") || (short(&w) && w.contains('n')));
            let in_place =
                flags().any(|w| w.starts_with("--in-place") || (short(&w) && w.contains('i')));
            quiet && !in_place
        }
        "find" => !words.iter().any(|w| FIND_ACTIONS.contains(w)),
        "git" => match words.get(1) {
            Some(&"branch") => words[2..].iter().all(|w| GIT_BRANCH_LISTING.contains(w)),
            Some(sub) => GIT_LOOKING_AROUND.contains(sub),
            None => false,
        },
        _ => {
            LOOKING_AROUND.contains(&program)
                || words
                    .get(1)
                    .is_some_and(|sub| SUB_COMMANDS_LOOKING_AROUND.contains(sub))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// The first name of the entry `program` is read with.
    fn entry(program: &str) -> Option<&'static str> {
        cli(program).and_then(|c| c.names.first().copied())
    }

    #[test]
    fn a_program_is_found_by_name_version_or_package_tag() {
        assert_eq!(entry("git"), Some("git"));
        assert_eq!(entry("hub"), Some("git"));
        assert_eq!(entry("pip3"), Some("pip"));
        assert_eq!(entry("python3.12"), Some("python"));
        assert_eq!(entry("pip3.11"), Some("pip"));
        assert_eq!(entry("prettier@3.2.1"), Some("eslint"));
        assert_eq!(entry("vim"), None);
        assert_eq!(entry("create-next-app@latest"), None);
        // `python -m pytest.main`, `python -m http.server`: the module's top-level package.
        let module = |m: &str| cli_of_module(m).and_then(|c| c.names.first().copied());
        assert_eq!(module("pytest"), Some("pytest"));
        assert_eq!(module("pip._internal"), Some("pip"));
        assert_eq!(module("http.server"), None);
    }

    #[test]
    fn flags_take_values_per_cli_and_per_sub_command() {
        let git = cli("git").expect("git is in the table");
        assert_eq!(git.sub, Sub::First);
        assert!(git.takes_value(None, "-C"));
        assert!(git.takes_value(Some("commit"), "-m"));
        assert!(!git.takes_value(Some("push"), "-m"));
        assert!(!git.takes_value(None, "-m"));
        assert!(git.nests("stash") && !git.nests("commit"));
        assert_eq!(git.literal_after(""), 0);
        assert_eq!(git.long_name("-m"), "message");
        // Without a long name, the flag itself, fit for a placeholder.
        assert_eq!(git.long_name("--dry-run"), "dry_run");
        let make = cli("make").expect("make is in the table");
        assert_eq!(make.literal_after(""), usize::MAX);
        assert!(make.optional_number.contains(&"-j"));
        let uv = cli("uv").expect("uv is in the table");
        assert!(uv.runners.contains(&"run") && uv.runners.contains(&"tool run"));
        assert_eq!(cli("sudo").map(|c| c.sub), Some(Sub::Runner));
        assert_eq!(cli("python").and_then(|c| c.module_flag), Some("-m"));
        assert!(cli("mysql").is_some_and(|c| c.attached.contains(&"-p")));
        assert!(!GENERIC.takes_value(Some("x"), "-p"));
    }

    #[test]
    fn every_name_has_one_entry() {
        let mut seen = HashSet::new();
        for cli in CLIS {
            assert!(!cli.names.is_empty());
            for name in cli.names {
                assert!(seen.insert(*name), "{name} is in two entries");
            }
        }
        assert_eq!(CLI_INDEX.len(), seen.len());
    }
    #[test]
    fn looking_around_is_reading_without_changing_anything() {
        for key in [
            "wc -l <arg>",
            "du -sh <arg>",
            "sed -n <arg> <arg>",
            "sed -ne <arg> <arg>",
            "grep -rn <arg> <arg>",
            "rg -n <arg> <arg>",
            "find <arg> -name <arg>",
            "uname -a",
            "python3 --version",
            "go version",
            "git status --short",
            "git diff --stat",
            "git grep <arg>",
            "git branch",
            "git branch -a",
            "wc -l < <arg>",
            "grep <arg> <arg> 2>&1",
            "docker images",
            "hg log",
            "brew info <arg>",
            "kubectl describe <arg> <arg>",
            "which <arg>",
        ] {
            assert!(looks_around(key), "{key}");
        }
        for key in [
            "sed -i <arg> <arg>",
            "sed -ni <arg> <arg>",
            "sed <arg> <arg>",
            "sed -n --in-place <arg> <arg>",
            "grep <arg> <arg> > <arg>",
            "find <arg> -name <arg> -delete",
            "find <arg> -exec rm <arg> ;",
            "git commit -m <arg>",
            "git add <arg>",
            "git branch <arg>",
            "git branch -D <arg>",
            "openssl x509 -in <arg> -noout -subject",
            "objdump -d <arg>",
            "sudo du -sh <arg>",
            "make -C <arg> test",
            "python3 --version > <arg>",
            "cargo version <arg>",
            "docker build <arg>",
            "brew upgrade <arg>",
            "hg update -C",
            "npm install <arg>",
        ] {
            assert!(!looks_around(key), "{key}");
        }
    }
}
