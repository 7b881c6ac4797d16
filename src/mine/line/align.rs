//! The occurrences of a habit's lines aligned into one template with holes.
//!
//! The occurrences whose lines share the most common skeleton ([`Line::skeleton`]: the same
//! grammar text, values in the same places and quotings) are the habit's; the others are left
//! out. Unit by unit, a value the same in every occurrence is literal; one that differs is a
//! hole — the part between the longest prefix and suffix every occurrence shares, cut where a
//! person would cut (never inside a word or a number: `v{1.4.2}`, `config/{dev}.toml`,
//! `"Release {1.4.2}"`). A hole's value must be what the shell passes for it, so an occurrence
//! whose hole holds a quote, a backslash or an expansion in its quoting is left out.
//!
//! Holes whose values are equal in every occurrence are one parameter: the version a release
//! writes into a `sed` expression, a message and a tag is passed once. Names come from the
//! flag or assignment the value belongs to, then from the value's shape, then from the text
//! around it.

use std::collections::{BTreeMap, HashMap};

use super::{Line, Quoting, parse};
use crate::action::placeholder::PLACEHOLDER_START;
use crate::mine::params::{param_kind, param_name};
use crate::mine::pattern::{Param, Piece};
use crate::mine::token::classify;

/// A habit's lines with holes, and the values each fitting occurrence gives them.
#[derive(Debug, Clone, PartialEq)]
pub struct AlignedLines {
    /// Per step, the line as pieces: literal text as logged and parameters.
    pub steps: Vec<Vec<Piece>>,
    /// The parameters, in the order they first appear.
    pub params: Vec<Param>,
    /// The indices (into the input) of the occurrences that fit.
    pub fitting: Vec<usize>,
    /// Per fitting occurrence, each parameter's value.
    pub values: Vec<BTreeMap<String, String>>,
}

/// A hole: where it is, and each fitting occurrence's value.
struct Hole {
    step: usize,
    unit: usize,
    /// Bytes of the unit's text before the hole, and after it, shared by every occurrence.
    prefix: usize,
    suffix: usize,
    quoting: Quoting,
    values: Vec<String>,
    /// A run of files whose number varies: a list of values.
    variadic: bool,
}

/// Aligns `occurrences` (each the lines of one occurrence, in order). `None` when fewer than
/// two occurrences fit one skeleton, or a line cannot be read.
pub fn align_lines(occurrences: &[Vec<String>]) -> Option<AlignedLines> {
    align_lines_cached(occurrences, &mut ParseCache::default())
}

/// Lines already cut in one mining run, by their text: the patterns of a run share their
/// occurrences, and agents type the same lines again and again.
#[derive(Debug, Default)]
pub struct ParseCache {
    lines: HashMap<Box<str>, Option<Line>>,
    bytes: usize,
}

/// Bytes of lines a [`ParseCache`] keeps before it starts over.
const PARSE_CACHE_BYTES: usize = 8 << 20;

impl ParseCache {
    /// `text` cut into units, from the cache when it was cut before.
    pub fn parse(&mut self, text: &str) -> Option<Line> {
        if let Some(hit) = self.lines.get(text) {
            return hit.clone();
        }
        let parsed = parse(text).ok();
        let size = text.len() * 2 + parsed.as_ref().map_or(0, |l| l.units.len() * 48) + 64;
        if self.bytes + size > PARSE_CACHE_BYTES {
            self.lines.clear();
            self.bytes = 0;
        }
        self.bytes += size;
        self.lines.insert(text.into(), parsed.clone());
        parsed
    }
}

