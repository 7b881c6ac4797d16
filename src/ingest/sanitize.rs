//! What the reader does to every item before it leaves: secrets out, outputs capped.
//!
//! A [`Sanitizer`] belongs to one file's read. Beyond the pattern rules of [`super::redact`]
//! (any text) and the command table of [`super::redact_shell`] (tool-call inputs), it knows what
//! came before in the file:
//!
//! - **What a call's output holds.** `printenv DB_PASSWORD`, `echo $API_TOKEN`, `pass show x`,
//!   `cat /run/secrets/db` print a secret; `cat ~/.netrc` and `Read ~/.pgpass` print a
//!   credential file. The output is redacted as such, also when it arrives in a later record
//!   than the call (Claude Code, Codex): such calls wait in a short list, by session and call id.
//! - **Secrets already seen.** Every value a rule replaced (`export DB_PASSWORD=…`) is
//!   remembered, and any later occurrence of it — in an output, a later command, a file an
//!   agent writes — is replaced too, with the same kind.
//!
//! Both are part of the file's checkpoint, so that a restart changes nothing. The list of
//! waiting calls is stored as it is (ids and kinds). The secrets themselves are never stored,
//! not even hashed (a fast hash of a weak password is one dictionary pass away): the checkpoint
//! only says how many there were, and a reader resuming such a file reads it again from its
//! start up to the checkpoint, items discarded, to find them again — the same bytes give the
//! same secrets. That costs a re-read of the files that had secrets, once per start.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

use regex::Regex;
use serde_json::{Value, json};

use super::adapters::{Item, LateResult};
use super::reader::cap_excerpt;
use super::redact::{Found, Redactor, credential_shaped};
use super::redact_files::{redact_file_writes, redact_secret_file, redact_structured};
use super::redact_shell::{
    FILE_KEYS, OutputKind, input_file_kind, is_script, output_of_call, redact_commands,
    redact_credential_flags, redact_file_formats, redact_secret_output,
};
use super::redact_stdin::redact_prompts;
use crate::action::Action;

/// The key of the sanitizer's part in a checkpoint's parser state.
const STATE_KEY: &str = "toolsmith.redact";
/// Version of that part's layout.
const STATE_VERSION: u64 = 1;
/// How many secrets are remembered per file (the oldest are forgotten first).
const MEMORY_CAP: usize = 256;
/// How many calls may wait for their output.
const PENDING_CAP: usize = 512;

/// How many files' secrets a [`Redactor`] keeps between reads.
const RESUMES_CAP: usize = 256;

/// Which file a read was of (that it is the same content is the checkpoint's business: a
/// read resumes only a file whose start it recognises).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileKey {
    /// The path read.
    pub path: String,
    /// Its device.
    pub dev: u64,
    /// Its inode.
    pub inode: u64,
}

/// The secrets remembered where each file's last read ended (see [`Redactor`]'s `resumes`).
#[derive(Debug, Default)]
pub struct Resumes {
    entries: HashMap<FileKey, (u64, Memory)>,
    order: VecDeque<FileKey>,
}

/// Values seen as secrets earlier in a file.
#[derive(Debug, Default, Clone)]
struct Memory {
    /// Value → kind, in the order they were first seen.
    kinds: HashMap<String, &'static str>,
    order: VecDeque<String>,
    /// All values, longest first, as one search; rebuilt when a value is added.
    search: Option<Regex>,
    stale: bool,
}

impl Memory {
    /// Remembers a secret worth looking for again: one word (no blanks), not a placeholder,
    /// 8 characters or more that look random, or 20 and more. Shorter or plainer values
    /// (`changeme`, `postgres`) would be found in ordinary text and redact it.
    fn remember(&mut self, found: &Found) {
        let v = found.value.trim();
        let random = {
            let classes = [
                v.bytes().any(|c| c.is_ascii_uppercase()),
                v.bytes().any(|c| c.is_ascii_lowercase()),
                v.bytes().any(|c| c.is_ascii_digit()),
                v.bytes().any(|c| !c.is_ascii_alphanumeric()),
            ];
            classes.iter().filter(|c| **c).count() >= 2
        };
        // A secret file's value is there by the file's kind, not its shape: only one that
        // looks like a credential is worth finding elsewhere (not `10/minute`, a time zone).
        let shaped = found.kind != "secret-file" || credential_shaped(v);
        let memorable = v.len() <= 4096
            && shaped
            && ((v.len() >= 8 && random) || v.len() >= 20)
            && !v.chars().any(char::is_whitespace)
            && !v.contains("[REDACTED");
        if !memorable || self.kinds.contains_key(v) {
            return;
        }
        self.kinds.insert(v.to_owned(), found.kind);
        self.order.push_back(v.to_owned());
        while self.order.len() > MEMORY_CAP {
            if let Some(old) = self.order.pop_front() {
                self.kinds.remove(&old);
            }
        }
        self.stale = true;
    }

