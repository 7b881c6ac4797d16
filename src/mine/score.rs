//! Ranking: one score per pattern, so that only the opportunities worth a tool go on to
//! generation.
//!
//! ```text
//! frequency  F = 1 − e^(−(sessions + ¼ repeats) / 4)      repeats = occurrences − sessions
//! impact     I = ½ (1 − e^(−calls / 20)) + ½ (1 − e^(−seconds / 600))
//! complexity C = min(1, (steps − 1 + ½ params + ½ [recovery]) / 3), at least 0.2
//! confidence K = (¼ + ¾ consistency) × (½ + ½ success rate)
//! habit      A = min(1, max(0.05, ln(lift) / ln 16) + ¼ passing)   a sequence's; else 1
//! score      = 100 × F^0.35 × I^0.30 × C^0.15 × K^0.20 × A^0.25
//! ```
//!
//! - `calls` are the agent calls a tool would have saved over all occurrences: each occurrence
//!   of an n-step sequence is n calls that become one (n − 1 saved); a recovery saves its
//!   recovery steps and the failed attempt; a slow operation saves no call.
//! - `seconds` is the time spent in the occurrences: what a tool (with its output cached or its
//!   steps run without the agent's round trips) can give back. For a sequence it counts only the
//!   model's round trips between steps (an estimated 5 s per saved call), for a slow operation
//!   its whole duration, for a recovery the failed attempt's duration plus the round trips.
//! - `consistency` is how alike the occurrences are: the share of the pattern's word slots that
//!   are literal, or a parameter of a recognised kind, rather than free text that varies.
//! - `success rate` is the share of occurrences whose steps all succeeded (for a recovery: whose
//!   re-run succeeded).
//!
//! - `sessions` are the sessions the habit was seen in, a sub-agent's counted with its parent's;
//!   `repeats` are its further occurrences within those sessions. A habit repeated ten times in
//!   two sessions counts as much as one seen once in each of four: repeats count, session
//!   diversity counts more.
//!
//! - `lift` is how many times more often a sequence's steps follow each other than their own
//!   frequencies predict, at its weakest link ([`super::chance`]): a habit's steps need each
//!   other, two commands run all day follow each other by chance. A link no more than chance
//!   is not proposed at all ([`super::pattern::Pattern::by_chance`]); among those that are,
//!   the steps most bound to each other rank first. `passing` is the share of its links a
//!   value passes over (a parameter or a printed value used on both sides, a pipe): steps that
//!   hand each other work are one piece of work.
//!
//! A weighted geometric mean: a pattern never seen, or one that saves nothing, sinks whatever
//! its other parts say. Confidence never does: free-text values (a commit message) or failing
//! steps (the tests a habit runs fail half the time) make a habit less certain, not worthless,
//! so each of its two factors has a floor and a clean, consistent habit never scores 0.
//! Frequency weighs most, as the design asks for habits, not accidents.

use serde::{Deserialize, Serialize};

use super::chance::Association;

/// Seconds a model's round trip between two agent calls is taken to cost.
pub const SECONDS_PER_CALL: f64 = 5.0;

/// What the score is made of, for one pattern.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ScoreInput {
    /// Sessions the pattern was seen in (a sub-agent's counted with its parent's).
    pub support: u32,
    /// Occurrences over all sessions (at least `support`; fewer is read as `support`).
    pub occurrences: u32,
    /// Agent calls a tool would have saved over all occurrences.
    pub calls_saved: f64,
    /// Seconds a tool would have saved over all occurrences.
    pub seconds_saved: f64,
    /// Steps of the pattern.
    pub steps: u32,
    /// Parameters the tool would take.
    pub params: u32,
    /// Whether it is an error→recovery pattern (detecting the error is itself logic).
    pub recovery: bool,
    /// Share (0–1) of the word slots that are literal or typed parameters.
    pub consistency: f64,
    /// Share (0–1) of the occurrences that succeeded.
    pub success_rate: f64,
    /// A sequence's test against chance (its weakest link); `None` for the other kinds.
    pub association: Option<Association>,
    /// Links (two consecutive steps) a value passes over: a parameter or printed value used on
    /// both sides, or a pipe.
    pub links_passing: u32,
}