/// [`align_lines`], cutting lines through `cache`.
pub fn align_lines_cached(
    occurrences: &[Vec<String>],
    cache: &mut ParseCache,
) -> Option<AlignedLines> {
    let exact: Vec<Option<Vec<Line>>> = occurrences
        .iter()
        .map(|lines| lines.iter().map(|l| cache.parse(l)).collect())
        .collect();
    // Runs of files are one unit only where that makes more occurrences one shape (`git add
    // a.rs` and `git add a.rs b.rs`): two files with roles of their own (`verify -CAfile
    // ca.pem cert.pem`) stay two values.
    let runs: Vec<Option<Vec<Line>>> = exact
        .iter()
        .map(|lines| {
            lines
                .as_ref()
                .map(|ls| ls.iter().map(Line::with_runs).collect())
        })
        .collect();
    // The operands a command ends with are one list where their number varies between
    // occurrences (`brew upgrade wget`, `brew upgrade wget jq`), and only there: values of
    // fixed roles stay values of their own (issue 30).
    let lists = with_lists(&runs);
    let (exact_best, exact_n) = most_common_shape(&exact);
    let (runs_best, runs_n) = most_common_shape(&runs);
    let (lists_best, lists_n) = lists
        .as_ref()
        .map_or((Vec::new(), 0), |l| most_common_shape(l));
    let (parsed, mut fitting) = if lists_n > runs_n.max(exact_n) {
        (lists.unwrap_or_default(), lists_best)
    } else if runs_n > exact_n {
        (runs, runs_best)
    } else {
        (exact, exact_best)
    };
    // Leaving an occurrence out can change the holes (a shorter shared prefix): again until
    // every occurrence left fits.
    loop {
        if fitting.len() < 2 {
            return None;
        }
        let lines: Vec<&Vec<Line>> = fitting.iter().filter_map(|&i| parsed[i].as_ref()).collect();
        let (holes, unfit) = find_holes(&lines);
        if unfit.is_empty() {
            return Some(build(&lines, holes, fitting));
        }
        fitting = fitting
            .iter()
            .enumerate()
            .filter(|(k, _)| !unfit.contains(k))
            .map(|(_, &i)| i)
            .collect();
    }
}

/// The lines with the runs of operands whose number of values varies between occurrences
/// (the same run of the same step, counted in order) joined into lists; `None` when no number
/// varies.
fn with_lists(parsed: &[Option<Vec<Line>>]) -> Option<Vec<Option<Vec<Line>>>> {
    // Per step, per run: the numbers of values seen.
    let mut counts: Vec<Vec<Vec<usize>>> = Vec::new();
    for lines in parsed.iter().flatten() {
        for (step, line) in lines.iter().enumerate() {
            if counts.len() <= step {
                counts.resize(step + 1, Vec::new());
            }
            for (k, run) in line.operand_runs().iter().enumerate() {
                if counts[step].len() <= k {
                    counts[step].resize(k + 1, Vec::new());
                }
                let n = line.run_items(run);
                if !counts[step][k].contains(&n) {
                    counts[step][k].push(n);
                }
            }
        }
    }
    let join: Vec<Vec<bool>> = counts
        .iter()
        .map(|runs| runs.iter().map(|seen| seen.len() > 1).collect())
        .collect();
    if !join.iter().flatten().any(|&j| j) {
        return None;
    }
    Some(
        parsed
            .iter()
            .map(|lines| {
                lines.as_ref().map(|ls| {
                    ls.iter()
                        .enumerate()
                        .map(|(step, l)| l.with_lists(join.get(step).map_or(&[], Vec::as_slice)))
                        .collect()
                })
            })
            .collect(),
    )
}

/// The values every text of a list begins with, as a byte count shared by all (the literal
/// before the list: `upgrade` in `upgrade wget` and `upgrade wget jq`), leaving each text one
/// value at least.
fn shared_items(texts: &[&str]) -> usize {
    let items: Vec<Vec<&str>> = texts
        .iter()
        .map(|t| t.split_whitespace().collect())
        .collect();
    let fewest = items.iter().map(Vec::len).min().unwrap_or(0);
    let mut shared = 0;
    while shared + 1 < fewest && items.iter().all(|i| i[shared] == items[0][shared]) {
        shared += 1;
    }
    // The byte where the first value not shared starts: the same in every text, or no prefix.
    while shared > 0 {
        let starts: Vec<Option<usize>> = texts
            .iter()
            .map(|t| {
                let mut rest = *t;
                for _ in 0..shared {
                    rest = rest.trim_start();
                    rest = &rest[rest.find(char::is_whitespace)?..];
                }
                let rest = rest.trim_start();
                Some(t.len() - rest.len())
            })
            .collect();
        if starts.iter().all(|s| s.is_some() && *s == starts[0]) {
            return starts[0].unwrap_or(0);
        }
        shared -= 1;
    }
    0
}

