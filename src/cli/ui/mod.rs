//! `toolsmith ui`: the review pages on a local web server (axum on tokio), for a person to see
//! what awaits review and decide it in one place.
//!
//! Safe on a shared machine: it listens on 127.0.0.1 only; every request carries the random
//! token of the URL it prints (on the first load in the query, then in a cookie that is
//! `HttpOnly` and `SameSite=Strict`); a `Host` header that is not this server's loopback
//! address is refused, so a page of another site whose name was re-pointed at 127.0.0.1 (DNS
//! rebinding) reads nothing; a request that changes anything needs the CSRF header the pages
//! send, which a form of another site cannot; no CORS header is ever sent; every asset is in
//! the binary. Approve and Reject call the very functions `toolsmith approve` and `toolsmith
//! reject` run (`cli::registry::approve`/`reject`), so a decision made here is the same commit,
//! trailers, tag and events.

mod keep;
mod pages;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Cli, Command, Failure, GlobalArgs};
use crate::exit::ExitCode;

/// The header a state-changing request must carry, with the page's CSRF value.
pub const CSRF_HEADER: &str = "x-toolsmith-csrf";

/// The style sheet, embedded (no CDN: the pages work offline).
const STYLE: &str = include_str!("assets/style.css");
/// The pages' script, embedded.
const SCRIPT: &str = include_str!("assets/app.js");

/// What every request handler shares: where to find the configuration, and the secrets.
struct Ui {
    /// The global options `toolsmith ui` was given, for the commands the pages call.
    config: Option<std::path::PathBuf>,
    state: Option<std::path::PathBuf>,
    socket: Option<std::path::PathBuf>,
    /// The URL's token (hex); the cookie carries it after the first load.
    token: String,
    /// The value a state-changing request sends in [`CSRF_HEADER`].
    csrf: String,
    /// The port listened on, for the `Host` check and the cookie's name.
    port: u16,
    /// The daemon's events, while a subscription to them runs ([`live_feed`]).
    feed: std::sync::Mutex<Option<tokio::sync::broadcast::Sender<String>>>,
}

impl Ui {
    /// The command line the pages' calls run under: `toolsmith --json …` with the same
    /// configuration, state directory and socket as `toolsmith ui` itself.
    fn cli(&self) -> Cli {
        Cli {
            global: GlobalArgs {
                config: self.config.clone(),
                state: self.state.clone(),
                socket: self.socket.clone(),
                json: true,
            },
            command: Command::Review,
        }
    }

    fn cookie_name(&self) -> String {
        format!("toolsmith-ui-{}", self.port)
    }
}

/// `toolsmith ui [--port N] [--open]`: serves until interrupted. The first stdout line is the
/// URL with its token.
pub(super) fn serve(cli: &Cli, port: u16, open: bool) -> Result<(), Failure> {
    let listener = std::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .map_err(|e| {
            Failure::new(
                ExitCode::Failure,
                format!("cannot listen on 127.0.0.1:{port}: {e} (`--port 0` picks a free port)"),
            )
        })?;
    let port = listener.local_addr()?.port();
    listener.set_nonblocking(true)?;
    let ui = Arc::new(Ui {
        config: cli.global.config.clone(),
        state: cli.global.state.clone(),
        socket: cli.global.socket.clone(),
        token: random_hex(32)?,
        csrf: random_hex(16)?,
        port,
        feed: std::sync::Mutex::new(None),
    });
    let url = format!("http://127.0.0.1:{port}/?token={}", ui.token);
    let mut out = std::io::stdout();
    writeln!(out, "{url}")?;
    out.flush()?;
    eprintln!(
        "toolsmith: serving the review pages on 127.0.0.1:{port} (loopback only; the token in \
         the URL is the key: do not share it); Ctrl-C stops"
    );
    if open {
        // A browser is the person's own program: started, never waited for.
        if let Err(e) = std::process::Command::new("xdg-open")
            .arg(&url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
        {
            eprintln!("toolsmith: --open: cannot start xdg-open ({e}): open the URL above");
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        axum::serve(listener, router(ui))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
    })?;
    Ok(())
}

/// `n` random bytes from the kernel, as hex.
fn random_hex(n: usize) -> Result<String, Failure> {
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| {
            Failure::new(
                ExitCode::Failure,
                format!("cannot read /dev/urandom for the page's token: {e}"),
            )
        })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The routes, behind the safety checks.
fn router(ui: Arc<Ui>) -> Router {
    Router::new()
        .route("/", get(queue_page))
        .route("/candidate/{id}", get(candidate_page))
        .route("/candidate/{id}/approve", post(approve))
        .route("/candidate/{id}/reject", post(reject))
        .route("/candidate/{id}/accept-spec", post(accept_spec))
        .route("/candidate/{id}/reject-spec", post(reject_spec))
        .route("/tools", get(tools_page))
        .route("/patterns", get(patterns_page))
        .route("/stats", get(stats_page))
        .route("/events", get(events))
        .route(
            "/assets/style.css",
            get(|| async { asset(STYLE, "text/css") }),
        )
        .route(
            "/assets/app.js",
            get(|| async { asset(SCRIPT, "text/javascript") }),
        )
        .layer(middleware::from_fn_with_state(Arc::clone(&ui), guard))
        .with_state(ui)
}

fn asset(text: &'static str, kind: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], text).into_response()
}

/// Equal without telling by its timing how much of `a` matched.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn refused(status: StatusCode, why: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("toolsmith ui: {why}\n"),
    )
        .into_response()
}

