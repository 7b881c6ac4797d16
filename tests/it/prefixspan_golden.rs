//! The sequence miner's unconstrained mode against Python `prefixspan`'s committed outputs.
//!
//! Each `tests/golden/prefixspan/<name>.in` (one sequence per line) has a `<name>.out` written by
//! `benches/peers/prefixspan_peer.py` (`scripts/regen-prefixspan-goldens.sh`): the patterns and
//! supports of `PrefixSpan(db).frequent(minsup)`, the minimum support in its header. The miner's
//! output must be the same set, support for support.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toolsmith::mine::sequences::{SequenceMiner, SequenceMinerConfig};

type Patterns = BTreeMap<Vec<u32>, u32>;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/prefixspan")
}

fn parse_symbols(line: &str, what: &str) -> Vec<u32> {
    line.split_whitespace()
        .map(|tok| {
            tok.parse()
                .unwrap_or_else(|e| panic!("{what}: bad symbol {tok:?}: {e}"))
        })
        .collect()
}

fn read_input(path: &Path) -> Vec<Vec<u32>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|line| parse_symbols(line, &path.display().to_string()))
        .collect()
}

/// The minimum support from the header and the patterns.
fn read_output(path: &Path) -> (u32, Patterns) {
    let what = path.display().to_string();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_else(|| panic!("{what}: empty"));
    let minsup = header
        .split("minsup=")
        .nth(1)
        .and_then(|rest| rest.trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("{what}: no minsup in header {header:?}"));
    let mut patterns = Patterns::new();
    for line in lines {
        let (support, items) = line
            .split_once('\t')
            .unwrap_or_else(|| panic!("{what}: bad line {line:?}"));
        let support = support
            .parse()
            .unwrap_or_else(|e| panic!("{what}: {line:?}: {e}"));
        let previous = patterns.insert(parse_symbols(items, &what), support);
        assert!(previous.is_none(), "{what}: duplicate pattern {items}");
    }
    (minsup, patterns)
}

fn describe_difference(expected: &Patterns, got: &Patterns) -> String {
    let missing: Vec<_> = expected
        .iter()
        .filter(|(p, s)| got.get(*p) != Some(s))
        .take(5)
        .collect();
    let extra: Vec<_> = got
        .iter()
        .filter(|(p, s)| expected.get(*p) != Some(s))
        .take(5)
        .collect();
    format!("expected but not found (first 5): {missing:?}; found but not expected: {extra:?}")
}

#[test]
fn unconstrained_mode_equals_python_prefixspan() {
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .unwrap_or_else(|e| panic!("{}: {e}", golden_dir().display()))
        .map(|entry| entry.unwrap_or_else(|e| panic!("{e}")).path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "in"))
        .collect();
    inputs.sort();
    let names: Vec<_> = inputs
        .iter()
        .filter_map(|p| p.file_stem()?.to_str())
        .collect();
    assert!(names.len() >= 6, "golden inputs missing: {names:?}");
    let mut total = 0;
    for input in &inputs {
        let db = read_input(input);
        let (minsup, expected) = read_output(&input.with_extension("out"));
        let miner = SequenceMiner::new(SequenceMinerConfig::unconstrained(minsup))
            .unwrap_or_else(|e| panic!("{e}"));
        let mined = miner.mine(&db).unwrap_or_else(|e| panic!("{e}"));
        assert!(!mined.stats.truncated);
        let got: Patterns = mined
            .patterns
            .iter()
            .map(|p| (p.items.clone(), p.support))
            .collect();
        assert_eq!(
            got.len(),
            mined.patterns.len(),
            "{}: duplicate patterns",
            input.display()
        );
        assert!(
            got == expected,
            "{}: {} patterns, python {}; {}",
            input.display(),
            got.len(),
            expected.len(),
            describe_difference(&expected, &got)
        );
        // The evidence: one occurrence per supporting sequence, holding the pattern's ends.
        for pattern in &mined.patterns {
            assert_eq!(pattern.occurrences.len(), pattern.support as usize);
            for occ in &pattern.occurrences {
                let seq = &db[occ.seq as usize];
                assert_eq!(seq[occ.start as usize], pattern.items[0]);
                assert_eq!(
                    seq[occ.end as usize],
                    pattern.items[pattern.items.len() - 1]
                );
            }
        }
        total += expected.len();
    }
    assert!(total > 5_000, "only {total} golden patterns");
}