/// The occurrences of the most common skeleton (the first seen on a tie), and how many.
fn most_common_shape(parsed: &[Option<Vec<Line>>]) -> (Vec<usize>, usize) {
    let mut groups: Vec<(Vec<String>, Vec<usize>)> = Vec::new();
    for (i, lines) in parsed.iter().enumerate() {
        let Some(lines) = lines else { continue };
        let skeleton: Vec<String> = lines.iter().map(Line::skeleton).collect();
        match groups.iter_mut().find(|(s, _)| *s == skeleton) {
            Some((_, members)) => members.push(i),
            None => groups.push((skeleton, vec![i])),
        }
    }
    let mut best: Vec<usize> = Vec::new();
    for (_, members) in groups {
        if members.len() > best.len() {
            best = members;
        }
    }
    let n = best.len();
    (best, n)
}

/// The holes of lines sharing one skeleton, and the occurrences (indices into `lines`) whose
/// hole values are not what the shell passes.
fn find_holes(lines: &[&Vec<Line>]) -> (Vec<Hole>, Vec<usize>) {
    let mut holes = Vec::new();
    let mut unfit = Vec::new();
    let Some(first) = lines.first() else {
        return (holes, unfit);
    };
    for (step, line) in first.iter().enumerate() {
        for (unit, u) in line.units.iter().enumerate() {
            let Some(quoting) = u.value else { continue };
            let texts: Vec<&str> = lines.iter().map(|o| o[step].unit_text(unit)).collect();
            if texts.iter().all(|t| *t == texts[0]) {
                // A secret the log held redacted is a parameter, never a literal: the
                // placeholder is the hole.
                if let Some(start) = texts[0].find(PLACEHOLDER_START)
                    && let Some(len) = texts[0][start..].find(']')
                {
                    let end = start + len + 1;
                    holes.push(Hole {
                        step,
                        unit,
                        prefix: start,
                        suffix: texts[0].len() - end,
                        quoting,
                        values: texts.iter().map(|t| t[start..end].to_owned()).collect(),
                        variadic: false,
                    });
                }
                continue;
            }
            let list = u.kind == super::LIST;
            let variadic = (u.kind == super::FILES || list)
                && texts.iter().any(|t| t.contains(char::is_whitespace));
            let (prefix, suffix) = if variadic && list {
                (shared_items(&texts), 0)
            } else if variadic {
                (0, 0)
            } else {
                cut(&texts, quoting)
            };
            let values: Vec<String> = texts
                .iter()
                .map(|t| t[prefix..t.len() - suffix].to_owned())
                .collect();
            for (k, v) in values.iter().enumerate() {
                let passes = if variadic {
                    v.split_whitespace()
                        .all(|item| passes_as_written(item, quoting))
                } else {
                    passes_as_written(v, quoting)
                };
                if !passes && !unfit.contains(&k) {
                    unfit.push(k);
                }
            }
            holes.push(Hole {
                step,
                unit,
                prefix,
                suffix,
                quoting,
                values,
                variadic,
            });
        }
    }
    (holes, unfit)
}

/// The shared prefix and suffix (in bytes) of texts that differ, cut where a person would:
/// never inside a word of letters or digits, nor inside a number (`1.4.2`), nor through a
/// quote the unit's quoting owns. A hole left empty in some occurrence takes the whole value.
fn cut(texts: &[&str], quoting: Quoting) -> (usize, usize) {
    // The quotes of a single-quoted or ANSI-C unit are never part of a hole.
    let (open, close) = match quoting {
        Quoting::Single => (1, 1),
        Quoting::AnsiC => (2, 1),
        _ => (0, 0),
    };
    let shortest = texts.iter().map(|t| t.len()).min().unwrap_or(0);
    let first = texts[0].as_bytes();
    let mut prefix = 0;
    while prefix < shortest && texts.iter().all(|t| t.as_bytes()[prefix] == first[prefix]) {
        prefix += 1;
    }
    while prefix > open && !texts.iter().all(|t| cut_ok(t, prefix)) {
        prefix -= 1;
    }
    let prefix = prefix.max(open.min(shortest));
    let mut suffix = 0;
    let room = shortest - prefix;
    while suffix < room
        && texts
            .iter()
            .all(|t| t.as_bytes()[t.len() - 1 - suffix] == first[first.len() - 1 - suffix])
    {
        suffix += 1;
    }
    while suffix > close && !texts.iter().all(|t| cut_ok(t, t.len() - suffix)) {
        suffix -= 1;
    }
    let suffix = suffix.max(close.min(room));
    let empty = texts.iter().any(|t| t.len() == prefix + suffix);
    if empty && prefix + suffix > open + close {
        return (open.min(shortest), close.min(shortest.saturating_sub(open)));
    }
    // Free text (a message) is passed whole from its start: words it happened to begin with
    // in every occurrence (`Add …`) are the person's, while a value in a fixed text (`Release
    // 1.4.2`) keeps that text, and so does a fixed ending (a commit trailer).
    let free_text = quoting != Quoting::Bare
        && texts
            .iter()
            .any(|t| t[prefix..t.len() - suffix].contains(char::is_whitespace));
    if free_text {
        return (open.min(shortest), suffix);
    }
    (prefix, suffix)
}

