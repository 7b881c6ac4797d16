//! Agents ask for the tools they lack: what `toolsmith_request`, `toolsmith_request_status` and
//! `toolsmith_proposals` take and answer, apart from the protocol (`server.rs` serves them).
//!
//! A request is untrusted input: its description, each example and the inputs are capped and
//! refused (never cut) past their caps, a session may make [`RateLimit`] requests an hour, and
//! what it asks for goes through the generation pipeline every other candidate takes — the
//! examples become the spec's steps, validation runs in the sandbox, and a person reviews the
//! proposal. Nothing of a request runs outside the sandbox, and nothing runs at all before a
//! person approves it.
//!
//! Generation itself belongs to the stages above this one (the daemon when one holds the state
//! directory, else a generator in this process, as `toolsmith new` does): the server reaches it
//! through [`Generation`], which the CLI implements.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rmcp::model::JsonObject;
use serde_json::{Value, json};

use crate::generate::candidates::{Candidate, State};
use crate::generate::from_pattern::{MAX_EXAMPLES, MAX_REQUEST_CHARS};
use crate::generate::pipeline::Job;

/// The fixed tool an agent asks for a new tool with.
pub const REQUEST_TOOL: &str = "toolsmith_request";

/// The fixed tool that tells how a request is getting on.
pub const STATUS_TOOL: &str = "toolsmith_request_status";

/// The fixed tool that lists the proposals awaiting a person's review.
pub const PROPOSALS_TOOL: &str = "toolsmith_proposals";

/// Most characters of a request's description (what generation keeps of a request's text).
pub const MAX_DESCRIPTION_CHARS: usize = MAX_REQUEST_CHARS;

/// Most characters of one example command line.
pub const MAX_EXAMPLE_CHARS: usize = 1000;

/// Most inputs a request names.
pub const MAX_INPUTS: usize = 16;

/// Most characters of an input's name.
pub const MAX_INPUT_NAME_CHARS: usize = 64;

/// Most characters of an input's description.
pub const MAX_INPUT_DESCRIPTION_CHARS: usize = 300;

/// Most characters of the agent's name kept from its client information.
const MAX_AGENT_CHARS: usize = 80;

/// How the server reaches generation, which lives above it: the CLI implements this with the
/// daemon (when one holds the state directory) or a generator of its own.
pub trait Generation: Send + Sync + std::fmt::Debug {
    /// Why a request without examples cannot be written (no model configured), or `None` when
    /// a model writes such requests.
    fn without_examples(&self) -> Option<String>;

    /// Runs `job` (a [`Job::Request`]) to its end: the candidate it makes is then in the store,
    /// whatever state it reached. Blocks; the error says why no candidate could be made.
    fn generate(&self, job: Job) -> Result<(), String>;
}

/// An input the requested tool takes, as the agent names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// Its name.
    pub name: String,
    /// What it is.
    pub description: String,
}

/// A `toolsmith_request`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// What the tool should do.
    pub description: String,
    /// Command lines it should run (the template's steps).
    pub examples: Vec<String>,
    /// The inputs it takes.
    pub inputs: Vec<Input>,
}

/// Counts characters, refusing control characters other than newlines and tabs.
fn checked_text(what: &str, value: &str, max: usize) -> Result<(), String> {
    let chars = value.chars().count();
    if chars > max {
        return Err(format!(
            "{REQUEST_TOOL}: {what} is {chars} characters long; at most {max} are taken"
        ));
    }
    if let Some(c) = value
        .chars()
        .find(|c| c.is_control() && *c != '\n' && *c != '\t')
    {
        return Err(format!(
            "{REQUEST_TOOL}: {what} holds the control character U+{:04X}; give plain text",
            u32::from(c)
        ));
    }
    Ok(())
}

