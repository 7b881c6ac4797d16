//! `toolsmith ui` (issue 33, items 1 and 2), through the real binary: its safety rules over
//! HTTP with a real client (no token, a wrong token, a foreign `Host`, a change without the
//! CSRF header: refused; the token moved into an `HttpOnly`, `SameSite=Strict` cookie; no CORS
//! header; loopback only), and a real headless Chromium driven over WebDriver that opens a
//! candidate, approves it with its grants — landing on `main` as the very commit `toolsmith
//! approve --grant` makes, checked against a twin registry approved with the CLI — and rejects
//! another with a reason.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use axum::body::Body;
use common::{TestEnv, json_of};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

/// `toolsmith ui --port 0` running on a test home, with what its first line said.
struct Ui {
    child: Child,
    port: u16,
    token: String,
}

impl Ui {
    fn start(env: &TestEnv, config: &Path) -> Ui {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolsmith"));
        env.apply(&mut cmd);
        cmd.arg("--state")
            .arg(env.state())
            .arg("--config")
            .arg(config)
            .args(["ui", "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("spawn toolsmith ui");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("the URL line");
        let url = first.trim();
        let rest = url
            .strip_prefix("http://127.0.0.1:")
            .unwrap_or_else(|| panic!("the first line is the loopback URL: {url:?}"));
        let (port, query) = rest.split_once("/?token=").expect("a token in the URL");
        assert!(
            query.len() == 64 && query.bytes().all(|b| b.is_ascii_hexdigit()),
            "a random 256-bit token: {query}"
        );
        Ui {
            child,
            port: port.parse().expect("port"),
            token: query.to_owned(),
        }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn cookie(&self) -> String {
        format!("toolsmith-ui-{}={}", self.port, self.token)
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn template_config(env: &TestEnv) -> PathBuf {
    env.write_config("[generate]\nbackend = \"template\"\n")
}

/// Asks for a tool with examples (`toolsmith new`), which is validated and proposed offline;
/// returns its candidate id.
fn request(env: &TestEnv, config: &Path, what: &str, examples: &[&str]) -> String {
    let mut cmd = env.cli();
    cmd.arg("--config")
        .arg(config)
        .args(["--json", "new", what]);
    for e in examples {
        cmd.args(["--example", e]);
    }
    cmd.timeout(Duration::from_secs(120)).assert().success();
    let out = env
        .cli()
        .arg("--config")
        .arg(config)
        .args(["--json", "candidates"])
        .assert()
        .success();
    let all = json_of(out.get_output());
    let found = all
        .as_array()
        .expect("candidates")
        .iter()
        .find(|c| c["request"] == what)
        .unwrap_or_else(|| panic!("no candidate for {what:?}: {all:#}"));
    assert_eq!(found["state"], "awaiting-review", "{found:#}");
    found["id"].as_str().expect("id").to_owned()
}

fn candidate(env: &TestEnv, config: &Path, id: &str) -> Value {
    let out = env
        .cli()
        .arg("--config")
        .arg(config)
        .args(["--json", "candidates"])
        .assert()
        .success();
    json_of(out.get_output())
        .as_array()
        .expect("candidates")
        .iter()
        .find(|c| c["id"] == id)
        .cloned()
        .expect("the candidate")
}

/// The candidate asking for `curl` on a loopback service: it needs two grants.
const CURL: &str = "Check the shop's health endpoint";
const CURL_EXAMPLES: [&str; 2] = [
    "curl -fsS --max-time 5 http://127.0.0.1:8089/health",
    "curl -fsS --max-time 9 http://127.0.0.1:8089/health",
];
const CURL_GRANTS: [&str; 2] = ["program:curl", "host:127.0.0.1:8089"];
const DU: &str = "Show the disk use of a folder";
const DU_EXAMPLES: [&str; 2] = ["du -sh src", "du -sh tests"];

/// One HTTP exchange: status, headers, body.
struct Answer {
    status: u16,
    headers: axum::http::HeaderMap,
    body: String,
}

async fn send(method: &str, url: &str, headers: &[(&str, String)], body: Option<Value>) -> Answer {
    let client: Client<HttpConnector, Body> = Client::builder(TokioExecutor::new()).build_http();
    let mut request = axum::http::Request::builder().method(method).uri(url);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
    let response = client
        .request(request.body(body).expect("request"))
        .await
        .expect("the server answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(Body::new(response.into_body()), 1 << 24)
        .await
        .expect("body");
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

fn no_cors(a: &Answer) {
    let cors: Vec<_> = a
        .headers
        .keys()
        .filter(|k| k.as_str().starts_with("access-control-"))
        .collect();
    assert!(cors.is_empty(), "no CORS header is ever sent: {cors:?}");
}

/// The page's CSRF value (its `<meta name="csrf">`).
fn csrf_of(html: &str) -> String {
    let at = html
        .find("name=\"csrf\" content=\"")
        .expect("the csrf meta")
        + 21;
    html[at..].split('"').next().expect("value").to_owned()
}

/// Whether a TCP socket listening on `port` is bound to 127.0.0.1 and to nothing else
/// (`/proc/net/tcp`, `/proc/net/tcp6`: state 0A is LISTEN).
fn listening_addresses(port: u16) -> Vec<String> {
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() > 3 && fields[3] == "0A" {
                let (addr, p) = fields[1].split_once(':').expect("addr:port");
                if u16::from_str_radix(p, 16).ok() == Some(port) {
                    found.push(addr.to_owned());
                }
            }
        }
    }
    found
}

#[tokio::test(flavor = "current_thread")]
async fn the_ui_refuses_requests_without_its_token_from_a_foreign_host_or_without_csrf() {
    let env = TestEnv::new();
    let config = template_config(&env);
    let du = request(&env, &config, DU, &DU_EXAMPLES);
    let ui = Ui::start(&env, &config);
    let base = ui.base();
    let host = format!("127.0.0.1:{}", ui.port);

    // Loopback only: the one listening socket is 127.0.0.1's (0100007F in /proc's order).
    assert_eq!(listening_addresses(ui.port), vec!["0100007F".to_owned()]);

    // No token, a wrong token: refused, saying how to get in.
    let none = send("GET", &format!("{base}/"), &[], None).await;
    assert_eq!(none.status, 401, "{}", none.body);
    assert!(
        none.body.contains("open the URL `toolsmith ui` printed"),
        "{}",
        none.body
    );
    assert!(
        !none.body.contains(DU),
        "nothing of the queue leaks: {}",
        none.body
    );
    // The token with its last digit changed.
    let last = if ui.token.ends_with('0') { '1' } else { '0' };
    let wrong = format!("{}{last}", &ui.token[..63]);
    let bad = send("GET", &format!("{base}/?token={wrong}"), &[], None).await;
    assert_eq!(bad.status, 401);
    let forged = send(
        "GET",
        &format!("{base}/"),
        &[("cookie", format!("toolsmith-ui-{}={wrong}", ui.port))],
        None,
    )
    .await;
    assert_eq!(forged.status, 401);
    let elsewhere = send("GET", &format!("{base}/candidate/{du}"), &[], None).await;
    assert_eq!(elsewhere.status, 401);
    let events = send("GET", &format!("{base}/events"), &[], None).await;
    assert_eq!(
        events.status, 401,
        "the event stream is behind the token too"
    );

    // The first load with the token: the cookie, HttpOnly and SameSite=Strict, and the token
    // out of the address bar.
    let first = send("GET", &format!("{base}/?token={}", ui.token), &[], None).await;
    assert_eq!(first.status, 303);
    assert_eq!(first.headers["location"], "/");
    let set = first.headers["set-cookie"].to_str().expect("cookie");
    assert_eq!(
        set,
        format!("{}; Path=/; HttpOnly; SameSite=Strict", ui.cookie())
    );
    no_cors(&first);

    // With the cookie: the queue.
    let cookie = ("cookie", ui.cookie());
    let page = send(
        "GET",
        &format!("{base}/"),
        std::slice::from_ref(&cookie),
        None,
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("show-disk-use-folder") && page.body.contains(&du));
    no_cors(&page);
    assert!(
        page.headers["content-security-policy"]
            .to_str()
            .expect("csp")
            .contains("default-src 'none'"),
        "{:?}",
        page.headers
    );
    // Every asset is the server's own: nothing is loaded from elsewhere.
    for needle in [
        "src=\"http",
        "href=\"http",
        "//cdn",
        "src=\"//",
        "href=\"//",
    ] {
        assert!(!page.body.contains(needle), "{needle} in {}", page.body);
    }
    for asset in ["/assets/app.js", "/assets/style.css"] {
        let got = send(
            "GET",
            &format!("{base}{asset}"),
            std::slice::from_ref(&cookie),
            None,
        )
        .await;
        assert_eq!(got.status, 200, "{asset}");
        assert!(
            !got.body.contains("http://") && !got.body.contains("https://"),
            "{asset}"
        );
    }

    // A foreign Host (a name re-pointed at 127.0.0.1: DNS rebinding) is refused, with the
    // cookie and with the token alike.
    for (name, value) in [
        ("host", format!("evil.example:{}", ui.port)),
        ("host", "127.0.0.1".to_owned()),
        ("host", format!("127.0.0.2:{}", ui.port)),
    ] {
        let got = send(
            "GET",
            &format!("{base}/?token={}", ui.token),
            &[(name, value.clone()), cookie.clone()],
            None,
        )
        .await;
        assert_eq!(got.status, 421, "Host {value}: {}", got.body);
        assert!(got.body.contains("DNS rebinding"), "{}", got.body);
        assert!(!got.headers.contains_key("set-cookie"));
    }
    let localhost = send(
        "GET",
        &format!("{base}/"),
        &[("host", format!("localhost:{}", ui.port)), cookie.clone()],
        None,
    )
    .await;
    assert_eq!(localhost.status, 200, "localhost is loopback too");

    // A change without the CSRF header is refused and changes nothing; with a wrong one too;
    // a cross-site preflight gets no CORS header.
    let reject = format!("{base}/candidate/{du}/reject");
    let reason = json!({"reason": "not wanted"});
    let no_csrf = send(
        "POST",
        &reject,
        std::slice::from_ref(&cookie),
        Some(reason.clone()),
    )
    .await;
    assert_eq!(no_csrf.status, 403, "{}", no_csrf.body);
    assert!(
        no_csrf.body.contains("x-toolsmith-csrf"),
        "{}",
        no_csrf.body
    );
    let wrong_csrf = send(
        "POST",
        &reject,
        &[cookie.clone(), ("x-toolsmith-csrf", "0".repeat(32))],
        Some(reason.clone()),
    )
    .await;
    assert_eq!(wrong_csrf.status, 403);
    let preflight = send(
        "OPTIONS",
        &reject,
        &[
            ("origin", "http://evil.example".to_owned()),
            ("access-control-request-method", "POST".to_owned()),
            (
                "access-control-request-headers",
                "x-toolsmith-csrf".to_owned(),
            ),
            ("host", host.clone()),
        ],
        None,
    )
    .await;
    no_cors(&preflight);
    assert_eq!(candidate(&env, &config, &du)["state"], "awaiting-review");

    // The CSRF header without the token is no key either.
    let csrf = csrf_of(&page.body);
    let no_token = send(
        "POST",
        &reject,
        &[("x-toolsmith-csrf", csrf.clone())],
        Some(reason.clone()),
    )
    .await;
    assert_eq!(no_token.status, 401);
    assert_eq!(candidate(&env, &config, &du)["state"], "awaiting-review");

    // Token and CSRF header: the change is made, as `toolsmith reject` makes it.
    let done = send(
        "POST",
        &reject,
        &[cookie.clone(), ("x-toolsmith-csrf", csrf)],
        Some(reason),
    )
    .await;
    assert_eq!(done.status, 200, "{}", done.body);
    let answer: Value = serde_json::from_str(&done.body).expect("json");
    assert_eq!(answer["reason"], "not wanted");
    let after = candidate(&env, &config, &du);
    assert_eq!(after["state"], "rejected");
    assert_eq!(after["reason"], "rejected at review: not wanted");
}

/// `chromedriver` serving WebDriver on a free loopback port.
struct Driver {
    child: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn program(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/usr/local/bin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

fn start_driver(path: &Path) -> Driver {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut child = Command::new(path)
        .arg(format!("--port={port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn chromedriver");
    // chromedriver says on stdout when it listens.
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    while reader.read_line(&mut line).expect("chromedriver's output") > 0 {
        if line.contains("started successfully") {
            break;
        }
        line.clear();
    }
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    Driver { child, port }
}

/// The commit message of `main` in the registry of `state`, with the candidate id and the
/// approver (which differ between two registries by design) named generically.
fn main_message(state: &Path, candidate: &str) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(state.join("registry"))
        .args(["log", "-1", "--format=%B", "main"])
        .output()
        .expect("git log");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).replace(candidate, "CANDIDATE")
}

fn git_ok(state: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(state.join("registry"))
        .args(args)
        .output()
        .expect("git")
        .status
        .success()
}

/// Chromium and chromedriver, or `None` (after saying so) where they are not installed; under
/// `CI=true` their absence fails.
fn browser_programs() -> Option<(PathBuf, PathBuf)> {
    match (program("chromium"), program("chromedriver")) {
        (Some(chromium), Some(driver)) => Some((chromium, driver)),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI must have chromium and chromium-driver (.ci/run installs them)"
            );
            println!(
                "SKIPPED: chromium or chromedriver is not installed (`apt-get install chromium \
                 chromium-driver`): the browser test did not run"
            );
            None
        }
    }
}

/// A WebDriver session of headless Chromium.
async fn session(chromium: &Path, driver: &Driver) -> fantoccini::Client {
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1000"],
        }),
    );
    fantoccini::ClientBuilder::new(HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a WebDriver session")
}

#[tokio::test(flavor = "current_thread")]
async fn a_person_approves_with_grants_and_rejects_with_a_reason_in_a_real_browser() {
    let Some((chromium, chromedriver)) = browser_programs() else {
        return;
    };
    let env = TestEnv::new();
    let config = template_config(&env);
    let curl = request(&env, &config, CURL, &CURL_EXAMPLES);
    let du = request(&env, &config, DU, &DU_EXAMPLES);
    let tool = candidate(&env, &config, &curl)["tool"]
        .as_str()
        .expect("tool")
        .to_owned();
    let ui = Ui::start(&env, &config);
    let driver = start_driver(&chromedriver);

    let browser = session(&chromium, &driver).await;
    let outcome = async {
        use fantoccini::Locator;
        let wait = Duration::from_secs(60);
        browser
            .goto(&format!("{}/?token={}", ui.base(), ui.token))
            .await?;
        assert_eq!(browser.current_url().await?.path(), "/");
        assert_eq!(
            browser.current_url().await?.query(),
            None,
            "the token leaves the address bar"
        );
        // The queue lists both; open the curl one.
        let queue = browser
            .find(Locator::Css("table.queue"))
            .await?
            .text()
            .await?;
        assert!(queue.contains(&tool) && queue.contains(CURL), "{queue}");
        assert!(queue.contains("grant program:curl"), "{queue}");
        browser
            .find(Locator::Css(&format!("tr[data-candidate='{curl}'] a")))
            .await?
            .click()
            .await?;
        browser
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("section.reach"))
            .await?;
        let reach = browser
            .find(Locator::Css("section.reach"))
            .await?
            .text()
            .await?;
        assert!(
            reach.contains("Needs a person's grant: host:127.0.0.1:8089"),
            "{reach}"
        );
        // Tick every grant, add a note, approve.
        for grant in CURL_GRANTS {
            browser
                .find(Locator::Css(&format!(
                    "input[name='grant'][value='{grant}']"
                )))
                .await?
                .click()
                .await?;
        }
        browser
            .find(Locator::Css("input[name='note']"))
            .await?
            .send_keys("looked at it in the browser")
            .await?;
        browser
            .find(Locator::Id("approve-button"))
            .await?
            .click()
            .await?;
        let said = browser
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("#outcome.pass"))
            .await?
            .text()
            .await?;
        assert!(said.starts_with("approved "), "{said}");

        // Back to the queue (live: only the du candidate is left); reject it with a reason.
        browser.goto(&format!("{}/", ui.base())).await?;
        let queue = browser
            .find(Locator::Css("table.queue"))
            .await?
            .text()
            .await?;
        assert!(!queue.contains(&curl), "{queue}");
        browser
            .find(Locator::Css(&format!("tr[data-candidate='{du}'] a")))
            .await?
            .click()
            .await?;
        browser
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("textarea[name='reason']"))
            .await?
            .send_keys("du is enough by itself")
            .await?;
        browser
            .find(Locator::Id("reject-button"))
            .await?
            .click()
            .await?;
        let said = browser
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("#outcome.pass"))
            .await?
            .text()
            .await?;
        assert!(said.starts_with("rejected review/"), "{said}");
        Ok::<(), fantoccini::error::CmdError>(())
    }
    .await;
    let _ = browser.close().await;
    outcome.expect("the browser session");

    // The approval is on main with the tag and trailers `toolsmith approve --grant` makes:
    // the same request approved with the CLI in a twin registry gives the same message.
    let twin = TestEnv::new();
    let twin_config = template_config(&twin);
    let twin_id = request(&twin, &twin_config, CURL, &CURL_EXAMPLES);
    let mut approve = twin.cli();
    approve.arg("--config").arg(&twin_config).args([
        "approve",
        &twin_id,
        "--note",
        "looked at it in the browser",
    ]);
    for g in CURL_GRANTS {
        approve.args(["--grant", g]);
    }
    approve.assert().success();
    let by_page = main_message(&env.state(), &curl);
    let by_cli = main_message(&twin.state(), &twin_id);
    assert_eq!(by_page, by_cli);
    for g in CURL_GRANTS {
        assert!(by_page.contains(&format!("Granted: {g}\n")), "{by_page}");
    }
    assert!(by_page.contains("Candidate: CANDIDATE\n") && by_page.contains("Approved-by: "));
    let tag = format!("refs/tags/{tool}/v1.0.0");
    let tag_type = Command::new("git")
        .arg("-C")
        .arg(env.state().join("registry"))
        .args(["cat-file", "-t", &tag])
        .output()
        .expect("git");
    assert_eq!(
        String::from_utf8_lossy(&tag_type.stdout).trim(),
        "tag",
        "annotated"
    );
    env.cli()
        .arg("--config")
        .arg(&config)
        .arg("verify")
        .assert()
        .success();
    assert_eq!(candidate(&env, &config, &curl)["state"], "approved");

    // The rejection: the candidate records the reason; the commit is kept aside.
    let rejected = candidate(&env, &config, &du);
    assert_eq!(rejected["state"], "rejected");
    assert_eq!(
        rejected["reason"],
        "rejected at review: du is enough by itself"
    );
    assert!(git_ok(
        &env.state(),
        &[
            "rev-parse",
            "--verify",
            &format!("refs/toolsmith/rejected/{du}")
        ]
    ));
}

