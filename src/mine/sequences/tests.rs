//! The sequence miner against the published examples and a brute-force oracle of its
//! definitions (support, occurrences, closure, folding), on random databases too.

use super::*;

fn config(min_support: u32, max_gap: Option<u32>) -> SequenceMinerConfig {
    SequenceMinerConfig {
        min_support,
        max_gap,
        min_len: 1,
        max_len: usize::MAX,
        closed: false,
        fold_ratio: None,
        min_occurrences: None,
        max_patterns: usize::MAX,
        never_dominate: Vec::new(),
        walls_from: None,
    }
}

fn mine(db: &[Vec<u32>], config: SequenceMinerConfig) -> Vec<(Vec<u32>, u32)> {
    let mined = SequenceMiner::new(config).and_then(|m| m.mine(db));
    let mined = mined.unwrap_or_else(|e| panic!("mining failed: {e}"));
    mined
        .patterns
        .into_iter()
        .map(|p| (p.items, p.support))
        .collect()
}

fn support_of(found: &[(Vec<u32>, u32)], items: &[u32]) -> Option<u32> {
    found.iter().find(|(p, _)| p == items).map(|&(_, s)| s)
}

#[test]
fn python_readme_example() {
    // prefixspan's README database; expected output from its frequent(2), checked by hand.
    let db = vec![
        vec![0, 1, 2, 3, 4],
        vec![1, 1, 1, 3, 4],
        vec![2, 1, 2, 2, 0],
        vec![1, 1, 1, 2, 2],
    ];
    let expected: Vec<(Vec<u32>, u32)> = vec![
        (vec![0], 2),
        (vec![1], 4),
        (vec![1, 1], 2),
        (vec![1, 1, 1], 2),
        (vec![1, 2], 3),
        (vec![1, 2, 2], 2),
        (vec![1, 3], 2),
        (vec![1, 3, 4], 2),
        (vec![1, 4], 2),
        (vec![2], 3),
        (vec![2, 2], 2),
        (vec![3], 2),
        (vec![3, 4], 2),
        (vec![4], 2),
    ];
    assert_eq!(mine(&db, SequenceMinerConfig::unconstrained(2)), expected);
}

#[test]
fn prefixspan_paper_example_flattened() {
    // Pei et al. 2001, Table 1, each itemset written out in order (a=0 … g=6):
    // <a(abc)(ac)d(cf)>, <(ad)c(bc)(ae)>, <(ef)(ab)(df)cb>, <eg(af)cbc>.
    let db = vec![
        vec![0, 0, 1, 2, 0, 2, 3, 2, 5],
        vec![0, 3, 2, 1, 2, 0, 4],
        vec![4, 5, 0, 1, 3, 5, 2, 1],
        vec![4, 6, 0, 5, 2, 1, 2],
    ];
    let found = mine(&db, SequenceMinerConfig::unconstrained(2));
    // Length 1 as in the paper: a:4, b:4, c:4, d:3, e:3, f:3; g (support 1) is not frequent.
    for (item, support) in [(0, 4), (1, 4), (2, 4), (3, 3), (4, 3), (5, 3)] {
        assert_eq!(support_of(&found, &[item]), Some(support), "item {item}");
    }
    assert_eq!(support_of(&found, &[6]), None);
    // Prefix <a>: the paper's <aa>:2, <ab>:4, <ac>:4 hold; flattening turns the itemsets
    // (ad) and (af) into a-then-d and a-then-f, so <ad> and <af> gain a sequence (3, not 2),
    // and <ae> (only in the second sequence) stays infrequent.
    assert_eq!(support_of(&found, &[0, 0]), Some(2));
    assert_eq!(support_of(&found, &[0, 1]), Some(4));
    assert_eq!(support_of(&found, &[0, 2]), Some(4));
    assert_eq!(support_of(&found, &[0, 3]), Some(3));
    assert_eq!(support_of(&found, &[0, 5]), Some(3));
    assert_eq!(support_of(&found, &[0, 4]), None);
    // <abc>: a, then b, then c in all four; <acb> in all but the first (its only b precedes
    // every c after an a); <abcb> only in the third.
    assert_eq!(support_of(&found, &[0, 1, 2]), Some(4));
    assert_eq!(support_of(&found, &[0, 2, 1]), Some(3));
    assert_eq!(support_of(&found, &[0, 1, 2, 1]), None);
    assert_eq!(found, oracle(&db, &SequenceMinerConfig::unconstrained(2)));
}

#[test]
fn gap_limits_stray_items() {
    let (a, b, x, y) = (1, 2, 8, 9);
    let db = vec![vec![a, x, b], vec![a, x, y, b], vec![a, b]];
    for (gap, support) in [(Some(0), 1), (Some(1), 2), (Some(2), 3), (None, 3)] {
        let found = mine(&db, config(1, gap));
        assert_eq!(support_of(&found, &[a, b]), Some(support), "gap {gap:?}");
    }
}