/// The value of the cookie `name` in the request's `Cookie` headers.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The safety rules, before any handler: loopback `Host`, the token, the CSRF header; and the
/// headers every answer carries.
async fn guard(State(ui): State<Arc<Ui>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let ours = [
        format!("127.0.0.1:{}", ui.port),
        format!("localhost:{}", ui.port),
        format!("[::1]:{}", ui.port),
    ];
    if !ours.iter().any(|o| o.eq_ignore_ascii_case(host)) {
        return refused(
            StatusCode::MISDIRECTED_REQUEST,
            &format!(
                "the Host header `{host}` is not this server's loopback address \
                 (127.0.0.1:{}): refused, as a page served under another name could be a DNS \
                 rebinding",
                ui.port
            ),
        );
    }
    let from_query = request.uri().query().and_then(|q| {
        q.split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(k, _)| *k == "token")
            .map(|(_, v)| v.to_owned())
    });
    let by_cookie = cookie(headers, &ui.cookie_name()).is_some_and(|v| same_secret(v, &ui.token));
    if !by_cookie {
        let by_query = from_query
            .as_deref()
            .is_some_and(|v| same_secret(v, &ui.token));
        if by_query && request.method() == Method::GET {
            // First load: the token moves into the cookie and out of the address bar (and the
            // history).
            let path = request.uri().path().to_owned();
            let cookie = format!(
                "{}={}; Path=/; HttpOnly; SameSite=Strict",
                ui.cookie_name(),
                ui.token
            );
            let mut response = Response::builder()
                .status(StatusCode::SEE_OTHER)
                .header(header::LOCATION, path)
                .body(Body::empty())
                .unwrap_or_default();
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            return with_safety_headers(response);
        }
        return refused(
            StatusCode::UNAUTHORIZED,
            "no valid token: open the URL `toolsmith ui` printed (it carries the token)",
        );
    }
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        let csrf = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
        if !csrf.is_some_and(|v| same_secret(v, &ui.csrf)) {
            return refused(
                StatusCode::FORBIDDEN,
                &format!(
                    "a request that changes something needs the `{CSRF_HEADER}` header the \
                     pages send: refused"
                ),
            );
        }
    }
    with_safety_headers(next.run(request).await)
}

fn with_safety_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// A page made by blocking work (git, SQLite), off the async workers.
async fn page(
    ui: Arc<Ui>,
    make: impl FnOnce(&Cli, &str) -> Result<String, Failure> + Send + 'static,
) -> Response {
    let made = tokio::task::spawn_blocking(move || make(&ui.cli(), &ui.csrf)).await;
    match made {
        Ok(Ok(html)) => {
            ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
        }
        Ok(Err(failure)) => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            pages::error_page(&failure.message),
        )
            .into_response(),
        Err(e) => refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the page failed: {e}"),
        ),
    }
}

async fn queue_page(State(ui): State<Arc<Ui>>) -> Response {
    page(ui, pages::queue).await
}

async fn candidate_page(State(ui): State<Arc<Ui>>, Path(id): Path<String>) -> Response {
    page(ui, move |cli, csrf| pages::candidate(cli, csrf, &id)).await
}

async fn tools_page(State(ui): State<Arc<Ui>>) -> Response {
    page(ui, pages::tools).await
}

async fn patterns_page(State(ui): State<Arc<Ui>>) -> Response {
    page(ui, pages::patterns).await
}

async fn stats_page(State(ui): State<Arc<Ui>>) -> Response {
    page(ui, keep::page).await
}

/// What the Approve button sends.
#[derive(Debug, Deserialize)]
struct ApproveForm {
    /// The needs the person ticked, as `--grant` takes them.
    #[serde(default)]
    grants: Vec<String>,
    /// A note for the commit message.
    #[serde(default)]
    note: Option<String>,
}

/// What the Reject button sends.
#[derive(Debug, Deserialize)]
struct RejectForm {
    reason: String,
}

/// A decision's answer: the JSON `toolsmith --json approve/reject` prints, or its error.
fn decided(done: Result<Result<Vec<u8>, Failure>, tokio::task::JoinError>) -> Response {
    match done {
        Ok(Ok(out)) => {
            let value: Value = serde_json::from_slice(&out).unwrap_or(Value::Null);
            axum::Json(value).into_response()
        }
        Ok(Err(failure)) => (
            StatusCode::CONFLICT,
            axum::Json(json!({"error": failure.message})),
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            axum::Json(json!({"error": format!("the decision failed: {e}")})),
        )
            .into_response(),
    }
}

/// Parses a JSON body, or says what is wrong with it.
fn form<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| format!("the request's body is not understood: {e}"))
}

