//! A habit's steps made the lines its occurrences ran: after the tokens found the habit and
//! [`crate::mine::params::align`] lined up their commands, the occurrences' own lines are
//! aligned ([`super::align::align_lines`]) and, when they fit, become the habit's steps, its
//! parameters and its evidence.

use std::collections::BTreeMap;

use super::Shell;
use super::align::align_lines;
use crate::mine::params::Aligned;
use crate::mine::pattern::Evidence;

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
pub fn attach(aligned: &mut Aligned, raw: &[RawOccurrence], max_evidence: usize) -> bool {
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
    let Some(found) = align_lines(&lines) else {
        return false;
    };
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
    // Every hole is typed from its values: what is left of consistency is how many
    // occurrences the lines fit.
    aligned.consistency = found.fitting.len() as f64 / raw.len() as f64;
    aligned.lines = found.steps;
    aligned.params = found.params;
    aligned.evidence = evidence;
    aligned.shell = shell;
    true
}
