//! Error→recovery habits: an action fails with an error, the agent does the same few things, and
//! the action is run again, now successfully.
//!
//! Each failed action's error output is reduced to its most telling line and grouped into a
//! template by the online miner of [`super::templates`]. The recovery of a failure is what the
//! agent did between it and the next success of the same action (same canonical key), when that
//! success comes within `max_steps` actions. A (template, failing action, recovery steps) triple
//! seen in `min_support` sessions or more is a recovery pattern.

use std::collections::{BTreeSet, HashMap};

use super::templates::{TemplateId, TemplateMiner, TemplateMinerConfig, WILDCARD};

/// Words that mark the line of an output that says what went wrong.
const ERROR_MARKERS: [&str; 16] = [
    "error",
    "failed",
    "failure",
    "fatal",
    "panicked",
    "exception",
    "traceback",
    "not found",
    "no such file",
    "denied",
    "cannot",
    "could not",
    "unable to",
    "refused",
    "timed out",
    "invalid",
];

/// The longest error line kept for templating; longer lines are cut at a character boundary.
const MAX_ERROR_LINE: usize = 512;

/// Whether a line names an exception with its message: `ModuleNotFoundError: No module named
/// 'x'`, `java.io.IOException: …`, `TypeError: …`.
fn is_exception(line: &str) -> bool {
    let Some((head, _)) = line.split_once(':') else {
        return false;
    };
    let name = head.rsplit(['.', ' ']).next().unwrap_or(head);
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && (name.ends_with("Error") || name.ends_with("Exception"))
}

/// Whether a line is a compiler's or tool's error report: `error: …`, `error[E0425]: …`,
/// `fatal: …`, `npm ERR! …`, `FAILED …`.
fn is_error_report(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    [
        "error:",
        "error[",
        "fatal:",
        "fatal error:",
        "npm err!",
        "failed ",
        "failed:",
        "panicked at",
    ]
    .iter()
    .any(|p| lower.starts_with(p))
        || lower.contains(": error:")
}

/// Whether a line names something in quotes (`'left-pad'`, `"x.json"`, `` `foo` ``): what a
/// fix acts on is usually named so (`Cannot find module 'left-pad'`), where a summary line
/// (`Test suite failed to run`) names nothing.
fn names_something(line: &str) -> bool {
    ['\'', '"', '`'].iter().any(|&q| {
        let mut parts = line.split(q);
        parts.next();
        // An opening quote, some text, a closing quote.
        matches!((parts.next(), parts.next()), (Some(inner), Some(_)) if !inner.trim().is_empty())
    })
}

/// The line of `output` that best says what went wrong, from the strongest sign to the
/// weakest: the last line naming an exception with its message (the one a traceback ends
/// with), the first error report of a compiler or tool, the first line with an error word that
/// names something in quotes (what a fix acts on: `Cannot find module 'x'` rather than the
/// `Test suite failed to run` above it), the first line with an error word, else the first
/// non-empty line. pytest's `E   ` prefix is taken off. `None` for an output
/// without text.
pub fn error_line(output: &str) -> Option<&str> {
    let lines = || {
        output
            .lines()
            .map(|l| {
                let l = l.trim();
                l.strip_prefix("E ").map_or(l, str::trim_start)
            })
            .filter(|l| !l.is_empty() && !l.starts_with("Exit code"))
    };
    let marked = |line: &str| {
        let lower = line.to_ascii_lowercase();
        ERROR_MARKERS.iter().any(|m| lower.contains(m))
    };
    let line = lines()
        .rfind(|l| is_exception(l))
        .or_else(|| lines().find(|l| is_error_report(l)))
        .or_else(|| lines().find(|l| marked(l) && names_something(l)))
        .or_else(|| lines().find(|l| marked(l)))
        .or_else(|| lines().next())?;
    if line.len() <= MAX_ERROR_LINE {
        return Some(line);
    }
    let mut end = MAX_ERROR_LINE;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    Some(&line[..end])
}

/// One action as the recovery finder sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    /// The action's canonical key (interned): two actions with the same key are the same action.
    pub key: u32,
    /// Its outcome, when known.
    pub ok: Option<bool>,
    /// For a failure, the template of its error line ([`error_line`] fed to the miner), if its
    /// output had any text.
    pub error: Option<TemplateId>,
}