#[tokio::test(flavor = "current_thread")]
async fn the_queue_follows_the_daemons_events_without_reloading() {
    let Some((chromium, chromedriver)) = browser_programs() else {
        return;
    };
    let env = TestEnv::new();
    let config = template_config(&env);
    let curl = request(&env, &config, CURL, &CURL_EXAMPLES);
    let du = request(&env, &config, DU, &DU_EXAMPLES);
    let mut daemon_cmd = env.daemon_command();
    daemon_cmd.arg("--config").arg(&config);
    let _daemon = common::Daemon::start(&env, daemon_cmd);
    let ui = Ui::start(&env, &config);
    let driver = start_driver(&chromedriver);
    let browser = session(&chromium, &driver).await;
    let outcome = async {
        use fantoccini::Locator;
        let wait = Duration::from_secs(60);
        browser
            .goto(&format!("{}/?token={}", ui.base(), ui.token))
            .await?;
        browser
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("p.count[data-count='2']"))
            .await?;
        // The page subscribed to the daemon's events.
        browser
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("#live.on"))
            .await?;
        // A mark a reload would wipe out.
        browser
            .execute("window.stillThisPage = true;", vec![])
            .await?;

        // Approved from the terminal (through the daemon): the page follows by itself.
        env.cli()
            .arg("--config")
            .arg(&config)
            .args(["approve", &du])
            .assert()
            .success();
        browser
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("p.count[data-count='1']"))
            .await?;
        // Read in one step: another event may replace the list again at any moment.
        let queue = browser
            .execute(
                "return document.querySelector('table.queue').innerText;",
                vec![],
            )
            .await?;
        let queue = queue.as_str().unwrap_or_default().to_owned();
        assert!(queue.contains(&curl) && !queue.contains(&du), "{queue}");
        let same = browser
            .execute("return window.stillThisPage === true;", vec![])
            .await?;
        assert_eq!(same, json!(true), "updated without reloading the page");
        Ok::<(), fantoccini::error::CmdError>(())
    }
    .await;
    let _ = browser.close().await;
    outcome.expect("the browser session");
}

