//! After scoring, **fold**: a pattern that mostly repeats a longer or better one (a stray step's
//! variant, a loop met at another step, a rotation) is folded into the habit it stands for, and
//! a habit's occurrences are completed from those it takes over.

use std::collections::{HashMap, HashSet};

use super::align::{Ranked, align_occurrences, scored_pattern};
use super::find::step_positions;
use super::load::{Loaded, Refetch};
use super::{Found, MineError, MineOptions, Needed, Occ};
use crate::mine::pattern::{Folded, Pattern, PatternKind};

/// Each pattern that stands for its habit (the head of a group, see [`fold_groups`]) aligned
/// again over all its occurrences — one per session first, then every repeat within a session,
/// up to [`MineOptions::max_occurrences`] — so its evidence (up to
/// [`MineOptions::max_evidence`]) holds each time the habit was run, and its steps and
/// parameters are what all of them share; then scored again. Only the heads: they are few (a
/// habit's variants are folded into them), while aligning every repeat of every candidate read
/// a long repetitive session's actions again for patterns folded away.
///
/// A loop run several times over (`rm out → perl gen.pl → rm out → perl gen.pl`) is seen as
/// both its rotations; where they stand for habits of their own (the rotation also run apart:
/// `perl x.pl → rm x.pl`, a throwaway script), the loop's occurrences are the loop's, and its
/// middle ([`loop_middle`]) keeps only its own ([`loop_claimed`]). A middle whose own
/// occurrences no longer qualify it is the loop, met at another step: its group joins the
/// loop's.
///
/// Returns the groups, with those joins made.
pub(super) fn complete_heads(
    refetch: &mut Refetch<'_>,
    loaded: &Loaded,
    found: &[Found<'_>],
    patterns: &mut [Ranked],
    mut groups: Vec<(usize, Vec<usize>)>,
    options: &MineOptions,
    needed: Needed,
) -> Result<Vec<(usize, Vec<usize>)>, MineError> {
    let max_gap = Some(options.max_gap);
    // Each head that is the middle of a loop another head runs: that one's spans, as found.
    let loops: HashMap<usize, (usize, Vec<Span>)> = (0..groups.len())
        .filter_map(|index| {
            let head = &patterns[groups[index].0];
            let owner = (0..groups.len()).find(|&other| {
                let theirs = &patterns[groups[other].0];
                other != index
                    && is_rotation(&theirs.pattern, &head.pattern)
                    && loop_middle(&head.spans, &theirs.spans)
            })?;
            Some((index, (owner, patterns[groups[owner].0].spans.clone())))
        })
        .collect();
    // Groups to join another (its index in `groups`, then the other's).
    let mut joins: HashMap<usize, usize> = HashMap::new();
    for (index, &(head, _)) in groups.iter().enumerate() {
        let Some(f) = patterns.get(head).and_then(|r| found.get(r.found)) else {
            continue;
        };
        let partner = loops.get(&index);
        let more = f.more.iter().filter_map(|o| {
            Some(Occ {
                session: loaded.sessions.get(o.seq as usize)?,
                positions: step_positions(loaded, &f.items, o, max_gap)?,
            })
        });
        let mut every: Vec<Occ<'_>> = f
            .occurrences
            .iter()
            .map(|o| Occ {
                session: o.session,
                positions: o.positions.clone(),
            })
            .chain(more)
            .take(options.max_occurrences)
            .collect();
        let mut claimed = None;
        if let Some((owner, theirs)) = partner {
            let before = every.len();
            let held = held_commands(theirs);
            every.retain(|o| !loop_claimed(o, &held));
            let taken = before - every.len();
            if taken > 0 {
                let support = loaded.support(every.iter().map(|o| o.session.index as usize));
                let count = (f.count as usize).saturating_sub(taken);
                if every.is_empty() || !needed.met(support, count) {
                    joins.insert(index, *owner);
                    continue;
                }
                claimed = Some((support, count as u32));
            }
        }
        // Every head is aligned again, its lines with it: cutting the lines of every pattern
        // found, most of them folded away, was a third of a run.
        let Some((aligned, durations)) =
            align_occurrences(refetch, &every, f.trigger.is_some(), options, true)?
        else {
            continue;
        };
        patterns[head].pattern = match claimed {
            Some((support, count)) => {
                patterns[head].spans = every.iter().filter_map(Span::of).collect();
                let own = Found {
                    kind: f.kind,
                    keys: f.keys.clone(),
                    support,
                    count,
                    occurrences: Vec::new(),
                    more: Vec::new(),
                    items: Box::default(),
                    trigger: f.trigger.clone(),
                    calls_per_occurrence: f.calls_per_occurrence,
                    single: f.single,
                    association: f.association,
                    bound: f.bound,
                    aligned: 0,
                };
                scored_pattern(&own, aligned, durations)
            }
            None => scored_pattern(f, aligned, durations),
        };
    }
    // Each joins the group its loop ends in (a middle's owner may itself be another's middle).
    let end = |mut g: usize| {
        for _ in 0..=joins.len() {
            match joins.get(&g) {
                Some(&into) => g = into,
                None => break,
            }
        }
        g
    };
    // Rotations of a longer loop could point at each other in a ring: those stay apart.
    let joins: HashMap<usize, usize> = joins
        .keys()
        .map(|&index| (index, end(index)))
        .filter(|(_, into)| !joins.contains_key(into))
        .collect();
    let mut moved: Vec<(usize, Vec<usize>)> = joins
        .iter()
        .map(|(&index, &into)| (into, std::mem::take(&mut groups[index].1)))
        .collect();
    moved.sort_by_key(|(into, members)| (*into, members.first().copied()));
    for (into, members) in moved {
        groups[into].1.extend(members);
    }
    Ok(groups
        .into_iter()
        .enumerate()
        .filter(|(index, _)| !joins.contains_key(index))
        .map(|(_, group)| group)
        .collect())
}

/// Whether `spans` are the middle of the loop `others` run, rather than the other way round:
/// more of them lie inside the other's occurrences (a loop `a b a b a b` holds `b a` twice,
/// both inside `a b`'s, and `a b` three times, one inside `b a`'s).
fn loop_middle(spans: &[Span], others: &[Span]) -> bool {
    let share = |a: &[Span], b: &[Span]| overlapping(a, b) as f64 / a.len().max(1) as f64;
    share(spans, others) > share(others, spans)
}

/// The commands of `spans`, as session and token position.
fn held_commands(spans: &[Span]) -> HashSet<(u32, u32)> {
    spans
        .iter()
        .flat_map(|s| s.tokens.iter().map(move |&t| (s.session, t)))
        .collect()
}

/// Whether `later`'s steps are `earlier`'s rotated (`perl → rm` for `rm → perl`): one loop
/// entered at another step.
fn is_rotation(earlier: &Pattern, later: &Pattern) -> bool {
    // Cheap tests first: the fold asks this of every pair of groups.
    if earlier.kind != later.kind
        || earlier.steps.len() != later.steps.len()
        || earlier.trigger.is_some() != later.trigger.is_some()
    {
        return false;
    }
    let (theirs, keys) = (step_keys(earlier), step_keys(later));
    keys.len() == theirs.len()
        && keys != theirs
        && (1..keys.len()).any(|r| keys[r..].iter().chain(&keys[..r]).eq(theirs.iter()))
}

/// Whether an occurrence of a loop's middle lies inside the loop, whose commands are `held`:
/// more than half its commands are the loop's (the end of one of the loop's occurrences and
/// the start of the next). The occurrence that leaves the loop is not: its last command is
/// its own.
fn loop_claimed(occ: &Occ<'_>, held: &HashSet<(u32, u32)>) -> bool {
    Span::of(occ).is_some_and(|span| span.inside(held))
}

/// The commands one occurrence's steps are: its session and their token positions (the
/// actions between them, allowed by the gap, are not its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Span {
    /// The session's index (a sub-agent's session is its own: its actions are apart).
    pub(super) session: u32,
    /// Sorted, distinct.
    pub(super) tokens: Vec<u32>,
}