impl Request {
    /// Reads and checks a call's arguments: every cap is a refusal naming it, never a cut.
    pub fn parse(args: &JsonObject) -> Result<Request, String> {
        if let Some(key) = args
            .keys()
            .find(|k| !matches!(k.as_str(), "description" | "examples" | "inputs"))
        {
            return Err(format!(
                "{REQUEST_TOOL}: unknown argument `{key}`; it takes `description`, `examples` \
                 and `inputs`"
            ));
        }
        let description = match args.get("description") {
            Some(Value::String(d)) if !d.trim().is_empty() => d.trim().to_owned(),
            _ => {
                return Err(format!(
                    "{REQUEST_TOOL}: `description` must say, in words, what the tool should do"
                ));
            }
        };
        checked_text("`description`", &description, MAX_DESCRIPTION_CHARS)?;
        let examples = match args.get("examples") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                if items.len() > MAX_EXAMPLES {
                    return Err(format!(
                        "{REQUEST_TOOL}: {} examples given; at most {MAX_EXAMPLES} are taken",
                        items.len()
                    ));
                }
                let mut examples = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let Value::String(line) = item else {
                        return Err(format!(
                            "{REQUEST_TOOL}: example {} must be a command line (a string)",
                            i + 1
                        ));
                    };
                    if line.trim().is_empty() {
                        return Err(format!("{REQUEST_TOOL}: example {} is empty", i + 1));
                    }
                    checked_text(&format!("example {}", i + 1), line, MAX_EXAMPLE_CHARS)?;
                    examples.push(line.clone());
                }
                examples
            }
            Some(_) => {
                return Err(format!(
                    "{REQUEST_TOOL}: `examples` must be a list of command lines"
                ));
            }
        };
        let inputs = match args.get("inputs") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                if items.len() > MAX_INPUTS {
                    return Err(format!(
                        "{REQUEST_TOOL}: {} inputs given; at most {MAX_INPUTS} are taken",
                        items.len()
                    ));
                }
                let mut inputs = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    inputs.push(input(i, item)?);
                }
                inputs
            }
            Some(_) => {
                return Err(format!(
                    "{REQUEST_TOOL}: `inputs` must be a list of {{\"name\", \"description\"}} \
                     objects"
                ));
            }
        };
        let request = Request {
            description,
            examples,
            inputs,
        };
        // Generation keeps this much of a request's text: the inputs must fit beside the
        // description, not be cut off after it.
        let chars = request.text().chars().count();
        if chars > MAX_DESCRIPTION_CHARS {
            return Err(format!(
                "{REQUEST_TOOL}: the description with its inputs is {chars} characters long; at                  most {MAX_DESCRIPTION_CHARS} are taken"
            ));
        }
        Ok(request)
    }

    /// The request's text as generation gets it: the description, then the inputs named (a
    /// model reads them; the templates take their parameters from the examples).
    pub fn text(&self) -> String {
        let mut text = self.description.clone();
        if !self.inputs.is_empty() {
            text.push_str("\n\nInputs:");
            for input in &self.inputs {
                text.push_str(&format!("\n- {}: {}", input.name, input.description));
            }
        }
        text
    }
}

fn input(i: usize, item: &Value) -> Result<Input, String> {
    let n = i + 1;
    let Value::Object(fields) = item else {
        return Err(format!(
            "{REQUEST_TOOL}: input {n} must be an object with `name` and `description`"
        ));
    };
    if let Some(key) = fields
        .keys()
        .find(|k| !matches!(k.as_str(), "name" | "description"))
    {
        return Err(format!(
            "{REQUEST_TOOL}: input {n} has an unknown field `{key}`; it takes `name` and \
             `description`"
        ));
    }
    let name = match fields.get("name") {
        Some(Value::String(name)) => name.clone(),
        _ => return Err(format!("{REQUEST_TOOL}: input {n} needs a `name`")),
    };
    let well_formed = !name.is_empty()
        && name.chars().count() <= MAX_INPUT_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        && name.as_bytes()[0].is_ascii_lowercase();
    if !well_formed {
        return Err(format!(
            "{REQUEST_TOOL}: input {n}'s name must be 1 to {MAX_INPUT_NAME_CHARS} characters of \
             a-z, 0-9, `_` and `-`, starting with a letter"
        ));
    }
    let description = match fields.get("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(d)) => d.trim().to_owned(),
        Some(_) => {
            return Err(format!(
                "{REQUEST_TOOL}: input {n}'s `description` must be text"
            ));
        }
    };
    checked_text(
        &format!("input {n}'s description"),
        &description,
        MAX_INPUT_DESCRIPTION_CHARS,
    )?;
    Ok(Input { name, description })
}

/// At most so many requests in any hour, for one session.
#[derive(Debug)]
pub struct RateLimit {
    per_hour: u32,
    granted: VecDeque<Instant>,
}

/// The window the limit counts in.
const HOUR: Duration = Duration::from_secs(3600);

impl RateLimit {
    /// A limit of `per_hour` requests (0: none taken).
    pub fn new(per_hour: u32) -> RateLimit {
        RateLimit {
            per_hour,
            granted: VecDeque::new(),
        }
    }

    /// Takes one request at `now`, or says how long until the next is taken (`None`: never,
    /// the limit is 0).
    pub fn take(&mut self, now: Instant) -> Result<(), Option<Duration>> {
        if self.per_hour == 0 {
            return Err(None);
        }
        while let Some(first) = self.granted.front() {
            if now.saturating_duration_since(*first) >= HOUR {
                self.granted.pop_front();
            } else {
                break;
            }
        }
        if self.granted.len() >= self.per_hour as usize {
            let wait = self
                .granted
                .front()
                .map_or(HOUR, |first| HOUR - now.saturating_duration_since(*first));
            return Err(Some(wait));
        }
        self.granted.push_back(now);
        Ok(())
    }

