//! Whether the steps of a sequence follow each other more often than chance: two commands run
//! all day (`make`, `open X`, `git status`) follow each other often whether or not one needs
//! the other. A habit's steps follow each other far more often than their own frequencies
//! predict.
//!
//! For each link `a → b` of a sequence (two consecutive steps), over every session:
//!
//! ```text
//! trials    n    = positions of a
//! observed  O    = positions of a followed by b within the window (max gap + 1 positions)
//! expected  E    = Σ_sessions n_a(s) × (1 − (1 − r_b(s))^window)
//!           r_b(s) = b's share of the positions of s that no a comes just before (of all
//!                    sessions' such positions where s has none)
//! lift           = O / E
//! G²             = 2 [O ln(O/E) + (n − O) ln((n − O)/(n − E))]      when O > E, else 0
//! ```
//!
//! The chance that `b` follows is taken from `b`'s frequency within each session, not over all
//! of them (a person who runs `make` all day in one history and never elsewhere makes `make`
//! likely after anything in that history, and only there), and only where no `a` comes just
//! before: the question is whether `b` comes after `a` more often than it comes elsewhere, so
//! a habit's own repetitions do not make its second step look common. Where `b` comes nowhere
//! else in a session, its rate elsewhere over all sessions stands for it there; where it comes
//! nowhere else at all (a store that is only the habit), half a position over all positions
//! stands for "almost never". `G²` is the log-likelihood ratio of
//! a binomial test (Dunning's): large when the excess is both big and seen often enough to be
//! sure of. A link is a habit's when its lift is at least [`MIN_LIFT`], its `G²` at least
//! [`MIN_LLR`] (p < 0.01 with one degree of freedom),
//! and enough runs of one of its steps hold it ([`MIN_CONFIDENCE`]: `b` follows `a` at least
//! three times in ten, or `a` comes before `b` as often); a sequence is as strong as its
//! weakest link. No list of programs is involved: the counts decide.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// The least lift of a link that is more than chance: the next step comes after the first at
/// least four times as often as it comes elsewhere in the same sessions. Frequent commands
/// that meet by chance, or by a person's rhythm (`sed -n …` then `make`), stay below it; the
/// habits labelled in `tests/data/habit-labels.toml` are all above six.
pub const MIN_LIFT: f64 = 4.0;

/// The least log-likelihood ratio (`G²`) of a link that is more than chance: p < 0.01 for one
/// degree of freedom. Links of frequent commands that pass it by luck among the hundreds tested
/// a run are held off by [`MIN_CONFIDENCE`].
pub const MIN_LLR: f64 = 6.63;

/// The least share of a link's runs that hold it, in one direction or the other: the next
/// step follows the first at least this often, or the first comes before the next at least
/// this often (three runs in ten: `git checkout main → git pull` holds 8 of a person's 22
/// pulls). Two commands each run all day (`sed -n …`, `cargo build`) that meet now and then
/// more often than chance are still no habit.
pub const MIN_CONFIDENCE: f64 = 0.3;

/// The counts of one link `a → b` over all sessions.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LinkCounts {
    /// Positions of `a`.
    pub trials: u32,
    /// Positions of `b`.
    pub seconds: u32,
    /// Positions of `a` followed by `b` within the window.
    pub observed: u32,
    /// How many of them chance predicts.
    pub expected: f64,
}

impl LinkCounts {
    /// `observed / expected` (0 when nothing is expected or seen).
    pub fn lift(&self) -> f64 {
        if self.expected <= 0.0 {
            return if self.observed > 0 {
                f64::INFINITY
            } else {
                0.0
            };
        }
        f64::from(self.observed) / self.expected
    }

    /// Dunning's log-likelihood ratio of the observed against the expected, 0 when fewer are
    /// observed than expected (a link less frequent than chance is no habit either way).
    pub fn llr(&self) -> f64 {
        let n = f64::from(self.trials);
        let o = f64::from(self.observed);
        let e = self.expected;
        if o <= e || e <= 0.0 || n <= 0.0 {
            return 0.0;
        }
        let term = |x: f64, y: f64| {
            if x > 0.0 && y > 0.0 {
                x * (x / y).ln()
            } else {
                0.0
            }
        };
        (2.0 * (term(o, e) + term(n - o, n - e))).max(0.0)
    }