/// The score and its parts, each from 0 to 1 (the score from 0 to 100), with the terms they
/// were computed from, so `toolsmith patterns ID` can show why a pattern ranks where it does.
/// Patterns stored before the terms were kept read them as 0.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Score {
    /// 0–100.
    pub score: f64,
    /// F.
    pub frequency: f64,
    /// I.
    pub impact: f64,
    /// C.
    pub complexity: f64,
    /// K.
    pub confidence: f64,
    /// The sessions counted in F.
    #[serde(default)]
    pub sessions: u32,
    /// The occurrences counted in F.
    #[serde(default)]
    pub occurrences: u32,
    /// The consistency in K (0–1).
    #[serde(default)]
    pub consistency: f64,
    /// The success rate in K (0–1).
    #[serde(default)]
    pub success_rate: f64,
    /// A: how much more than chance a sequence's steps follow each other (1 for the other
    /// kinds, and for patterns stored before it was kept).
    #[serde(default = "one")]
    pub habit: f64,
    /// The terms of A: a sequence's weakest link against chance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub association: Option<Association>,
    /// The links a value passes over, in A.
    #[serde(default)]
    pub links_passing: u32,
}

fn one() -> f64 {
    1.0
}

/// Scores one pattern by the formula in the module documentation.
pub fn score(input: &ScoreInput) -> Score {
    let saturate = |x: f64, scale: f64| 1.0 - (-x.max(0.0) / scale).exp();
    let sessions = f64::from(input.support);
    let repeats = f64::from(input.occurrences.max(input.support) - input.support);
    let frequency = saturate(sessions + 0.25 * repeats, 4.0);
    let impact =
        0.5 * saturate(input.calls_saved, 20.0) + 0.5 * saturate(input.seconds_saved, 600.0);
    let work = f64::from(input.steps.saturating_sub(1))
        + 0.5 * f64::from(input.params)
        + if input.recovery { 0.5 } else { 0.0 };
    let complexity = (work / 3.0).clamp(0.2, 1.0);
    let consistency = clamp01(input.consistency);
    let success_rate = clamp01(input.success_rate);
    let confidence = (0.25 + 0.75 * consistency) * (0.5 + 0.5 * success_rate);
    let links = input.steps.saturating_sub(1).max(1);
    let passing = f64::from(input.links_passing.min(links)) / f64::from(links);
    let habit = input.association.map_or(1.0, |a| {
        let lift = if a.lift.is_nan() {
            0.05
        } else {
            (a.lift.max(1.0).ln() / 16f64.ln()).clamp(0.05, 1.0)
        };
        (lift + 0.25 * passing).min(1.0)
    });
    let score = 100.0
        * frequency.powf(0.35)
        * impact.powf(0.30)
        * complexity.powf(0.15)
        * confidence.powf(0.20)
        * habit.powf(0.25);
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    Score {
        score: (score * 10.0).round() / 10.0,
        frequency: round(frequency),
        impact: round(impact),
        complexity: round(complexity),
        confidence: round(confidence),
        sessions: input.support,
        occurrences: input.occurrences.max(input.support),
        consistency: round(consistency),
        success_rate: round(success_rate),
        habit: round(habit),
        association: input.association,
        links_passing: input.links_passing,
    }
}