impl Span {
    pub(super) fn of(occ: &Occ<'_>) -> Option<Span> {
        let mut tokens: Vec<u32> = occ
            .positions
            .iter()
            .map(|&p| u32::try_from(p).ok())
            .collect::<Option<_>>()?;
        tokens.sort_unstable();
        tokens.dedup();
        (!tokens.is_empty()).then_some(Span {
            session: occ.session.index,
            tokens,
        })
    }

    /// Whether this occurrence lies inside `others`: more than half its commands are commands
    /// of theirs, in the same session. A sub-sequence lies inside its habit, and so does a stray
    /// step's variant (`uname -a → a → b` in `a → b`, and `git diff --stat` after the one action
    /// `git add … && git commit …`) or the end of one occurrence with the start of the next
    /// (`b → a` between two `a → b`); `git status → git diff` does not lie inside `git diff →
    /// git add → git commit`: they share a command, not a habit.
    /// (`held`: the commands of the others, as session and token position; [`fold_groups`]
    /// counts the same per group.)
    fn inside(&self, held: &HashSet<(u32, u32)>) -> bool {
        let shared = self
            .tokens
            .iter()
            .filter(|&&t| held.contains(&(self.session, t)))
            .count();
        2 * shared > self.tokens.len()
    }
}

/// How many of `spans` lie inside `others` (see [`Span::inside`]).
fn overlapping(spans: &[Span], others: &[Span]) -> usize {
    let held = held_commands(others);
    spans.iter().filter(|s| s.inside(&held)).count()
}

/// Patterns folded into one that its stored body lists, at most (each folded one names it).
const MAX_FOLDED_LISTED: usize = 20;

