//! Issue 30's labelled set: what toolsmith chooses for a tool from all of `../shared/corpus`,
//! against the labels of `tests/data/habit-labels.toml` (a developer's keep / not). The run is
//! the real one: `toolsmith ingest`, `mine`, and `generate` until a pass proposes nothing, as
//! `scripts/corpus-habits.sh` does.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::common::{TestEnv, corpus, json_of};

#[derive(Debug, Deserialize)]
struct Labels {
    habit: Vec<Label>,
}

#[derive(Debug, Deserialize)]
struct Label {
    steps: Vec<String>,
    keep: bool,
    /// Kept only with the user's shell definitions, which the corpus does not hold.
    #[serde(default)]
    definitions: bool,
    why: String,
}

/// A step as the labels match it: runs of whitespace as one space, every `<name>` as `<>`.
fn normal(step: &str) -> String {
    let mut out = String::new();
    let mut in_name = false;
    for c in step
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
    {
        match c {
            '<' => {
                in_name = true;
                out.push_str("<>");
            }
            '>' if in_name => in_name = false,
            _ if in_name => {}
            _ => out.push(c),
        }
    }
    out.replace(" |", "|").replace("| ", "|")
}

fn normal_steps(steps: &[String]) -> Vec<String> {
    steps.iter().map(|s| normal(s)).collect()
}

#[test]
fn most_habits_chosen_from_the_corpus_are_kept_and_none_worth_a_tool_is_lost() {
    let Some(corpus) = corpus() else { return };
    let labels: Labels = toml::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/habit-labels.toml"),
        )
        .expect("the labels"),
    )
    .expect("the labels parse");
    let env = TestEnv::new();
    env.cli().arg("ingest").arg(&corpus).assert().success();
    env.cli().arg("mine").assert().success();
    for _ in 0..30 {
        let out = env
            .cli()
            .args(["--json", "generate"])
            .timeout(Duration::from_secs(600))
            .assert()
            .success();
        let made = json_of(out.get_output())["candidates"]
            .as_array()
            .map_or(0, Vec::len);
        if made == 0 {
            break;
        }
    }
    let out = env.cli().args(["--json", "candidates"]).assert().success();
    let candidates = json_of(out.get_output());
    let out = env
        .cli()
        .args(["--json", "patterns", "--limit", "100000"])
        .assert()
        .success();
    let patterns = json_of(out.get_output());
    let pattern = |id: &str| -> Option<&Value> {
        patterns
            .as_array()?
            .iter()
            .find(|p| p["id"].as_str() == Some(id))
    };
    // Every habit chosen, best score first.
    let mut chosen: Vec<(f64, Vec<String>)> = candidates
        .as_array()
        .expect("candidates")
        .iter()
        .filter_map(|c| pattern(c["pattern"].as_str()?))
        .map(|p| {
            let steps: Vec<String> = p["steps"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect();
            (p["score"].as_f64().unwrap_or_default(), steps)
        })
        .collect();
    chosen.sort_by(|a, b| b.0.total_cmp(&a.0));
    let label = |steps: &[String]| {
        let wanted = normal_steps(steps);
        labels
            .habit
            .iter()
            .find(|l| normal_steps(&l.steps) == wanted)
    };
    let mut table = String::new();
    let mut unlabelled = Vec::new();
    let mut kept = 0;
    for (rank, (score, steps)) in chosen.iter().enumerate() {
        let verdict = match label(steps) {
            Some(l) if l.keep => {
                kept += 1;
                "keep"
            }
            Some(_) => "not",
            None => {
                unlabelled.push(steps.join(" → "));
                "?"
            }
        };
        table.push_str(&format!(
            "{:>3} {score:>5.1} {verdict:<4} {}\n",
            rank + 1,
            steps.join(" → ")
        ));
    }
    let top_kept = chosen
        .iter()
        .take(10)
        .filter(|(_, s)| label(s).is_some_and(|l| l.keep))
        .count();
    let lost: Vec<String> = labels
        .habit
        .iter()
        .filter(|l| l.keep && !l.definitions)
        .filter(|l| {
            !chosen
                .iter()
                .any(|(_, s)| normal_steps(s) == normal_steps(&l.steps))
        })
        .map(|l| format!("{} ({})", l.steps.join(" → "), l.why))
        .collect();
    let precision = kept as f64 / chosen.len().max(1) as f64;
    eprintln!(
        "{table}chosen {}, kept {kept}, precision {:.0}%, top 10 kept {top_kept}",
        chosen.len(),
        precision * 100.0
    );
    assert!(
        unlabelled.is_empty(),
        "habits chosen but not labelled in tests/data/habit-labels.toml (judge each: keep or \
         not):\n{}\n{table}",
        unlabelled.join("\n")
    );
    assert!(
        lost.is_empty(),
        "habits worth a tool lost:\n{}",
        lost.join("\n")
    );
    assert!(
        precision >= 0.6 && top_kept >= 6,
        "precision {:.0}% (goal ≥ 60%), top 10 kept {top_kept} (goal ≥ 6):\n{table}",
        precision * 100.0
    );
}

#[test]
fn steps_match_their_labels_whatever_their_parameter_names() {
    assert_eq!(
        normal("brew upgrade <value> <value_2> "),
        "brew upgrade <> <>"
    );
    assert_eq!(normal("cat <path> |pbcopy "), "cat <>|pbcopy");
    assert_eq!(normal("cat <path> | pbcopy"), "cat <>|pbcopy");
    assert_eq!(normal("ojichat  <value>"), "ojichat <>");
}
