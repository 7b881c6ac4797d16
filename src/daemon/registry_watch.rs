//! Watches the registry repository, so that changes made with plain git (a `git merge` of a
//! review branch, a `git revert`, an edit committed by hand) are picked up: proposals found on
//! `main` are tagged and their candidates marked approved, and every tool that changed on
//! `main` is checked again — an invalid one is reported (and `toolsmith run` refuses it).
//!
//! inotify on the git directory's refs, no polling: an idle registry costs nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::{mpsc, watch};

use crate::config::Config;
use crate::events::{Event, EventBus};
use crate::generate::review;
use crate::registry::repo::Registry;
use crate::store::Store;

/// How long to wait for a burst of ref updates (a merge writes several) to settle.
const SETTLE: Duration = Duration::from_millis(150);

/// What the last look at the registry saw: `main`'s commit and each tool's tree.
#[derive(Debug, Default)]
struct Seen {
    main: String,
    trees: BTreeMap<String, String>,
}

pub(super) async fn run(
    store: Store,
    events: EventBus,
    jobs: mpsc::Sender<super::jobs::JobRequest>,
    configs: watch::Receiver<Arc<Config>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let dir = configs.borrow().paths.registry.value.clone();
    let state = configs.borrow().paths.state.value.clone();
    let mut seen = Seen::default();
    if let Err(e) = look(&dir, &state, &store, &events, &mut seen).await {
        tracing::error!(
            "registry {}: {e}; proposals wait until it is usable",
            dir.display()
        );
    }
    edits_to_validate(&dir, &state, &store, &jobs).await;
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // An error (a lost event, an overflow) may hide a change: looked at too. Opens are not
        // changes: `look` opens the refs itself.
        if event
            .as_ref()
            .map_or(true, crate::registry::repo::is_registry_change)
        {
            let _ = tx.try_send(());
        }
    });
    let mut watcher = match watcher {
        Ok(w) => w,
        Err(e) => {
            tracing::error!(
                "cannot watch the registry: {e}; changes made with git are seen by the next toolsmith command"
            );
            return;
        }
    };
    let git_dir = dir.join(".git");
    for (path, mode) in [
        (git_dir.clone(), RecursiveMode::NonRecursive),
        (git_dir.join("refs"), RecursiveMode::Recursive),
    ] {
        if let Err(e) = watcher.watch(&path, mode) {
            tracing::warn!("cannot watch {}: {e}", path.display());
        }
    }
    loop {
        tokio::select! {
            _ = shutdown.changed() => return,
            Some(()) = rx.recv() => {
                tokio::time::sleep(SETTLE).await;
                while rx.try_recv().is_ok() {}
                if let Err(e) = look(&dir, &state, &store, &events, &mut seen).await {
                    tracing::warn!("registry {}: {e}", dir.display());
                }
                edits_to_validate(&dir, &state, &store, &jobs).await;
            }
        }
    }
}