    /// The refusal an agent reads when [`RateLimit::take`] refused.
    pub fn refusal(&self, wait: Option<Duration>) -> String {
        match wait {
            None => format!(
                "{REQUEST_TOOL}: requests are turned off here (mcp.requests_per_hour = 0 in \
                 toolsmith's configuration)"
            ),
            Some(wait) => format!(
                "{REQUEST_TOOL}: this session made {} requests in the last hour, the most \
                 mcp.requests_per_hour allows; the next is taken in {} minutes",
                self.per_hour,
                wait.as_secs().div_ceil(60).max(1)
            ),
        }
    }
}

/// The agent, as its client named itself: name and version, made one short printable line
/// (it is shown to the reviewer and written into the proposal's trailers).
pub fn agent_name(name: Option<&str>, version: Option<&str>) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect::<String>()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let name = name.map(clean).filter(|n| !n.is_empty());
    let version = version.map(clean).filter(|v| !v.is_empty());
    let agent = match (name, version) {
        (Some(n), Some(v)) => format!("{n} {v}"),
        (Some(n), None) => n,
        _ => "unknown".to_owned(),
    };
    agent.chars().take(MAX_AGENT_CHARS).collect()
}

/// A fresh id for an MCP session (`mcp-` and 12 hex digits), recorded on its requests.
pub fn session_id() -> String {
    let id = crate::generate::candidates::new_id();
    format!("mcp-{}", id.trim_start_matches("c-"))
}

/// The progress word of a candidate's state, as `toolsmith_request_status` says it.
pub fn progress_word(state: State) -> &'static str {
    match state {
        State::Proposed => "queued",
        other => other.as_str(),
    }
}

/// What a spec says, as `toolsmith_request_status` shows it while the spec awaits a person's
/// review: what the tool will do, its parameters, its steps and what it may reach.
pub fn spec_summary(spec: &crate::generate::spec::ToolSpec) -> Value {
    json!({
        "name": spec.name,
        "description": spec.description,
        "parameters": spec.params.iter().map(|p| json!({
            "name": p.name,
            "kind": format!("{:?}", p.kind).to_lowercase(),
            "repeatable": p.variadic,
            "description": p.description,
        })).collect::<Vec<_>>(),
        "steps": spec.steps.iter().map(|s| s.display()).collect::<Vec<_>>(),
        "reach": crate::sandbox::grants::reach_lines(&spec.sandbox),
    })
}

