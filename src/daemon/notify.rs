//! The desktop notification of proposals awaiting review (`[review] notify = true`): when a
//! candidate reaches `awaiting-review`, and once at start for those proposed while the daemon
//! was away, the proposals not yet told on the desktop are told in one notification over the
//! session bus's `org.freedesktop.Notifications`, recorded first (`generate::notices`), so none
//! is told twice — not by a later proposal, not after a restart.
//!
//! The mechanism is the desktop's own client program, spawned: `notify-send` (libnotify) when
//! installed, else `gdbus` (GLib) calling `Notify` itself. No D-Bus library is linked into the
//! daemon for one call a proposal; without a session bus or either program nothing is sent
//! (and the session-start line still tells).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, watch};

use crate::config::Config;
use crate::events::EventBus;
use crate::generate::notices::{self, Channel, Notice};
use crate::store::Store;

/// How long the notification program may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The program that sends a notification.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Sender {
    /// libnotify's `notify-send`.
    NotifySend(PathBuf),
    /// GLib's `gdbus`, calling `org.freedesktop.Notifications.Notify`.
    Gdbus(PathBuf),
}

/// The session bus's address: `$DBUS_SESSION_BUS_ADDRESS`, else the user bus systemd makes at
/// `$XDG_RUNTIME_DIR/bus` when that socket exists; `None` without a session bus.
fn session_bus(address: Option<&str>, runtime_dir: Option<&Path>) -> Option<String> {
    if let Some(a) = address.filter(|a| !a.is_empty()) {
        return Some(a.to_owned());
    }
    use std::os::unix::fs::FileTypeExt;
    let bus = runtime_dir?.join("bus");
    let is_socket = std::fs::metadata(&bus).is_ok_and(|m| m.file_type().is_socket());
    is_socket.then(|| format!("unix:path={}", bus.display()))
}