#[test]
fn gapped_projection_keeps_later_occurrences() {
    // The first `a` cannot be followed by `b` without a gap; the second one can.
    let (a, b, x) = (1, 2, 9);
    let db = vec![vec![a, x, x, a, b], vec![a, x, a, b, x]];
    let miner = SequenceMiner::new(config(2, Some(0))).unwrap_or_else(|e| panic!("{e}"));
    let mined = miner.mine(&db).unwrap_or_else(|e| panic!("{e}"));
    let ab = mined.patterns.iter().find(|p| p.items == [a, b]);
    let ab = ab.unwrap_or_else(|| panic!("a b not found in {:?}", mined.patterns));
    assert_eq!(ab.support, 2);
    assert_eq!(
        ab.occurrences,
        vec![
            Occurrence {
                seq: 0,
                start: 3,
                end: 4
            },
            Occurrence {
                seq: 1,
                start: 2,
                end: 3
            }
        ]
    );
}

#[test]
fn closure_uses_contiguous_super_patterns_with_a_gap_limit() {
    let (a, b, c) = (1, 2, 3);
    let db = vec![vec![a, b, c], vec![a, b, c], vec![a, b, c], vec![a, b]];
    let closed = SequenceMinerConfig {
        closed: true,
        fold_ratio: None,
        ..SequenceMinerConfig::daemon(2)
    };
    // a b (4) is closed; b c (3) is a suffix of a b c (3): dropped. a c (3) is not a
    // contiguous part of a b c, whose occurrences need not contain one of it with gap 1.
    assert_eq!(
        mine(&db, closed.clone()),
        vec![(vec![a, b], 4), (vec![a, b, c], 3), (vec![a, c], 3)]
    );
    // Without a gap limit, a c is a subsequence of a b c with the same support.
    let ungapped = SequenceMinerConfig {
        max_gap: None,
        ..closed
    };
    assert_eq!(
        mine(&db, ungapped),
        vec![(vec![a, b], 4), (vec![a, b, c], 3)]
    );
}

#[test]
fn an_item_that_never_dominates_does_not_hide_the_pattern_it_always_extends() {
    // `a b` then the agent's `r` in every session, `r` before it in two; `c d` then `e`,
    // two one-off items (`f`, `g`, …) apart.
    let (a, b, c, d, e, r) = (1, 2, 3, 4, 5, 9);
    let db = vec![
        vec![r, a, b, r, 20, 21, c, d, e],
        vec![r, a, b, r, 22, 23, c, d, e],
        vec![a, b, r, 24, 25, c, d, e],
    ];
    let daemon = SequenceMinerConfig::daemon(3);
    let two_or_more = |found: Vec<(Vec<u32>, u32)>| -> Vec<Vec<u32>> {
        found
            .into_iter()
            .filter(|(p, _)| p.len() >= 2)
            .map(|(p, _)| p)
            .collect()
    };
    // Closed as usual: `a b r` has `a b`'s support, so `a b` is not reported.
    let found = two_or_more(mine(&db, daemon.clone()));
    assert!(!found.contains(&vec![a, b]), "{found:?}");
    assert!(found.contains(&vec![a, b, r]), "{found:?}");
    // With `r` never dominating: `a b` is reported, and so is `a b r`; `c d`, always
    // followed by `e` (not listed), is still dropped for `c d e`.
    let found = two_or_more(mine(
        &db,
        SequenceMinerConfig {
            never_dominate: vec![r],
            walls_from: None,
            ..daemon
        },
    ));
    assert!(found.contains(&vec![a, b]), "{found:?}");
    assert!(found.contains(&vec![a, b, r]), "{found:?}");
    assert!(!found.contains(&vec![c, d]), "{found:?}");
    assert!(found.contains(&vec![c, d, e]), "{found:?}");
}

#[test]
fn closure_checks_prepended_items() {
    // x a b everywhere: a b has the support of its prefix extension x a b.
    let (a, b, x, y) = (1, 2, 9, 7);
    let db = vec![vec![x, a, b], vec![x, y, a, b], vec![x, a, b, a]];
    let closed = SequenceMinerConfig {
        closed: true,
        fold_ratio: None,
        max_gap: Some(1),
        ..SequenceMinerConfig::daemon(3)
    };
    let found = mine(&db, closed);
    assert_eq!(support_of(&found, &[x, a, b]), Some(3));
    assert_eq!(support_of(&found, &[a, b]), None, "{found:?}");
    assert_eq!(support_of(&found, &[x, a]), None, "{found:?}");
}

