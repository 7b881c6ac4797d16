//! Ranking: one score per pattern, so that only the opportunities worth a tool go on to
//! generation.
//!
//! ```text
//! frequency  F = 1 − e^(−support / 4)                    sessions the habit was seen in
//! impact     I = ½ (1 − e^(−calls / 20)) + ½ (1 − e^(−seconds / 600))
//! complexity C = min(1, (steps − 1 + ½ params + ½ [recovery]) / 3), at least 0.2
//! confidence K = consistency × success rate
//! score      = 100 × F^0.35 × I^0.30 × C^0.15 × K^0.20
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
//! A weighted geometric mean: a pattern seen once, or one that saves nothing, sinks whatever its
//! other parts say. Frequency weighs most, as the design asks for habits, not accidents.

use serde::{Deserialize, Serialize};

/// Seconds a model's round trip between two agent calls is taken to cost.
pub const SECONDS_PER_CALL: f64 = 5.0;

/// What the score is made of, for one pattern.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ScoreInput {
    /// Sessions the pattern was seen in.
    pub support: u32,
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
}

/// The score and its parts, each from 0 to 1 (the score from 0 to 100).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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
}

/// Scores one pattern by the formula in the module documentation.
pub fn score(input: &ScoreInput) -> Score {
    let saturate = |x: f64, scale: f64| 1.0 - (-x.max(0.0) / scale).exp();
    let frequency = saturate(f64::from(input.support), 4.0);
    let impact =
        0.5 * saturate(input.calls_saved, 20.0) + 0.5 * saturate(input.seconds_saved, 600.0);
    let work = f64::from(input.steps.saturating_sub(1))
        + 0.5 * f64::from(input.params)
        + if input.recovery { 0.5 } else { 0.0 };
    let complexity = (work / 3.0).clamp(0.2, 1.0);
    let confidence = input.consistency.clamp(0.0, 1.0) * input.success_rate.clamp(0.0, 1.0);
    let score = 100.0
        * frequency.powf(0.35)
        * impact.powf(0.30)
        * complexity.powf(0.15)
        * confidence.powf(0.20);
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    Score {
        score: (score * 10.0).round() / 10.0,
        frequency: round(frequency),
        impact: round(impact),
        complexity: round(complexity),
        confidence: round(confidence),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> ScoreInput {
        ScoreInput {
            support: 6,
            calls_saved: 12.0,
            seconds_saved: 60.0,
            steps: 3,
            params: 1,
            recovery: false,
            consistency: 1.0,
            success_rate: 1.0,
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
        assert_eq!(
            score(&ScoreInput {
                success_rate: 0.0,
                ..base()
            })
            .score,
            0.0
        );
    }

    #[test]
    fn scores_stay_within_0_and_100() {
        let top = score(&ScoreInput {
            support: 10_000,
            calls_saved: 1e9,
            seconds_saved: 1e9,
            steps: 8,
            params: 5,
            recovery: true,
            consistency: 3.0,
            success_rate: 2.0,
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