/// How a requested candidate is getting on: its state, why, and what comes next.
pub fn progress(c: &Candidate, interrupted: bool) -> Value {
    let next = match c.state {
        State::Proposed => "waiting for generation to take it".to_owned(),
        State::SpecAwaitingReview => format!(
            "its spec (below) awaits a person's review before any code is written: tell your \
             user to accept it with `toolsmith ui` or `toolsmith approve-spec {}` (or reject it \
             with `toolsmith reject-spec {} --reason …`)",
            c.id, c.id
        ),
        State::Generating | State::Validating if interrupted => {
            "interrupted (the process generating it stopped); it resumes when generation runs \
             again"
                .to_owned()
        }
        State::Generating => "its code is being written".to_owned(),
        State::Validating => "its checks and tests are running in the sandbox".to_owned(),
        State::AwaitingReview => format!(
            "validated; it awaits a person's review: tell your user to review it with \
             `toolsmith ui` or `toolsmith show {}` and `toolsmith approve {}`",
            c.id, c.id
        ),
        State::Approved => format!(
            "approved: call it as `{}` (the tool list changed), or through toolsmith_run",
            c.tool
        ),
        State::Rejected => "rejected at review".to_owned(),
        State::Failed => "given up; the reason says why".to_owned(),
    };
    let mut value = json!({
        "id": c.id,
        "tool": c.tool,
        "state": progress_word(c.state),
        "next": next,
    });
    if let Some(version) = &c.version {
        value["version"] = json!(version);
    }
    if let Some(reason) = &c.reason {
        value["reason"] = json!(reason);
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => panic!("an object"),
        }
    }

    #[test]
    fn a_request_within_its_caps_is_read_whole() {
        let request = Request::parse(&args(json!({
            "description": "  Build one package  ",
            "examples": ["make build -C core", "make build -C cli"],
            "inputs": [{"name": "dir", "description": "the package's directory"}],
        })))
        .expect("a good request");
        assert_eq!(request.description, "Build one package");
        assert_eq!(
            request.examples,
            ["make build -C core", "make build -C cli"]
        );
        assert_eq!(
            request.text(),
            "Build one package\n\nInputs:\n- dir: the package's directory"
        );
    }

    #[test]
    fn every_cap_is_a_refusal_naming_it() {
        let long = "x".repeat(MAX_DESCRIPTION_CHARS + 1);
        let refused = |value: Value| Request::parse(&args(value)).expect_err("refused");
        assert!(
            refused(json!({"description": long})).contains("at most 2000"),
            "the description's cap"
        );
        // At the cap exactly, taken: characters are counted, not bytes.
        let at_cap = "é".repeat(MAX_DESCRIPTION_CHARS);
        assert!(Request::parse(&args(json!({ "description": at_cap }))).is_ok());
        let example = format!("echo {}", "y".repeat(MAX_EXAMPLE_CHARS));
        let e = refused(json!({"description": "d", "examples": ["ls", example]}));
        assert!(e.contains("example 2 is 1005 characters long"), "{e}");
        let many: Vec<String> = (0..=MAX_EXAMPLES).map(|i| format!("echo {i}")).collect();
        let e = refused(json!({"description": "d", "examples": many}));
        assert!(e.contains("21 examples given; at most 20"), "{e}");
        let inputs: Vec<Value> = (0..=MAX_INPUTS)
            .map(|i| json!({"name": format!("in{i}")}))
            .collect();
        let e = refused(json!({"description": "d", "inputs": inputs}));
        assert!(e.contains("17 inputs given; at most 16"), "{e}");
        let e = refused(json!({
            "description": "d".repeat(1990),
            "inputs": [{"name": "dir", "description": "the package's directory"}],
        }));
        assert!(
            e.contains("the description with its inputs is 2030 characters long"),
            "{e}"
        );
        let e = refused(json!({"description": "d", "inputs": [{"name": "../etc"}]}));
        assert!(e.contains("input 1's name must be"), "{e}");
        let e = refused(json!({"description": "d\u{1b}[2J"}));
        assert!(e.contains("U+001B"), "{e}");
        let e = refused(json!({"description": "d", "run": true}));
        assert!(e.contains("unknown argument `run`"), "{e}");
        let e = refused(json!({"description": "   "}));
        assert!(e.contains("`description` must say"), "{e}");
    }

    #[test]
    fn a_session_gets_its_hourly_requests_and_then_waits() {
        let start = Instant::now();
        let mut limit = RateLimit::new(2);
        assert_eq!(limit.take(start), Ok(()));
        assert_eq!(limit.take(start + Duration::from_secs(600)), Ok(()));
        let refused = limit
            .take(start + Duration::from_secs(1200))
            .expect_err("a third in the hour is refused");
        assert_eq!(refused, Some(Duration::from_secs(2400)));
        assert!(
            limit
                .refusal(refused)
                .contains("next is taken in 40 minutes")
        );
        // An hour after the first, one is free again, and only one.
        assert_eq!(limit.take(start + HOUR), Ok(()));
        assert!(limit.take(start + HOUR + Duration::from_secs(1)).is_err());
        let mut off = RateLimit::new(0);
        assert_eq!(off.take(start), Err(None));
        assert!(off.refusal(None).contains("requests_per_hour = 0"));
    }

    #[test]
    fn progress_says_where_a_request_stands_and_what_comes_next() {
        let c = |state: State, reason: Option<&str>| Candidate {
            id: "c-0123456789ab".into(),
            tool: "build-one".into(),
            origin: "request".into(),
            pattern: None,
            request: Some("Build one package".into()),
            state,
            reason: reason.map(str::to_owned),
            attempts: 1,
            generator: None,
            version: Some("1.0.0".into()),
            created_at: 0,
            updated_at: 0,
            asker: None,
            spec_accepted: None,
            edit: None,
        };
        assert_eq!(
            progress(&c(State::Proposed, None), false)["state"],
            "queued"
        );
        let review = progress(&c(State::AwaitingReview, None), false);
        assert_eq!(review["state"], "awaiting-review");
        assert!(
            review["next"]
                .as_str()
                .is_some_and(|n| n.contains("toolsmith approve c-0123456789ab")),
            "{review}"
        );
        let rejected = progress(&c(State::Rejected, Some("does too much")), false);
        assert_eq!(rejected["state"], "rejected");
        assert_eq!(rejected["reason"], "does too much");
        let stuck = progress(&c(State::Generating, None), true);
        assert!(
            stuck["next"]
                .as_str()
                .is_some_and(|n| n.starts_with("interrupted")),
            "{stuck}"
        );
        assert!(
            progress(&c(State::Approved, None), false)["next"]
                .as_str()
                .is_some_and(|n| n.contains("call it as `build-one`"))
        );
    }

    #[test]
    fn the_agents_name_is_one_short_line() {
        assert_eq!(
            agent_name(Some("claude-code"), Some("2.1.0")),
            "claude-code 2.1.0"
        );
        assert_eq!(
            agent_name(Some("evil\nTrailer: x"), None),
            "evil Trailer: x"
        );
        assert_eq!(agent_name(None, Some("1")), "unknown");
        assert_eq!(agent_name(Some(&"a".repeat(500)), None).len(), 80);
    }
}
