//! toolsmith's own places — its state (the store, staging), its runtime directory (the control
//! socket), its registry, its configuration and policy — which no sandboxed run may see: a
//! sandboxed process that reached them could approve its own tools, rewrite the configuration
//! (whose `on_event` command runs outside the sandbox) or stop the daemon.
//!
//! Every run passes through [`OwnPlaces::check`] before anything starts: a workspace that is
//! one of them, holds one or lies inside one is refused, and so is a tool directory that is or
//! holds one (a tool's own directory lies inside the registry or the staging area by design,
//! and is shown read-only). Paths are compared after symlinks and `..` are resolved on both
//! sides; a place that does not exist yet is compared where it would be created, so a
//! writable workspace cannot plant a configuration file for toolsmith to find later.
//!
//! Paths are not files: a bind mount shows a directory under another path. So the places are
//! also compared as the files they are. Every mount of `/proc/self/mountinfo` on a place's
//! device whose root is at or above the place shows the place again at another path (an
//! alias, compared as the place itself), and one whose root lies inside it shows a part of it
//! at its mount point (a directory at or inside that point lies inside the place, one above it
//! holds it: the run's bind of the workspace is recursive). And the checked directory and each
//! of its ancestors are compared by device and inode with each place that exists, which finds
//! an alias however it was made. Both cost a read of the mount table and a `stat` per ancestor
//! on each checked run, well under a millisecond; the contents of a workspace are not walked
//! (only mounts bring another directory into it, and those are in the mount table). A hard
//! link brings a single file: the files toolsmith keeps directly in a place (and in a
//! registry's git directory) must have no other link when the workspace is on their file
//! system.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Component, Path, PathBuf};

use super::SandboxError;

/// One of toolsmith's places.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Place {
    /// What it is, for messages (`state directory`, `configuration file`, …).
    what: &'static str,
    /// Where, as configured.
    path: PathBuf,
}

/// toolsmith's own places, which a run's workspace and tool directory must stay clear of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnPlaces {
    places: Vec<Place>,
    scratch: Option<PathBuf>,
}

/// How a directory relates to one of toolsmith's places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relation {
    Is,
    Holds,
    Inside,
}

impl OwnPlaces {
    /// No places: nothing is refused (a library caller with nothing of toolsmith's around).
    pub fn none() -> Self {
        OwnPlaces::default()
    }

    /// Adds a place; `what` names it in messages (`"state directory"`).
    pub fn add(&mut self, what: &'static str, path: impl Into<PathBuf>) {
        let path = path.into();
        if !self.places.iter().any(|p| p.path == path) {
            self.places.push(Place { what, path });
        }
    }

    /// The places with `scratch` (inside one of them, e.g. `<state>/scratch`) as toolsmith's
    /// own area for throw-away workspaces: a workspace strictly below it is allowed, since it
    /// holds nothing but that run's files.
    pub fn with_scratch(mut self, scratch: impl Into<PathBuf>) -> Self {
        self.scratch = Some(scratch.into());
        self
    }

