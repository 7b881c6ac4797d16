//! Runs the configured `[events] on_event` command for the chosen event kinds, the event as
//! JSON on its stdin — `notify-send`, a chat hook, a log of one's own.
//!
//! The command is the user's own program, run as the daemon's user, never a generated tool.
//! At most [`MAX_RUNNING`] run at once (more events meanwhile are skipped, and said so); one
//! that runs longer than [`TIMEOUT`] is killed.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, broadcast, watch};

use crate::config::Config;
use crate::events::{EventBus, Published};

/// Commands running at once.
const MAX_RUNNING: usize = 4;

/// How long one may run.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Whether `kind` is one of `prefixes` (a prefix matches the kinds it starts).
fn chosen(kind: &str, prefixes: &[String]) -> bool {
    prefixes.iter().any(|p| kind.starts_with(p.as_str()))
}

pub(super) async fn run(
    events: EventBus,
    configs: watch::Receiver<Arc<Config>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut bus = events.subscribe();
    let running = Arc::new(Semaphore::new(MAX_RUNNING));
    loop {
        let event = tokio::select! {
            _ = shutdown.changed() => return,
            received = bus.recv() => match received {
                Ok(event) => event,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!("on_event: {n} events went by unhandled (the daemon was busy)");
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
        };
        let (command, kinds) = {
            let config = configs.borrow();
            (
                config.events.on_event.value.clone(),
                config.events.on_event_kinds.value.clone(),
            )
        };
        if command.is_empty() || !chosen(event.kind(), &kinds) {
            continue;
        }
        let Ok(permit) = Arc::clone(&running).try_acquire_owned() else {
            tracing::warn!(
                "on_event: {MAX_RUNNING} commands still running; {} #{} skipped",
                event.kind(),
                event.seq
            );
            continue;
        };
        tokio::spawn(async move {
            run_command(&command, &event).await;
            drop(permit);
        });
    }
}

async fn run_command(command: &[String], event: &Published) {
    let Some((program, args)) = command.split_first() else {
        return;
    };
    let spawned = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .env("TOOLSMITH_EVENT", event.kind())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            tracing::warn!(
                "on_event: cannot run {program}: {e}; fix [events] on_event in the configuration"
            );
            return;
        }
    };
    let pid = child.id();
    let json = serde_json::to_vec(event).unwrap_or_default();
    let waited = tokio::time::timeout(
        TIMEOUT,
        tokio::task::spawn_blocking(move || {
            if let Some(mut stdin) = child.stdin.take() {
                // A command that does not read its input is not an error.
                let _ = stdin.write_all(&json).and_then(|()| stdin.write_all(b"\n"));
            }
            child.wait()
        }),
    )
    .await;
    match waited {
        Ok(Ok(Ok(status))) if status.success() => {}
        Ok(Ok(Ok(status))) => {
            tracing::warn!(
                "on_event: {program} for {} ended with {status}",
                event.kind()
            )
        }
        Ok(Ok(Err(e))) => tracing::warn!("on_event: {program}: {e}"),
        Ok(Err(e)) => tracing::warn!("on_event: {program}: {e}"),
        Err(_) => {
            tracing::warn!(
                "on_event: {program} for {} ran over {} s and was killed",
                event.kind(),
                TIMEOUT.as_secs()
            );
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_chosen_by_prefix() {
        let kinds = vec!["tool.".to_owned(), "candidate.proposed".to_owned()];
        assert!(chosen("tool.approved", &kinds));
        assert!(chosen("candidate.proposed", &kinds));
        assert!(!chosen("candidate.rejected", &kinds));
        assert!(!chosen("ingest.actions", &kinds));
        assert!(!chosen("tool.approved", &[]));
    }
}