    /// The greater of the shares of `a` followed by `b` and of `b` after an `a` (at most 1).
    pub fn confidence(&self) -> f64 {
        let share = |n: u32| {
            if n == 0 {
                0.0
            } else {
                (f64::from(self.observed) / f64::from(n)).min(1.0)
            }
        };
        share(self.trials).max(share(self.seconds))
    }

    /// Whether the link is a habit's: more than chance ([`MIN_LIFT`], [`MIN_LLR`]) and held
    /// by enough runs of one of its steps ([`MIN_CONFIDENCE`]).
    pub fn beats_chance(&self) -> bool {
        self.lift() >= MIN_LIFT && self.llr() >= MIN_LLR && self.confidence() >= MIN_CONFIDENCE
    }
}

/// A sequence's test against chance: its weakest link's terms, which `toolsmith patterns ID`
/// shows.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Association {
    /// Which link: the step it starts at (0: between the first and second step).
    pub link: u32,
    /// Its first step's positions.
    pub trials: u32,
    /// How often the next step followed.
    pub observed: u32,
    /// How often chance predicts.
    pub expected: f64,
    /// `observed / expected`.
    pub lift: f64,
    /// `G²`.
    pub llr: f64,
    /// The greater share of its first step's runs followed by the next, or of the next's runs
    /// after the first (0 in patterns stored before it was kept: not judged by it).
    #[serde(default)]
    pub confidence: f64,
    /// Its next step's runs.
    #[serde(default)]
    pub seconds: u32,
}

impl Association {
    /// The weakest of `links` (the least `G²`, then the least lift), `None` without links.
    pub fn weakest(links: &[LinkCounts]) -> Option<Association> {
        // A link that fails a test first, then the least G².
        let (link, counts) = links.iter().enumerate().min_by(|(_, a), (_, b)| {
            a.beats_chance()
                .cmp(&b.beats_chance())
                .then_with(|| a.llr().total_cmp(&b.llr()))
                .then_with(|| a.lift().total_cmp(&b.lift()))
        })?;
        let round = |x: f64| (x * 100.0).round() / 100.0;
        let lift = counts.lift();
        Some(Association {
            link: link as u32,
            trials: counts.trials,
            observed: counts.observed,
            expected: round(counts.expected),
            // JSON has no infinity: a link chance never predicts is as strong as can be shown.
            lift: if lift.is_finite() { round(lift) } else { 1e6 },
            llr: round(counts.llr()),
            confidence: round(counts.confidence()),
            seconds: counts.seconds,
        })
    }

    /// Whether every link is a habit's (see the module documentation); a confidence of 0 is
    /// one stored before it was kept, not judged by it.
    pub fn beats_chance(&self) -> bool {
        self.lift >= MIN_LIFT
            && self.llr >= MIN_LLR
            && (self.confidence == 0.0 || self.confidence >= MIN_CONFIDENCE)
    }
}