/// One habit, one candidate: a pattern whose occurrences mostly lie inside those of a better
/// one (or the better one's mostly inside its own) is the same habit: the stray step before
/// it, a sub-sequence, the same steps with the failure that starts them. Each such group keeps
/// one pattern, which lists the others ([`Pattern::folded`]); they say where they went
/// ([`Pattern::folded_into`]) and are not proposed.
///
/// Returns the groups: the index of the one standing for the habit, and every member's (itself
/// among them); [`mark_folded`] then writes it down.
///
/// Patterns are taken best first (one a tool can be made of before one with an agent's tool
/// call or only looking around, a recovery before a sequence, then by score); a later pattern takes the group over when
/// it has clearly more occurrences (the kept one has fewer than `ratio` of its count) and is
/// not a worse kind. Slow operations are another kind of habit and are left alone.
pub(super) fn fold_groups(
    patterns: &[Ranked],
    ratio: f64,
    step_count: &dyn Fn(&str) -> u32,
) -> Vec<(usize, Vec<usize>)> {
    let proposable = |p: &Pattern| {
        !p.only_looks_around()
            && !p.only_shuffles_files()
            && p.retried_step().is_none()
            && p.unknown_program().is_none()
            && p.one_command_looked_around().is_none()
            && p.by_chance().is_none()
            && !p.one_command()
            && !p
                .steps
                .iter()
                .chain(p.trigger.as_ref().map(|t| &t.step))
                .any(|s| s.agent_tool)
    };
    // Lower ranks first.
    let rank = |p: &Pattern| (!proposable(p), p.kind != PatternKind::Recovery);
    let mut order: Vec<usize> = (0..patterns.len())
        .filter(|&i| patterns[i].pattern.kind != PatternKind::Slow && !patterns[i].spans.is_empty())
        .collect();
    order.sort_by(|&a, &b| {
        let (pa, pb) = (&patterns[a].pattern, &patterns[b].pattern);
        rank(pa)
            .cmp(&rank(pb))
            .then_with(|| pb.score.total_cmp(&pa.score))
            .then_with(|| pa.id.cmp(&pb.id))
    });
    let mut groups = Groups::default();
    // Which groups' occurrences hold each command (session, token position): looking a
    // pattern's occurrences up costs their length, however many patterns came before.
    let mut owners: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
    for i in order {
        let spans = &patterns[i].spans;
        // Per group: how many of this pattern's occurrences lie inside the group's (more than
        // half their commands are the group's), and how many of its commands are the group's;
        // and how many of its occurrences lie inside all the groups' together.
        let mut hits: HashMap<usize, usize> = HashMap::new();
        let mut shared: HashMap<usize, usize> = HashMap::new();
        let mut inside_all = 0;
        for span in spans {
            let mut per_group: Vec<(usize, usize)> = Vec::new();
            let mut covered = 0;
            for &t in &span.tokens {
                let Some(gs) = owners.get(&(span.session, t)) else {
                    continue;
                };
                covered += 1;
                let mut seen: Vec<usize> = gs.iter().map(|&g| groups.find(g)).collect();
                seen.sort_unstable();
                seen.dedup();
                for g in seen {
                    match per_group.iter_mut().find(|(h, _)| *h == g) {
                        Some((_, n)) => *n += 1,
                        None => per_group.push((g, 1)),
                    }
                }
            }
            if 2 * covered > span.tokens.len() {
                inside_all += 1;
            }
            for (g, n) in per_group {
                *shared.entry(g).or_default() += n;
                if 2 * n > span.tokens.len() {
                    *hits.entry(g).or_default() += 1;
                }
            }
        }
        let new = &patterns[i].pattern;
        // The groups this pattern is one habit with, and how much: most of its occurrences lie
        // inside the group's; or the group's head's occurrences mostly lie inside its own (a
        // sub-sequence of it); or most of its occurrences hold one of the head's whole, the
        // steps around it stray ones, run mostly elsewhere (`wc -l → a → b → python3
        // --version` around `a → b`).
        let mut joined: Vec<(usize, f64)> = shared
            .keys()
            .filter_map(|&g| {
                let head = &patterns[groups.head(g)];
                // Two rotations of one loop share their commands whether or not they are one
                // habit: the rotation rule below decides.
                if is_rotation(&head.pattern, new) {
                    return None;
                }
                let inside = hits.get(&g).copied().unwrap_or(0) as f64 / spans.len() as f64;
                let holds = overlapping(&head.spans, spans) as f64 / head.spans.len().max(1) as f64;
                let around = if strays_around(new, &head.pattern, step_count) {
                    containing(spans, &head.spans) as f64 / spans.len() as f64
                } else {
                    0.0
                };
                let share = inside.max(holds).max(around);
                (share > 0.5).then_some((g, share))
            })
            .collect();
        // Where a member's occurrences were only partly held (more than
        // `MineOptions::max_occurrences`), its spans miss most of its variants':
        // a pattern more than half of whose steps are that member's steps, in its order (a
        // stray step before or after it, or the end of one occurrence with the start of the
        // next), is taken to lie inside it; `mkdir → rm -rf → mkdir` does not lie inside
        // `mv → mkdir → mv`.
        let keys = step_keys(new);
        let structural = groups.roots().find(|&g| {
            groups.members(g).iter().any(|&m| {
                let (member, seen) = (&patterns[m].pattern, patterns[m].spans.len());
                if seen >= member.occurrences as usize {
                    return false;
                }
                let inner = step_keys(member);
                let shared: Vec<&str> =
                    keys.iter().copied().filter(|k| inner.contains(k)).collect();
                // In the member's order: a run of it, or its end then its start.
                let twice: Vec<&str> = inner.iter().chain(&inner).copied().collect();
                2 * shared.len() > keys.len()
                    && twice
                        .windows(shared.len())
                        .any(|run| run == shared.as_slice())
            })
        });
        // A loop met at another step: the steps of a group's head rotated (`perl → rm` for
        // `rm → perl`). Run over and over, a loop shows both: the rotation more of whose
        // occurrences lie inside the other's is its middle (each the end of one of the
        // other's occurrences and the start of the next). They are one habit when the
        // middle's own occurrences, those not inside the loop, are none or mostly in the
        // loop's sessions; run apart, elsewhere, the middle is a habit of its own, and the
        // loop's occurrences are left to the loop ([`complete_heads`]).
        let rotation = groups.roots().find(|&g| {
            let head = &patterns[groups.head(g)];
            if !is_rotation(&head.pattern, new) {
                return false;
            }
            let (middle, owner) = if loop_middle(&head.spans, spans) {
                (head.spans.as_slice(), spans.as_slice())
            } else {
                (spans.as_slice(), head.spans.as_slice())
            };
            let held = held_commands(owner);
            let sessions: HashSet<u32> = owner.iter().map(|s| s.session).collect();
            let own: Vec<&Span> = middle.iter().filter(|s| !s.inside(&held)).collect();
            own.is_empty()
                || 2 * own.iter().filter(|s| sessions.contains(&s.session)).count() > own.len()
        });
        for g in structural.into_iter().chain(rotation) {
            if !joined.iter().any(|(h, _)| *h == g) {
                joined.push((g, 1.0));
            }
        }
        // Two habits back to back (`make build → make test` then the `pytest` failure and its
        // fix), or the junction of two: most occurrences lie inside the groups' together. It
        // joins the one it shares most commands with.
        if joined.is_empty()
            && 2 * inside_all > spans.len()
            && let Some((&g, _)) = shared
                .iter()
                .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
        {
            joined.push((g, 0.5));
        }
        joined.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let g = match joined.split_first() {
            Some((&(g, _), others)) => {
                groups.join(g, i, |head, strength| {
                    let head = &patterns[head].pattern;
                    (rank(new) <= rank(head))
                        .then(|| stands_for(new, head, strength, ratio, step_count))
                });
                // A pattern every step of which another group's head has, in order, makes that
                // group one with this (the habit, and two of its stray-step variants that
                // came first); two habits back to back are not made one by the pattern that
                // runs them both.
                for &(other, _) in others {
                    let theirs = step_keys(&patterns[groups.head(other)].pattern);
                    if !in_order(&keys, &theirs) {
                        continue;
                    }
                    groups.merge(g, other, |head, strength, candidate| {
                        let (head, candidate) =
                            (&patterns[head].pattern, &patterns[candidate].pattern);
                        (rank(candidate) <= rank(head))
                            .then(|| stands_for(candidate, head, strength, ratio, step_count))
                    });
                }
                g
            }
            None => groups.open(i, new.occurrences),
        };
        for span in spans {
            for &t in &span.tokens {
                let gs = owners.entry((span.session, t)).or_default();
                if !gs.contains(&g) {
                    gs.push(g);
                }
            }
        }
    }
    groups.into_groups()
}

/// The fold's groups as they form: each with the pattern standing for it, its members, and the
/// occurrences its head stands for (its own, or more where it stands for a shorter pattern
/// whose steps it extends); a group merged into another points to it.
#[derive(Default)]
struct Groups {
    heads: Vec<usize>,
    members: Vec<Vec<usize>>,
    strength: Vec<u32>,
    parent: Vec<usize>,
}

impl Groups {
    /// The group `g` was merged into, if any (else itself).
    pub(super) fn find(&self, mut g: usize) -> usize {
        while self.parent[g] != g {
            g = self.parent[g];
        }
        g
    }

    fn head(&self, g: usize) -> usize {
        self.heads[self.find(g)]
    }

    fn members(&self, g: usize) -> &[usize] {
        &self.members[self.find(g)]
    }