    fn len(&self) -> usize {
        self.order.len()
    }

    /// Replaces every remembered value in `text`.
    fn redact<'a>(&mut self, text: &'a str) -> Cow<'a, str> {
        if self.order.is_empty() || text.is_empty() {
            return Cow::Borrowed(text);
        }
        if self.stale || self.search.is_none() {
            let mut values: Vec<&String> = self.order.iter().collect();
            values.sort_by_key(|v| std::cmp::Reverse(v.len()));
            let alternation = values
                .iter()
                .map(|v| regex::escape(v))
                .collect::<Vec<_>>()
                .join("|");
            // Literal values, escaped: this compiles (at most 256 of 4 KiB each). Should it not,
            // nothing is searched rather than the reader failing; the rules still ran.
            self.search = regex::RegexBuilder::new(&alternation)
                .size_limit(64 << 20)
                .build()
                .ok();
            self.stale = false;
        }
        let Some(search) = &self.search else {
            return Cow::Borrowed(text);
        };
        if !search.is_match(text) {
            return Cow::Borrowed(text);
        }
        let kinds = &self.kinds;
        search.replace_all(text, |c: &regex::Captures<'_>| {
            let kind = kinds.get(&c[0]).copied().unwrap_or("secret-assignment");
            format!("[REDACTED:{kind}]")
        })
    }
}

/// Sanitizes the items of one file, in file order (see the module documentation).
pub struct Sanitizer<'r> {
    redactor: &'r Redactor,
    output_cap: usize,
    memory: Memory,
    /// Calls whose output is still to come and holds something: (session, call id, kind).
    pending: VecDeque<(String, String, OutputKind)>,
}

impl<'r> Sanitizer<'r> {
    /// A sanitizer that has seen nothing yet.
    pub fn new(redactor: &'r Redactor, output_cap: usize) -> Self {
        Sanitizer {
            redactor,
            output_cap,
            memory: Memory::default(),
            pending: VecDeque::new(),
        }
    }

    /// Redacts secrets and caps outputs in an item, remembering what it needs for the items
    /// after it.
    pub fn item(&mut self, item: &mut Item) {
        match item {
            Item::Action(action) => self.action(action),
            Item::Result(late) => self.late(late),
            Item::SessionLink { .. } => {}
        }
    }

