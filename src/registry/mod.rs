//! The registry: approved tools in a git repository (their package format is
//! [`crate::package`]).
//!
//! - [`approval`]: the binding of `main` to what was approved (each version's annotated tag);
//! - [`auto`]: auto-approval, only by explicit policy rules;
//! - [`ledger`]: the tags and proposals toolsmith made or received;
//! - [`repo`]: the git repository — proposals, approval, rejection, rollback, deprecation,
//!   verification, and what a crash or plain git left behind;
//! - [`sync`]: sharing through a git remote;
//! - [`versions`]: semantic versions from the interface diff;
//! - [`index`]: `TOOLS.md`, rewritten with every change.

pub mod approval;
pub mod auto;
pub mod index;
pub mod ledger;
pub mod repo;
pub mod sync;
pub mod versions;

/// Tunes libgit2 for a registry of many tools, once per process, before its first repository
/// is opened: [`repo::Registry`] calls it on every open, so a command that opens no registry
/// never initialises libgit2 (nor, through it, OpenSSL and the system's CA certificates, which
/// cost tens of milliseconds: `toolsmith --version`, `status`, `sandbox` and the sandbox
/// helper never pay for them).
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
