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
//! writable workspace cannot plant a configuration file for toolsmith to find later. Bind
//! mounts that show the same directory under another path are not seen.

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

    /// Checks a run's workspace and tool directory, both already canonical.
    /// Whether `path` (canonical) is one of the places or lies inside one: a host socket
    /// there (the control socket) is never bound into a run.
    pub(crate) fn covers(&self, path: &Path) -> bool {
        self.places.iter().any(|p| {
            let at = resolve(&p.path);
            matches!(relation(path, &at), Some(Relation::Is | Relation::Inside))
        })
    }

    pub(crate) fn check(
        &self,
        workspace: Option<&Path>,
        tool_dir: Option<&Path>,
    ) -> Result<(), SandboxError> {
        if self.places.is_empty() || (workspace.is_none() && tool_dir.is_none()) {
            return Ok(());
        }
        let scratch = self.scratch.as_deref().map(resolve);
        let resolved: Vec<(&Place, PathBuf)> =
            self.places.iter().map(|p| (p, resolve(&p.path))).collect();
        // The most telling relation first: being a place, then holding one, then lying inside.
        for wanted in [Relation::Is, Relation::Holds, Relation::Inside] {
            for (place, at) in &resolved {
                if let Some(ws) = workspace
                    && relation(ws, at) == Some(wanted)
                {
                    let scratch_run = wanted == Relation::Inside
                        && scratch
                            .as_deref()
                            .is_some_and(|s| ws != s && ws.starts_with(s) && s.starts_with(at));
                    if !scratch_run {
                        return Err(refusal("workspace", ws, wanted, place, at));
                    }
                }
                if let Some(tool) = tool_dir
                    && wanted != Relation::Inside
                    && relation(tool, at) == Some(wanted)
                {
                    return Err(refusal("tool directory", tool, wanted, place, at));
                }
            }
        }
        Ok(())
    }
}

impl OwnPlaces {
    /// Checks a toolchain path (canonical) a run would bind: it must neither be, hold nor lie
    /// inside one of toolsmith's places.
    pub(crate) fn check_toolchain(&self, path: &Path) -> Result<(), SandboxError> {
        for place in &self.places {
            let at = resolve(&place.path);
            if let Some(r) = relation(path, &at) {
                return Err(refusal("toolchain path", path, r, place, &at));
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

fn refusal(what: &str, dir: &Path, relation: Relation, place: &Place, at: &Path) -> SandboxError {
    let how = match relation {
        Relation::Is => "is",
        Relation::Holds => "contains",
        Relation::Inside => "lies inside",
    };
    let shown = if at == place.path {
        at.display().to_string()
    } else {
        format!("{} (that is {})", place.path.display(), at.display())
    };
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
    fn paths_that_do_not_exist_resolve_where_they_would_be() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = tmp.path().canonicalize().expect("canonical");
        std::os::unix::fs::symlink(&root, root.join("link")).expect("symlink");
        assert_eq!(resolve(&root.join("link/a/b")), root.join("a/b"));
        assert_eq!(resolve(&root.join("link/a/../b/./c")), root.join("b/c"));
        assert_eq!(resolve(&root.join("link")), root);
    }
}