/// Queues a generation of the people's edits (`Job::Edits`, on the generation queue like any
/// other) when a review branch holds a commit no candidate was made of: one made in `toolsmith
/// edit`'s worktree, or by hand. The look after toolsmith proposes it finds none.
async fn edits_to_validate(
    dir: &Path,
    state: &Path,
    store: &Store,
    jobs: &mpsc::Sender<super::jobs::JobRequest>,
) {
    let (dir, state) = (dir.to_owned(), state.to_owned());
    let found = tokio::task::spawn_blocking(move || {
        Registry::open(&dir, &state)
            .and_then(|r| r.edits())
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())
    .and_then(|r| r);
    let commits: Vec<String> = match found {
        Ok(found) => found.into_iter().map(|e| e.commit).collect(),
        Err(e) => {
            tracing::warn!("the edits on review branches cannot be read: {e}");
            return;
        }
    };
    if commits.is_empty() {
        return;
    }
    let new = store
        .call(move |conn| {
            let mut new = 0;
            for commit in &commits {
                match crate::generate::candidates::for_edit_commit(conn, commit) {
                    Ok(Some(c)) if !crate::generate::pipeline::to_validate_again(&c) => {}
                    Ok(_) => new += 1,
                    Err(e) => tracing::warn!("edit {commit}: {e}"),
                }
            }
            Ok(new)
        })
        .await
        .unwrap_or(0);
    if new == 0 {
        return;
    }
    tracing::info!("{new} edit(s) on review branches to validate");
    // Nobody waits for the answer: the candidates' events say how it went.
    let (reply, _) = tokio::sync::oneshot::channel();
    let request = super::jobs::JobRequest {
        job: super::jobs::GENERATE,
        generate: Some(crate::generate::pipeline::Job::Edits),
        reply,
    };
    if jobs.send(request).await.is_err() {
        tracing::debug!("the daemon is stopping: the edits wait for the next start");
    }
}

/// Reconciles the registry, records what landed (and decisions git has that the store missed:
/// a killed approval, a branch deleted by hand), and checks the tools that changed. Git is read
/// off the runtime; the store's writer only records.
async fn look(
    dir: &Path,
    state: &Path,
    store: &Store,
    events: &EventBus,
    seen: &mut Seen,
) -> Result<(), String> {
    let dir: PathBuf = dir.to_owned();
    let state: PathBuf = state.to_owned();
    let previous = std::mem::take(seen);
    let waiting = store
        .call(|conn| Ok(review::waiting(conn).map_err(|e| e.to_string())))
        .await
        .map_err(|e| e.to_string())??;
    let (reconciled, decisions, main, trees, problems, previous) =
        tokio::task::spawn_blocking(move || {
            let registry = Registry::open_or_init(&dir, &state).map_err(|e| e.to_string())?;
            // A registry that cannot be changed now (read-only, a stale lock, a long turn of
            // another process) is still looked at, as committed.
            let reconciled = match registry.reconcile() {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!("registry {}: read as committed: {e}", dir.display());
                    Default::default()
                }
            };
            let decisions = review::decisions(&registry, &waiting).map_err(|e| e.to_string())?;
            let main = registry.main_id().map_err(|e| e.to_string())?;
            let tools = registry.tools().map_err(|e| e.to_string())?;
            let mut trees = BTreeMap::new();
            let mut problems = Vec::new();
            // The first look reports manifests that do not read; later ones check every tool
            // that changed in full (digest, files on disk), as `toolsmith run` would.
            let first = previous.main.is_empty();
            for t in tools {
                if previous.trees.get(&t.name) != Some(&t.tree) {
                    if let Some(p) = t.problem.clone() {
                        problems.push((t.name.clone(), p));
                    } else if !first && let Err(e) = registry.runnable(&t.name) {
                        problems.push((t.name.clone(), e.to_string()));
                    }
                }
                trees.insert(t.name, t.tree);
            }
            Ok::<_, String>((reconciled, decisions, main, trees, problems, previous))
        })
        .await
        .map_err(|e| e.to_string())??;
    if !reconciled.landed.is_empty() || !decisions.is_empty() {
        let landed = reconciled.landed.clone();
        store
            .call(move |conn| {
                review::record_landed(conn, &landed)?;
                Ok(review::apply(conn, &decisions).map_err(|e| e.to_string()))
            })
            .await
            .map_err(|e| e.to_string())??;
    }
    for l in &reconciled.landed {
        events.publish(l.event());
    }
    if let Some(note) = &reconciled.journal {
        tracing::warn!("registry: {note}");
    }
    for (tool, problem) in &problems {
        tracing::warn!("registry: tool {tool} is invalid on main: {problem}");
        events.publish(Event::ToolInvalid {
            tool: tool.clone(),
            problem: problem.clone(),
        });
    }
    if !previous.main.is_empty() && previous.main != main {
        let removed: Vec<&String> = previous
            .trees
            .keys()
            .filter(|k| !trees.contains_key(*k))
            .collect();
        let changed: Vec<&String> = trees
            .iter()
            .filter(|(k, v)| previous.trees.get(*k) != Some(v))
            .map(|(k, _)| k)
            .collect();
        events.publish(Event::RegistryChanged {
            main: main.clone(),
            changed: changed.into_iter().cloned().collect(),
            removed: removed.into_iter().cloned().collect(),
            invalid: problems.iter().map(|(t, _)| t.clone()).collect(),
        });
    }
    *seen = Seen { main, trees };
    Ok(())
}