/// Anything that can be seen as an [`Attempt`]: the miner's own compact rows are, so no copy of
/// millions of actions is made for this pass.
pub trait AsAttempt {
    /// The attempt it stands for.
    fn attempt(&self) -> Attempt;
}

impl AsAttempt for Attempt {
    fn attempt(&self) -> Attempt {
        *self
    }
}

/// A failure and the actions that recovered from it, in one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// The session (index into the input).
    pub session: usize,
    /// Index of the failed action.
    pub failed: usize,
    /// Indices of the recovery actions (between the failure and the successful re-run).
    pub steps: std::ops::Range<usize>,
    /// Index of the successful re-run.
    pub rerun: usize,
    /// The error's template (resolve it with the miner: templates merge as lines arrive).
    pub template: TemplateId,
}

/// Recurring recoveries: the same error of the same action, recovered by the same steps.
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveryGroup {
    /// The error's template text.
    pub error_template: String,
    /// Key of the failing action.
    pub failed_key: u32,
    /// Keys of the recovery steps, in order.
    pub step_keys: Vec<u32>,
    /// Sessions it was seen in.
    pub support: u32,
    /// Every occurrence.
    pub occurrences: Vec<Recovery>,
}

/// Finds every failure followed by a recovery and a successful re-run of the same action within
/// `max_steps` actions.
pub fn find_recoveries<S, A>(sessions: &[S], max_steps: usize) -> Vec<Recovery>
where
    S: AsRef<[A]>,
    A: AsAttempt,
{
    let mut found = Vec::new();
    for (s, attempts) in sessions.iter().enumerate() {
        let attempts = attempts.as_ref();
        for (i, failed) in attempts.iter().enumerate() {
            let failed = failed.attempt();
            if failed.ok != Some(false) {
                continue;
            }
            let Some(template) = failed.error else {
                continue;
            };
            let horizon = attempts.len().min(i + 2 + max_steps);
            // The recovery ends at the first success of the same action; a second failure of
            // it first starts a new recovery (found when the loop reaches it).
            let rerun = (i + 1..horizon).find(|&j| attempts[j].attempt().key == failed.key);
            let Some(rerun) = rerun else { continue };
            if attempts[rerun].attempt().ok != Some(true) || rerun == i + 1 {
                // Failed again, or retried at once: nothing was done to recover.
                continue;
            }
            found.push(Recovery {
                session: s,
                failed: i,
                steps: i + 1..rerun,
                rerun,
                template,
            });
        }
    }
    found
}

/// Groups recoveries by (error template, failing action, recovery steps) and keeps the groups
/// seen in at least `min_support` sessions, most supported first.
///
/// Within one (failing action, recovery steps), error templates of the same width that differ
/// in few words are one error whose differing words are variables (`Cannot find module 'chalk'`
/// and `… 'uuid'` become `Cannot find module <*> …`): the same action failing and being fixed
/// the same way is the evidence the template miner otherwise waits for
/// ([`super::templates::TemplateMinerConfig::min_variants`] variants), so a habit seen in as
/// many sessions as it takes to be mined is not split by the value its error names.
pub fn group_recoveries<S, A>(
    sessions: &[S],
    recoveries: Vec<Recovery>,
    miner: &TemplateMiner,
    min_support: u32,
) -> Vec<RecoveryGroup>
where
    S: AsRef<[A]>,
    A: AsAttempt,
{
    let mut by_fix: HashMap<(u32, Vec<u32>), Vec<Recovery>> = HashMap::new();
    for r in recoveries {
        let attempts = sessions[r.session].as_ref();
        let key = (
            attempts[r.failed].attempt().key,
            attempts[r.steps.clone()]
                .iter()
                .map(|a| a.attempt().key)
                .collect(),
        );
        by_fix.entry(key).or_default().push(r);
    }
    let similarity = TemplateMinerConfig::default().similarity;
    let mut out: Vec<RecoveryGroup> = Vec::new();
    for ((failed_key, step_keys), mut recoveries) in by_fix {
        // Occurrences in log order, so the join does not depend on the map's order.
        recoveries.sort_by_key(|r| (r.session, r.failed));
        let mut errors: Vec<(Vec<String>, Vec<Recovery>)> = Vec::new();
        for r in recoveries {
            let template = miner.resolve(r.template).unwrap_or(r.template);
            let words: Vec<String> = miner
                .template(template)
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            match errors
                .iter_mut()
                .find(|(known, _)| joinable(known, &words, similarity))
            {
                Some((known, occurrences)) => {
                    for (k, w) in known.iter_mut().zip(&words) {
                        if k != w {
                            *k = WILDCARD.to_owned();
                        }
                    }
                    occurrences.push(r);
                }
                None => errors.push((words, vec![r])),
            }
        }
        for (words, occurrences) in errors {
            let support = occurrences
                .iter()
                .map(|r| r.session)
                .collect::<BTreeSet<_>>()
                .len() as u32;
            if support >= min_support {
                out.push(RecoveryGroup {
                    error_template: words.join(" "),
                    failed_key,
                    step_keys: step_keys.clone(),
                    support,
                    occurrences,
                });
            }
        }
    }
    out.sort_by(|a, b| {
        b.support
            .cmp(&a.support)
            .then_with(|| a.step_keys.cmp(&b.step_keys))
            .then_with(|| a.error_template.cmp(&b.error_template))
            .then_with(|| a.failed_key.cmp(&b.failed_key))
    });
    out
}

