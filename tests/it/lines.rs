//! A tool of command lines runs each line as the agent typed it, its parameters written in as
//! values: whatever a value holds — quotes, `$( … )`, backquotes, a newline — reaches the program
//! as that text, whether its hole sits bare, inside single quotes, inside double quotes or in a
//! quoted here-document; and its dry run prints the line as typed. The tool runs in the sandbox
//! (`toolsmith sandbox`), never outside it.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::TestEnv;
use toolsmith::generate::spec::ToolSpec;
use toolsmith::generate::template;
use toolsmith::mine::line::align::{align_lines, display};
use toolsmith::mine::line::same_line;
use toolsmith::mine::pattern::{Evidence, Pattern, PatternKind, Step};

/// One occurrence of the habit: a value written into four places of one line.
fn typed(v: &str, file: &str) -> String {
    format!(
        "printf '[%s]\\n' 's/old/{v}/' \"Release {v} now\" {file} && cat <<'EOF'\nnote: {v}\nEOF"
    )
}

/// The pattern mining makes of the habit, and its tool's files.
fn tool(dir: &Path) -> (Pattern, ToolSpec) {
    let logged: Vec<Vec<String>> = [("1.4.2", "a.txt"), ("1.5.0", "b.txt"), ("2.0.1", "c.txt")]
        .iter()
        .map(|(v, f)| vec![typed(v, f)])
        .collect();
    let aligned = align_lines(&logged).expect("the lines align");
    let evidence: Vec<Evidence> = aligned
        .values
        .iter()
        .enumerate()
        .map(|(i, values)| Evidence {
            session: format!("s{i}"),
            first_seq: 1,
            last_seq: 1,
            params: values.clone(),
            commands: logged[i].clone(),
            replay: None,
            agent: Some("claude-code".into()),
        })
        .collect();
    let pattern = Pattern {
        id: "p-0000abcd".into(),
        kind: PatternKind::Sequence,
        support: 3,
        occurrences: 3,
        score: 50.0,
        score_parts: Default::default(),
        templates: aligned.steps.iter().map(|s| display(s)).collect(),
        steps: vec![Step {
            template: "printf <format> <arg> <arg> <path>".into(),
            words: Vec::new(),
            globs: Vec::new(),
            key: "printf <arg> <arg> <arg> <arg>".into(),
            captures: None,
            piped: false,
            agent_tool: false,
        }],
        params: aligned.params.clone(),
        internals: Vec::new(),
        lines: aligned.steps.clone(),
        shell: Default::default(),
        workspace_varies: false,
        trigger: None,
        median_ms: None,
        evidence,
        folded_into: None,
        folded: Vec::new(),
        expansions: Vec::new(),
        unknown_programs: Vec::new(),
    };
    let spec = ToolSpec::from_pattern(&pattern, &|_| false).expect("a spec");
    let files = template::generate(&spec, semver::Version::new(1, 0, 0)).expect("the tool");
    for (name, text) in &files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    (pattern, spec)
}

/// Runs the tool in the sandbox with `args`; its stdout.
fn run(env: &TestEnv, tool_dir: &Path, workspace: &Path, dry: bool, args: &[&str]) -> String {
    let mut cli = env.cli();
    cli.arg("sandbox");
    if dry {
        cli.args(["--env", "TOOLSMITH_DRY_RUN=1"]);
    }
    let out = cli
        .arg("--tool-dir")
        .arg(tool_dir)
        .args(["--workspace", "write"])
        .arg(workspace)
        .args(["--timeout", "30", "--", "/bin/bash", "/tool/run.sh"])
        .args(args)
        .timeout(Duration::from_secs(90))
        .output()
        .expect("toolsmith sandbox runs");
    assert!(
        out.status.success(),
        "the tool with {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn one_value_in_four_quotings_is_one_parameter_passed_as_a_value_never_as_code() {
    let env = TestEnv::new();
    let tool_dir = env.path().join("tool");
    let workspace = env.path().join("ws");
    std::fs::create_dir_all(&workspace).expect("workspace");
    let (pattern, spec) = tool(&tool_dir);
    // One parameter, however many places the value was written in.
    let names: Vec<&str> = spec.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["version", "value"], "{:#?}", pattern.lines);
    assert_eq!(
        pattern.templates,
        [
            "printf '[%s]\\n' 's/old/<version>/' \"Release <version> now\" <value>.txt && cat \
             <<'EOF'\nnote: <version>\nEOF"
        ]
    );

    // The dry run with an occurrence's values prints that occurrence's line as typed.
    let dry = run(
        &env,
        &tool_dir,
        &workspace,
        true,
        &["--version", "1.5.0", "--value", "b"],
    );
    assert!(same_line(dry.trim_end(), &typed("1.5.0", "b.txt")), "{dry}");

    // A value the shell would read as code, in every place: printed as that text.
    let hostile = "x'y\"$(touch pwned)`touch pwned2`\\n$HOME";
    let out = run(
        &env,
        &tool_dir,
        &workspace,
        false,
        &["--version", hostile, "--value", "plain"],
    );
    assert_eq!(
        out,
        format!("[s/old/{hostile}/]\n[Release {hostile} now]\n[plain.txt]\nnote: {hostile}\n"),
        "{}",
        std::fs::read_to_string(tool_dir.join("run.sh")).unwrap_or_default()
    );
    assert!(!workspace.join("pwned").exists() && !workspace.join("pwned2").exists());
}