/// Counts every link of `pairs` over `sessions` (symbols in order), `b` counted when it comes
/// within `window` positions after `a`. One pass over the sessions, whatever the number of
/// pairs; memory per distinct symbol of the pairs.
pub fn count_links(sessions: &[&[u32]], pairs: &[(u32, u32)], window: usize) -> Vec<LinkCounts> {
    let window = window.max(1);
    // Dense ids for the symbols the pairs name, looked up by symbol: a run reads millions of
    // positions, and a vector indexed by symbol answers each in one load.
    let mut by_symbol: HashMap<u32, usize> = HashMap::new();
    for &(a, b) in pairs {
        let next = by_symbol.len();
        by_symbol.entry(a).or_insert(next);
        let next = by_symbol.len();
        by_symbol.entry(b).or_insert(next);
    }
    let top = by_symbol
        .keys()
        .copied()
        .max()
        .map_or(0, |m| m as usize + 1);
    // Symbols are interned, so dense; a stray huge one falls back to the map.
    let ids = if top <= MAX_DENSE {
        let mut dense = vec![NONE; top];
        for (&symbol, &id) in &by_symbol {
            dense[symbol as usize] = id;
        }
        Ids {
            dense,
            sparse: HashMap::new(),
            len: by_symbol.len(),
        }
    } else {
        Ids {
            dense: Vec::new(),
            sparse: by_symbol.clone(),
            len: by_symbol.len(),
        }
    };
    // Per first step: its pairs (their index and second step's id).
    let mut after: Vec<Vec<(usize, usize)>> = vec![Vec::new(); ids.len];
    let mut second: Vec<usize> = Vec::with_capacity(pairs.len());
    for (i, (a, b)) in pairs.iter().enumerate() {
        after[by_symbol[a]].push((i, by_symbol[b]));
        second.push(by_symbol[b]);
    }
    let mut counts = vec![LinkCounts::default(); pairs.len()];
    let mut expected = vec![0.0f64; pairs.len()];
    let mut in_session = vec![0u32; ids.len];
    let mut totals = vec![0u32; ids.len];
    let mut per_pair = vec![SessionLink::default(); pairs.len()];
    let mut touched: Vec<usize> = Vec::new();
    let mut touched_pairs: Vec<usize> = Vec::new();
    // Per pair: trials in sessions where `b` comes nowhere else; and the `b`s and positions
    // just after an `a`, over every session.
    let mut unseen = vec![0u32; pairs.len()];
    let mut pooled = vec![(0u32, 0.0f64); pairs.len()];
    let mut positions = 0.0f64;
    // The chance that a position at `rate` turns up within the window.
    let within = |rate: f64| 1.0 - (1.0 - rate).powi(window as i32);
    for symbols in sessions {
        for (at, s) in symbols.iter().enumerate() {
            let Some(id) = ids.get(*s) else { continue };
            if in_session[id] == 0 {
                touched.push(id);
            }
            in_session[id] += 1;
            totals[id] += 1;
            let end = symbols.len().min(at + 1 + window);
            for &(pair, b) in &after[id] {
                let link = &mut per_pair[pair];
                if link.trials == 0 {
                    touched_pairs.push(pair);
                }
                link.trials += 1;
                let ahead = &symbols[at + 1..end];
                if ahead.iter().any(|&t| ids.get(t) == Some(b)) {
                    link.observed += 1;
                }
                // The positions this `a` newly brings under a window, and the `b`s among them.
                let from = (at + 1).max(link.covered_to);
                for t in symbols.iter().take(end).skip(from) {
                    link.covered += 1;
                    link.b_covered += u32::from(ids.get(*t) == Some(b));
                }
                link.covered_to = link.covered_to.max(end);
            }
        }
        let len = symbols.len() as f64;
        positions += len;
        for pair in touched_pairs.drain(..) {
            let link = std::mem::take(&mut per_pair[pair]);
            let b = second[pair];
            // `b`'s rate where no `a` comes just before: the habit itself does not make `b`
            // look common. Where `b` comes nowhere else in a session, its rate is taken from
            // all such sessions together, below.
            let elsewhere = len - f64::from(link.covered);
            let b_elsewhere = in_session[b].saturating_sub(link.b_covered);
            pooled[pair].0 += link.b_covered;
            pooled[pair].1 += f64::from(link.covered);
            if b_elsewhere > 0 {
                let rate = (f64::from(b_elsewhere) / elsewhere.max(1.0)).min(1.0);
                expected[pair] += f64::from(link.trials) * within(rate);
            } else {
                unseen[pair] += link.trials;
            }
            counts[pair].trials += link.trials;
            counts[pair].observed += link.observed;
        }
        for id in touched.drain(..) {
            in_session[id] = 0;
        }
    }
    // Where `b` never came without an `a` just before in a session, its rate elsewhere over
    // all sessions stands for it there: a rare command that once came after a frequent one by
    // chance is as rare as it is everywhere. Where it never came elsewhere at all, half a
    // position over all positions stands for "almost never": never certain that `b` cannot
    // come by chance.
    for (pair, c) in counts.iter_mut().enumerate() {
        let (b_covered, covered) = pooled[pair];
        let b_elsewhere = totals[second[pair]].saturating_sub(b_covered);
        let rest = (positions - covered).max(1.0);
        let rate = if b_elsewhere > 0 {
            f64::from(b_elsewhere) / rest
        } else if positions > 0.0 {
            0.5 / positions
        } else {
            0.0
        };
        c.expected = expected[pair] + f64::from(unseen[pair]) * within(rate.min(1.0));
        c.seconds = totals[second[pair]];
    }
    counts
}