/// Whether two error templates are one error: the same width, and at least `similarity` of the
/// positions neither has generalized hold the same word.
fn joinable(a: &[String], b: &[String], similarity: f64) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (mut compared, mut equal) = (0usize, 0usize);
    for (x, y) in a.iter().zip(b) {
        if x.contains(WILDCARD) || y.contains(WILDCARD) {
            continue;
        }
        compared += 1;
        equal += usize::from(x == y);
    }
    compared == 0 || equal as f64 >= similarity * compared as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_telling_line_is_picked() {
        assert_eq!(
            error_line("Exit code 101\n   Compiling foo\nerror[E0425]: cannot find value `x`\n"),
            Some("error[E0425]: cannot find value `x`")
        );
        let traceback = "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n    import foo\nModuleNotFoundError: No module named 'foo'\n";
        assert_eq!(
            error_line(traceback),
            Some("ModuleNotFoundError: No module named 'foo'")
        );
        assert_eq!(error_line("something odd\nmore"), Some("something odd"));
        assert_eq!(
            error_line(
                "ImportError while loading conftest\nE   ModuleNotFoundError: No module named 'x'"
            ),
            Some("ModuleNotFoundError: No module named 'x'")
        );
        assert_eq!(
            error_line(
                "warning: unused\nthe build failed somewhere\nerror: could not compile `foo`"
            ),
            Some("error: could not compile `foo`")
        );
        assert_eq!(
            error_line("npm ERR! code ENOENT\nnpm ERR! syscall open"),
            Some("npm ERR! code ENOENT")
        );
        // jest names the missing module below its summary line: that line is the one a fix
        // (`npm install left-pad`) acts on.
        assert_eq!(
            error_line(
                "Exit code 1\n FAIL  src/app.test.js\n  ● Test suite failed to run\n\n    \
                 Cannot find module 'left-pad' from 'src/app.js'\n"
            ),
            Some("Cannot find module 'left-pad' from 'src/app.js'")
        );
        assert_eq!(
            error_line("the run failed\nit's odd"),
            Some("the run failed"),
            "a lone apostrophe names nothing"
        );
        assert_eq!(error_line("  \n\n"), None);
        let long = "error: ".to_owned() + &"é".repeat(400);
        let line = error_line(&long).expect("a line");
        assert!(line.len() <= MAX_ERROR_LINE && line.starts_with("error: "));
    }

    fn attempt(miner: &mut TemplateMiner, key: u32, ok: bool, output: &str) -> Attempt {
        Attempt {
            key,
            ok: Some(ok),
            error: if ok {
                None
            } else {
                error_line(output).map(|l| miner.add(l).id)
            },
        }
    }

    // Numbers are masked, so both lines fall into one template.
    const FAILED_A: &str = "E   AssertionError: 3 tests failed in 0.52s";
    const FAILED_B: &str = "E   AssertionError: 12 tests failed in 1.07s";

    fn session(m: &mut TemplateMiner, err: &str, noise: bool) -> Vec<Attempt> {
        // 1 = pytest, 2 = pip install, 3 = ls, 4 = git status
        let mut s = vec![attempt(m, 4, true, ""), attempt(m, 1, false, err)];
        if noise {
            s.push(attempt(m, 3, true, ""));
        }
        s.push(attempt(m, 2, true, "Successfully installed"));
        s.push(attempt(m, 1, true, "5 passed"));
        s
    }

    #[test]
    fn recurring_recoveries_are_grouped_across_sessions() {
        let mut m = TemplateMiner::new(TemplateMinerConfig::default());
        let sessions = vec![
            session(&mut m, FAILED_A, false),
            session(&mut m, FAILED_B, false),
            session(&mut m, FAILED_A, false),
            session(&mut m, FAILED_B, true),
        ];
        let miner = m;
        let found = find_recoveries(&sessions, 8);
        assert_eq!(found.len(), 4);
        assert_eq!(found[0].steps, 2..3);
        assert_eq!(found[0].rerun, 3);
        let groups = group_recoveries(&sessions, found, &miner, 2);
        // Three sessions recovered with `pip install` alone; the fourth put `ls` in between.
        assert_eq!(groups.len(), 1, "{groups:?}");
        let g = &groups[0];
        assert_eq!(
            (g.failed_key, g.step_keys.as_slice(), g.support),
            (1, &[2][..], 3)
        );
        assert!(
            g.error_template
                .starts_with("AssertionError: <*> tests failed"),
            "{}",
            g.error_template
        );
    }

    #[test]
    fn one_fix_of_one_failure_is_one_habit_whatever_the_value_its_error_names() {
        // Three sessions, three modules: fewer variants than the template miner waits for
        // before it takes the module name for a variable.
        let mut m = TemplateMiner::new(TemplateMinerConfig::default());
        let sessions: Vec<Vec<Attempt>> = ["dotenv", "chalk", "uuid"]
            .iter()
            .map(|module| {
                let error = format!("Cannot find module '{module}' from 'src/app.js'");
                session(&mut m, &error, false)
            })
            .collect();
        // Another failure of the same command fixed the same way, unlike these: its own habit.
        let mut other = sessions.clone();
        other.push(session(&mut m, "npm ERR! code ENOENT", false));
        let found = find_recoveries(&other, 8);
        let groups = group_recoveries(&other, found, &m, 1);
        assert_eq!(groups.len(), 2, "{groups:?}");
        assert_eq!(groups[0].support, 3);
        assert_eq!(
            groups[0].error_template,
            "Cannot find module <*> from 'src/app.js'"
        );
        assert_eq!(groups[1].error_template, "npm ERR! code ENOENT");
        // Another fix of the same failures is another habit.
        let mut fixed_otherwise = sessions.clone();
        fixed_otherwise[2][2] = attempt(&mut m, 3, true, "");
        let found = find_recoveries(&fixed_otherwise, 8);
        let groups = group_recoveries(&fixed_otherwise, found, &m, 1);
        let supports: Vec<u32> = groups.iter().map(|g| g.support).collect();
        assert_eq!(supports, [2, 1], "{groups:?}");
    }

    #[test]
    fn no_recovery_without_a_successful_rerun_in_reach() {
        let mut m = TemplateMiner::new(TemplateMinerConfig::default());
        let give_up = vec![
            attempt(&mut m, 1, false, "error: boom"),
            attempt(&mut m, 2, true, ""),
            attempt(&mut m, 1, false, "error: boom"),
        ];
        let retry = vec![
            attempt(&mut m, 1, false, "error: boom"),
            attempt(&mut m, 1, true, ""),
        ];
        let mut far = vec![attempt(&mut m, 1, false, "error: boom")];
        far.extend((0..10).map(|_| attempt(&mut m, 5, true, "")));
        far.push(attempt(&mut m, 1, true, ""));
        assert!(find_recoveries(&[give_up, retry, far], 8).is_empty());
    }
}