/// Whether a hole may start or end at byte `i` of `text`.
fn cut_ok(text: &str, i: usize) -> bool {
    if !text.is_char_boundary(i) {
        return false;
    }
    let before = text[..i].chars().next_back();
    let after = text[i..].chars().next();
    let (Some(a), Some(b)) = (before, after) else {
        return true;
    };
    let joins = |c: char| matches!(c, '.' | '-' | ':');
    let digit_dot_digit = |x: char, y: char, z: Option<char>| {
        x.is_ascii_digit() && joins(y) && z.is_some_and(|z| z.is_ascii_digit())
    };
    // Not inside a number, a date or a time: `1.4.2`, `2026-10-01` and `12:30` are cut neither
    // at `1|.4` nor at `1.|4`.
    if digit_dot_digit(a, b, text[i..].chars().nth(1))
        || (joins(a)
            && b.is_ascii_digit()
            && text[..i]
                .chars()
                .rev()
                .nth(1)
                .is_some_and(|c| c.is_ascii_digit()))
    {
        return false;
    }
    // Nor inside a hexadecimal number's `0x`, nor after it.
    if a == '0' && matches!(b, 'x' | 'X') {
        return false;
    }
    let head = &text[..i];
    if (head.ends_with("0x") || head.ends_with("0X"))
        && !head[..head.len() - 2]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric)
    {
        return false;
    }
    // A one-letter flag and its attached value (`-f12`, `-j4`): the value is the hole.
    if head.len() == 2 && head.starts_with('-') && a.is_ascii_alphabetic() {
        return true;
    }
    if a.is_alphanumeric() && b.is_alphanumeric() {
        // Never inside a run of letters or of digits; between them only where a version
        // starts (`v{1.4.2}`): `m1.rs` is one name.
        let version_follows = a.is_alphabetic() && {
            let rest = &text[i..];
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            rest[digits..].starts_with('.')
                && rest[digits + 1..].starts_with(|c: char| c.is_ascii_digit())
        };
        return version_follows;
    }
    true
}

/// Whether `value`, written in a unit of this quoting, is what the shell passes for it (so a
/// tool can write any value there as a value): nothing the quoting would read as quoting,
/// escaping or expansion.
fn passes_as_written(value: &str, quoting: Quoting) -> bool {
    if value.is_empty() {
        return false;
    }
    match quoting {
        Quoting::Bare => {
            !value.starts_with('~')
                && value
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_./:=@%+,-^*?[]".contains(c) || !c.is_ascii())
        }
        Quoting::Double => !value.contains(['\\', '"', '$', '`']),
        Quoting::Single => !value.contains('\''),
        Quoting::AnsiC => !value.contains(['\\', '\'']),
        Quoting::HereDoc { expands: true } => !value.contains(['\\', '$', '`']),
        Quoting::HereDoc { expands: false } => true,
    }
}