    fn action(&mut self, action: &mut Action) {
        // What the output holds, from the call as it was made.
        let holds = output_of_call(&action.tool, &action.input);
        let files = input_file_kind(&action.input);
        // What is read as commands: a command line, a script the call writes, a patch (whose
        // scripts it finds itself). Code and prose are left to the pattern rules.
        let writes_script = FILE_KEYS
            .iter()
            .filter_map(|k| action.input.get(*k).and_then(Value::as_str))
            .any(is_script);
        let mut found = Vec::new();
        self.redactor
            .redact_json_found(&mut action.input, &mut found);
        for_each_keyed_string(&mut action.input, None, &mut |key, s| {
            let mut mentioned = files;
            mentioned.netrc |= s.contains("netrc");
            mentioned.pgpass |= s.contains("pgpass");
            let mut changed: Option<String> = None;
            let commands = matches!(key, Some("command" | "cmd"))
                || writes_script
                || s.contains("*** Begin Patch");
            let is_path = key.is_some_and(|k| FILE_KEYS.contains(&k));
            if commands {
                then(&mut changed, s, |t| {
                    redact_commands(self.redactor, t, &mut found)
                });
                then(&mut changed, s, |t| redact_credential_flags(t, &mut found));
            }
            // What a command feeds a password prompt, what an expect script sends to one.
            // (A patch is not one shell text: its sections are files of any kind.)
            then(&mut changed, s, |t| {
                let shell = commands && !t.contains("*** Begin Patch");
                redact_prompts(t, shell, &mut found)
            });
            if mentioned.netrc || mentioned.pgpass {
                then(&mut changed, s, |t| {
                    redact_file_formats(t, mentioned, &mut found)
                });
            }
            // What a structure marks (first: its kinds say more than a secret file's); a `.env`
            // or credentials file the call writes (its content, an edit's strings), or one a
            // command or a patch writes into.
            if !is_path {
                then(&mut changed, s, |t| redact_structured(t, &mut found));
            }
            if files.secret_file && !is_path {
                then(&mut changed, s, |t| redact_secret_file(t, &mut found));
            }
            if commands {
                then(&mut changed, s, |t| redact_file_writes(t, &mut found));
            }
            if let Some(o) = changed {
                *s = o;
            }
        });
        self.remember(&found);
        for_each_string(&mut action.input, &mut |s| {
            if let Cow::Owned(o) = self.memory.redact(s) {
                *s = o;
            }
        });
        if let Some(cwd) = &mut action.cwd {
            let (r, f) = self.redactor.redact_found(cwd);
            let r = r.into_owned();
            self.remember(&f);
            *cwd = self.memory.redact(&r).into_owned();
        }
        match &mut action.result {
            Some(result) => {
                result.output = self.output(&result.output, holds);
            }
            None => {
                if holds.any()
                    && let Some(call_id) = &action.call_id
                {
                    self.pending
                        .push_back((action.session.clone(), call_id.clone(), holds));
                    while self.pending.len() > PENDING_CAP {
                        self.pending.pop_front();
                    }
                }
            }
        }
    }

    fn late(&mut self, late: &mut LateResult) {
        let at = self
            .pending
            .iter()
            .position(|(s, c, _)| *s == late.session && *c == late.call_id);
        // A call may be answered twice, the second answer replacing the first (Codex's
        // `exec_command_end` after its output): what the call prints is known until its final
        // answer, or until the entry is the oldest of a full list.
        let holds = match at {
            Some(i) if late.replaces => self.pending.remove(i).map(|(_, _, kind)| kind),
            Some(i) => self.pending.get(i).map(|(_, _, kind)| *kind),
            None => None,
        }
        .unwrap_or_default();
        late.result.output = self.output(&late.result.output, holds);
    }

    /// An output, redacted (by the rules, then as what it holds, then the secrets seen) and
    /// capped.
    fn output(&mut self, text: &str, holds: OutputKind) -> String {
        let (redacted, mut found) = self.redactor.redact_found(text);
        let mut text = redacted;
        // Failed or not: `echo $TOKEN; false` printed it all the same.
        if holds.secret
            && let Cow::Owned(o) = redact_secret_output(&text, &mut found)
        {
            text = Cow::Owned(o);
        }
        if (holds.netrc || holds.pgpass)
            && let Cow::Owned(o) = redact_file_formats(&text, holds, &mut found)
        {
            text = Cow::Owned(o);
        }
        // Structure first: its kinds say more than "a secret file's".
        if let Cow::Owned(o) = redact_structured(&text, &mut found) {
            text = Cow::Owned(o);
        }
        if holds.secret_file
            && let Cow::Owned(o) = redact_secret_file(&text, &mut found)
        {
            text = Cow::Owned(o);
        }
        // An expect script shown (`cat login.exp`, a `Read` of it) sends what it sent.
        if let Cow::Owned(o) = redact_prompts(&text, false, &mut found) {
            text = Cow::Owned(o);
        }
        self.remember(&found);
        let text = match self.memory.redact(&text) {
            Cow::Owned(o) => o,
            Cow::Borrowed(_) => text.into_owned(),
        };
        cap_excerpt(&text, self.output_cap)
    }

    fn remember(&mut self, found: &[Found]) {
        for f in found {
            self.memory.remember(f);
        }
    }

