//! A habit's steps made the lines its occurrences ran: after the tokens found the habit and
//! [`crate::mine::params::align`] lined up their commands, the occurrences' own lines are
//! aligned ([`super::align::align_lines`]) and, when they fit, become the habit's steps, its
//! parameters and its evidence.

use std::collections::BTreeMap;

use super::Shell;
use super::align::{ParseCache, align_lines_cached};
use crate::mine::params::Aligned;
use crate::mine::pattern::Evidence;

/// Names a hole as the command alignment named the same values (`cargo test -p <package>`:
/// the CLI tables know `-p`), where that name says more than the hole's own. Compared where
/// both hold the occurrence (the commands' evidence is a sample).
fn name_as_the_commands_did(
    found: &mut super::align::AlignedLines,
    aligned: &Aligned,
    of_shell: &[&RawOccurrence],
) {
    let generic = |name: &str| {
        ["value", "arg", "number", "string", "text", "n"]
            .iter()
            .any(|g| name == *g || name.starts_with(&format!("{g}_")))
    };
    let mut renames: Vec<(String, String)> = Vec::new();
    for param in &found.params {
        let values: Vec<Option<&String>> =
            found.values.iter().map(|v| v.get(&param.name)).collect();
        let by_commands = aligned.params.iter().find(|p| {
            let mut compared = 0;
            let agrees = found.fitting.iter().zip(&values).all(|(&i, value)| {
                let r = of_shell[i];
                let held = aligned
                    .evidence
                    .iter()
                    .find(|e| e.session == r.session && (e.first_seq, e.last_seq) == r.seqs);
                match held {
                    Some(e) => {
                        compared += 1;
                        e.params.get(&p.name) == *value
                    }
                    None => true,
                }
            });
            !generic(&p.name) && agrees && compared > 0
        });
        let Some(named) = by_commands else { continue };
        let taken = found.params.iter().any(|p| p.name == named.name)
            || renames.iter().any(|(_, to)| *to == named.name);
        if !taken && named.name != param.name {
            renames.push((param.name.clone(), named.name.clone()));
        }
    }
    for (from, to) in renames {
        for p in &mut found.params {
            if p.name == from {
                p.name.clone_from(&to);
                p.named_from = format!("the commands' {to}");
            }
        }
        for step in &mut found.steps {
            for piece in step.iter_mut() {
                if let crate::mine::pattern::Piece::Param(n) = piece
                    && *n == from
                {
                    n.clone_from(&to);
                }
            }
        }
        for values in &mut found.values {
            if let Some(v) = values.remove(&from) {
                values.insert(to.clone(), v);
            }
        }
    }
}

/// One occurrence as its log holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawOccurrence {
    /// The session.
    pub session: String,
    /// The first and last action's seq.
    pub seqs: (u64, u64),
    /// The command lines of its actions, in order, each once: every action holding one of the
    /// habit's commands, whole. `None` when one of them is not a command line (an agent's
    /// tool call).
    pub lines: Option<Vec<String>>,
    /// The shell the lines ran in.
    pub shell: Shell,
    /// The agent (or history) that ran them.
    pub agent: String,
}

/// Makes `aligned`'s steps the lines of `raw`'s occurrences, with holes, when they align:
/// the parameters become the holes', and the evidence the occurrences that fit, with their
/// lines as logged. Returns whether it did. `raw` is in the order `aligned` was made from.
pub fn attach(
    aligned: &mut Aligned,
    raw: &[RawOccurrence],
    max_evidence: usize,
    cache: &mut ParseCache,
) -> bool {
    if raw.is_empty() || raw.iter().any(|r| r.lines.is_none()) {
        return false;
    }
    // One shell's lines: the shell most occurrences ran in.
    let shell = [Shell::Bash, Shell::Zsh, Shell::Fish]
        .into_iter()
        .max_by_key(|s| raw.iter().filter(|r| r.shell == *s).count())
        .unwrap_or_default();
    let of_shell: Vec<&RawOccurrence> = raw.iter().filter(|r| r.shell == shell).collect();
    let lines: Vec<Vec<String>> = of_shell
        .iter()
        .map(|r| r.lines.clone().unwrap_or_default())
        .collect();
    let Some(found) = align_lines_cached(&lines, cache) else {
        return false;
    };
    let mut found = found;
    name_as_the_commands_did(&mut found, aligned, &of_shell);
    let evidence: Vec<Evidence> = found
        .fitting
        .iter()
        .zip(&found.values)
        .take(max_evidence)
        .map(|(&i, values)| {
            let r = of_shell[i];
            Evidence {
                session: r.session.clone(),
                first_seq: r.seqs.0,
                last_seq: r.seqs.1,
                params: values
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<BTreeMap<_, _>>(),
                commands: lines[i].clone(),
                replay: None,
                agent: Some(r.agent.clone()),
            }
        })
        .collect();
    aligned.consistency *= found.fitting.len() as f64 / raw.len() as f64;
    aligned.lines = found.steps;
    aligned.params = found.params;
    aligned.evidence = evidence;
    aligned.shell = shell;
    true
}