    /// Whether no place is known.
    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
    }

    /// Whether `path` (canonical) is one of the places or lies inside one, under any of the
    /// paths that show it: a host socket there (the control socket) is never bound into a run.
    pub(crate) fn covers(&self, path: &Path) -> bool {
        if self.places.is_empty() {
            return false;
        }
        let shown = self.shown(path);
        shown
            .iter()
            .any(|s| matches!(s.relation_of(path), Some(Relation::Is | Relation::Inside)))
    }

    /// Checks a run's workspace and tool directory, both already canonical.
    pub(crate) fn check(
        &self,
        workspace: Option<&Path>,
        tool_dir: Option<&Path>,
    ) -> Result<(), SandboxError> {
        if self.places.is_empty() || (workspace.is_none() && tool_dir.is_none()) {
            return Ok(());
        }
        let scratch = self.scratch.as_deref().map(resolve);
        let mounts = Mounts::read();
        let places = self.resolved();
        let shown_ws = workspace.map(|ws| shown_with(ws, &mounts, &places));
        let shown_tool = tool_dir.map(|tool| shown_with(tool, &mounts, &places));
        // The most telling relation first: being a place, then holding one, then lying inside.
        for wanted in [Relation::Is, Relation::Holds, Relation::Inside] {
            if let (Some(ws), Some(shown)) = (workspace, &shown_ws) {
                for s in shown {
                    if s.relation_of(ws) != Some(wanted) {
                        continue;
                    }
                    let scratch_run = wanted == Relation::Inside
                        && s.kind == Kind::Place
                        && scratch.as_deref().is_some_and(|sc| {
                            ws != sc && ws.starts_with(sc) && sc.starts_with(&s.at)
                        });
                    if !scratch_run {
                        return Err(refusal("workspace", ws, wanted, s));
                    }
                }
            }
            // A tool's own directory lies inside the registry or the staging area by design.
            if let (Some(tool), Some(shown)) = (tool_dir, &shown_tool)
                && wanted != Relation::Inside
                && let Some(s) = shown.iter().find(|s| s.relation_of(tool) == Some(wanted))
            {
                return Err(refusal("tool directory", tool, wanted, s));
            }
        }
        if let Some(ws) = workspace {
            check_hard_links(ws, &places)?;
        }
        Ok(())
    }

    /// Where each place is seen, for a check of `dir`: see [`OwnPlaces::shown_with`].
    fn shown(&self, dir: &Path) -> Vec<Shown<'_>> {
        shown_with(dir, &Mounts::read(), &self.resolved())
    }

    /// Each place with its path resolved and its metadata, once per check.
    fn resolved(&self) -> Vec<Resolved<'_>> {
        self.places
            .iter()
            .map(|place| {
                let at = resolve(&place.path);
                let meta = std::fs::metadata(&at).ok();
                Resolved { place, at, meta }
            })
            .collect()
    }
}

/// One of toolsmith's places with its path resolved and what `stat` says of it.
struct Resolved<'a> {
    place: &'a Place,
    at: PathBuf,
    meta: Option<std::fs::Metadata>,
}

/// Where each place is seen: its own path (resolved), the paths the mounts show it or a
/// part of it at, and `dir` or an ancestor of it that is the place's very directory
/// (device and inode).
fn shown_with<'a>(dir: &Path, mounts: &Mounts, places: &[Resolved<'a>]) -> Vec<Shown<'a>> {
    let mut shown = Vec::new();
    let ancestors: Vec<(&Path, Option<(u64, u64)>)> = dir
        .ancestors()
        .map(|a| (a, std::fs::metadata(a).ok().map(|m| (m.dev(), m.ino()))))
        .collect();
    for Resolved { place, at, meta } in places {
        let id = meta.as_ref().map(|m| (m.dev(), m.ino()));
        for (alias, kind) in mounts.aliases(at) {
            shown.push(Shown {
                place,
                at: alias,
                kind,
                real: at.clone(),
            });
        }
        if let Some(id) = id
            && let Some((ancestor, _)) = ancestors.iter().find(|(_, a)| *a == Some(id))
            && ancestor != at
        {
            shown.push(Shown {
                place,
                at: ancestor.to_path_buf(),
                kind: Kind::Place,
                real: at.clone(),
            });
        }
        shown.push(Shown {
            place,
            at: at.clone(),
            kind: Kind::Place,
            real: at.clone(),
        });
    }
    shown
}