/// The first of `notify-send` and `gdbus` found on `path`.
fn find_sender(path: &str) -> Option<Sender> {
    let find = |name: &str| {
        std::env::split_paths(path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    };
    find("notify-send")
        .map(Sender::NotifySend)
        .or_else(|| find("gdbus").map(Sender::Gdbus))
}

/// `text` as a notification body: servers read a little markup, so `&`, `<`, `>` are escaped.
fn body_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `text` as a GVariant string literal (how `gdbus call` reads its arguments).
fn gvariant_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The notification of `line` (`toolsmith: …`): the summary and the body.
fn summary_and_body(line: &str) -> (String, String) {
    let rest = line.strip_prefix("toolsmith: ").unwrap_or(line);
    ("toolsmith".to_owned(), body_text(rest))
}

/// The program and arguments sending the notification of `line`.
fn command_line(sender: &Sender, line: &str) -> (PathBuf, Vec<String>) {
    let (summary, body) = summary_and_body(line);
    match sender {
        Sender::NotifySend(program) => (
            program.clone(),
            vec!["--app-name=toolsmith".into(), "--".into(), summary, body],
        ),
        Sender::Gdbus(program) => (
            program.clone(),
            [
                "call",
                "--session",
                "--dest",
                "org.freedesktop.Notifications",
                "--object-path",
                "/org/freedesktop/Notifications",
                "--method",
                "org.freedesktop.Notifications.Notify",
                "toolsmith",
                "0",
                "''",
            ]
            .into_iter()
            .map(str::to_owned)
            .chain([
                gvariant_string(&summary),
                gvariant_string(&body),
                "[]".into(),
                "{}".into(),
                // The server's own expiry; after `--`, so it is not read as an option.
                "--".into(),
                "-1".into(),
            ])
            .collect(),
        ),
    }
}

/// Sends the notification of `line` on `bus`; what failed, when it did.
fn send(sender: &Sender, bus: &str, line: &str) -> Result<(), String> {
    let (program, args) = command_line(sender, line);
    let child = Command::new(&program)
        .args(&args)
        .env("DBUS_SESSION_BUS_ADDRESS", bus)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} ended with {}: {}",
            program.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Tells the proposals not yet told on the desktop, when notifications are on and a session
/// bus and a sender are here; records them once the notification went out.
async fn tell(store: &Store, config: &Config) {
    if !config.review.notify.value {
        return;
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let address = std::env::var("DBUS_SESSION_BUS_ADDRESS").ok();
    let Some(bus) = session_bus(address.as_deref(), runtime.as_deref()) else {
        tracing::debug!("[review] notify: no session bus here, no desktop notification");
        return;
    };
    let path = config
        .sandbox
        .path
        .value
        .clone()
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    let Some(sender) = find_sender(&path) else {
        tracing::warn!(
            "[review] notify: neither notify-send nor gdbus is installed; install libnotify-bin \
             (or libglib2.0-bin) for desktop notifications"
        );
        return;
    };
    // Recorded before it is sent: a daemon stopped between the two never tells twice (at most
    // once per proposal); a notification that fails is taken back, to be told next time.
    let claimed: Result<Notice, String> = store
        .call(move |conn| {
            Ok(notices::claim(
                conn,
                Channel::Desktop,
                crate::store::unix_now(),
            ))
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()));
    let notice = match claimed {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!("[review] notify: cannot read the proposals awaiting review: {e}");
            return;
        }
    };
    let Some(line) = notice.line() else {
        return;
    };
    let sent = tokio::time::timeout(
        TIMEOUT,
        tokio::task::spawn_blocking(move || send(&sender, &bus, &line)),
    )
    .await;
    let failure = match sent {
        Ok(Ok(Ok(()))) => return,
        Ok(Ok(Err(e))) => format!("the desktop notification failed: {e}"),
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("the notification program took over {} s", TIMEOUT.as_secs()),
    };
    tracing::warn!("[review] notify: {failure}; told at the next proposal");
    let ids: Vec<String> = notice.new.iter().map(|c| c.id.clone()).collect();
    let forgotten = store
        .call(move |conn| {
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            Ok(notices::forget(conn, Channel::Desktop, &ids))
        })
        .await;
    match forgotten {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!("[review] notify: cannot take the notice back: {e}"),
        Err(e) => tracing::warn!("[review] notify: cannot take the notice back: {e}"),
    }
}

/// Tells the desktop at start, then at each proposal, until shutdown.
pub(super) async fn run(
    store: Store,
    events: EventBus,
    configs: watch::Receiver<Arc<Config>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut bus = events.subscribe();
    // Those proposed while the daemon was away (by `toolsmith new`, or before a restart).
    let config = Arc::clone(&configs.borrow());
    tell(&store, &config).await;
    loop {
        let event = tokio::select! {
            _ = shutdown.changed() => return,
            received = bus.recv() => match received {
                Ok(event) => event,
                // Missed events may have been proposals: what waits untold is read again.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let config = Arc::clone(&configs.borrow());
                    tell(&store, &config).await;
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
        };
        if event.kind() != "candidate.awaiting-review" {
            continue;
        }
        let config = Arc::clone(&configs.borrow());
        tell(&store, &config).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_bus_is_the_address_given_else_the_user_bus_socket() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            session_bus(Some("unix:path=/run/user/1000/bus"), Some(dir.path())).as_deref(),
            Some("unix:path=/run/user/1000/bus")
        );
        // No address and no socket: no bus, no notification.
        assert_eq!(session_bus(None, Some(dir.path())), None);
        assert_eq!(session_bus(Some(""), None), None);
        // A plain file named bus is not a bus.
        std::fs::write(dir.path().join("bus"), "").expect("write");
        assert_eq!(session_bus(None, Some(dir.path())), None);
        std::fs::remove_file(dir.path().join("bus")).expect("rm");
        let _listener =
            std::os::unix::net::UnixListener::bind(dir.path().join("bus")).expect("bind");
        assert_eq!(
            session_bus(None, Some(dir.path())),
            Some(format!("unix:path={}", dir.path().join("bus").display()))
        );
    }

    #[test]
    fn notify_send_is_preferred_and_gdbus_calls_notify_itself() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).expect("a");
        std::fs::create_dir_all(&b).expect("b");
        let path = format!("{}:{}", a.display(), b.display());
        assert_eq!(find_sender(&path), None);
        std::fs::write(b.join("gdbus"), "").expect("gdbus");
        assert_eq!(find_sender(&path), Some(Sender::Gdbus(b.join("gdbus"))));
        std::fs::write(b.join("notify-send"), "").expect("notify-send");
        assert_eq!(
            find_sender(&path),
            Some(Sender::NotifySend(b.join("notify-send")))
        );

        let line = "toolsmith: 1 tool awaits your review (a<b) — toolsmith ui";
        let (_, args) = command_line(&Sender::NotifySend("notify-send".into()), line);
        assert_eq!(
            args,
            [
                "--app-name=toolsmith",
                "--",
                "toolsmith",
                "1 tool awaits your review (a&lt;b) — toolsmith ui"
            ]
        );
        let (_, args) = command_line(&Sender::Gdbus("gdbus".into()), "toolsmith: say \"hi\"");
        assert_eq!(
            args[8..],
            [
                "toolsmith",
                "0",
                "''",
                "\"toolsmith\"",
                "\"say \\\"hi\\\"\"",
                "[]",
                "{}",
                "--",
                "-1"
            ]
        );
    }
}