    /// The part of the checkpoint's parser state this sanitizer needs to resume, wrapped around
    /// the adapter's `state`; the adapter's state alone when there is nothing to keep (so that
    /// files without secrets keep the checkpoints they always had).
    pub fn wrap_state(&self, state: Value) -> Value {
        if self.memory.len() == 0 && self.pending.is_empty() {
            return state;
        }
        let pending: Vec<Value> = self
            .pending
            .iter()
            .map(|(s, c, k)| json!([s, c, k.code()]))
            .collect();
        json!({
            "adapter": state,
            STATE_KEY: {"v": STATE_VERSION, "secrets": self.memory.len(), "pending": pending},
        })
    }

    /// Splits a stored parser state into the adapter's and this sanitizer's: restores the
    /// waiting calls and returns the adapter's state and how many secrets were remembered
    /// (to be found again by [`Sanitizer::replay`]).
    pub fn unwrap_state(&mut self, state: Option<Value>) -> (Option<Value>, usize) {
        let Some(Value::Object(mut map)) = state else {
            return (state, 0);
        };
        let Some(mine) = map.remove(STATE_KEY) else {
            return (Some(Value::Object(map)), 0);
        };
        let adapter = map.remove("adapter").filter(|v| !v.is_null());
        if mine.get("v").and_then(Value::as_u64) != Some(STATE_VERSION) {
            return (adapter, 0);
        }
        self.pending = mine
            .get("pending")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let p = p.as_array()?;
                Some((
                    p.first()?.as_str()?.to_owned(),
                    p.get(1)?.as_str()?.to_owned(),
                    OutputKind::from_code(p.get(2)?.as_u64()?),
                ))
            })
            .collect();
        let secrets = mine.get("secrets").and_then(Value::as_u64).unwrap_or(0);
        (adapter, usize::try_from(secrets).unwrap_or(usize::MAX))
    }

    /// Takes the items of the file's records up to the checkpoint, read again, to find the
    /// secrets seen before it: the sanitizer then stands where it stood when the checkpoint was
    /// written. The items are discarded.
    pub fn replay(&mut self, items: &mut [Item]) {
        for item in items {
            self.item(item);
        }
    }

    /// Takes the secrets another sanitizer remembered (one that replayed the file up to the
    /// checkpoint), keeping this one's list of waiting calls.
    pub fn take_memory(&mut self, other: Sanitizer<'_>) {
        self.memory = other.memory;
    }

    /// How many secrets are remembered.
    pub fn remembered(&self) -> usize {
        self.memory.len()
    }

    /// Keeps what this sanitizer remembers, as of `offset` in `file`, for the next read of the
    /// file by the same redactor.
    pub fn keep_for_resume(&self, file: &FileKey, offset: u64) {
        let Ok(mut resumes) = self.redactor.resumes.lock() else {
            return; // a panic elsewhere poisoned it: the next read replays instead
        };
        if self.memory.len() == 0 {
            if resumes.entries.remove(file).is_some() {
                resumes.order.retain(|k| k != file);
            }
            return;
        }
        if resumes
            .entries
            .insert(file.clone(), (offset, self.memory.clone()))
            .is_none()
        {
            resumes.order.push_back(file.clone());
        }
        while resumes.order.len() > RESUMES_CAP {
            if let Some(old) = resumes.order.pop_front() {
                resumes.entries.remove(&old);
            }
        }
    }

    /// Takes what the last read of `file` by the same redactor remembered, if it ended at
    /// `offset`; false when it did not (then the file is replayed).
    pub fn resume(&mut self, file: &FileKey, offset: u64) -> bool {
        let Ok(resumes) = self.redactor.resumes.lock() else {
            return false;
        };
        match resumes.entries.get(file) {
            Some((at, memory)) if *at == offset => {
                self.memory = memory.clone();
                true
            }
            _ => false,
        }
    }
}

/// One redaction pass over a string: over the text as the passes before left it (`changed`,
/// or `original` while none changed it), keeping the result when it changed something.
fn then(
    changed: &mut Option<String>,
    original: &str,
    pass: impl for<'t> FnOnce(&'t str) -> Cow<'t, str>,
) {
    if let Cow::Owned(o) = pass(changed.as_deref().unwrap_or(original)) {
        *changed = Some(o);
    }
}

