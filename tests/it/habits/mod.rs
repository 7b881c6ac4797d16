//! Issue 29's check of shapes: habits drawn at random from a grammar of command-line shapes
//! ([`grammar`]), planted in Claude Code, Codex and bash-history sessions with decoys
//! ([`corpus`]), run through the daemon end to end ([`harness`]). The test holds a small fixed
//! draw to issue 29's goals; `cargo bench --bench habits` runs a few hundred and prints the
//! figures.

pub mod corpus;
pub mod grammar;
pub mod harness;

#[test]
fn random_habits_become_one_candidate_each_printing_the_lines_as_typed() {
    // A fixed draw (any seed must do; a fixed one reproduces a failure) of enough habits for
    // the shapes to matter and few enough for CI.
    let (seed, habits) = (29, 24);
    let (figures, report) = harness::run(seed, habits);
    let summary = figures.summary();
    eprintln!("{report}\n{summary}");
    assert!(
        figures.word_for_word_ratio() >= 0.95
            && figures.one_candidate == figures.habits
            && figures.candidates == figures.habits
            && figures.params_ratio() >= 0.95
            && figures.false_proposals == 0,
        "issue 29's goals are not met:\n{summary}\n(per habit above)"
    );
}