    /// The groups not merged into another.
    fn roots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.parent.len()).filter(|&g| self.parent[g] == g)
    }

    /// A group of pattern `i` alone; its index.
    pub(super) fn open(&mut self, i: usize, occurrences: u32) -> usize {
        self.heads.push(i);
        self.members.push(vec![i]);
        self.strength.push(occurrences);
        self.parent.push(self.parent.len());
        self.parent.len() - 1
    }

    /// Pattern `i` joins group `g`; `stands` says, from the head and its strength, whether it
    /// takes the group over (`None`: a worse kind, it does not).
    pub(super) fn join(
        &mut self,
        g: usize,
        i: usize,
        stands: impl Fn(usize, u32) -> Option<Stands>,
    ) {
        let g = self.find(g);
        match stands(self.heads[g], self.strength[g]) {
            Some(Stands::New(n)) => {
                self.heads[g] = i;
                self.strength[g] = n;
            }
            Some(Stands::Head(n)) => self.strength[g] = n,
            None => {}
        }
        self.members[g].push(i);
    }

    /// Group `other` merges into `g`; its head takes `g` over as a pattern joining it would.
    fn merge(
        &mut self,
        g: usize,
        other: usize,
        stands: impl Fn(usize, u32, usize) -> Option<Stands>,
    ) {
        let (g, other) = (self.find(g), self.find(other));
        if g == other {
            return;
        }
        let candidate = self.heads[other];
        match stands(self.heads[g], self.strength[g], candidate) {
            Some(Stands::New(n)) => {
                self.heads[g] = candidate;
                self.strength[g] = n.max(self.strength[other]);
            }
            Some(Stands::Head(n)) => self.strength[g] = n.max(self.strength[other]),
            None => {}
        }
        let moved = std::mem::take(&mut self.members[other]);
        self.members[g].extend(moved);
        self.parent[other] = g;
    }

    /// The groups: the index of the pattern standing for each, and its members (itself among
    /// them), best first.
    fn into_groups(self) -> Vec<(usize, Vec<usize>)> {
        let roots: Vec<usize> = self.roots().collect();
        let Groups {
            heads, mut members, ..
        } = self;
        roots
            .into_iter()
            .map(|g| (heads[g], std::mem::take(&mut members[g])))
            .collect()
    }
}

/// Whether `longer` is `shorter` with stray steps around it: it has every step of `shorter`,
/// in order, and each of its other steps is run mostly elsewhere (fewer than half of its runs,
/// `step_count`, are `longer`'s occurrences) — unlike a habit's own steps ([`extra_steps_belong`]).
fn strays_around(longer: &Pattern, shorter: &Pattern, step_count: &dyn Fn(&str) -> u32) -> bool {
    let (long, short) = (step_keys(longer), step_keys(shorter));
    if long.len() <= short.len() {
        return false;
    }
    // `short` is a sub-sequence of `long`: its steps in order, others between or around.
    let mut at = 0;
    let mut extra = Vec::new();
    for k in &long {
        if short.get(at) == Some(k) {
            at += 1;
        } else {
            extra.push(*k);
        }
    }
    let n = u64::from(longer.occurrences);
    at == short.len() && extra.iter().all(|k| 2 * n <= u64::from(step_count(k)))
}

/// Whether every one of `short` is in `long`, in the same order (others between or around).
fn in_order(short: &[&str], long: &[&str]) -> bool {
    let mut rest = long.iter();
    short.iter().all(|k| rest.any(|l| l == k))
}

/// How many of `spans` hold one of `others` whole, or nearly (more than half its commands).
fn containing(spans: &[Span], others: &[Span]) -> usize {
    let mut by_session: HashMap<u32, Vec<&Span>> = HashMap::new();
    for o in others {
        by_session.entry(o.session).or_default().push(o);
    }
    spans
        .iter()
        .filter(|s| {
            by_session.get(&s.session).is_some_and(|os| {
                os.iter().any(|o| {
                    let held = o
                        .tokens
                        .iter()
                        .filter(|t| s.tokens.binary_search(t).is_ok())
                        .count();
                    2 * held > o.tokens.len()
                })
            })
        })
        .count()
}

/// Writes the groups of [`fold_groups`] down: each member says where it went
/// ([`Pattern::folded_into`]) and the one standing for the habit lists them ([`Pattern::folded`]).
pub(super) fn mark_folded(patterns: &mut [Ranked], groups: Vec<(usize, Vec<usize>)>) {
    for (head, members) in groups {
        for &m in members.iter().filter(|&&m| m != head) {
            let (member_spans, head_spans) = (&patterns[m].spans, &patterns[head].spans);
            let into = Folded {
                id: patterns[head].pattern.id.clone(),
                steps: patterns[head].pattern.steps_text(),
                overlapping: overlapping(member_spans, head_spans) as u32,
                of: member_spans.len() as u32,
            };
            let here = Folded {
                id: patterns[m].pattern.id.clone(),
                steps: patterns[m].pattern.steps_text(),
                overlapping: into.overlapping,
                of: into.of,
            };
            patterns[m].pattern.folded_into = Some(into);
            // The best ones are listed (members come best first); each says where it went.
            if patterns[head].pattern.folded.len() < MAX_FOLDED_LISTED {
                patterns[head].pattern.folded.push(here);
            }
        }
    }
}

/// Which of a group's head and a pattern joining it stands for their habit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stands {
    /// The joining pattern, for this many occurrences.
    New(u32),
    /// The head still, for this many.
    Head(u32),
}

/// Whether `new` rather than `head` (standing for `strength` occurrences) stands for their
/// habit, of a kind as good: the one with clearly more occurrences (the head stands for fewer
/// than `ratio` of the new one's count), except where one is the other with steps before or
/// after it. Then the longer one stands for the habit when those steps are part of it
/// ([`extra_steps_belong`]) — `gia → gc → gp` rather than `gc → gp`, though `gc → gp` is also
/// run alone — and for the shorter one's occurrences too; never when they are stray steps.
fn stands_for(
    new: &Pattern,
    head: &Pattern,
    strength: u32,
    ratio: f64,
    step_count: &dyn Fn(&str) -> u32,
) -> Stands {
    let (new_keys, head_keys) = (step_keys(new), step_keys(head));
    if let Some(extra) = extra_steps(&new_keys, &head_keys)
        && extra_steps_belong(new, head, &extra, step_count)
    {
        return Stands::New(strength.max(new.occurrences));
    }
    if let Some(extra) = extra_steps(&head_keys, &new_keys)
        && extra_steps_belong(head, new, &extra, step_count)
    {
        return Stands::Head(strength.max(new.occurrences));
    }
    let longer = extra_steps(&new_keys, &head_keys).is_some();
    if !longer && f64::from(strength) < ratio * f64::from(new.occurrences) {
        Stands::New(new.occurrences)
    } else {
        Stands::Head(strength)
    }
}

/// The steps `longer` has besides `shorter`, when `shorter`'s steps are a run of `longer`'s
/// (`X · shorter · Y`, `X` or `Y` not empty).
fn extra_steps<'k>(longer: &[&'k str], shorter: &[&str]) -> Option<Vec<&'k str>> {
    if shorter.is_empty() || longer.len() <= shorter.len() {
        return None;
    }
    let at = longer.windows(shorter.len()).position(|w| w == shorter)?;
    Some(
        longer[..at]
            .iter()
            .chain(&longer[at + shorter.len()..])
            .copied()
            .collect(),
    )
}