/// Calls `f` on every string in `value` with the key of the member holding it (an array's
/// items are under its key).
fn for_each_keyed_string(
    value: &mut Value,
    key: Option<&str>,
    f: &mut impl FnMut(Option<&str>, &mut String),
) {
    match value {
        Value::String(s) => f(key, s),
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| for_each_keyed_string(v, key, f)),
        Value::Object(map) => map
            .iter_mut()
            .for_each(|(k, v)| for_each_keyed_string(v, Some(k.as_str()), f)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Calls `f` on every string in `value` (object keys excepted).
fn for_each_string(value: &mut Value, f: &mut impl FnMut(&mut String)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter_mut().for_each(|v| for_each_string(v, f)),
        Value::Object(map) => map.values_mut().for_each(|v| for_each_string(v, f)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::{ActionResult, Source};

    const S: &str = "Zq8vR2mW4kT9xLp3Hs7N";

    fn call(session: &str, call_id: &str, tool: &str, input: Value, output: Option<&str>) -> Item {
        Item::Action(Action {
            session: session.into(),
            seq: 1,
            ts: None,
            source: Source::ClaudeCode,
            cwd: Some("/home/dev/app".into()),
            tool: tool.into(),
            input,
            call_id: Some(call_id.into()),
            parent_session: None,
            result: output.map(|o| ActionResult {
                ok: true,
                exit_code: Some(0),
                output: o.into(),
                duration_ms: None,
            }),
        })
    }

    fn result(session: &str, call_id: &str, output: &str) -> Item {
        Item::Result(LateResult {
            session: session.into(),
            call_id: call_id.into(),
            result: ActionResult {
                ok: true,
                exit_code: Some(0),
                output: output.into(),
                duration_ms: None,
            },
            replaces: false,
        })
    }

    fn text(item: &Item) -> String {
        match item {
            Item::Action(a) => format!(
                "{} {}",
                a.input,
                a.result.as_ref().map_or("", |r| r.output.as_str())
            ),
            Item::Result(r) => r.result.output.clone(),
            Item::SessionLink { .. } => String::new(),
        }
    }

    #[test]
    fn a_secret_seen_once_is_redacted_wherever_it_comes_back() {
        let r = Redactor::new();
        let mut s = Sanitizer::new(&r, 1 << 16);
        let mut items = vec![
            call(
                "s",
                "c1",
                "Bash",
                json!({"command": format!("export DB_PASSWORD={S}")}),
                Some(""),
            ),
            call(
                "s",
                "c2",
                "Bash",
                json!({"command": "./check-db.sh"}),
                Some(&format!("using {S} for app\n")),
            ),
            call(
                "s",
                "c3",
                "Write",
                json!({"file_path": "/tmp/x.ts", "content": format!("const pw = \"{S}\";")}),
                None,
            ),
            call(
                "s",
                "c4",
                "Bash",
                json!({"command": format!("curl -d {S} http://localhost")}),
                None,
            ),
            result("s", "c4", &format!("echo: {S}")),
        ];
        for item in &mut items {
            s.item(item);
        }
        for item in &items {
            let t = text(item);
            assert!(!t.contains(S), "{t}");
        }
        assert!(text(&items[1]).contains("using [REDACTED:secret-assignment] for app"));
        assert!(text(&items[2]).contains("const pw = \\\"[REDACTED:secret-assignment]\\\";"));
        assert_eq!(s.remembered(), 1);
    }

    #[test]
    fn short_or_plain_secrets_are_not_searched_for() {
        let r = Redactor::new();
        let mut s = Sanitizer::new(&r, 1 << 16);
        let mut items = vec![
            call(
                "s",
                "c1",
                "Bash",
                json!({"command": "export DB_PASSWORD=postgres PGPASSWORD=hunter2"}),
                Some(""),
            ),
            call(
                "s",
                "c2",
                "Bash",
                json!({"command": "psql -U postgres -c 'select 1'"}),
                Some("hunter2 postgres\n"),
            ),
        ];
        for item in &mut items {
            s.item(item);
        }
        assert_eq!(s.remembered(), 0);
        assert!(
            text(&items[1]).contains("psql -U postgres"),
            "{}",
            text(&items[1])
        );
        assert!(text(&items[1]).contains("hunter2 postgres"));
    }

    #[test]
    fn an_output_that_arrives_later_is_redacted_as_its_call_said() {
        let r = Redactor::new();
        let mut s = Sanitizer::new(&r, 1 << 16);
        let mut items = vec![
            call(
                "s",
                "c1",
                "Bash",
                json!({"command": "printenv SERVICE_PASSWORD"}),
                None,
            ),
            call(
                "s",
                "c2",
                "Read",
                json!({"file_path": "/home/dev/.pgpass"}),
                None,
            ),
            call("other", "c1", "Bash", json!({"command": "echo hi"}), None),
            result("other", "c1", "hi\n"),
            result("s", "c2", &format!("     1→db:5432:prod:app:{S}x\n")),
            result("s", "c1", &format!("{S}\n")),
            result("s", "c9", "not waited for\n"),
        ];
        for item in &mut items {
            s.item(item);
        }
        assert_eq!(text(&items[3]), "hi\n");
        assert_eq!(
            text(&items[4]),
            "     1→db:5432:prod:app:[REDACTED:password-file]\n"
        );
        assert_eq!(text(&items[5]), "[REDACTED:secret-output]\n");
        assert_eq!(text(&items[6]), "not waited for\n");
        // A final answer after the first (Codex's `exec_command_end` with the whole output) is
        // still what the call printed; after it, the call is not waited for any more.
        let mut last = result("s", "c1", &format!("{S}\n"));
        if let Item::Result(late) = &mut last {
            late.replaces = true;
        }
        s.item(&mut last);
        assert_eq!(text(&last), "[REDACTED:secret-output]\n");
        assert!(!s.pending.iter().any(|(_, call, _)| call == "c1"));
    }

    #[test]
    fn the_checkpoint_keeps_no_secret_and_resuming_finds_them_again() {
        let r = Redactor::new();
        // Nothing to keep: the adapter's state, as it always was.
        let s = Sanitizer::new(&r, 1024);
        assert_eq!(s.wrap_state(json!({"v": 1})), json!({"v": 1}));
        assert_eq!(s.wrap_state(Value::Null), Value::Null);

        let mut s = Sanitizer::new(&r, 1024);
        let mut first = vec![
            call(
                "s",
                "c1",
                "Bash",
                json!({"command": format!("export API_TOKEN={S}")}),
                Some(""),
            ),
            call(
                "s",
                "c2",
                "Bash",
                json!({"command": "printenv API_TOKEN"}),
                None,
            ),
        ];
        for item in &mut first {
            s.item(item);
        }
        let state = s.wrap_state(json!({"v": 1, "calls": ["c1"]}));
        assert!(!state.to_string().contains(S), "{state}");
        assert!(!state.to_string().contains(&S[..8]), "{state}");

        // Resuming: the waiting call comes back from the state, the secrets from a replay.
        let mut resumed = Sanitizer::new(&r, 1024);
        let (adapter, secrets) = resumed.unwrap_state(Some(state));
        assert_eq!(adapter, Some(json!({"v": 1, "calls": ["c1"]})));
        assert_eq!(secrets, 1);
        let mut replayed = Sanitizer::new(&r, 1024);
        let mut again = vec![
            call(
                "s",
                "c1",
                "Bash",
                json!({"command": format!("export API_TOKEN={S}")}),
                Some(""),
            ),
            call(
                "s",
                "c2",
                "Bash",
                json!({"command": "printenv API_TOKEN"}),
                None,
            ),
        ];
        replayed.replay(&mut again);
        resumed.take_memory(replayed);
        let mut later = vec![
            result("s", "c2", &format!("{S}\n")),
            call(
                "s",
                "c3",
                "Bash",
                json!({"command": "git log -1"}),
                Some(&format!("token {S}")),
            ),
        ];
        for item in &mut later {
            resumed.item(item);
        }
        assert_eq!(text(&later[0]), "[REDACTED:secret-output]\n");
        assert!(!text(&later[1]).contains(S));

        // A state from another layout or version is the adapter's, or nothing of ours.
        let mut other = Sanitizer::new(&r, 1024);
        assert_eq!(
            other.unwrap_state(Some(json!({"v": 1, "x": 2}))),
            (Some(json!({"v": 1, "x": 2})), 0)
        );
        assert_eq!(
            other.unwrap_state(Some(json!({"adapter": {"v": 1}, STATE_KEY: {"v": 99}}))),
            (Some(json!({"v": 1})), 0)
        );
    }
}