/// The steps, the parameters (holes with equal values unified) and each occurrence's values.
fn build(lines: &[&Vec<Line>], holes: Vec<Hole>, fitting: Vec<usize>) -> AlignedLines {
    let first = lines[0];
    // One parameter per distinct value vector.
    let mut param_of: Vec<usize> = Vec::with_capacity(holes.len());
    let mut by_values: HashMap<(&[String], bool), usize> = HashMap::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (h, hole) in holes.iter().enumerate() {
        let next = members.len();
        let p = *by_values
            .entry((hole.values.as_slice(), hole.variadic))
            .or_insert(next);
        if p == next {
            members.push(Vec::new());
        }
        members[p].push(h);
        param_of.push(p);
    }
    let mut params: Vec<Param> = Vec::new();
    for group in &members {
        let (name, named_from) = name_of(first, &holes, group);
        let taken = |n: &str| params.iter().any(|p: &Param| p.name == n);
        let mut unique = name.clone();
        let mut k = 2;
        while taken(&unique) {
            unique = format!("{name}_{k}");
            k += 1;
        }
        let values = &holes[group[0]].values;
        let items: Vec<String> = if holes[group[0]].variadic {
            values
                .iter()
                .flat_map(|v| v.split_whitespace().map(str::to_owned))
                .collect()
        } else {
            values.clone()
        };
        let kinds: Vec<_> = items.iter().map(|v| classify(v)).collect();
        params.push(Param {
            name: unique,
            kind: param_kind(&kinds, &items).to_owned(),
            named_from,
            examples: most_common(values, 3),
            variadic: holes[group[0]].variadic,
            secret: values.iter().any(|v| v.contains(PLACEHOLDER_START)),
        });
    }
    let mut steps = Vec::new();
    for (s, line) in first.iter().enumerate() {
        let mut pieces: Vec<Piece> = Vec::new();
        let mut at = 0;
        let push_text = |pieces: &mut Vec<Piece>, text: &str| {
            if text.is_empty() {
                return;
            }
            if let Some(Piece::Literal(prev)) = pieces.last_mut() {
                prev.push_str(text);
            } else {
                pieces.push(Piece::Literal(text.to_owned()));
            }
        };
        for (h, hole) in holes.iter().enumerate().filter(|(_, h)| h.step == s) {
            let range = &line.units[hole.unit].range;
            let start = range.start + hole.prefix;
            let end = range.end - hole.suffix;
            push_text(&mut pieces, &line.text[at..start]);
            pieces.push(Piece::Param(params[param_of[h]].name.clone()));
            at = end;
        }
        push_text(&mut pieces, &line.text[at..]);
        steps.push(pieces);
    }
    let values = (0..fitting.len())
        .map(|k| {
            holes
                .iter()
                .enumerate()
                .map(|(h, hole)| (params[param_of[h]].name.clone(), hole.values[k].clone()))
                .collect()
        })
        .collect();
    AlignedLines {
        steps,
        params,
        fitting,
        values,
    }
}