/// Mines with `min_occurrences`: (items, support, count) of each pattern.
fn mine_counted(db: &[Vec<u32>], config: SequenceMinerConfig) -> Vec<(Vec<u32>, u32, u32)> {
    let mined = SequenceMiner::new(config).and_then(|m| m.mine(db));
    let mined = mined.unwrap_or_else(|e| panic!("mining failed: {e}"));
    mined
        .patterns
        .into_iter()
        .map(|p| (p.items, p.support, p.count))
        .collect()
}

#[test]
fn a_habit_repeated_in_few_sequences_is_found_by_its_occurrences() {
    // `check → make` (1 2) five times over two sessions, strays (7, 8, 9) between.
    let db = vec![vec![1, 2, 7, 1, 2, 8, 1, 2], vec![9, 1, 2, 7, 1, 2]];
    let by_support = SequenceMinerConfig {
        min_len: 2,
        ..config(3, Some(1))
    };
    assert!(mine_counted(&db, by_support.clone()).is_empty());
    let counted = SequenceMinerConfig {
        min_occurrences: Some(4),
        ..by_support.clone()
    };
    let found = mine_counted(&db, counted.clone());
    assert_eq!(found, [(vec![1, 2], 2, 5)]);
    // The callback sees every occurrence counted, the leftmost of each sequence first.
    let miner = SequenceMiner::new(counted).expect("a valid configuration");
    let mut every = Vec::new();
    miner
        .mine_with(&db, |p| {
            every = p.every.iter().map(|o| (o.seq, o.start, o.end)).collect();
            assert_eq!(p.occurrences.len(), 2);
            ControlFlow::Continue(())
        })
        .expect("mining runs");
    assert_eq!(
        every,
        [(0, 0, 1), (0, 3, 4), (0, 6, 7), (1, 1, 2), (1, 4, 5)]
    );
    // Five is not six.
    let six = SequenceMinerConfig {
        min_occurrences: Some(6),
        ..by_support
    };
    assert!(mine_counted(&db, six).is_empty());
}

#[test]
fn overlapping_occurrences_count_once() {
    // `a a b b` with a gap of 1: `a b` starts at 0 and 1, both ending at 2 or 3; they overlap.
    let db = vec![vec![1, 1, 2, 2], vec![5, 6]];
    let counted = SequenceMinerConfig {
        min_support: 3,
        min_occurrences: Some(2),
        ..config(3, Some(1))
    };
    let found = mine_counted(&db, counted);
    assert!(
        found.iter().all(|(items, _, _)| items != &[1, 2]),
        "{found:?}"
    );
    // Without a gap limit occurrences are not counted: support alone.
    let free = SequenceMinerConfig {
        min_support: 2,
        min_occurrences: Some(1),
        ..config(2, None)
    };
    assert!(mine_counted(&[vec![1, 2, 1, 2]], free).is_empty());
}

#[test]
fn a_repeated_habit_is_not_dropped_for_a_longer_pattern_seen_less_often() {
    // `a b` twice per session, once after `x`: `x a b` has the same support (3 sessions)
    // but half the occurrences.
    let db = vec![
        vec![9, 1, 2, 5, 1, 2],
        vec![9, 1, 2, 6, 1, 2],
        vec![9, 1, 2, 7, 1, 2],
    ];
    let closed = SequenceMinerConfig {
        closed: true,
        ..config(3, Some(1))
    };
    // By support alone, closure drops `a b` for `x a b`.
    let plain = mine_counted(&db, closed.clone());
    assert!(
        plain.iter().all(|(items, _, _)| items != &[1, 2]),
        "{plain:?}"
    );
    let counted = mine_counted(
        &db,
        SequenceMinerConfig {
            min_occurrences: Some(10),
            ..closed
        },
    );
    assert!(counted.contains(&(vec![1, 2], 3, 6)), "{counted:?}");
}

/// Occurrences that do not overlap, per the module documentation.
fn oracle_count(seq: &[u32], pattern: &[u32], gap: Option<u32>) -> u32 {
    let mut count = 0;
    let mut last_end: Option<usize> = None;
    let mut last_start: Option<usize> = None;
    for (start, end) in oracle_spans(seq, pattern, gap) {
        if last_start == Some(start) {
            continue;
        }
        last_start = Some(start);
        if last_end.is_none_or(|e| e < start) {
            count += 1;
            last_end = Some(end);
        }
    }
    count
}

#[test]
fn the_occurrences_of_one_pattern_are_those_the_miner_counts() {
    let mut rng = Rng(29);
    for _ in 0..400 {
        let seq: Vec<u32> = (0..rng.below(30)).map(|_| rng.below(4) as u32).collect();
        let len = 1 + rng.below(3) as usize;
        let pattern: Vec<u32> = (0..len).map(|_| rng.below(4) as u32).collect();
        for gap in [Some(0), Some(1), Some(2), None] {
            let found = super::counted_occurrences(&seq, &pattern, gap);
            assert_eq!(
                found.len() as u32,
                oracle_count(&seq, &pattern, gap),
                "{seq:?} {pattern:?} {gap:?}"
            );
            // Each is an occurrence the definition takes: its start's earliest end.
            let spans = oracle_spans(&seq, &pattern, gap);
            for o in &found {
                let earliest = spans
                    .iter()
                    .filter(|(s, _)| *s == o.start as usize)
                    .map(|(_, e)| *e)
                    .min();
                assert_eq!(
                    earliest,
                    Some(o.end as usize),
                    "{seq:?} {pattern:?} {gap:?}"
                );
            }
        }
    }
}