#[tokio::test(flavor = "current_thread")]
async fn the_tools_page_shows_versions_health_and_runs_per_day() {
    let env = TestEnv::new();
    let config = template_config(&env);
    let du = request(&env, &config, DU, &DU_EXAMPLES);
    let tool = candidate(&env, &config, &du)["tool"]
        .as_str()
        .expect("tool")
        .to_owned();
    env.cli()
        .arg("--config")
        .arg(&config)
        .args(["approve", &du])
        .assert()
        .success();
    // Two runs that work and one that fails, in a workspace of their own.
    let workspace = tempfile::tempdir().expect("workspace");
    std::fs::create_dir(workspace.path().join("src")).expect("src");
    for (value, ok) in [("src", true), ("src", true), ("missing", false)] {
        let mut run = env.cli();
        run.arg("--config")
            .arg(&config)
            .args(["run", &tool, "--workspace"])
            .arg(workspace.path())
            .args(["--param", &format!("value={value}")]);
        if ok {
            run.assert().success();
        } else {
            run.assert().failure();
        }
    }
    let ui = Ui::start(&env, &config);
    let cookie = ("cookie", ui.cookie());
    let page = send(
        "GET",
        &format!("{}/tools", ui.base()),
        std::slice::from_ref(&cookie),
        None,
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let at = page
        .body
        .find(&format!("data-tool=\"{tool}\""))
        .unwrap_or_else(|| panic!("{tool} on the page: {}", page.body));
    let section = &page.body[at..];
    assert!(section.contains("<td>1.0.0</td>"), "{section}");
    assert!(section.contains("<td>3</td>"), "three runs: {section}");
    assert!(section.contains("2/3 ok"), "{section}");
    assert!(
        section.contains("cannot access &#39;missing&#39;"),
        "the failure's error line, escaped: {section}"
    );
    assert!(
        section.contains("<title>3 runs, 0 days ago</title>"),
        "today's bar: {section}"
    );
}

/// The "Keep rate and use" page (issue 33, item 1): the counts the test wrote — three
/// proposals (one approved, one rejected with a reason, one waiting), three runs of the
/// approved tool by two agents, one missed use by Claude Code — as figures and SVG charts, and
/// linked from the other pages.
#[tokio::test(flavor = "current_thread")]
async fn the_keep_rate_page_shows_the_counts_written() {
    use crate::stats::{claude_code, request as ask, run_from, workspace};
    let env = TestEnv::new();
    let config = template_config(&env);
    let ws = workspace(&env);
    let (kept, tool) = ask(
        &env,
        "Build then test one package",
        &["make build -C core", "make test -C core"],
    );
    let (refused, _) = ask(
        &env,
        "Lint one package",
        &["make lint -C core", "make lint -C cli"],
    );
    let (waits, waiting_tool) = ask(
        &env,
        "Make the docs of one package",
        &["make docs -C core", "make docs -C cli"],
    );
    env.cli().args(["approve", &kept]).assert().success();
    env.cli()
        .args(["reject", &refused, "--reason", "lint <runs> in CI"])
        .assert()
        .success();
    let approved = jiff::Timestamp::now().as_second();
    run_from(&env, &ws, &tool, &[("CLAUDECODE", "1")]);
    run_from(&env, &ws, &tool, &[("CLAUDECODE", "1")]);
    run_from(&env, &ws, &tool, &[("TOOLSMITH_AGENT", "codex")]);
    // After the approval, Claude Code typed the habit by hand once: 10 s, then 3 s.
    let session = claude_code(
        &env.path().join("logs"),
        "c1",
        approved + 60,
        &[
            (0, "make build -C cli", 1000),
            (10, "make test -C cli", 3000),
        ],
    );
    env.cli()
        .args(["--json", "ingest"])
        .arg(&session)
        .assert()
        .success();

    let ui = Ui::start(&env, &config);
    let cookie = ("cookie", ui.cookie());
    let get = |path: &str| {
        let url = format!("{}{path}", ui.base());
        let cookie = cookie.clone();
        async move { send("GET", &url, &[cookie], None).await }
    };
    let page = get("/stats").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let html = &page.body;
    for (id, value) in [
        ("keep-rate", "50%"),
        ("proposed", "3"),
        ("approved", "1"),
        ("rejected", "1"),
        ("waiting", "1"),
    ] {
        assert!(
            html.contains(&format!("<strong id=\"{id}\">{value}</strong>")),
            "{id} = {value}: {html}"
        );
    }
    // The charts are inline SVG, each bar titled with its count.
    assert!(html.contains("<title>approved: 1</title>"), "{html}");
    assert!(html.contains("<title>waiting: 1</title>"), "{html}");
    // The rejection's reason, escaped, charted and listed.
    assert!(
        html.contains("<title>lint &lt;runs&gt; in CI: 1</title>"),
        "{html}"
    );
    assert!(!html.contains("lint <runs>"), "escaped: {html}");
    // The waiting proposal, linked to its page.
    assert!(
        html.contains(&format!(
            "<a href=\"/candidate/{waits}\">{waiting_tool}</a>"
        )),
        "{html}"
    );
    // The approved tool: its runs by agent, and the missed use with its steps and time.
    let at = html
        .find(&format!("data-tool=\"{tool}\""))
        .unwrap_or_else(|| panic!("{tool} on the page: {html}"));
    let section = &html[at..];
    assert!(
        section.contains("<strong class=\"runs\">3</strong>"),
        "{section}"
    );
    assert!(
        section.contains("<title>claude-code: 2</title>"),
        "{section}"
    );
    assert!(section.contains("<title>codex: 1</title>"), "{section}");
    assert!(
        section.contains("<strong class=\"missed\">1</strong>"),
        "{section}"
    );
    assert!(
        section.contains("<span class=\"saved\">2 steps, 13s</span>"),
        "{section}"
    );
    // Nothing fetched from elsewhere: no script on the page but the embedded one.
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "{html}"
    );
    // Every page links to it.
    for path in ["/", "/tools", "/patterns"] {
        let other = get(path).await;
        assert!(
            other
                .body
                .contains("<a href=\"/stats\">Keep rate and use</a>"),
            "{path}: {}",
            other.body
        );
    }
}