fn bad_request(why: String) -> Response {
    (StatusCode::BAD_REQUEST, axum::Json(json!({"error": why}))).into_response()
}

async fn approve(
    State(ui): State<Arc<Ui>>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let form: ApproveForm = match form(&body) {
        Ok(f) => f,
        Err(why) => return bad_request(why),
    };
    let done = tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        let note = form.note.as_deref().filter(|n| !n.trim().is_empty());
        super::registry::approve(&ui.cli(), &id, note, &form.grants, &mut out).map(|()| out)
    })
    .await;
    decided(done)
}

async fn reject(
    State(ui): State<Arc<Ui>>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let form: RejectForm = match form(&body) {
        Ok(f) => f,
        Err(why) => return bad_request(why),
    };
    let done = tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        super::registry::reject(&ui.cli(), &id, &form.reason, &mut out).map(|()| out)
    })
    .await;
    decided(done)
}

/// Accept on a spec awaiting review: `toolsmith approve-spec`'s function (the generation it
/// starts runs in the daemon when one runs, as that command's does).
async fn accept_spec(State(ui): State<Arc<Ui>>, Path(id): Path<String>) -> Response {
    let done = tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        let style = super::output::Style::plain();
        super::generate::approve_spec(&ui.cli(), &id, &mut out, style).map(|()| out)
    })
    .await;
    decided(done)
}

/// Reject on a spec awaiting review: `toolsmith reject-spec`'s function.
async fn reject_spec(
    State(ui): State<Arc<Ui>>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let form: RejectForm = match form(&body) {
        Ok(f) => f,
        Err(why) => return bad_request(why),
    };
    let done = tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        let style = super::output::Style::plain();
        super::generate::reject_spec(&ui.cli(), &id, &form.reason, &mut out, style).map(|()| out)
    })
    .await;
    decided(done)
}

/// How many events a page may fall behind before it is told it lost some.
const FEED_BACKLOG: usize = 256;

/// The daemon's events as server-sent events. The server holds one subscription on the
/// control socket for all its pages (a daemon admits `daemon.max_subscriptions`, and a page
/// left open must not take one each), read by a thread of its own (the control client blocks)
/// into a broadcast channel every page follows. When the daemon is not there, one
/// `ui.no-daemon` event says so and the stream stays open (a closed one would make the browser
/// ask again every few seconds); when the daemon goes, the streams end and the pages' next
/// request finds out which it is.
async fn events(State(ui): State<Arc<Ui>>) -> Response {
    let feed = tokio::task::spawn_blocking(move || live_feed(&ui)).await;
    let sse = |text: String| Ok::<_, std::convert::Infallible>(SseEvent::default().data(text));
    match feed {
        Ok(Ok(rx)) => {
            let stream = tokio_stream::StreamExt::map(
                tokio_stream::wrappers::BroadcastStream::new(rx),
                move |item| match item {
                    Ok(text) => sse(text),
                    Err(tokio_stream::wrappers::errors::BroadcastStreamRecvError::Lagged(n)) => {
                        sse(json!({"kind": "events.lagged", "data": {"missed": n}}).to_string())
                    }
                },
            );
            Sse::new(stream)
                .keep_alive(KeepAlive::default())
                .into_response()
        }
        Ok(Err(failure)) => {
            let said = json!({"kind": "ui.no-daemon", "data": {"message": failure.message}});
            let stream = tokio_stream::StreamExt::chain(
                tokio_stream::once(sse(said.to_string())),
                tokio_stream::pending(),
            );
            Sse::new(stream)
                .keep_alive(KeepAlive::default())
                .into_response()
        }
        Err(e) => refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the event stream failed: {e}"),
        ),
    }
}

/// A receiver of the shared feed, subscribing to the daemon first when no feed runs.
fn live_feed(ui: &Arc<Ui>) -> Result<tokio::sync::broadcast::Receiver<String>, Failure> {
    let mut feed = ui
        .feed
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(tx) = feed.as_ref() {
        return Ok(tx.subscribe());
    }
    let cli = ui.cli();
    let mut client = super::socket_path(&cli)
        .and_then(|path| crate::control::Client::connect(&path).map_err(Failure::from))?;
    client.call("events.subscribe", json!({"kinds": []}))?;
    let (tx, rx) = tokio::sync::broadcast::channel(FEED_BACKLOG);
    *feed = Some(tx.clone());
    let ui = Arc::clone(ui);
    std::thread::spawn(move || {
        while let Ok(Some(note)) = client.next_notification() {
            // No page follows right now: the event is for nobody, which is no error.
            let _ = tx.send(note.params.to_string());
        }
        // The daemon went: the next page subscribes again (or learns it is not there).
        *ui.feed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    });
    Ok(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abcd", "abcd"));
        assert!(!same_secret("abcd", "abce"));
        assert!(!same_secret("abc", "abcd"));
        assert!(!same_secret("", "a"));
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; toolsmith-ui-80=tok; b=2"),
        );
        assert_eq!(cookie(&h, "toolsmith-ui-80"), Some("tok"));
        assert_eq!(cookie(&h, "toolsmith-ui-81"), None);
    }
}