/// `x` within 0–1 (NaN as 0).
fn clamp01(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> ScoreInput {
        ScoreInput {
            support: 6,
            occurrences: 6,
            calls_saved: 12.0,
            seconds_saved: 60.0,
            steps: 3,
            params: 1,
            recovery: false,
            consistency: 1.0,
            success_rate: 1.0,
            association: None,
            links_passing: 0,
        }
    }

    #[test]
    fn each_part_raises_the_score() {
        let b = score(&base()).score;
        assert!(
            score(&ScoreInput {
                support: 12,
                ..base()
            })
            .score
                > b
        );
        assert!(
            score(&ScoreInput {
                calls_saved: 40.0,
                ..base()
            })
            .score
                > b
        );
        assert!(
            score(&ScoreInput {
                seconds_saved: 600.0,
                ..base()
            })
            .score
                > b
        );
        assert!(
            score(&ScoreInput {
                steps: 2,
                params: 0,
                ..base()
            })
            .score
                < b
        );
        assert!(
            score(&ScoreInput {
                consistency: 0.5,
                ..base()
            })
            .score
                < b
        );
        assert!(
            score(&ScoreInput {
                success_rate: 0.5,
                ..base()
            })
            .score
                < b
        );
    }

    #[test]
    fn a_zero_part_sinks_the_score() {
        assert_eq!(
            score(&ScoreInput {
                support: 0,
                occurrences: 0,
                ..base()
            })
            .score,
            0.0
        );
        assert_eq!(
            score(&ScoreInput {
                calls_saved: 0.0,
                seconds_saved: 0.0,
                ..base()
            })
            .score,
            0.0
        );
    }

    #[test]
    fn no_confidence_term_zeroes_a_habit() {
        // `git add <path> → git commit -m <message>`: the message is free text in every slot
        // that varies; `Edit → npm run build → npm test`: the tests failed each time.
        let free_text = score(&ScoreInput {
            consistency: 0.0,
            ..base()
        });
        let failing = score(&ScoreInput {
            success_rate: 0.0,
            ..base()
        });
        let both = score(&ScoreInput {
            consistency: 0.0,
            success_rate: 0.0,
            ..base()
        });
        let clean = score(&base());
        assert!(both.score > 20.0, "{both:?}");
        assert!(free_text.score < clean.score && failing.score < clean.score);
        assert!(both.score < free_text.score && both.score < failing.score);
        assert_eq!((both.consistency, both.success_rate), (0.0, 0.0));
        assert_eq!(both.confidence, 0.125);
        assert_eq!(clean.confidence, 1.0);
    }

    #[test]
    fn repeats_count_and_session_diversity_counts_more() {
        // `./scripts/check.sh --module X → make -C X test`, ten times over two sessions.
        let repeated = score(&ScoreInput {
            support: 2,
            occurrences: 10,
            ..base()
        });
        let twice = score(&ScoreInput {
            support: 2,
            occurrences: 2,
            ..base()
        });
        let spread = score(&ScoreInput {
            support: 10,
            occurrences: 10,
            ..base()
        });
        assert!(repeated.score > twice.score, "{repeated:?} vs {twice:?}");
        assert!(spread.score > repeated.score, "{spread:?} vs {repeated:?}");
        assert_eq!((repeated.sessions, repeated.occurrences), (2, 10));
        // Fewer occurrences than sessions (an old caller) reads as one per session.
        let odd = score(&ScoreInput {
            occurrences: 0,
            ..base()
        });
        assert_eq!(odd, score(&base()));
    }

    #[test]
    fn scores_stay_within_0_and_100() {
        let top = score(&ScoreInput {
            support: 10_000,
            occurrences: 10_000,
            calls_saved: 1e9,
            seconds_saved: 1e9,
            steps: 8,
            params: 5,
            recovery: true,
            consistency: 3.0,
            success_rate: 2.0,
            association: None,
            links_passing: 0,
        });
        assert!(top.score <= 100.0 && top.score > 99.0, "{top:?}");
        let odd = score(&ScoreInput {
            calls_saved: -5.0,
            consistency: -1.0,
            ..base()
        });
        assert!(odd.score >= 0.0);
    }

    #[test]
    fn steps_bound_to_each_other_rank_above_neighbours() {
        let with_lift_input = |lift: f64| ScoreInput {
            association: Some(Association {
                lift,
                llr: 40.0,
                ..Association::default()
            }),
            ..base()
        };
        let with_lift = |lift: f64| score(&with_lift_input(lift));
        let (bound, loose, chance) = (with_lift(30.0), with_lift(3.0), with_lift(1.0));
        assert!(bound.score > loose.score && loose.score > chance.score);
        assert_eq!(bound.habit, 1.0);
        assert_eq!(chance.habit, 0.05);
        // Another kind is not tested against chance and loses nothing.
        assert_eq!(score(&base()).habit, 1.0);
        assert_eq!(bound.score, score(&base()).score);
        assert_eq!(with_lift(f64::NAN).habit, 0.05);
        // A value handed from step to step counts for the habit.
        let handing = score(&ScoreInput {
            links_passing: 2,
            ..with_lift_input(3.0)
        });
        assert!(handing.score > loose.score, "{handing:?} vs {loose:?}");
        assert!((handing.habit - loose.habit - 0.25).abs() < 0.01);
    }

    #[test]
    fn a_habit_of_six_sessions_ranks_above_a_pair() {
        let habit = score(&base());
        let pair = score(&ScoreInput {
            support: 2,
            calls_saved: 4.0,
            seconds_saved: 20.0,
            ..base()
        });
        assert!(habit.score > pair.score + 10.0, "{habit:?} vs {pair:?}");
    }
}