/// No id: a symbol no pair names.
const NONE: usize = usize::MAX;

/// The largest symbol looked up through a vector (32 MiB of it at most).
const MAX_DENSE: usize = 1 << 22;

/// The pairs' symbols by dense id.
struct Ids {
    dense: Vec<usize>,
    sparse: HashMap<u32, usize>,
    len: usize,
}

impl Ids {
    fn get(&self, symbol: u32) -> Option<usize> {
        if self.dense.is_empty() {
            return self.sparse.get(&symbol).copied();
        }
        self.dense
            .get(symbol as usize)
            .copied()
            .filter(|&id| id != NONE)
    }
}

/// One link's counts within one session.
#[derive(Debug, Clone, Copy, Default)]
struct SessionLink {
    trials: u32,
    observed: u32,
    /// Positions within a window after an `a`, and the `b`s among them.
    covered: u32,
    b_covered: u32,
    /// The end of the last window.
    covered_to: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session of `n` symbols drawn (deterministically) from `weights`.
    fn draw(seed: &mut u64, weights: &[(u32, u32)], n: usize) -> Vec<u32> {
        let total: u32 = weights.iter().map(|w| w.1).sum();
        (0..n)
            .map(|_| {
                *seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let mut r = ((*seed >> 33) % u64::from(total)) as u32;
                weights
                    .iter()
                    .find(|(_, w)| {
                        if r < *w {
                            true
                        } else {
                            r -= w;
                            false
                        }
                    })
                    .map_or(0, |w| w.0)
            })
            .collect()
    }

    #[test]
    fn frequent_neighbours_are_chance_and_a_habit_is_not() {
        // `1` and `2` are a third of everything each and follow each other by chance alone;
        // `7 → 8` is planted: 8 comes only after 7.
        let mut seed = 7;
        let mut sessions: Vec<Vec<u32>> = Vec::new();
        for _ in 0..40 {
            let mut s = draw(
                &mut seed,
                &[(1, 30), (2, 30), (3, 10), (4, 10), (5, 10)],
                60,
            );
            s.splice(20..20, [7, 8]);
            s.splice(45..45, [7, 8]);
            sessions.push(s);
        }
        let refs: Vec<&[u32]> = sessions.iter().map(Vec::as_slice).collect();
        let links = count_links(&refs, &[(1, 2), (7, 8), (2, 1)], 2);
        let [neighbours, habit, back] = [links[0], links[1], links[2]];
        assert!(!neighbours.beats_chance(), "{neighbours:?}");
        assert!(!back.beats_chance(), "{back:?}");
        assert!((0.7..1.4).contains(&neighbours.lift()), "{neighbours:?}");
        assert!(habit.beats_chance(), "{habit:?}");
        assert_eq!((habit.trials, habit.observed), (80, 80));
    }

    #[test]
    fn a_link_seen_twice_to_a_step_common_elsewhere_is_not_enough_evidence() {
        let sessions: Vec<Vec<u32>> = vec![
            vec![1, 2, 3, 2, 4, 2, 5, 2, 6, 2],
            vec![2, 6, 2, 5, 1, 2, 2, 3, 2, 4],
        ];
        let refs: Vec<&[u32]> = sessions.iter().map(Vec::as_slice).collect();
        let link = count_links(&refs, &[(1, 2)], 1)[0];
        assert_eq!((link.trials, link.observed), (2, 2));
        assert!(link.llr() < MIN_LLR, "{link:?} {}", link.llr());
        assert!(!link.beats_chance());
    }