/// One Claude Code session of `commands`, as the agent writes it (an assistant `tool_use` of
/// Bash, then the user's `tool_result`), the n-th day of a month at 10:00.
fn claude_session(dir: &Path, n: usize, commands: &[(String, &str)]) {
    let session = format!("00000000-0000-4000-9000-{n:012}");
    let mut text = String::new();
    for (i, (cmd, output)) in commands.iter().enumerate() {
        let ts = format!("2026-11-{:02}T10:00:{:02}.000Z", 10 + n, i * 5);
        let call = format!("toolu_ui{n}x{i}");
        let base = json!({"isSidechain": false, "userType": "external",
                          "cwd": "/home/dev/shop", "sessionId": session, "version": "2.1.3"});
        let mut record = base.clone();
        record["parentUuid"] = if i == 0 {
            Value::Null
        } else {
            json!(format!("u-{n}-{}", i - 1))
        };
        record["type"] = json!("assistant");
        record["uuid"] = json!(format!("a-{n}-{i}"));
        record["timestamp"] = json!(ts);
        record["message"] = json!({"id": format!("msg_{n}_{i}"), "type": "message",
            "role": "assistant", "model": "claude-sonnet-4-20250514",
            "content": [{"type": "tool_use", "id": call, "name": "Bash",
                         "input": {"command": cmd, "description": "run"}}]});
        let mut result = base;
        result["parentUuid"] = json!(format!("a-{n}-{i}"));
        result["type"] = json!("user");
        result["uuid"] = json!(format!("u-{n}-{i}"));
        result["timestamp"] = json!(ts);
        result["message"] = json!({"role": "user", "content": [
            {"tool_use_id": call, "type": "tool_result", "content": output,
             "is_error": false}]});
        text.push_str(&format!("{record}\n{result}\n"));
    }
    std::fs::create_dir_all(dir).expect("logs");
    std::fs::write(dir.join(format!("{session}.jsonl")), text).expect("session");
}