/// A file of a place reached through a hard link in the workspace is a file of the place:
/// no mount shows it, so its link count does. Only the files toolsmith keeps directly in a
/// place, and in a registry's git directory (its ledger, refs and index), are looked at —
/// not git's objects, which local clones share by design — and only when the workspace is
/// on the place's file system, the only one a hard link can come from.
fn check_hard_links(workspace: &Path, places: &[Resolved<'_>]) -> Result<(), SandboxError> {
    let Ok(ws_dev) = std::fs::metadata(workspace).map(|m| m.dev()) else {
        return Ok(());
    };
    for Resolved { place, at, meta } in places {
        let Some(meta) = meta else {
            continue;
        };
        if !meta.is_dir() || meta.dev() != ws_dev {
            continue;
        }
        for dir in [at.clone(), at.join(".git")] {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                // The directory entry's type costs no call; only regular files are stat'ed.
                if !entry.file_type().is_ok_and(|t| t.is_file()) {
                    continue;
                }
                let Ok(meta) = entry.metadata() else {
                    continue;
                };
                if meta.is_file() && meta.nlink() > 1 {
                    let file = entry.path();
                    return Err(SandboxError::Refused(format!(
                        "toolsmith's {} holds {}, which has {} hard links on the workspace's \
                         file system: a link to it in the workspace {} would let the run \
                         reach toolsmith's own files; remove the other links (`find / -xdev \
                         -samefile {}`) or give a workspace on another file system",
                        place.what,
                        file.display(),
                        meta.nlink(),
                        workspace.display(),
                        file.display(),
                    )));
                }
            }
        }
    }
    Ok(())
}

/// A path at which one of toolsmith's places, or a part of it, is seen.
#[derive(Debug)]
struct Shown<'a> {
    place: &'a Place,
    /// The path.
    at: PathBuf,
    kind: Kind,
    /// The place's own path, resolved.
    real: PathBuf,
}

/// What a [`Shown`] path shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The place itself.
    Place,
    /// A directory inside the place (a mount whose root lies inside it).
    Part,
}

impl Shown<'_> {
    /// How `dir` relates to the place through this path.
    fn relation_of(&self, dir: &Path) -> Option<Relation> {
        match self.kind {
            Kind::Place => relation(dir, &self.at),
            Kind::Part => match relation(dir, &self.at) {
                Some(Relation::Is | Relation::Inside) => Some(Relation::Inside),
                other => other,
            },
        }
    }
}

/// One line of `/proc/self/mountinfo`: the device, the root of the mount inside its file
/// system, and where it is mounted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    device: String,
    root: PathBuf,
    point: PathBuf,
}

/// The mounts of this process's mount namespace, the namespace its paths are resolved in.
#[derive(Debug, Default)]
struct Mounts(Vec<Mount>);

impl Mounts {
    /// Reads `/proc/self/mountinfo`; unreadable (no `/proc`), it is empty and only paths and
    /// inodes are compared.
    fn read() -> Mounts {
        std::fs::read_to_string("/proc/self/mountinfo")
            .map(|text| Mounts::parse(&text))
            .unwrap_or_default()
    }

    fn parse(text: &str) -> Mounts {
        Mounts(
            text.lines()
                .filter_map(|line| {
                    let mut fields = line.split(' ').skip(2);
                    let device = fields.next()?.to_owned();
                    let root = PathBuf::from(unescape(fields.next()?));
                    let point = PathBuf::from(unescape(fields.next()?));
                    Some(Mount {
                        device,
                        root,
                        point,
                    })
                })
                .collect(),
        )
    }

    /// The other paths `place` (resolved) is seen at: (path, what it shows). The mount it lies
    /// on is the last one whose mount point holds it (a later mount hides an earlier one).
    fn aliases(&self, place: &Path) -> Vec<(PathBuf, Kind)> {
        let Some(home) = self
            .0
            .iter()
            .filter(|m| place.starts_with(&m.point))
            .max_by_key(|m| m.point.components().count())
        else {
            return Vec::new();
        };
        let Ok(rest) = place.strip_prefix(&home.point) else {
            return Vec::new();
        };
        // The place inside its file system.
        let inner = home.root.join(rest);
        let mut aliases = Vec::new();
        for m in self.0.iter().filter(|m| m.device == home.device) {
            let seen = if let Ok(below) = inner.strip_prefix(&m.root) {
                (m.point.join(below), Kind::Place)
            } else if m.root.starts_with(&inner) {
                (m.point.clone(), Kind::Part)
            } else {
                continue;
            };
            if seen.0 != place && !aliases.contains(&seen) {
                aliases.push(seen);
            }
        }
        aliases
    }
}