    #[test]
    fn a_session_that_is_only_the_habit_shows_it() {
        // Three sessions, each the habit alone: its second step comes nowhere else.
        let sessions: Vec<Vec<u32>> = vec![vec![1, 2], vec![1, 2], vec![1, 2]];
        let refs: Vec<&[u32]> = sessions.iter().map(Vec::as_slice).collect();
        let link = count_links(&refs, &[(1, 2)], 2)[0];
        assert_eq!((link.trials, link.observed), (3, 3));
        assert!(
            link.beats_chance(),
            "{link:?} lift {} G² {}",
            link.lift(),
            link.llr()
        );
        // Run the other way round as often, it is not.
        let both: Vec<Vec<u32>> = vec![vec![1, 2], vec![2, 1], vec![1, 2], vec![2, 1]];
        let refs: Vec<&[u32]> = both.iter().map(Vec::as_slice).collect();
        let link = count_links(&refs, &[(1, 2)], 1)[0];
        assert!(
            !link.beats_chance(),
            "{link:?} lift {} G² {}",
            link.lift(),
            link.llr()
        );
    }

    #[test]
    fn chance_is_taken_within_each_session() {
        // `9` is half of one short session and absent from a long one: pooled, it is rare and
        // seems to follow `1` four times as often as chance; within the session it lives in,
        // it follows `1` as often as anything else.
        let mut seed = 3;
        let busy = draw(&mut seed, &[(1, 50), (9, 50)], 100);
        let long = draw(&mut seed, &[(1, 10), (3, 45), (4, 45)], 2000);
        let refs: Vec<&[u32]> = vec![&busy, &long];
        let link = count_links(&refs, &[(1, 9)], 1)[0];
        let pooled = f64::from(link.trials) * 50.0 / 2100.0;
        assert!(f64::from(link.observed) / pooled > 3.0, "{link:?}");
        assert!((0.6..1.5).contains(&link.lift()), "{link:?}");
        assert!(!link.beats_chance());
    }

    #[test]
    fn a_rare_command_after_the_most_frequent_one_by_chance_is_not_a_habit() {
        // `1` is a fifth of everything; `9` is rare, and some sessions hold it only once,
        // right after a `1`: alone, such a session would say `9` never comes elsewhere.
        let mut seed = 11;
        let sessions: Vec<Vec<u32>> = (0..60)
            .map(|_| draw(&mut seed, &[(1, 20), (2, 30), (3, 30), (4, 19), (9, 1)], 80))
            .collect();
        let refs: Vec<&[u32]> = sessions.iter().map(Vec::as_slice).collect();
        let link = count_links(&refs, &[(1, 9)], 2)[0];
        assert!(link.observed > 0, "{link:?}");
        assert!(link.lift() < 2.0, "{link:?} lift {}", link.lift());
        assert!(!link.beats_chance());
    }

    #[test]
    fn symbols_far_apart_are_counted_the_same() {
        let far = u32::MAX - 1;
        let sessions: Vec<Vec<u32>> = vec![vec![1, far, 3], vec![1, far, 2, 1, far]];
        let refs: Vec<&[u32]> = sessions.iter().map(Vec::as_slice).collect();
        let link = count_links(&refs, &[(1, far)], 1)[0];
        assert_eq!((link.trials, link.observed, link.seconds), (3, 3, 3));
    }

    #[test]
    fn the_weakest_link_stands_for_the_sequence() {
        let strong = LinkCounts {
            seconds: 45,
            trials: 40,
            observed: 38,
            expected: 2.0,
        };
        let weak = LinkCounts {
            seconds: 500,
            trials: 400,
            observed: 60,
            expected: 50.0,
        };
        let a = Association::weakest(&[strong, weak]).expect("two links");
        assert_eq!(a.link, 1);
        assert!(!a.beats_chance());
        assert!(Association::weakest(&[strong]).expect("one").beats_chance());
        assert_eq!(Association::weakest(&[]), None);
        // More than chance, but rare on both sides: each step runs all day, and they meet
        // in one run of six.
        let now_and_then = LinkCounts {
            trials: 35,
            seconds: 120,
            observed: 6,
            expected: 0.7,
        };
        assert!(now_and_then.lift() > 2.0 && now_and_then.llr() > MIN_LLR);
        assert!(!now_and_then.beats_chance());
        // Either direction holds a habit: `make` runs all day, `make clean` only after it.
        let after_a_frequent_one = LinkCounts {
            trials: 300,
            seconds: 12,
            observed: 11,
            expected: 1.0,
        };
        assert!(after_a_frequent_one.beats_chance());
    }
}
