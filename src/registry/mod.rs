//! The registry: approved tools in a git repository (their package format is
//! [`crate::package`]).
//!
//! - [`approval`]: the binding of `main` to what was approved (each version's annotated tag);
//! - [`auto`]: auto-approval, only by explicit policy rules (never of a proposal with needs);
//! - [`grants`]: what a person grants at approval (`--grant`), exactly a proposal's needs;
//! - [`ledger`]: the tags and proposals toolsmith made or received, each sealed with a key kept
//!   outside the registry (in the state directory);
//! - [`repo`]: the git repository — [`repo::Registry`], opened or made from the template, and
//!   the plumbing its parts share; beside it, each part as `impl Registry` blocks (their
//!   types re-exported from `repo`): `proposals` (propose, review, approve, reject),
//!   `journal` (every move of `main`, finished or undone after a crash), `lock` (turns at
//!   changing it; reads take none), `checkout` (the work tree), `reconcile` (what a crash or plain git left
//!   behind), `listing` (the tools on `main`), `verify` (what may run, and `verify`),
//!   `approved_tree` (the approved files a run is given, from git's objects),
//!   `history` (rollback, deprecation);
//! - [`feedback`]: every review decision kept (approvals by their tags, rejections by their
//!   kept refs), for `toolsmith export feedback` and `toolsmith stats`;
//! - [`sync`]: sharing through a git remote;
//! - [`versions`]: semantic versions from the interface diff;
//! - [`index`]: `TOOLS.md`, rewritten with every change.

pub mod approval;
mod approved_tree;
pub mod auto;
mod checkout;
pub mod edits;
pub mod feedback;
#[cfg(test)]
mod fixture;
pub mod grants;
mod history;
pub mod index;
mod journal;
pub mod ledger;
mod listing;
mod lock;
mod proposals;
mod reconcile;
pub mod repo;
pub mod sync;
mod verify;
pub mod versions;

/// Tunes libgit2 for a registry of many tools, once per process, before its first repository
/// is opened: [`repo::Registry`] calls it on every open, so a command that opens no registry
/// never initialises libgit2 (`toolsmith --version`, `status`, `sandbox` and the sandbox helper
/// never pay for it; libgit2 is built without TLS, so none loads OpenSSL or CA certificates).
///
/// libgit2 caches no tree larger than 4 KiB, and `tools/` holds one entry per tool (about
/// 400 KiB at 10,000 tools): every lookup of a tool would read, inflate and hash it again.
/// Trees up to 16 MiB are cached instead, within a cache of 64 MiB (256 MiB by default: this
/// is a background process).
pub fn tune_git() {
    static TUNED: std::sync::Once = std::sync::Once::new();
    TUNED.call_once(|| {
        // SAFETY: these set libgit2 globals without synchronization, which the object caches of
        // open repositories read. Every repository toolsmith opens is opened by `Registry`,
        // which comes through here first, and `call_once` makes a concurrent first opener wait
        // until the values are set: no repository exists, in any thread, while they change.
        unsafe {
            let _ = git2::opts::set_cache_object_limit(git2::ObjectType::Tree, 16 << 20);
            let _ = git2::opts::set_cache_max_size(64 << 20);
        }
    });
}
