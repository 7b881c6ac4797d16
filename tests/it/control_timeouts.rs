//! Nobody holds the control socket for nothing, and nothing waits on it forever: idle and
//! half-sent connections are closed (subscriptions stay), and the CLI gives up on a daemon that
//! does not answer, saying so.

use crate::common;

use std::io::{BufRead, Read};
use std::time::Duration;

use common::{Conn, Daemon, PATIENCE, TestEnv, json_of};
use serde_json::{Value, json};

fn start_with(env: &TestEnv, config: &str) -> Daemon {
    let path = env.write_config(config);
    let mut cmd = env.daemon_command();
    cmd.arg("--config").arg(path);
    Daemon::start(env, cmd)
}

/// Reads until the daemon closes the connection; what it sent before, line by line.
fn read_to_close(conn: &mut Conn, daemon: &Daemon) -> Vec<Value> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        match conn.reader.read_line(&mut line) {
            Ok(0) => return lines,
            Ok(_) => lines.push(serde_json::from_str(&line).expect("JSON from the daemon")),
            Err(e) => panic!(
                "the daemon kept the connection open ({e}); log:\n{}",
                daemon.log()
            ),
        }
    }
}

#[test]
fn idle_connections_are_closed_and_the_next_client_is_served() {
    let env = TestEnv::new();
    let daemon = start_with(&env, "[daemon]\nmax_connections = 64\nidle_timeout_s = 1\n");
    // A subscriber first: it waits for events, which is not idleness.
    let mut subscriber = daemon.connect();
    let ack = subscriber.call(1, "events.subscribe", json!({"kinds": ["config."]}));
    assert_eq!(ack["result"]["subscribed"], json!(true), "{ack}");
    // Every other slot taken by a connection that sends nothing.
    let mut idle: Vec<Conn> = (0..63).map(|_| daemon.connect()).collect();
    for conn in &mut idle {
        read_to_close(conn, &daemon);
    }
    let out = env
        .cli()
        .args(["status", "--json"])
        .timeout(PATIENCE)
        .output()
        .expect("status");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = json_of(&out);
    assert!(
        status["counters"]["connections_closed_idle"].as_u64() >= Some(63),
        "{status}"
    );

    // The subscription outlived the idle timeout many times over and still gets events.
    env.cli().arg("reload").timeout(PATIENCE).assert().success();
    let event = subscriber.read();
    assert_eq!(event["params"]["kind"], json!("config.reloaded"), "{event}");
}

#[test]
fn a_half_sent_request_line_is_dropped_after_the_partial_line_timeout() {
    let env = TestEnv::new();
    let daemon = start_with(
        &env,
        "[daemon]\nidle_timeout_s = 3600\npartial_line_timeout_s = 1\n",
    );
    let mut conn = daemon.connect();
    // A whole request first: the connection works.
    let ok = conn.call(1, "status", Value::Null);
    assert!(ok["result"]["pid"].is_number(), "{ok}");
    conn.send_raw(br#"{"jsonrpc":"2.0","id":2,"method":"sta"#);
    let said = read_to_close(&mut conn, &daemon);
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(said[0]["error"]["code"], json!(-32600), "{said:?}");
    let message = said[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not finished within 1 s"), "{message}");
    assert!(message.contains("partial_line_timeout_s"), "{message}");

    // Others are served meanwhile and after.
    let mut other = daemon.connect();
    let ok = other.call(1, "status", Value::Null);
    assert_eq!(
        ok["result"]["counters"]["connections_closed_partial_line"],
        json!(1),
        "{ok}"
    );
}

#[test]
fn status_gives_up_on_a_daemon_that_does_not_answer() {
    let env = TestEnv::new();
    // A socket that is listened on but never answered, as a stuck daemon's would be.
    std::fs::create_dir_all(env.socket().parent().expect("socket dir")).expect("mkdir");
    let listener = std::os::unix::net::UnixListener::bind(env.socket()).expect("bind");
    let out = env
        .cli()
        .arg("status")
        .timeout(Duration::from_secs(60))
        .output()
        .expect("toolsmith status");
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("did not answer `status` within 10 s"),
        "{stderr}"
    );
    assert!(stderr.contains("stuck"), "{stderr}");
    assert!(stderr.contains("restart"), "says what to do: {stderr}");
    // The request did reach the socket: the client waited for an answer, not for nothing.
    listener.set_nonblocking(true).expect("nonblocking");
    let (mut accepted, _) = listener
        .accept()
        .expect("the client's connection was queued");
    let mut sent = String::new();
    accepted.set_nonblocking(true).expect("nonblocking stream");
    let _ = accepted.read_to_string(&mut sent);
    assert!(sent.contains("\"method\":\"status\""), "{sent}");
}

#[test]
fn subscribers_never_lock_out_status_and_stop() {
    let env = TestEnv::new();
    // The defaults: 64 request slots, and 16 for subscriptions beside them.
    let mut daemon = Daemon::start(&env, env.daemon_command());
    // As many subscribers as there are request slots, each staying.
    let mut subscribers = Vec::new();
    let mut refused = Vec::new();
    for _ in 0..64 {
        let mut conn = daemon.connect();
        let answer = conn.call(1, "events.subscribe", json!({"kinds": ["daemon."]}));
        if answer["result"]["subscribed"] == json!(true) {
            subscribers.push(conn);
        } else {
            refused.push((conn, answer));
        }
    }
    // Every subscriber (and every refused one) still connected: the CLI is served.
    let out = env.cli().arg("status").timeout(PATIENCE).assert().success();
    let shown = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        shown.contains("subscriptions: 16 open, 48 refused"),
        "{shown}"
    );
    assert_eq!(subscribers.len(), 16, "log:\n{}", daemon.log());
    assert_eq!(refused.len(), 48);
    let (first_refused, answer) = &mut refused[0];
    assert_eq!(answer["error"]["code"], json!(-32002), "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("daemon.max_subscriptions"), "{message}");
    assert!(message.contains("the limit is 16"), "{message}");
    // A refused subscriber keeps a working connection for requests.
    let status = first_refused.call(2, "status", Value::Null);
    let counters = &status["result"]["counters"];
    assert_eq!(counters["subscriptions_open"], json!(16), "{status}");
    assert_eq!(counters["subscriptions_refused"], json!(48), "{status}");

    env.cli().arg("stop").timeout(PATIENCE).assert().success();
    // A subscriber may first see `daemon.started`, published while the others subscribed.
    for subscriber in &mut subscribers {
        let mut event = subscriber.read_or(|| daemon.log());
        if event["params"]["kind"] == json!("daemon.started") {
            event = subscriber.read_or(|| daemon.log());
        }
        assert_eq!(event["params"]["kind"], json!("daemon.stopping"), "{event}");
    }
    assert_eq!(daemon.wait_exit(), Some(0), "log:\n{}", daemon.log());
}