/// A mountinfo field with its octal escapes (`\040` for a space, …) decoded.
fn unescape(field: &str) -> String {
    if !field.contains('\\') {
        return field.to_owned();
    }
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .map(|d| d.iter().fold(0u32, |n, c| n * 8 + u32::from(c - b'0')));
        match octal.and_then(|n| u8::try_from(n).ok()) {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl OwnPlaces {
    /// Checks a toolchain path (canonical) a run would bind: it must neither be, hold nor lie
    /// inside one of toolsmith's places.
    pub(crate) fn check_toolchain(&self, path: &Path) -> Result<(), SandboxError> {
        if self.places.is_empty() {
            return Ok(());
        }
        for s in self.shown(path) {
            if let Some(r) = s.relation_of(path) {
                return Err(refusal("toolchain path", path, r, &s));
            }
        }
        Ok(())
    }
}

fn relation(dir: &Path, place: &Path) -> Option<Relation> {
    if dir == place {
        Some(Relation::Is)
    } else if place.starts_with(dir) {
        Some(Relation::Holds)
    } else if dir.starts_with(place) {
        Some(Relation::Inside)
    } else {
        None
    }
}

fn refusal(what: &str, dir: &Path, relation: Relation, seen: &Shown<'_>) -> SandboxError {
    let how = match relation {
        Relation::Is => "is",
        Relation::Holds => "contains",
        Relation::Inside => "lies inside",
    };
    let place = seen.place;
    let mut shown = if seen.real == place.path {
        place.path.display().to_string()
    } else {
        format!("{} (that is {})", place.path.display(), seen.real.display())
    };
    if seen.at != seen.real {
        let part = match seen.kind {
            Kind::Place => "",
            Kind::Part => "a part of ",
        };
        shown.push_str(&format!(
            ", {part}which {} shows again (a bind mount or another mount of its file system)",
            seen.at.display()
        ));
    }
    SandboxError::Refused(format!(
        "the {what} {} {how} toolsmith's {} {shown}: a sandboxed run must never reach \
         toolsmith's own files (its store, control socket, registry, configuration); give a \
         directory that neither contains nor lies inside it, such as the project directory \
         itself",
        dir.display(),
        place.what,
    ))
}

/// A path with symlinks and `..` resolved: canonical where it exists; where it does not, the
/// part that exists made canonical (component by component, so a symlink is followed before a
/// `..` after it is applied) and the rest applied to it.
fn resolve(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        match std::env::current_dir() {
            Ok(cwd) => cwd.join(path),
            Err(_) => path.to_path_buf(),
        }
    };
    let mut out = PathBuf::from("/");
    for component in absolute.components() {
        match component {
            Component::Normal(name) => {
                let next = out.join(name);
                out = next.canonicalize().unwrap_or(next);
            }
            // `out` is canonical as long as it exists, so its parent is the real one.
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(root: &Path) -> OwnPlaces {
        let mut own = OwnPlaces::none();
        own.add("state directory", root.join("state"));
        own.add("runtime directory", root.join("state/run"));
        own.add("registry", root.join("data/registry"));
        own.add("configuration directory", root.join("config/toolsmith"));
        own.with_scratch(root.join("state/scratch"))
    }

    #[test]
    fn workspaces_near_toolsmiths_places_are_refused() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = tmp.path().canonicalize().expect("canonical");
        for dir in [
            "state/run",
            "state/scratch/run-1",
            "data/registry/tools/x",
            "ws/a",
        ] {
            std::fs::create_dir_all(root.join(dir)).expect("mkdir");
        }
        std::os::unix::fs::symlink(root.join("state"), root.join("link")).expect("symlink");
        let own = places(&root);
        let refused = |ws: &Path| {
            own.check(Some(ws), None)
                .expect_err(&format!("{} refused", ws.display()))
                .to_string()
        };
        let is = refused(&root.join("state"));
        assert!(is.contains("is toolsmith's state directory"), "{is}");
        let runtime = refused(&root.join("state/run"));
        assert!(
            runtime.contains("is toolsmith's runtime directory"),
            "{runtime}"
        );
        let holds = refused(&root);
        assert!(holds.contains("contains toolsmith's"), "{holds}");
        let inside = refused(&root.join("data/registry/tools/x"));
        assert!(
            inside.contains("lies inside toolsmith's registry"),
            "{inside}"
        );
        // The configuration directory does not exist: where it would be is guarded.
        let config = refused(&root.join("config"));
        assert!(
            config.contains("contains toolsmith's configuration directory"),
            "{config}"
        );
        // Resolved before comparing: symlinks and `..`.
        let canonical = root.join("link").canonicalize().expect("canonical");
        let via_link = refused(&canonical);
        assert!(
            via_link.contains("is toolsmith's state directory"),
            "{via_link}"
        );
        assert!(refused(&root.join("ws/..").canonicalize().expect("c")).contains("contains"));
        // The scratch area's runs are allowed; the area itself is not.
        assert!(
            own.check(Some(&root.join("state/scratch/run-1")), None)
                .is_ok()
        );
        assert!(refused(&root.join("state/scratch")).contains("lies inside"));
        assert!(own.check(Some(&root.join("ws/a")), None).is_ok());
        assert!(own.check(Some(&root.join("ws")), None).is_ok());
        // A tool directory inside the registry is a tool's; one holding the registry is not.
        assert!(
            own.check(None, Some(&root.join("data/registry/tools/x")))
                .is_ok()
        );
        let tool = own
            .check(None, Some(&root.join("data")))
            .expect_err("refused")
            .to_string();
        assert!(tool.contains("tool directory"), "{tool}");
        assert!(OwnPlaces::none().check(Some(&root), None).is_ok());
    }

    #[test]
    fn mounts_show_a_place_again_under_other_paths() {
        let table = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:25 / /tmp rw shared:2 - tmpfs tmpfs rw
41 30 8:1 /home/u/.local/state/toolsmith /tmp/x rw - ext4 /dev/sda1 rw
42 30 8:1 /home/u/.local/state/toolsmith/staging /tmp/y rw - ext4 /dev/sda1 rw
43 30 8:1 /home /tmp/h\\040dir rw - ext4 /dev/sda1 rw
44 30 0:25 /home/u/.local/state/toolsmith /tmp/other-fs rw - tmpfs tmpfs rw
45 30 8:1 /srv /tmp/srv rw - ext4 /dev/sda1 rw
";
        let mounts = Mounts::parse(table);
        assert_eq!(
            mounts.0[4].point,
            Path::new("/tmp/h dir"),
            "octal escapes decoded"
        );
        let aliases = mounts.aliases(Path::new("/home/u/.local/state/toolsmith"));
        assert_eq!(
            aliases,
            [
                (PathBuf::from("/tmp/x"), Kind::Place),
                (PathBuf::from("/tmp/y"), Kind::Part),
                (
                    PathBuf::from("/tmp/h dir/u/.local/state/toolsmith"),
                    Kind::Place
                ),
            ],
            "the same device only; a mount elsewhere in it shows nothing of the place"
        );
        let part = Shown {
            place: &Place {
                what: "state directory",
                path: "/s".into(),
            },
            at: "/tmp/y".into(),
            kind: Kind::Part,
            real: "/s".into(),
        };
        assert_eq!(
            part.relation_of(Path::new("/tmp/y")),
            Some(Relation::Inside)
        );
        assert_eq!(
            part.relation_of(Path::new("/tmp/y/a")),
            Some(Relation::Inside)
        );
        assert_eq!(part.relation_of(Path::new("/tmp")), Some(Relation::Holds));
        assert_eq!(part.relation_of(Path::new("/tmp/z")), None);
    }

    #[test]
    fn paths_that_do_not_exist_resolve_where_they_would_be() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = tmp.path().canonicalize().expect("canonical");
        std::os::unix::fs::symlink(&root, root.join("link")).expect("symlink");
        assert_eq!(resolve(&root.join("link/a/b")), root.join("a/b"));
        assert_eq!(resolve(&root.join("link/a/../b/./c")), root.join("b/c"));
        assert_eq!(resolve(&root.join("link")), root);
    }
}