#[tokio::test(flavor = "current_thread")]
async fn a_mined_candidate_shows_its_sessions_lines_as_logged_and_the_patterns_why() {
    let env = TestEnv::new();
    let config = template_config(&env);
    let logs = env.path().join("logs");
    let before = [
        "git status --short",
        "ls",
        "git log --oneline -n 3",
        "cat README.md",
    ];
    let after = [
        "git branch",
        "wc -l src/main.rs",
        "git stash list",
        "ls tests",
    ];
    // The same habit in four sessions, typed with two spaces inside and, in two of them, a
    // trailing one: each line must reach the page as logged (escaped: `2>&1`, the quotes),
    // spaces and all.
    let logged: Vec<String> = ["shop", "billing", "search", "auth"]
        .iter()
        .enumerate()
        .map(|(n, ns)| {
            format!("cargo test -p {ns} --no-fail-fast 2>&1 | grep -E  '^test .* FAILED'")
                + &" ".repeat(n % 2)
        })
        .collect();
    for n in 0..4 {
        let ns = ["shop", "billing", "search", "auth"][n];
        claude_session(
            &logs,
            n,
            &[
                (before[n].to_owned(), "x"),
                (logged[n].clone(), "test a ... FAILED"),
                (format!("git diff --stat -- crates/{ns}"), "1 file changed"),
                (after[n].to_owned(), "y"),
            ],
        );
    }
    let cli = |args: &[&str]| {
        let mut cmd = env.cli();
        cmd.arg("--config").arg(&config).args(args);
        cmd
    };
    cli(&["ingest", "--format", "claude-code"])
        .arg(&logs)
        .assert()
        .success();
    cli(&["mine"]).assert().success();
    cli(&["generate"])
        .timeout(Duration::from_secs(300))
        .assert()
        .success();
    let all = json_of(
        cli(&["--json", "candidates"])
            .assert()
            .success()
            .get_output(),
    );
    let mined = all
        .as_array()
        .expect("candidates")
        .iter()
        .find(|c| c["origin"] == "mined-sequence" && c["state"] == "awaiting-review")
        .unwrap_or_else(|| panic!("a mined candidate awaits review: {all:#}"))
        .clone();
    let id = mined["id"].as_str().expect("id");

    let ui = Ui::start(&env, &config);
    let cookie = ("cookie", ui.cookie());
    let queue = send(
        "GET",
        &format!("{}/", ui.base()),
        std::slice::from_ref(&cookie),
        None,
    )
    .await;
    assert!(
        queue
            .body
            .contains("<td>mined-sequence</td><td>4 sessions</td>"),
        "origin and support in the queue: {}",
        queue.body
    );
    let page = send(
        "GET",
        &format!("{}/candidate/{id}", ui.base()),
        std::slice::from_ref(&cookie),
        None,
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    // Each session with its agent, each logged line exactly as stored, with its time.
    for (n, line) in logged.iter().enumerate() {
        let session = format!("00000000-0000-4000-9000-{n:012}");
        assert!(
            page.body.contains(&format!(
                "session <code>{session}</code> · agent claude-code"
            )),
            "{session}: {}",
            page.body
        );
        let escaped = line
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('\'', "&#39;");
        assert!(
            page.body.contains(&format!(
                "<td class=\"ts\">2026-11-{:02}T10:00:05Z</td><td>Bash</td><td><pre>{escaped}</pre>",
                10 + n
            )),
            "line {n} as logged: {escaped}\n{}",
            page.body
        );
    }
    assert!(page.body.contains("Diff against <code>main</code>"));
    // A new tool: its script is all added lines, from its first.
    assert!(
        page.body.contains("<span class=\"add\">+#!/"),
        "{}",
        page.body
    );

    // The patterns page: the proposed habit names its candidate.
    let patterns = send(
        "GET",
        &format!("{}/patterns", ui.base()),
        std::slice::from_ref(&cookie),
        None,
    )
    .await;
    assert_eq!(patterns.status, 200, "{}", patterns.body);
    assert!(
        patterns
            .body
            .contains(&format!("<b>proposed</b>: candidate {id}")),
        "{}",
        patterns.body
    );
}

/// The kinds of the next server-sent events of `body` until one of `wanted`'s.
async fn next_kind_of(body: &mut axum::body::BodyDataStream, wanted: &[&str]) -> Vec<String> {
    let mut kinds = Vec::new();
    let mut pending = String::new();
    while let Some(chunk) = tokio_stream::StreamExt::next(body).await {
        pending.push_str(&String::from_utf8_lossy(&chunk.expect("the stream")));
        while let Some(end) = pending.find("\n\n") {
            let event: String = pending.drain(..end + 2).collect();
            for data in event.lines().filter_map(|l| l.strip_prefix("data: ")) {
                let value: Value = serde_json::from_str(data).expect("an event is JSON");
                let kind = value["kind"].as_str().unwrap_or_default().to_owned();
                let done = wanted.contains(&kind.as_str());
                kinds.push(kind);
                if done {
                    return kinds;
                }
            }
        }
    }
    panic!("the stream ended before {wanted:?}: {kinds:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn every_page_follows_the_daemons_events_through_one_subscription() {
    let env = TestEnv::new();
    // The daemon admits one subscriber: the pages share the server's.
    let config =
        env.write_config("[generate]\nbackend = \"template\"\n[daemon]\nmax_subscriptions = 1\n");
    let du = request(&env, &config, DU, &DU_EXAMPLES);
    let mut daemon_cmd = env.daemon_command();
    daemon_cmd.arg("--config").arg(&config);
    let _daemon = common::Daemon::start(&env, daemon_cmd);
    let ui = Ui::start(&env, &config);
    let client: Client<HttpConnector, Body> = Client::builder(TokioExecutor::new()).build_http();
    let mut pages = Vec::new();
    for _ in 0..3 {
        let request = axum::http::Request::builder()
            .uri(format!("{}/events", ui.base()))
            .header("cookie", ui.cookie())
            .body(Body::empty())
            .expect("request");
        let response = client.request(request).await.expect("the server answers");
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        pages.push(Body::new(response.into_body()).into_data_stream());
    }
    env.cli()
        .arg("--config")
        .arg(&config)
        .args(["approve", &du])
        .assert()
        .success();
    for page in &mut pages {
        // A bound against a hang, not a timing: the events come at once.
        let kinds = tokio::time::timeout(
            Duration::from_secs(60),
            next_kind_of(
                page,
                &["tool.approved", "candidate.approved", "ui.no-daemon"],
            ),
        )
        .await
        .expect("an event");
        assert_ne!(
            kinds.last().map(String::as_str),
            Some("ui.no-daemon"),
            "each page hears the approval: {kinds:?}"
        );
    }
}

/// With `[review] approve_specs = true`, requested tools wait with their spec: the queue lists
/// them apart; on a candidate's page Accept runs `toolsmith approve-spec`'s function (the tool
/// is generated and awaits review) and Reject `toolsmith reject-spec`'s (the reason is kept).
#[tokio::test(flavor = "current_thread")]
async fn a_person_accepts_one_spec_and_rejects_another_in_a_real_browser() {
    let Some((chromium, chromedriver)) = browser_programs() else {
        return;
    };
    let env = TestEnv::new();
    let config =
        env.write_config("[generate]\nbackend = \"template\"\n\n[review]\napprove_specs = true\n");
    let ask = |what: &str, examples: &[&str]| {
        let mut cmd = env.cli();
        cmd.arg("--config")
            .arg(&config)
            .args(["--json", "new", what]);
        for e in examples {
            cmd.args(["--example", e]);
        }
        let out = cmd.timeout(Duration::from_secs(120)).assert().success();
        let report = json_of(out.get_output());
        let made = &report["candidates"][0];
        assert_eq!(made["state"], "spec-awaiting-review", "{report:#}");
        made["id"].as_str().expect("id").to_owned()
    };
    let du = ask(DU, &DU_EXAMPLES);
    let curl = ask(CURL, &CURL_EXAMPLES);
    let ui = Ui::start(&env, &config);
    let driver = start_driver(&chromedriver);
    let browser = session(&chromium, &driver).await;
    let outcome = async {
        use fantoccini::Locator;
        let wait = Duration::from_secs(120);
        browser
            .goto(&format!("{}/?token={}", ui.base(), ui.token))
            .await?;
        let specs = browser
            .find(Locator::Css("table.queue.specs"))
            .await?
            .text()
            .await?;
        assert!(specs.contains(DU) && specs.contains(CURL), "{specs}");
        browser
            .find(Locator::Css(&format!("tr[data-candidate='{du}'] a")))
            .await?
            .click()
            .await?;
        let page = browser
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("section.decide"))
            .await?
            .text()
            .await?;
        assert!(page.contains("Its spec awaits your review"), "{page}");
        let spec = browser.find(Locator::Css("main")).await?.text().await?;
        assert!(
            spec.contains("du -sh"),
            "the spec's steps are shown: {spec}"
        );
        browser
            .find(Locator::Id("accept-spec-button"))
            .await?
            .click()
            .await?;
        let said = browser
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("#outcome.pass"))
            .await?
            .text()
            .await?;
        // Only the report is `pass` (the note while it generates is not).
        assert!(said.contains("is awaiting-review"), "{said}");

        browser
            .goto(&format!("{}/candidate/{curl}", ui.base()))
            .await?;
        browser
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("#reject-spec textarea[name='reason']"))
            .await?
            .send_keys("we check the shop by hand")
            .await?;
        browser
            .find(Locator::Id("reject-spec-button"))
            .await?
            .click()
            .await?;
        let said = browser
            .wait()
            .at_most(wait)
            .for_element(Locator::Css("#outcome.pass"))
            .await?
            .text()
            .await?;
        assert!(said.contains("we check the shop by hand"), "{said}");
        Ok::<(), fantoccini::error::CmdError>(())
    }
    .await;
    let _ = browser.close().await;
    outcome.expect("the browser session");
    let accepted = candidate(&env, &config, &du);
    assert_eq!(accepted["state"], "awaiting-review", "{accepted:#}");
    assert!(accepted["spec_accepted"]["by"].is_string(), "{accepted:#}");
    let rejected = candidate(&env, &config, &curl);
    assert_eq!(rejected["state"], "rejected");
    assert_eq!(
        rejected["reason"],
        "spec rejected at review: we check the shop by hand"
    );
}