#[test]
fn counted_occurrences_match_the_brute_force_definition() {
    let mut rng = Rng(11);
    let mut by_count = 0;
    for round in 0..6 {
        let db = random_db(&mut rng, 3 + round % 3, 14, 3 + round as u64 % 2);
        for gap in [0, 1, 2] {
            for min_occurrences in [3, 4] {
                let config = SequenceMinerConfig {
                    min_support: 3,
                    max_gap: Some(gap),
                    min_len: 1,
                    max_len: 4,
                    closed: false,
                    fold_ratio: None,
                    min_occurrences: Some(min_occurrences),
                    max_patterns: usize::MAX,
                    never_dominate: Vec::new(),
                    walls_from: None,
                };
                let found = mine_counted(&db, config.clone());
                // Every pattern of up to 4 items over the alphabet, checked directly.
                let mut alphabet: Vec<u32> = db.iter().flatten().copied().collect();
                alphabet.sort_unstable();
                alphabet.dedup();
                let mut expected = Vec::new();
                let mut level: Vec<Vec<u32>> = vec![vec![]];
                for _ in 0..4 {
                    let mut next = Vec::new();
                    for prefix in &level {
                        for &item in &alphabet {
                            let mut p = prefix.clone();
                            p.push(item);
                            let spans: Vec<_> =
                                db.iter().map(|s| oracle_spans(s, &p, Some(gap))).collect();
                            let support = spans.iter().filter(|s| !s.is_empty()).count() as u32;
                            if support == 0 {
                                continue;
                            }
                            let count: u32 =
                                db.iter().map(|s| oracle_count(s, &p, Some(gap))).sum();
                            if support >= 3 || count >= min_occurrences {
                                by_count += usize::from(support < 3);
                                expected.push((p.clone(), support, count));
                            }
                            next.push(p);
                        }
                    }
                    level = next;
                }
                expected.sort();
                let mut found = found;
                found.sort();
                assert_eq!(found, expected, "gap {gap}, {min_occurrences} on {db:?}");
            }
        }
    }
    assert!(
        by_count > 20,
        "few patterns found by their count alone: {by_count}"
    );
}

#[test]
fn folding_drops_patterns_a_longer_one_mostly_covers() {
    let (a, b, c) = (1, 2, 3);
    let db_with = |with_c: usize| {
        (0..10)
            .map(|i| {
                if i < with_c {
                    vec![a, b, c]
                } else {
                    vec![a, b]
                }
            })
            .collect::<Vec<_>>()
    };
    let daemon = SequenceMinerConfig::daemon(2);
    // 9 of 10 keep going with c: a b (10) is folded into a b c (9 ≥ 90% of 10).
    let found = mine(&db_with(9), daemon.clone());
    assert_eq!(found, vec![(vec![a, b, c], 9), (vec![a, c], 9)]);
    // 8 of 10: a b stays.
    let found = mine(&db_with(8), daemon.clone());
    assert_eq!(
        found,
        vec![(vec![a, b], 10), (vec![a, b, c], 8), (vec![a, c], 8)]
    );
    // Without folding, closure alone keeps a b at 9 of 10.
    let found = mine(
        &db_with(9),
        SequenceMinerConfig {
            fold_ratio: None,
            ..daemon
        },
    );
    assert_eq!(
        found,
        vec![(vec![a, b], 10), (vec![a, b, c], 9), (vec![a, c], 9)]
    );
}

#[test]
fn fold_threshold_rounds_up_without_float_noise() {
    let config = SequenceMinerConfig::daemon(1);
    assert_eq!(config.dominance_threshold(10), Some(9));
    assert_eq!(config.dominance_threshold(30), Some(27));
    assert_eq!(config.dominance_threshold(11), Some(10));
    let closed_only = SequenceMinerConfig {
        fold_ratio: None,
        ..config.clone()
    };
    assert_eq!(closed_only.dominance_threshold(11), Some(11));
    let neither = SequenceMinerConfig {
        closed: false,
        ..closed_only
    };
    assert_eq!(neither.dominance_threshold(11), None);
    // A super-pattern must be frequent to count.
    assert_eq!(
        SequenceMinerConfig::daemon(5).dominance_threshold(4),
        Some(5)
    );
}