/// Share of a shorter pattern's occurrences a longer one must hold for its extra steps to be
/// part of the habit (three in four), see [`extra_steps_belong`].
const BELONG_SHARE: f64 = 0.75;

/// Whether the steps `extra` that `longer` adds to `shorter` are part of the habit rather than
/// stray steps next to it: they are there in nearly every occurrence of `shorter` (`longer`
/// holds [`BELONG_SHARE`] of its count), and most of each one's own runs (`step_count`, over
/// all sessions) are `longer`'s — a stray look-around (`uname -a`, `sed -n`) is run before many
/// things, a habit's own first step (`gia`, adding the files `gc` commits) mostly before it.
fn extra_steps_belong(
    longer: &Pattern,
    shorter: &Pattern,
    extra: &[&str],
    step_count: &dyn Fn(&str) -> u32,
) -> bool {
    let n = u64::from(longer.occurrences);
    n as f64 >= BELONG_SHARE * f64::from(shorter.occurrences)
        && extra.iter().all(|k| 2 * n > u64::from(step_count(k)))
}

/// A pattern's step keys in order, a recovery's failing command first.
pub(super) fn step_keys(p: &Pattern) -> Vec<&str> {
    p.trigger
        .as_ref()
        .map(|t| t.step.key.as_str())
        .into_iter()
        .chain(p.steps.iter().map(|s| s.key.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::mine::miner::{mine, store_patterns};
    use crate::mine::pattern::{CandidateOutcomes, pattern_id};

    #[test]
    fn stray_step_variants_fold_into_the_habit() {
        // `openssl x509 → openssl verify` in ten sessions, after a stray `uname -a` in five.
        let mut calls = Vec::new();
        for i in 0..10 {
            let session = format!("s{i}");
            let run = |c: &str| (session.clone(), c.to_owned(), Some(true), None);
            calls.push(run(ONE_OFFS[i % 6]));
            if i % 2 == 0 {
                calls.push(run("uname -a"));
            }
            calls.push(run(&format!(
                "openssl x509 -in certs/c{i}.pem -noout -subject"
            )));
            calls.push(run(&format!(
                "openssl verify -CAfile ca.pem certs/c{i}.pem"
            )));
            calls.push(run("cargo build"));
        }
        let (_dir, mut conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let with_verify: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.templates.iter().any(|t| t.starts_with("openssl verify")))
            .collect();
        assert!(with_verify.len() >= 2, "{:#?}", report.patterns);
        let proposed: Vec<&&Pattern> = with_verify
            .iter()
            .filter(|p| p.folded_into.is_none())
            .collect();
        assert_eq!(proposed.len(), 1, "{:#?}", with_verify);
        let habit = proposed[0];
        assert_eq!(habit.occurrences, 10);
        assert!(habit.templates[0].starts_with("openssl x509"), "{habit:#?}");
        let stray = starting_with(&report, "uname -a");
        assert!(!stray.is_empty());
        for p in &stray {
            let into = p.folded_into.as_ref().expect("folded");
            assert_eq!(into.id, habit.id);
            assert_eq!((into.overlapping, into.of), (5, 5));
            assert!(habit.folded.iter().any(|f| f.id == p.id));
        }
        // Stored: the variant is `folded`, with where to; the habit is new.
        store_patterns(&mut conn, &report, &CandidateOutcomes::default()).expect("stored");
        let stored = crate::mine::pattern::get_pattern(&conn, &stray[0].id)
            .expect("read")
            .expect("stored");
        assert_eq!(stored.status, crate::mine::pattern::PatternStatus::Folded);
        assert!(
            stored
                .reason
                .as_deref()
                .is_some_and(|r| r.contains(&habit.id)),
            "{:?}",
            stored.reason
        );
        let head = crate::mine::pattern::get_pattern(&conn, &habit.id)
            .expect("read")
            .expect("stored");
        assert_eq!(head.status, crate::mine::pattern::PatternStatus::New);
    }

    #[test]
    fn an_occurrence_lies_inside_when_most_of_its_actions_are_anothers() {
        let span = |session, tokens: &[u32]| Span {
            session,
            tokens: tokens.to_vec(),
        };
        // `a → b` at rows 3–4 and 7–8.
        let habit = [span(0, &[3, 4]), span(0, &[7, 8])];
        let inside = |s: Span| overlapping(&[s], &habit) == 1;
        // A stray step before, or after with a gap: two of three actions.
        assert!(inside(span(0, &[2, 3, 4])));
        assert!(inside(span(0, &[3, 4, 6])));
        // `b → a`, from one occurrence into the next.
        assert!(inside(span(0, &[4, 7])));
        // Sharing one action of two is not a habit; another session is not this one.
        assert!(!inside(span(0, &[1, 3])));
        assert!(!inside(span(1, &[3, 4])));
        assert_eq!(
            overlapping(&[span(0, &[2, 3, 4]), span(0, &[5, 6])], &habit),
            1
        );
    }

    #[test]
    fn two_habits_back_to_back_are_not_a_third() {
        // `make build -C X → make test -C X` in eight sessions; in three of them the `pytest`
        // failure on a missing module and its fix follow. The five steps together are seen
        // in three sessions (a `git log` between the two habits in one), but they are the two
        // habits one after the other: folded, not proposed (the `toolsmith demo` logs).
        let failure = "E   ModuleNotFoundError: No module named 'requests'";
        let mut calls = Vec::new();
        for (i, dir) in ["core", "cli", "web", "store", "api", "ui", "db", "auth"]
            .iter()
            .enumerate()
        {
            let session = format!("s{i}");
            let run = |c: &str, ok, o: Option<&str>| {
                (
                    session.clone(),
                    c.to_owned(),
                    Some(ok),
                    o.map(str::to_owned),
                )
            };
            calls.push(run(&format!("before{i} --check"), true, None));
            calls.push(run(&format!("make build -C {dir}"), true, None));
            calls.push(run(&format!("make test -C {dir}"), true, None));
            if i == 1 {
                calls.push(run("git log --oneline -n 5", true, None));
            }
            if i < 3 {
                calls.push(run("python3 -m pytest tests/", false, Some(failure)));
                calls.push(run("pip install requests", true, None));
                calls.push(run("python3 -m pytest tests/", true, Some("12 passed")));
            }
            calls.push(run(&format!("after{i} --check"), true, None));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary: Vec<_> = report
            .patterns
            .iter()
            .map(|p| (p.kind, &p.templates, p.folded_into.as_ref().map(|f| &f.id)))
            .collect();
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .collect();
        assert_eq!(proposed.len(), 2, "{summary:#?}");
        assert!(
            proposed
                .iter()
                .any(|p| p.kind == PatternKind::Sequence && p.templates.len() == 2),
            "{summary:#?}"
        );
        assert!(
            proposed.iter().any(|p| p.kind == PatternKind::Recovery),
            "{summary:#?}"
        );
        let both = report
            .patterns
            .iter()
            .find(|p| p.templates.len() == 5)
            .unwrap_or_else(|| panic!("the five steps among {summary:#?}"));
        assert!(both.folded_into.is_some(), "{summary:#?}");
    }

    #[test]
    fn a_recovery_and_the_sequence_it_makes_are_one_habit() {
        let failure = "FAIL  src/app.test.js\n  ● Test suite failed to run\n\n    \
                       Cannot find module 'dotenv' from 'src/app.js'\n";
        let mut calls = Vec::new();
        for (i, module) in ["dotenv", "chalk", "uuid"].iter().enumerate() {
            let session = format!("s{i}");
            let run = |c: &str, ok, o: Option<&str>| {
                (
                    session.clone(),
                    c.to_owned(),
                    Some(ok),
                    o.map(str::to_owned),
                )
            };
            calls.push(run(ONE_OFFS[i], true, None));
            calls.push(run(
                "npm test",
                false,
                Some(&failure.replace("dotenv", module)),
            ));
            calls.push(run(&format!("npm install {module}"), true, None));
            calls.push(run("npm test", true, Some("PASS")));
            calls.push(run(ONE_OFFS[i + 3], true, None));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .filter(|p| p.templates.iter().any(|t| t.starts_with("npm install")))
            .collect();
        let summary: Vec<_> = report
            .patterns
            .iter()
            .map(|p| {
                (
                    p.kind,
                    &p.templates,
                    p.score,
                    p.folded_into.as_ref().map(|f| &f.id),
                    &p.id,
                )
            })
            .collect();
        assert_eq!(proposed.len(), 1, "{summary:#?}");
        assert_eq!(proposed[0].kind, PatternKind::Recovery, "{summary:#?}");
        // The sequence of the same steps was found, and is folded into the recovery.
        let sequence = report
            .patterns
            .iter()
            .find(|p| p.kind == PatternKind::Sequence && p.templates[0] == "npm test")
            .expect("the sequence");
        assert_eq!(
            sequence.folded_into.as_ref().map(|f| f.id.as_str()),
            Some(proposed[0].id.as_str())
        );
        // Its tests fail in every occurrence (the first `npm test`): it still scores.
        assert!(sequence.score > 0.0, "{sequence:#?}");
    }

    #[test]
    fn a_stray_step_after_a_one_action_habit_folds_into_it() {
        // `git add F && git commit -m M` is one action of two commands; `git diff --stat` follows
        // it in 4 sessions of 9. Counted by actions, the variant shares one action of two with
        // the habit; by commands, two of three: it is the habit with a stray step.
        let mut calls = Vec::new();
        for i in 0..9 {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(ONE_OFFS[i % 6].to_owned()));
            calls.push(run(format!(
                "git add src/m{i}.rs && git commit -m 'Change {i}'"
            )));
            if i % 2 == 1 {
                calls.push(run("git diff --stat".into()));
            }
            calls.push(run(ONE_OFFS[(i + 1) % 6].to_owned()));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .filter(|p| p.templates.iter().any(|t| t.contains("&& git commit")))
            .collect();
        // The habit is its one line, as typed; the variant with the stray step folds into it
        // (a folded pattern keeps its commands: only a habit's head is cut into its lines).
        assert_eq!(proposed.len(), 1, "{summary:#?}");
        assert_eq!(proposed[0].templates.len(), 1, "{summary:#?}");
        assert!(
            proposed[0].folded.iter().any(|f| f.steps.len() == 3),
            "{summary:#?}"
        );
    }

    #[test]
    fn stray_variants_of_a_habit_repeated_in_few_sessions_fold_into_it() {
        // `./scripts/check.sh --module X` then `make -C X test`, 6 and 4 times in two sessions,
        // `uname -a` before four of them and `wc -l` after four others: only some repeats of
        // the habit are aligned, which its variants' occurrences mostly miss.
        let mut calls = Vec::new();
        let mut n = 0;
        for (session, times) in [("s1", 6), ("s2", 4)] {
            for i in 0..times {
                let module = ["ingest", "router", "auth", "storage", "metrics", "cli"][i];
                let run = |c: String| (session.to_owned(), c, Some(true), None);
                n += 1;
                if n % 5 == 3 || n % 5 == 4 {
                    calls.push(run("uname -a".into()));
                }
                calls.push(run(format!("./scripts/check.sh --module {module}")));
                calls.push(run(format!("make -C {module} test")));
                if n % 5 == 0 || n % 5 == 1 {
                    calls.push(run(format!("wc -l src/{module}/*.py")));
                }
                calls.push(run(ONE_OFFS[i].to_owned()));
            }
        }
        calls.push(("s3".into(), "cargo build".into(), Some(true), None));
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .filter(|p| p.templates.iter().any(|t| t.contains("check.sh")))
            .collect();
        assert_eq!(proposed.len(), 1, "{summary:#?}");
        assert_eq!(proposed[0].templates.len(), 2, "{summary:#?}");
    }

    #[test]
    fn a_habits_first_step_is_not_dropped_for_the_shorter_pattern_with_more_occurrences() {
        // From a zsh history (52 of 64 on the corpus): `gia FILE → gc → gp` (add, commit, push)
        // in twelve sessions, and `gc → gp` alone in three more. `gc → gp` has more occurrences
        // (15 against 12), but `gia` is part of the habit: it is in nearly all of `gc → gp`'s
        // occurrences, and all of `gia`'s own are in the habit. The longer pattern stands for
        // it.
        let mut calls = Vec::new();
        for i in 0..15 {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            // One-off commands of their own around each occurrence.
            calls.push(run(format!("before{i} --check")));
            if i < 12 {
                calls.push(run(format!("gia src/m{i}.rs")));
            }
            calls.push(run("gc".into()));
            calls.push(run("gp".into()));
            calls.push(run(format!("after{i} --check")));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .filter(|p| p.templates.iter().any(|t| t == "gp"))
            .collect();
        assert_eq!(proposed.len(), 1, "{summary:#?}");
        assert_eq!(
            proposed[0].templates,
            ["gia src/<src>.rs", "gc", "gp"],
            "{summary:#?}"
        );
        let shorter = report
            .patterns
            .iter()
            .find(|p| p.templates == ["gc", "gp"])
            .unwrap_or_else(|| panic!("`gc → gp` among {summary:#?}"));
        assert_eq!(shorter.occurrences, 15);
        assert_eq!(
            shorter.folded_into.as_ref().map(|f| &f.id),
            Some(&proposed[0].id)
        );
    }

    #[test]
    fn a_stray_step_before_most_occurrences_of_a_habit_does_not_take_it_over() {
        // `uname -a` right before 8 of 10 occurrences of `openssl x509 → openssl verify`, and
        // once in every session elsewhere: it is in nearly all of the habit's occurrences, but
        // most of its own runs are not the habit's. The habit stands alone.
        let mut calls = Vec::new();
        for i in 0..10 {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            // One-off commands of their own between.
            calls.push(run(format!("before{i} --check")));
            if i < 8 {
                calls.push(run("uname -a".into()));
            }
            calls.push(run(format!(
                "openssl x509 -in certs/c{i}.pem -noout -subject"
            )));
            calls.push(run(format!("openssl verify -CAfile ca.pem certs/c{i}.pem")));
            // Elsewhere: further than the gap from the habit.
            calls.push(run(format!("after{i} --check")));
            calls.push(run(format!("then{i} --check")));
            calls.push(run("uname -a".into()));
            calls.push(run(format!("last{i} --check")));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .filter(|p| p.templates.iter().any(|t| t.starts_with("openssl verify")))
            .collect();
        assert_eq!(proposed.len(), 1, "{summary:#?}");
        assert_eq!(proposed[0].templates.len(), 2, "{summary:#?}");
        assert_eq!(proposed[0].occurrences, 10, "{summary:#?}");
    }

    /// A pattern of `keys` scored `score`, seen `occurrences` times, at `spans` (session, token
    /// positions), as the fold takes it.
    fn ranked(keys: &[&str], score: f64, occurrences: u32, spans: &[(u32, &[u32])]) -> Ranked {
        let steps = keys
            .iter()
            .map(|k| crate::mine::pattern::Step {
                template: (*k).to_owned(),
                words: Vec::new(),
                key: (*k).to_owned(),
                globs: Vec::new(),
                captures: None,
                piped: false,
                agent_tool: false,
            })
            .collect();
        Ranked {
            pattern: Pattern {
                lines: Default::default(),
                shell: Default::default(),
                id: pattern_id(PatternKind::Sequence, keys, None),
                kind: PatternKind::Sequence,
                support: 2,
                occurrences,
                score,
                score_parts: Default::default(),
                templates: keys.iter().map(|k| (*k).to_owned()).collect(),
                steps,
                params: Vec::new(),
                internals: Vec::new(),
                workspace_varies: false,
                trigger: None,
                median_ms: None,
                evidence: Vec::new(),
                folded_into: None,
                folded: Vec::new(),
                expansions: Vec::new(),
                unknown_programs: Vec::new(),
            },
            spans: spans
                .iter()
                .map(|(session, tokens)| Span {
                    session: *session,
                    tokens: tokens.to_vec(),
                })
                .collect(),
            found: 0,
        }
    }

    #[test]
    fn a_habit_stands_for_its_stray_variants_even_when_they_came_first() {
        // `check → make` ten times in two sessions; `grep` before four of them, `python3`
        // before four others. Both variants score above the habit, so each opens a group of
        // its own first; the habit lies under both, and makes them one group it stands for.
        let (check, make) = ("./scripts/check.sh --module <arg>", "make -C <arg> test");
        let habit_at: Vec<(u32, [u32; 2])> = (0..6)
            .map(|k| (0, [4 * k + 1, 4 * k + 2]))
            .chain((0..4).map(|k| (1, [4 * k + 1, 4 * k + 2])))
            .collect();
        let habit: Vec<(u32, &[u32])> = habit_at.iter().map(|(s, t)| (*s, &t[..])).collect();
        let with_stray = |at: &[usize]| -> Vec<(u32, Vec<u32>)> {
            at.iter()
                .map(|&i| {
                    let (s, [a, b]) = habit_at[i];
                    (s, vec![a - 1, a, b])
                })
                .collect()
        };
        let grep = with_stray(&[0, 1, 6, 7]);
        let python = with_stray(&[2, 3, 8, 9]);
        let grep: Vec<(u32, &[u32])> = grep.iter().map(|(s, t)| (*s, &t[..])).collect();
        let python: Vec<(u32, &[u32])> = python.iter().map(|(s, t)| (*s, &t[..])).collect();
        let patterns = [
            ranked(&["grep -rn <arg> src/", check, make], 47.0, 4, &grep),
            ranked(&["python3 --version", check, make], 46.0, 4, &python),
            ranked(&[check, make], 45.0, 10, &habit),
        ];
        // The strays are run everywhere.
        let groups = fold_groups(&patterns, 0.9, &|_| 1000);
        assert_eq!(groups.len(), 1, "{groups:?}");
        let (head, mut members) = groups[0].clone();
        assert_eq!(head, 2);
        members.sort_unstable();
        assert_eq!(members, [0, 1, 2]);
        // The pattern that runs two groups' habits back to back does not make them one.
        let pytest = ["python3 -m pytest <arg>", "pip install <arg>"];
        let both = [
            ranked(
                &["make build -C <arg>", "make test -C <arg>"],
                50.0,
                5,
                &[
                    (0, &[1, 2]),
                    (1, &[1, 2]),
                    (2, &[1, 2]),
                    (3, &[1, 2]),
                    (4, &[1, 2]),
                ],
            ),
            ranked(
                &pytest,
                49.0,
                3,
                &[(0, &[3, 4]), (1, &[3, 4]), (2, &[3, 4])],
            ),
            ranked(
                &[
                    "make build -C <arg>",
                    "make test -C <arg>",
                    pytest[0],
                    pytest[1],
                ],
                48.0,
                3,
                &[(0, &[1, 2, 3, 4]), (1, &[1, 2, 3, 4]), (2, &[1, 2, 3, 4])],
            ),
        ];
        let groups = fold_groups(&both, 0.9, &|_| 1000);
        assert_eq!(groups.len(), 2, "{groups:?}");
    }

    #[test]
    fn stray_steps_around_a_habit_fold_into_it() {
        // `coverage run → coverage report` in nine sessions, with `wc -l` before and
        // `python3 --version` after three of them — both also run elsewhere, as noise is: half
        // the variant's commands are the habit's, and it holds the habit's whole.
        let mut calls = Vec::new();
        for i in 0..9 {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(format!("before{i} --check")));
            if i < 3 {
                calls.push(run(format!("wc -l src/m{i}/*.py")));
            }
            calls.push(run(format!("coverage run -m pytest tests/test_{i}.py -q")));
            calls.push(run(format!("coverage report -m --include=src/m{i}/*")));
            if i < 3 {
                calls.push(run("python3 --version".into()));
            }
            calls.push(run(format!("after{i} --check")));
            calls.push(run(format!("then{i} --check")));
            calls.push(run(format!("wc -l docs/d{i}.md")));
            calls.push(run(format!("next{i} --check")));
            calls.push(run(format!("more{i} --check")));
            calls.push(run("python3 --version".into()));
            calls.push(run(format!("last{i} --check")));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let proposed: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.folded_into.is_none())
            .filter(|p| p.templates.iter().any(|t| t.starts_with("coverage")))
            .collect();
        assert_eq!(proposed.len(), 1, "{summary:#?}");
        assert_eq!(proposed[0].templates.len(), 2, "{summary:#?}");
        assert!(
            report
                .patterns
                .iter()
                .any(|p| p.templates.len() == 4 && p.folded_into.is_some()),
            "{summary:#?}"
        );
    }

    #[test]
    fn a_loop_met_at_another_step_is_one_habit() {
        // `rm out/*.txt → perl run.pl` early in each session, `perl run.pl → rm out/*.txt`
        // later in the same one: the same loop, entered at either step.
        let mut calls = Vec::new();
        for i in 0..6 {
            let session = format!("s{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(format!("rm out/r{i}.txt")));
            calls.push(run(format!("perl run{i}.pl")));
            calls.push(run(format!("between{i} --check")));
            calls.push(run(format!("again{i} --check")));
            calls.push(run(format!("perl run{i}.pl")));
            calls.push(run(format!("rm out/r{i}.txt")));
            calls.push(run(format!("last{i} --check")));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let pairs: Vec<&Pattern> = report
            .patterns
            .iter()
            .filter(|p| p.templates.len() == 2 && p.templates.iter().any(|t| t.starts_with("perl")))
            .collect();
        assert_eq!(pairs.len(), 2, "{summary:#?}");
        assert_eq!(
            pairs.iter().filter(|p| p.folded_into.is_none()).count(),
            1,
            "{summary:#?}"
        );
    }

    #[test]
    fn a_loop_s_occurrences_are_its_own_and_a_rotation_run_apart_keeps_its() {
        // Three sessions run `rm out/gen.txt → perl gen.pl` three times over: the loop, whose
        // middle also reads `perl gen.pl → rm out/gen.txt`. Four others run a throwaway script
        // and delete it: `perl tN.pl → rm tN.pl`, a habit of its own.
        let mut calls = Vec::new();
        for i in 0..3 {
            let session = format!("loop{i}");
            let run = |c: &str| (session.clone(), c.to_owned(), Some(true), None);
            // The session's other work: without it, `rm` would be a third of the session and
            // `perl → rm` no more than chance.
            for one_off in &ONE_OFFS[..4] {
                calls.push(run(one_off));
            }
            calls.push(run(&format!("make -C m{i}")));
            for _ in 0..3 {
                calls.push(run("rm out/gen.txt"));
                calls.push(run("perl gen.pl"));
            }
        }
        for i in 0..4 {
            let session = format!("scratch{i}");
            let run = |c: String| (session.clone(), c, Some(true), None);
            calls.push(run(format!("ls d{i}")));
            calls.push(run(format!("perl t{i}.pl")));
            calls.push(run(format!("rm t{i}.pl")));
        }
        let (_dir, conn) = store(&calls_of(&calls));
        let report = mine(&conn, &MineOptions::default()).expect("the run");
        let summary = fold_summary(&report);
        let pair = |first: &str| {
            *starting_with(&report, first)
                .iter()
                .find(|p| p.templates.len() == 2)
                .expect("the pair")
        };
        let (regenerate, scratch) = (pair("rm"), pair("perl"));
        assert_eq!(regenerate.folded_into, None, "{summary:#?}");
        assert_eq!(scratch.folded_into, None, "{summary:#?}");
        assert_eq!((regenerate.support, regenerate.occurrences), (3, 9));
        // Only its own: the loop's middles are the loop's.
        assert_eq!(
            (scratch.support, scratch.occurrences),
            (4, 4),
            "{scratch:#?}"
        );
        let shown: Vec<&str> = scratch
            .evidence
            .iter()
            .flat_map(|e| e.commands.iter().map(String::as_str))
            .collect();
        assert!(shown.iter().all(|c| !c.contains("gen")), "{shown:?}");
        assert_eq!(shown.len(), 8, "{shown:?}");
    }

    #[test]
    fn a_loop_s_middle_is_folded_into_the_loop_whichever_comes_first() {
        // `rm → perl` three times over in sessions 0 to 3 (tokens 1 to 6): `perl → rm` (2–3,
        // 4–5) is only its middle, even scored first. Seen also in sessions 4 to 7, run apart
        // (`perl t.pl → rm t.pl`), it is a habit of its own.
        let (rm, perl) = ("rm <path>", "perl <path>");
        let loop_at: Vec<(u32, [u32; 2])> = (0..4)
            .flat_map(|s| [(s, [1, 2]), (s, [3, 4]), (s, [5, 6])])
            .collect();
        let middle_at: Vec<(u32, [u32; 2])> =
            (0..4).flat_map(|s| [(s, [2, 3]), (s, [4, 5])]).collect();
        let apart_at: Vec<(u32, [u32; 2])> = (4..8).map(|s| (s, [1, 2])).collect();
        let owned = |at: &[(u32, [u32; 2])]| -> Vec<(u32, Vec<u32>)> {
            at.iter().map(|(s, t)| (*s, t.to_vec())).collect()
        };
        for apart in [false, true] {
            let mut middle = owned(&middle_at);
            if apart {
                middle.extend(owned(&apart_at));
            }
            let a: Vec<(u32, &[u32])> = loop_at.iter().map(|(s, t)| (*s, &t[..])).collect();
            let b: Vec<(u32, &[u32])> = middle.iter().map(|(s, t)| (*s, &t[..])).collect();
            let patterns = [
                ranked(&[perl, rm], 60.0, b.len() as u32, &b),
                ranked(&[rm, perl], 50.0, a.len() as u32, &a),
            ];
            let groups = fold_groups(&patterns, 0.9, &|_| 1000);
            if apart {
                assert_eq!(groups.len(), 2, "{groups:?}");
            } else {
                // The loop stands for it.
                assert_eq!(groups, [(1, vec![0, 1])]);
            }
        }
    }
}