/// A parameter's name and where it came from: the flag or assignment one of its holes
/// belongs to, else its values' shape, else the text before it.
fn name_of(first: &[Line], holes: &[Hole], group: &[usize]) -> (String, String) {
    if holes[group[0]].variadic {
        let hole = &holes[group[0]];
        let files = hole
            .values
            .iter()
            .all(|v| v.split_whitespace().all(super::file_like));
        if first[hole.step].units[hole.unit].kind == super::LIST && !files {
            return ("values".to_owned(), "a list of values".to_owned());
        }
        return ("files".to_owned(), "a run of files".to_owned());
    }
    for &h in group {
        let hole = &holes[h];
        let line = &first[hole.step];
        let text = line.unit_text(hole.unit);
        let before = &text[..hole.prefix];
        // `--mode=prod`, `-Dprofile=x`.
        if let Some(flag) = before.strip_suffix('=')
            && flag.starts_with('-')
            && flag.len() > 2
        {
            return (param_name(flag), format!("flag {flag}"));
        }
        // The flag or variable a value belongs to names it, unless the hole is part of a
        // quoted text (`-m "Release {v}"` is no `m`).
        let whole_text = hole.prefix == 0 && hole.suffix == 0;
        let bare = hole.quoting == Quoting::Bare && hole.prefix == 0;
        if bare || (hole.quoting == Quoting::Double && whole_text) {
            // The unit before: a flag (`--port 8081`) or an assignment (`LOG_LEVEL=debug`).
            let prev = previous_unit(line, hole.unit);
            if let Some(p) = prev {
                let t = line.unit_text(p);
                // `--port 8081`, `-in cert.pem`, `-CAfile ca.pem`: a flag of a word.
                // (`-rf`, `-am` are letters of switches.)
                let letters = if t.starts_with("--") { 2 } else { 3 };
                let flag = t.starts_with('-')
                    && t.trim_start_matches('-').len() >= letters
                    && t.trim_start_matches('-')
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-');
                let single_dash_text = !t.starts_with("--")
                    && hole.values.iter().any(|v| v.contains(char::is_whitespace));
                if line.units[p].value.is_some() && flag && !single_dash_text {
                    return (param_name(t), format!("flag {t}"));
                }
                if line.units[p].value.is_none() && matches!(t, "cd" | "pushd") {
                    return ("dir".to_owned(), format!("program {t}"));
                }
                if t == "=" && p > 0 && line.units[p - 1].kind == "variable_name" {
                    let var = line.unit_text(p - 1);
                    return (param_name(var), format!("variable {var}"));
                }
            }
        }
    }
    let hole = &holes[group[0]];
    let values = &hole.values;
    let version = |v: &String| {
        let parts: Vec<&str> = v.split('.').collect();
        parts.len() >= 2
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
    };
    if values.iter().all(version) {
        return ("version".to_owned(), "values".to_owned());
    }
    let line = &first[hole.step];
    let before = &line.unit_text(hole.unit)[..hole.prefix];
    if values
        .iter()
        .all(|v| !v.is_empty() && v.len() <= 5 && v.chars().all(|c| c.is_ascii_digit()))
        && before.ends_with(':')
    {
        return ("port".to_owned(), "values".to_owned());
    }
    // The word before the hole in its own text (`config/{env}.toml` → `config`).
    let word: String = before
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if word.len() > 1 && word.chars().all(|c| c.is_alphabetic() || c == '_') {
        return (param_name(&word), format!("text {before}"));
    }
    let kinds: Vec<_> = values.iter().map(|v| classify(v)).collect();
    let name = match param_kind(&kinds, values) {
        "path" => "path",
        "number" => "n",
        "sha" => "commit",
        "url" => "url",
        "glob" => "pattern",
        "text" => "message",
        _ => "value",
    };
    (name.to_owned(), "values".to_owned())
}

/// The unit before `unit` in its line, skipping the quotes of a double-quoted string.
fn previous_unit(line: &Line, unit: usize) -> Option<usize> {
    let mut i = unit;
    while i > 0 {
        i -= 1;
        if line.units[i].kind != "\"" {
            return Some(i);
        }
    }
    None
}