#[test]
fn occurrences_are_leftmost_and_steps_align_them() {
    let (a, b, c, x) = (1, 2, 3, 9);
    let db = vec![
        vec![x, a, x, b, x],
        vec![a, b],
        vec![x, x, a, x, b, a, b],
        vec![a, b, b, x, c],
    ];
    let miner = SequenceMiner::new(config(1, Some(1))).unwrap_or_else(|e| panic!("{e}"));
    let mined = miner.mine(&db).unwrap_or_else(|e| panic!("{e}"));
    let find = |items: &[u32]| {
        let found = mined.patterns.iter().find(|p| p.items == items);
        found
            .unwrap_or_else(|| panic!("{items:?} not found"))
            .clone()
    };
    let ab = find(&[a, b]);
    assert_eq!(ab.support, 4);
    assert_eq!(
        ab.occurrences,
        vec![
            Occurrence {
                seq: 0,
                start: 1,
                end: 3
            },
            Occurrence {
                seq: 1,
                start: 0,
                end: 1
            },
            Occurrence {
                seq: 2,
                start: 2,
                end: 4
            },
            Occurrence {
                seq: 3,
                start: 0,
                end: 1
            },
        ]
    );
    for occurrence in &ab.occurrences {
        let seq = &db[occurrence.seq as usize];
        let positions = steps(seq, &[a, b], occurrence, Some(1));
        assert_eq!(positions, Some(vec![occurrence.start, occurrence.end]));
    }
    // a b c in [a b b x c]: the first b leaves c out of reach, the second does not.
    let abc = find(&[a, b, c]);
    assert_eq!(
        abc.occurrences,
        vec![Occurrence {
            seq: 3,
            start: 0,
            end: 4
        }]
    );
    assert_eq!(
        steps(&db[3], &[a, b, c], &abc.occurrences[0], Some(1)),
        Some(vec![0, 2, 4])
    );
    assert_eq!(
        steps(&db[3], &[a, b, c], &abc.occurrences[0], Some(0)),
        None
    );
    assert_eq!(
        steps(&db[3], &[a, b, c], &abc.occurrences[0], None),
        Some(vec![0, 1, 4])
    );
    let past_end = Occurrence {
        seq: 3,
        start: 0,
        end: 9,
    };
    assert_eq!(steps(&db[3], &[a, b, c], &past_end, Some(1)), None);
}

#[test]
fn contains_follows_the_gap_limit() {
    let seq = [1, 9, 2, 9, 9, 3];
    assert!(contains(&seq, &[1, 2], Some(1)));
    assert!(!contains(&seq, &[1, 2], Some(0)));
    assert!(!contains(&seq, &[1, 2, 3], Some(1)));
    assert!(contains(&seq, &[1, 2, 3], Some(2)));
    assert!(contains(&seq, &[1, 2, 3], None));
    assert!(!contains(&seq, &[3, 1], None));
    assert!(contains(&seq, &[], Some(0)));
    assert!(!contains(&[], &[1], None));
}

#[test]
fn max_patterns_truncates_in_lexicographic_order() {
    let db = vec![
        vec![0, 1, 2, 3, 4],
        vec![1, 1, 1, 3, 4],
        vec![2, 1, 2, 2, 0],
    ];
    let capped = SequenceMinerConfig {
        max_patterns: 3,
        ..SequenceMinerConfig::unconstrained(2)
    };
    let miner = SequenceMiner::new(capped).unwrap_or_else(|e| panic!("{e}"));
    let mined = miner.mine(&db).unwrap_or_else(|e| panic!("{e}"));
    let items: Vec<_> = mined.patterns.iter().map(|p| p.items.clone()).collect();
    assert_eq!(items, vec![vec![0], vec![1], vec![1, 2]]);
    assert!(mined.stats.truncated);
    // Exactly at the cap is not truncated.
    let all = mine(&db, SequenceMinerConfig::unconstrained(2)).len();
    let exact = SequenceMinerConfig {
        max_patterns: all,
        ..SequenceMinerConfig::unconstrained(2)
    };
    let mined = SequenceMiner::new(exact).and_then(|m| m.mine(&db));
    let mined = mined.unwrap_or_else(|e| panic!("{e}"));
    assert!(!mined.stats.truncated);
    assert_eq!(mined.patterns.len(), all);
}

#[test]
fn callback_can_stop_mining() {
    let db = vec![vec![0, 1, 2], vec![0, 1, 2]];
    let miner = SequenceMiner::new(SequenceMinerConfig::unconstrained(1));
    let miner = miner.unwrap_or_else(|e| panic!("{e}"));
    let mut seen = 0;
    let stats = miner.mine_with(&db, |_| {
        seen += 1;
        if seen == 2 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    let stats = stats.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(seen, 2);
    assert!(stats.truncated);
}

#[test]
fn sparse_symbols_mine_like_dense_ones() {
    let db = vec![
        vec![0, 1, 2, 3, 4],
        vec![1, 1, 1, 3, 4],
        vec![2, 1, 2, 2, 0],
    ];
    let sparse_symbol = |s: u32| u32::MAX - s * 1_000_003;
    let sparse: Vec<Vec<u32>> = db
        .iter()
        .map(|seq| seq.iter().map(|&s| sparse_symbol(s)).collect())
        .collect();
    for config in [
        SequenceMinerConfig::unconstrained(2),
        SequenceMinerConfig::daemon(2),
    ] {
        let mut expected: Vec<(Vec<u32>, u32)> = mine(&db, config.clone())
            .into_iter()
            .map(|(p, s)| (p.into_iter().map(sparse_symbol).collect(), s))
            .collect();
        expected.sort();
        assert_eq!(mine(&sparse, config), expected);
    }
}

#[test]
fn empty_inputs_yield_nothing() {
    let none: Vec<Vec<u32>> = Vec::new();
    assert!(mine(&none, SequenceMinerConfig::unconstrained(1)).is_empty());
    let empties = vec![vec![], vec![], vec![5]];
    assert_eq!(
        mine(&empties, SequenceMinerConfig::unconstrained(1)),
        vec![(vec![5], 1)]
    );
    assert!(mine(&empties, SequenceMinerConfig::daemon(1)).is_empty());
}

#[test]
fn invalid_configurations_are_refused() {
    let base = SequenceMinerConfig::daemon(2);
    let check = |config: SequenceMinerConfig| SequenceMiner::new(config).err();
    assert_eq!(
        check(SequenceMinerConfig {
            min_support: 0,
            ..base.clone()
        }),
        Some(SequenceMinerError::ZeroSupport)
    );
    assert_eq!(
        check(SequenceMinerConfig {
            min_len: 0,
            ..base.clone()
        }),
        Some(SequenceMinerError::LengthRange { min: 0, max: 8 })
    );
    assert_eq!(
        check(SequenceMinerConfig {
            min_len: 3,
            max_len: 2,
            ..base.clone()
        }),
        Some(SequenceMinerError::LengthRange { min: 3, max: 2 })
    );
    for ratio in [0.0, 1.5, f64::NAN] {
        let refused = check(SequenceMinerConfig {
            fold_ratio: Some(ratio),
            ..base.clone()
        });
        assert!(
            matches!(refused, Some(SequenceMinerError::FoldRatio(_))),
            "{ratio}"
        );
    }
    assert_eq!(
        check(SequenceMinerConfig {
            fold_ratio: Some(1.0),
            ..base
        }),
        None
    );
}

#[test]
fn default_min_support_is_one_percent_at_least_two() {
    assert_eq!(SequenceMinerConfig::default_min_support(0), 2);
    assert_eq!(SequenceMinerConfig::default_min_support(150), 2);
    assert_eq!(SequenceMinerConfig::default_min_support(1_000), 10);
    assert_eq!(SequenceMinerConfig::default_min_support(10_001), 101);
}

// ---- Brute force, straight from the definitions in the module documentation. ----

/// Every embedding's end, for each start: (start, end) pairs of the occurrences.
fn oracle_spans(seq: &[u32], pattern: &[u32], gap: Option<u32>) -> Vec<(usize, usize)> {
    fn ends(seq: &[u32], rest: &[u32], prev: usize, gap: Option<u32>, out: &mut Vec<usize>) {
        let Some((&step, rest)) = rest.split_first() else {
            out.push(prev);
            return;
        };
        let last = gap.map_or(seq.len(), |g| (prev + g as usize + 2).min(seq.len()));
        for q in prev + 1..last {
            if seq[q] == step {
                ends(seq, rest, q, gap, out);
            }
        }
    }
    let mut spans = Vec::new();
    for start in 0..seq.len() {
        if seq[start] == pattern[0] {
            let mut out = Vec::new();
            ends(seq, &pattern[1..], start, gap, &mut out);
            spans.extend(out.into_iter().map(|end| (start, end)));
        }
    }
    spans.sort_unstable();
    spans
}

fn is_factor(small: &[u32], big: &[u32]) -> bool {
    big.windows(small.len()).any(|w| w == small)
}

fn is_subsequence(small: &[u32], big: &[u32]) -> bool {
    let mut it = big.iter();
    small.iter().all(|s| it.any(|b| b == s))
}

/// All frequent patterns by breadth-first growth, then the length range, closure and
/// folding checked against every longer frequent pattern (not just one item longer).
fn oracle(db: &[Vec<u32>], config: &SequenceMinerConfig) -> Vec<(Vec<u32>, u32)> {
    let mut alphabet: Vec<u32> = db.iter().flatten().copied().collect();
    alphabet.sort_unstable();
    alphabet.dedup();
    let longest = db.iter().map(Vec::len).max().unwrap_or(0);
    let max_len = config.max_len.min(longest);
    let support = |p: &[u32]| {
        db.iter()
            .filter(|s| !oracle_spans(s, p, config.max_gap).is_empty())
            .count() as u32
    };
    let mut frequent: Vec<(Vec<u32>, u32)> = Vec::new();
    let mut level: Vec<Vec<u32>> = vec![vec![]];
    while let Some(len) = level.first().map(Vec::len)
        && len < max_len
    {
        let mut next = Vec::new();
        for prefix in &level {
            for &item in &alphabet {
                let mut p = prefix.clone();
                p.push(item);
                let s = support(&p);
                if s >= config.min_support {
                    frequent.push((p.clone(), s));
                    next.push(p);
                }
            }
        }
        level = next;
    }
    let contained = |small: &[u32], big: &[u32]| match config.max_gap {
        Some(_) => is_factor(small, big),
        None => is_subsequence(small, big),
    };
    // With `never_dominate`: only a super-pattern one item longer whose extra item (at an
    // end with a gap limit, anywhere without) is not one of them.
    let weak = |x: u32| config.never_dominate.contains(&x);
    let dominates = |small: &[u32], big: &[u32]| {
        if config.never_dominate.is_empty() {
            return big.len() > small.len() && contained(small, big);
        }
        big.len() == small.len() + 1
            && (0..big.len()).any(|i| {
                let ends = i == 0 || i == small.len();
                let mut rest = big.to_vec();
                let extra = rest.remove(i);
                rest == small && !weak(extra) && (config.max_gap.is_none() || ends)
            })
    };
    let mut kept: Vec<(Vec<u32>, u32)> = frequent
        .iter()
        .filter(|(p, s)| {
            p.len() >= config.min_len
                && config
                    .dominance_threshold(*s)
                    .is_none_or(|t| !frequent.iter().any(|(q, qs)| *qs >= t && dominates(p, q)))
        })
        .cloned()
        .collect();
    kept.sort();
    kept
}

/// Leftmost occurrence per the `PatternRef::occurrences` documentation.
fn oracle_leftmost(seq: &[u32], pattern: &[u32], gap: Option<u32>) -> Option<(u32, u32)> {
    if gap.is_some() {
        return oracle_spans(seq, pattern, gap)
            .first()
            .map(|&(s, e)| (s as u32, e as u32));
    }
    let mut positions = Vec::new();
    let mut from = 0;
    for &step in pattern {
        let at = from + seq[from..].iter().position(|&x| x == step)?;
        positions.push(at as u32);
        from = at + 1;
    }
    Some((positions[0], positions[positions.len() - 1]))
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_db(rng: &mut Rng, sequences: usize, max_len: u64, alphabet: u64) -> Vec<Vec<u32>> {
    (0..sequences)
        .map(|_| {
            let len = rng.below(max_len + 1);
            (0..len)
                .map(|_| rng.below(alphabet) as u32 * 3 + 1)
                .collect()
        })
        .collect()
}

fn configs() -> Vec<SequenceMinerConfig> {
    let mut out = Vec::new();
    for gap in [Some(0), Some(1), Some(2), None] {
        for (closed, fold_ratio) in [
            (false, None),
            (true, None),
            (true, Some(0.9)),
            (false, Some(0.6)),
        ] {
            for (min_len, max_len) in [(1, 4), (2, 5), (1, usize::MAX)] {
                for min_support in [2, 3] {
                    out.push(SequenceMinerConfig {
                        min_support,
                        max_gap: gap,
                        min_len,
                        max_len,
                        closed,
                        fold_ratio,
                        min_occurrences: None,
                        max_patterns: usize::MAX,
                        never_dominate: Vec::new(),
                        walls_from: None,
                    });
                }
            }
            // Symbols that never drop a pattern (`1`, and `4` with `10`, which no
            // database holds).
            for never in [vec![1], vec![4, 10]] {
                out.push(SequenceMinerConfig {
                    min_support: 2,
                    max_gap: gap,
                    min_len: 1,
                    max_len: 4,
                    closed,
                    fold_ratio,
                    min_occurrences: None,
                    max_patterns: usize::MAX,
                    never_dominate: never,
                    walls_from: None,
                });
            }
        }
    }
    out
}

#[test]
fn random_databases_match_the_brute_force_definitions() {
    let mut rng = Rng(7);
    let (mut checked, mut dropped, mut long) = (0, 0, 0);
    for round in 0..4 {
        let db = random_db(&mut rng, 9 + round, 9, 3 + round as u64 % 3);
        for config in configs() {
            let miner = SequenceMiner::new(config.clone()).unwrap_or_else(|e| panic!("{e}"));
            let mined = miner.mine(&db).unwrap_or_else(|e| panic!("{e}"));
            let got: Vec<(Vec<u32>, u32)> = mined
                .patterns
                .iter()
                .map(|p| (p.items.clone(), p.support))
                .collect();
            assert_eq!(
                got,
                oracle(&db, &config),
                "round {round}, {config:?}, db {db:?}"
            );
            if config.closed || config.fold_ratio.is_some() {
                let all = SequenceMinerConfig {
                    closed: false,
                    fold_ratio: None,
                    ..config.clone()
                };
                dropped += oracle(&db, &all).len() - got.len();
            }
            long += got.iter().filter(|(p, _)| p.len() >= 3).count();
            for pattern in &mined.patterns {
                let expected: Vec<Occurrence> = db
                    .iter()
                    .enumerate()
                    .filter_map(|(i, seq)| {
                        let (start, end) = oracle_leftmost(seq, &pattern.items, config.max_gap)?;
                        Some(Occurrence {
                            seq: i as u32,
                            start,
                            end,
                        })
                    })
                    .collect();
                assert_eq!(
                    pattern.occurrences, expected,
                    "{config:?} {:?}",
                    pattern.items
                );
                for occurrence in &pattern.occurrences {
                    let seq = &db[occurrence.seq as usize];
                    let positions = steps(seq, &pattern.items, occurrence, config.max_gap);
                    let positions = positions.unwrap_or_else(|| panic!("no steps"));
                    let at: Vec<u32> = positions.iter().map(|&p| seq[p as usize]).collect();
                    assert_eq!(at, pattern.items);
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 4 * configs().len());
    // The databases are not trivial: long patterns, and patterns closure or folding drop.
    assert!(
        long > 100 && dropped > 100,
        "long {long}, dropped {dropped}"
    );
}

#[test]
fn incremental_mining_equals_a_full_run() {
    let mut rng = Rng(11);
    for round in 0..3 {
        let db = random_db(&mut rng, 16, 10, 4);
        for config in configs().into_iter().step_by(5) {
            let miner = SequenceMiner::new(config.clone()).unwrap_or_else(|e| panic!("{e}"));
            let full = miner.mine(&db).unwrap_or_else(|e| panic!("{e}"));
            for split in [0, 5, 12, 16] {
                let before = miner.mine(&db[..split]).unwrap_or_else(|e| panic!("{e}"));
                let after = miner.mine_incremental(&db, before);
                let after = after.unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(
                    after.patterns, full.patterns,
                    "round {round} split {split} {config:?}"
                );
                assert_eq!(after.sequences, db.len());
            }
        }
    }
}

#[test]
fn incremental_mining_respects_the_cap_and_other_configurations() {
    let mut rng = Rng(5);
    let db = random_db(&mut rng, 20, 10, 3);
    let capped = SequenceMinerConfig {
        max_patterns: 7,
        ..SequenceMinerConfig::unconstrained(2)
    };
    let miner = SequenceMiner::new(capped).unwrap_or_else(|e| panic!("{e}"));
    let full = miner.mine(&db).unwrap_or_else(|e| panic!("{e}"));
    assert!(full.stats.truncated);
    let uncapped = SequenceMiner::new(SequenceMinerConfig::unconstrained(2));
    let uncapped = uncapped.unwrap_or_else(|e| panic!("{e}"));
    let before = uncapped.mine(&db[..10]).unwrap_or_else(|e| panic!("{e}"));
    // Another configuration: a full run, with this miner's cap.
    let after = miner
        .mine_incremental(&db, before)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(after.patterns, full.patterns);
    assert!(after.stats.truncated);
    let before = miner.mine(&db[..10]).unwrap_or_else(|e| panic!("{e}"));
    let after = miner
        .mine_incremental(&db, before)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(after.patterns, full.patterns);
    // Nothing new: the previous result as it is.
    let again = miner
        .mine_incremental(&db, after.clone())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, after);
}

/// A wall (a step driven by hand) is never crossed: not by an extension, and not by the closure
/// check, so the pattern beside it is reported though a longer one across it would have its
/// support.
#[test]
fn walls_are_never_crossed() {
    // x, a wall, a, b — three times; the walls are unique symbols (100, 101, 102).
    let db: Vec<Vec<u32>> = (0..3).map(|i| vec![1, 100 + i, 2, 3]).collect();
    let mut open = config(3, Some(1));
    open.closed = true;
    let without = mine(&db, open.clone());
    // Without walls the gap of one crosses it: `x a b`, closed, hides `a b`.
    assert_eq!(support_of(&without, &[1, 2, 3]), Some(3), "{without:?}");
    assert_eq!(support_of(&without, &[2, 3]), None, "{without:?}");
    let mut walled = open;
    walled.walls_from = Some(100);
    let with = mine(&db, walled);
    assert_eq!(support_of(&with, &[2, 3]), Some(3), "{with:?}");
    assert!(
        with.iter().all(|(p, _)| !(p.contains(&1) && p.len() > 1)),
        "{with:?}"
    );
}