/// Distinct values, most frequent first, at most `max`.
fn most_common(values: &[String], max: usize) -> Vec<String> {
    let mut counts: Vec<(&String, usize)> = Vec::new();
    for v in values {
        match counts.iter_mut().find(|(x, _)| *x == v) {
            Some((_, n)) => *n += 1,
            None => counts.push((v, 1)),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    counts
        .into_iter()
        .take(max)
        .map(|(v, _)| v.clone())
        .collect()
}

/// The line of a step with each parameter's value written in: what was typed.
pub fn render(step: &[Piece], values: &BTreeMap<String, String>) -> String {
    step.iter()
        .map(|p| match p {
            Piece::Literal(t) => t.as_str(),
            Piece::Param(n) | Piece::Internal(n) => values.get(n).map_or("", String::as_str),
        })
        .collect()
}

/// The line of a step with its parameters as `<name>`: how a person reads the habit.
pub fn display(step: &[Piece]) -> String {
    step.iter()
        .map(|p| match p {
            Piece::Literal(t) => t.clone(),
            Piece::Param(n) | Piece::Internal(n) => format!("<{n}>"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occ(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| (*l).to_owned()).collect()
    }

    fn aligned(occurrences: &[Vec<String>]) -> AlignedLines {
        align_lines(occurrences).expect("aligns")
    }

    #[test]
    fn every_occurrence_renders_back_to_its_lines_word_for_word() {
        let occurrences = vec![
            occ(&[
                "cd frontend && pnpm run build --mode staging 2>&1 | tail -n 20",
                "curl -fsS localhost:8081/health | jq -r .status",
            ]),
            occ(&[
                "cd frontend && pnpm run build --mode prod 2>&1 | tail -n 20",
                "curl -fsS localhost:9000/health | jq -r .status",
            ]),
            occ(&[
                "cd frontend && pnpm run build --mode dev 2>&1 | tail -n 20",
                "curl -fsS localhost:3000/health | jq -r .status",
            ]),
        ];
        let a = aligned(&occurrences);
        assert_eq!(a.fitting, vec![0, 1, 2]);
        for (k, &i) in a.fitting.iter().enumerate() {
            for (s, step) in a.steps.iter().enumerate() {
                assert_eq!(render(step, &a.values[k]), occurrences[i][s]);
            }
        }
        assert_eq!(
            a.steps.iter().map(|s| display(s)).collect::<Vec<_>>(),
            vec![
                "cd frontend && pnpm run build --mode <mode> 2>&1 | tail -n 20",
                "curl -fsS localhost:<port>/health | jq -r .status",
            ]
        );
    }

    #[test]
    fn one_value_written_in_several_places_is_one_parameter() {
        let release = |v: &str| {
            occ(&[&format!(
                "sed -i 's/^version = .*/version = \"{v}\"/' Cargo.toml && git commit -am \"Release {v}\" && git tag v{v}"
            )])
        };
        let a = aligned(&[release("1.4.2"), release("1.5.0"), release("2.0.1")]);
        assert_eq!(a.params.len(), 1, "{:?}", a.params);
        assert_eq!(a.params[0].name, "version");
        assert_eq!(
            display(&a.steps[0]),
            "sed -i 's/^version = .*/version = \"<version>\"/' Cargo.toml && git commit -am \
             \"Release <version>\" && git tag v<version>"
        );
    }

    #[test]
    fn holes_are_cut_at_word_and_number_boundaries() {
        let a = aligned(&[
            occ(&["deploy --config config/dev.toml"]),
            occ(&["deploy --config config/prod.toml"]),
        ]);
        assert_eq!(display(&a.steps[0]), "deploy --config config/<config>.toml");
        let a = aligned(&[occ(&["git checkout main"]), occ(&["git checkout master"])]);
        assert_eq!(display(&a.steps[0]), "git checkout <value>");
        let a = aligned(&[
            occ(&["objdump -d build/a --start-address 0x4013b0"]),
            occ(&["objdump -d out/b --start-address 0x402000"]),
        ]);
        assert_eq!(
            display(&a.steps[0]),
            "objdump -d <path> --start-address <start_address>"
        );
        let a = aligned(&[occ(&["cut -d: -f12 x"]), occ(&["cut -d: -f3 x"])]);
        assert_eq!(display(&a.steps[0]), "cut -d: -f<n> x");
        let a = aligned(&[occ(&["pin 1.4.2"]), occ(&["pin 1.4.3"])]);
        assert_eq!(display(&a.steps[0]), "pin <version>");
        let a = aligned(&[
            occ(&["LOG_LEVEL=debug ./bin/api --port 8081"]),
            occ(&["LOG_LEVEL=info ./bin/api --port 8082"]),
        ]);
        assert_eq!(
            display(&a.steps[0]),
            "LOG_LEVEL=<log_level> ./bin/api --port <port>"
        );
    }

    #[test]
    fn an_occurrence_whose_value_the_shell_would_read_differently_is_left_out() {
        let a = aligned(&[
            occ(&["git commit -m \"fix a\""]),
            occ(&["git commit -m \"fix b\""]),
            occ(&["git commit -m \"fix \\\"c\\\"\""]),
        ]);
        assert_eq!(a.fitting, vec![0, 1]);
        // A different shape is another habit's: the most common shape wins.
        let a = aligned(&[
            occ(&["make test"]),
            occ(&["cd x && make test"]),
            occ(&["cd y && make test"]),
        ]);
        assert_eq!(a.fitting, vec![1, 2]);
        assert_eq!(display(&a.steps[0]), "cd <dir> && make test");
        assert!(align_lines(&[occ(&["echo 'open"]), occ(&["ls"])]).is_none());
    }

    #[test]
    fn a_run_of_files_of_varying_length_is_one_list_parameter() {
        let a = aligned(&[
            occ(&["git add src/a.rs && git commit -m \"x\""]),
            occ(&["git add src/b.rs tests/b.rs && git commit -m \"y\""]),
            occ(&["git add c.md && git commit -m \"z\""]),
        ]);
        assert_eq!(a.fitting, vec![0, 1, 2]);
        assert_eq!(
            display(&a.steps[0]),
            "git add <files> && git commit -m \"<value>\""
        );
        assert!(a.params[0].variadic);
        assert_eq!(a.params[0].kind, "path");
        // Files with roles of their own stay two values.
        let a = aligned(&[
            occ(&[
                "openssl x509 -in a.pem",
                "openssl verify -CAfile ca.pem a.pem",
            ]),
            occ(&[
                "openssl x509 -in b.pem",
                "openssl verify -CAfile root.pem b.pem",
            ]),
        ]);
        assert_eq!(
            display(&a.steps[1]),
            "openssl verify -CAfile <cafile>.pem <value>.pem"
        );
    }

    /// Issue 30: the same steps with one or several values of a list (packages to upgrade,
    /// to install, paths to remove) are one habit whose line holds one list parameter; the
    /// word every occurrence starts the list with (`upgrade`) stays literal, and operands
    /// whose number never varies stay values of their own.
    #[test]
    fn operands_of_varying_number_are_one_list_parameter() {
        let a = aligned(&[
            occ(&["brew update", "brew upgrade wget"]),
            occ(&["brew update", "brew upgrade wget jq"]),
            occ(&["brew update", "brew upgrade node ripgrep fd | tail -n 3"]),
            occ(&["brew update", "brew upgrade ffmpeg"]),
        ]);
        // The pipeline's occurrence is another shape: three of four fit.
        assert_eq!(a.fitting, vec![0, 1, 3]);
        assert_eq!(display(&a.steps[1]), "brew upgrade <values>");
        assert_eq!(a.params.len(), 1);
        assert!(a.params[0].variadic);
        let lists: Vec<&str> = a.values.iter().map(|v| v["values"].as_str()).collect();
        assert_eq!(lists, ["wget", "wget jq", "ffmpeg"]);
        for (k, &o) in a.fitting.iter().enumerate() {
            let occurrence = [
                occ(&["brew update", "brew upgrade wget"]),
                occ(&["brew update", "brew upgrade wget jq"]),
                occ(&["brew update", "brew upgrade node ripgrep fd | tail -n 3"]),
                occ(&["brew update", "brew upgrade ffmpeg"]),
            ][o]
                .clone();
            let rendered: Vec<String> = a.steps.iter().map(|s| render(s, &a.values[k])).collect();
            assert_eq!(rendered, occurrence);
        }
        // Before a redirection or an operator, under sudo, with paths and words mixed.
        let a = aligned(&[
            occ(&["sudo apt install -y curl > /dev/null && echo done"]),
            occ(&["sudo apt install -y jq ripgrep > /dev/null && echo done"]),
            occ(&["sudo apt install -y fd-find bat src/x.deb > /dev/null && echo done"]),
        ]);
        assert_eq!(a.fitting, vec![0, 1, 2]);
        assert_eq!(
            display(&a.steps[0]),
            "sudo apt install -y <values> > /dev/null && echo done"
        );
        assert!(a.params[0].variadic);
        // Two operands in every occurrence are two values, not a list.
        let a = aligned(&[
            occ(&["git pull --rebase origin main"]),
            occ(&["git pull --rebase upstream dev"]),
        ]);
        assert_eq!(display(&a.steps[0]), "git pull --rebase <rebase> <value>");
        assert!(a.params.iter().all(|p| !p.variadic));
    }

    #[test]
    fn a_commit_message_in_a_quoted_here_document_is_one_hole() {
        let commit = |m: &str| occ(&[&format!("git commit -m \"$(cat <<'EOF'\n{m}\nEOF\n)\"")]);
        // The message is passed whole, the trailer every occurrence ends with kept.
        let trailer = "\n\nCo-Authored-By: Claude <noreply@anthropic.com>";
        let a = aligned(&[
            commit(&format!("Add the parser{trailer}")),
            commit(&format!("Add a test{trailer}")),
        ]);
        assert_eq!(
            a.values
                .iter()
                .map(|v| v["message"].as_str())
                .collect::<Vec<_>>(),
            ["Add the parser", "Add a test"]
        );
        let a = aligned(&[commit("Fix the parser"), commit("Add a test")]);
        assert_eq!(a.params.len(), 1);
        assert_eq!(
            a.values[0].values().next().map(String::as_str),
            Some("Fix the parser")
        );
    }
}
