//! `ToolSpec`: what a tool must do, independent of how it is written. Built from a ranked
//! pattern or a request, handed to a generator (templates or a model), and turned into the
//! manifest of the result.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::mine::token::Globbing;
use crate::package::manifest::{
    self, Evidence, Interface, Language, Manifest, Origin, OutputKind, Provenance, Runtime,
};
use crate::quote::shell_quote;
use crate::sandbox::{Limits, SandboxProfile, WorkspaceAccess};

/// The kind of value a parameter holds (what a mined slot looked like).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamKind {
    /// A file or directory path.
    Path,
    /// A whole number.
    Integer,
    /// Any number.
    Number,
    /// A commit id or other hex digest.
    Sha,
    /// A URL.
    Url,
    /// A glob pattern.
    Glob,
    /// A word.
    String,
    /// Free text (a message).
    Text,
    /// A switch.
    Boolean,
}

impl ParamKind {
    /// Reads the kind names the miner writes (`path`, `number`, `sha`, `url`, `glob`,
    /// `string`, `text`).
    pub fn from_mined(name: &str) -> ParamKind {
        match name {
            "path" => ParamKind::Path,
            "number" | "integer" => ParamKind::Integer,
            "sha" => ParamKind::Sha,
            "url" => ParamKind::Url,
            "glob" => ParamKind::Glob,
            "text" => ParamKind::Text,
            "boolean" => ParamKind::Boolean,
            _ => ParamKind::String,
        }
    }

    /// The JSON Schema of a value of this kind.
    pub fn schema(self) -> Value {
        match self {
            ParamKind::Integer => json!({"type": "integer"}),
            ParamKind::Number => json!({"type": "number"}),
            ParamKind::Boolean => json!({"type": "boolean"}),
            ParamKind::Sha => json!({"type": "string", "pattern": "^[0-9a-fA-F]{4,64}$"}),
            ParamKind::Url => json!({"type": "string", "pattern": "^[a-zA-Z][a-zA-Z0-9+.-]*://"}),
            ParamKind::Path | ParamKind::Glob | ParamKind::String | ParamKind::Text => {
                json!({"type": "string", "minLength": 1})
            }
        }
    }

    /// Whether values of this kind are free text (a path, a glob, a word, a message), which
    /// could begin with `-`; the others have a shape that cannot (a number, a hex digest, a URL).
    pub fn is_text(self) -> bool {
        matches!(
            self,
            ParamKind::Path | ParamKind::Glob | ParamKind::String | ParamKind::Text
        )
    }

    /// The word used in usage text.
    pub fn placeholder(self) -> &'static str {
        match self {
            ParamKind::Path => "PATH",
            ParamKind::Integer => "N",
            ParamKind::Number => "NUMBER",
            ParamKind::Sha => "COMMIT",
            ParamKind::Url => "URL",
            ParamKind::Glob => "GLOB",
            ParamKind::String => "VALUE",
            ParamKind::Text => "TEXT",
            ParamKind::Boolean => "",
        }
    }
}

/// A parameter the caller gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParamSpec {
    /// snake_case name.
    pub name: String,
    /// Its kind.
    pub kind: ParamKind,
    /// What it is, for `--help` and the schema.
    pub description: String,
    /// Whether it must be given.
    pub required: bool,
    /// Values seen, for examples.
    pub examples: Vec<String>,
    /// Whether it stands for a run of arguments (`git add <path>...`): an array, passed by
    /// repeating its option once per item.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub variadic: bool,
}

impl ParamSpec {
    /// A value of this parameter as JSON, from its text as seen in a log: an integer parsed, a
    /// boolean read, the items of a variadic one split at whitespace (how the miner joins a
    /// run of arguments).
    pub fn value_of(&self, text: &str) -> Value {
        let scalar = |t: &str| match self.kind {
            ParamKind::Integer => t
                .parse::<i64>()
                .map_or_else(|_| Value::String(t.to_owned()), Value::from),
            ParamKind::Boolean => Value::Bool(t == "1" || t == "true"),
            _ => Value::String(t.to_owned()),
        };
        if self.variadic {
            Value::Array(text.split_whitespace().map(scalar).collect())
        } else {
            scalar(text)
        }
    }
}

/// One piece of a command word.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Piece {
    /// Text written as is.
    Literal(String),
    /// A parameter's value.
    Param(String),
    /// A value an earlier step printed (its first line).
    Internal(String),
}

/// One command of a tool: its words, each made of pieces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepSpec {
    /// The words.
    pub words: Vec<Vec<Piece>>,
    /// Per word (empty when none is), how the shell the habit ran in expanded it as a
    /// pathname pattern (`grep foo **/*.h` typed unquoted): the tool expands it the same way,
    /// a dry run prints it as written. Only a word that is one piece can be one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub globs: Vec<Option<Globbing>>,
    /// For a step whose output a later step uses: the variable it is kept in.
    pub captures: Option<String>,
    /// Whether it reads the previous step's output through a pipe.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub piped: bool,
    /// For a habit of command lines: the line as the agent typed it, every byte, with its
    /// parameters where the values varied ([`crate::mine::line`]). The tool runs this line, and
    /// its dry run prints it with the values written in; `words` then only describe it (the
    /// programs it runs, for the name and the needs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub line: Vec<Piece>,
}

impl StepSpec {
    /// How word `i` is expanded as a pathname pattern, if it is (a word of one piece only).
    pub fn glob(&self, i: usize) -> Option<Globbing> {
        self.globs
            .get(i)
            .copied()
            .flatten()
            .filter(|_| self.words.get(i).is_some_and(|w| w.len() == 1))
    }

    /// The step as readable text: literals shell-quoted where needed (a pattern the shell
    /// expanded written as typed), parameters as `<name>`.
    pub fn display(&self) -> String {
        if !self.line.is_empty() {
            return self
                .line
                .iter()
                .map(|p| match p {
                    Piece::Literal(t) => t.clone(),
                    Piece::Param(n) | Piece::Internal(n) => format!("<{n}>"),
                })
                .collect();
        }
        self.words
            .iter()
            .enumerate()
            .map(|(i, word)| {
                if let (Some(_), [Piece::Literal(t)]) = (self.glob(i), word.as_slice()) {
                    return t.clone();
                }
                word.iter()
                    .map(|p| match p {
                        Piece::Literal(t) => shell_quote(t),
                        Piece::Param(n) | Piece::Internal(n) => format!("<{n}>"),
                    })
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A command line step as typed with these parameter values (a value an earlier step
    /// printed as `<name>`).
    pub fn typed_line(&self, params: &BTreeMap<String, String>) -> String {
        self.line
            .iter()
            .map(|p| match p {
                Piece::Literal(t) => t.clone(),
                Piece::Param(n) => params.get(n).cloned().unwrap_or_default(),
                Piece::Internal(n) => format!("<{n}>"),
            })
            .collect()
    }

    /// The program the step runs (its first word, when literal).
    pub fn program(&self) -> Option<&str> {
        match self.words.first()?.as_slice() {
            [Piece::Literal(p)] => Some(p.rsplit('/').next().unwrap_or(p)),
            _ => None,
        }
    }
}

/// Whether a step has a pathname pattern whose `**` the habit's shell matched at any depth of
/// directories (zsh, fish): POSIX sh reads `**` as `*`, so the tool is written for bash, with
/// `globstar`, which matches `**/` as zsh does.
pub fn needs_globstar<'a>(mut steps: impl Iterator<Item = &'a StepSpec>) -> bool {
    steps.any(|step| {
        (0..step.words.len()).any(|i| {
            step.glob(i).is_some_and(Globbing::recursive)
                && match step.words[i].as_slice() {
                    [Piece::Literal(text)] => text.contains("**"),
                    // A parameter's value is the caller's: it may hold `**`.
                    _ => true,
                }
        })
    })
}

/// What a repair prompt needs of the tool being repaired.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HealContext {
    /// The current implementation.
    pub code: String,
    /// Recent failures: error templates with examples.
    pub failures: Vec<String>,
    /// Recent evidence of how the underlying commands are now called (e.g. a renamed flag).
    pub new_evidence: Vec<String>,
    /// Whether the spec's steps were already repaired from that evidence (so the templates
    /// can write the repair when the model cannot be used).
    #[serde(default)]
    pub steps_repaired: bool,
}

/// Why a spec cannot be written as a template tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the template generator cannot write `{tool}`: {why}")]
pub struct TemplateError {
    /// The tool.
    pub tool: String,
    /// Why.
    pub why: String,
}

/// Whether a parameter name is snake_case ASCII starting with a letter: names become option names
/// and variables in generated code, so nothing else may reach it.
pub fn is_snake_case(name: &str) -> bool {
    name.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The failure a recovery tool answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TriggerSpec {
    /// The error template (variable parts as `<*>`).
    pub error_template: String,
    /// The values the recovery takes from the failure: for each, which `<*>` of the template
    /// (0-based) holds it in the failing command's output. The tool extracts them at run time.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub captures: BTreeMap<String, usize>,
}

/// One observed occurrence: the parameter values and the commands run, for derived tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Occurrence {
    /// Where it was seen.
    pub evidence: Evidence,
    /// Each parameter's value.
    pub params: BTreeMap<String, String>,
    /// The commands as the miner renders them (one per step, canonically quoted): what the
    /// steps make of this occurrence's values, shown to people and models.
    pub commands: Vec<String>,
    /// For a text transformation the log holds whole: its input and recorded output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::mine::pattern::Replay>,
    /// The commands as the log recorded them, each the argv the shell would run (quotes
    /// removed, `a && b` two commands): what the dry run must print, whatever the miner made of
    /// them ([`super::logged`]). A value an earlier step printed shows as `<name>`, as a dry run
    /// cannot know it. Empty when the log could not be read: such an occurrence is not a test.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logged: Vec<Vec<String>>,
    /// For a habit of command lines: the lines as the log recorded them, one per step, what
    /// the dry run must print (compared with the shell grammar: the whitespace between words
    /// does not count). A secret the log held redacted shows as its parameter's stand-in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<String>,
    /// For a recovery: the failing command's output as the log recorded it, which the dry run
    /// reads on stdin in place of running the command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_output: Option<String>,
}

/// What a tool must do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Its name.
    pub name: String,
    /// One or two sentences.
    pub description: String,
    /// Why it is made.
    pub origin: Origin,
    /// The pattern it comes from.
    pub pattern: Option<String>,
    /// Sessions the pattern was seen in.
    pub support: Option<u32>,
    /// Its parameters.
    pub params: Vec<ParamSpec>,
    /// Its commands, in order (for a recovery: the recovery steps).
    pub steps: Vec<StepSpec>,
    /// For a recovery: the command that fails, run first and again after recovering.
    pub trigger_step: Option<StepSpec>,
    /// For a recovery: the failure.
    pub trigger: Option<TriggerSpec>,
    /// What it prints.
    pub output: OutputKind,
    /// For JSON output, its schema.
    pub output_schema: Option<Value>,
    /// The language.
    pub language: Language,
    /// Workspace access and limits.
    pub sandbox: SandboxProfile,
    /// Host programs it calls.
    pub requires: Vec<String>,
    /// Observed occurrences.
    pub occurrences: Vec<Occurrence>,
    /// For a request: what the person asked for.
    pub request: Option<String>,
    /// For a request: example commands the person gave.
    pub examples: Vec<String>,
    /// Median duration of one occurrence, when known.
    pub median_ms: Option<u64>,
    /// The canonical keys of its commands (values abstracted), in order: a recovery's failing
    /// command first (marked `on-failure:`, as a recovery is not the sequence of its
    /// commands), then the steps. Two specs with the same keys do the same thing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// For a habit of command lines: the shell they ran in, whose semantics the tool keeps.
    #[serde(default)]
    pub shell: crate::mine::line::Shell,
    /// For a repair: the tool's code, its failures and new evidence, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heal: Option<HealContext>,
    /// For a repair: cases built from the runs that failed in use, added to the candidate's
    /// tests whoever writes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regression_cases: Vec<crate::validate::cases::Case>,
}

impl ToolSpec {
    /// Whether its steps are command lines with holes ([`StepSpec::line`]), run as typed.
    pub fn is_lines(&self) -> bool {
        !self.steps.is_empty() && self.steps.iter().all(|s| !s.line.is_empty())
    }

    /// Whether this spec does what `other` does: both have canonical keys, and the same.
    pub fn same_keys(&self, other: &[String]) -> bool {
        !self.keys.is_empty() && self.keys == other
    }

    /// Whether a value of `param` may begin with `-`: only when the evidence (its examples
    /// and the occurrences) gave it such a value. Any other value beginning with `-` would
    /// reach the command as an option it never had in the log (`sort --version` for a path),
    /// so the schema, [`crate::invoke`] and the generated code refuse it.
    pub fn dash_allowed(&self, param: &ParamSpec) -> bool {
        let mut seen = param.examples.iter().chain(
            self.occurrences
                .iter()
                .filter_map(|o| o.params.get(&param.name)),
        );
        if param.variadic {
            seen.any(|v| v.split_whitespace().any(|item| item.starts_with('-')))
        } else {
            seen.any(|v| v.starts_with('-'))
        }
    }

    /// Whether `param` takes text whose first character the command could read as an option's
    /// dash, yet never began with one in the log: its values are then refused when they do.
    pub fn refuses_dash(&self, param: &ParamSpec) -> bool {
        param.kind.is_text() && !self.dash_allowed(param)
    }

    /// The JSON Schema of the parameters.
    pub fn params_schema(&self) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for p in &self.params {
            let mut item = p.kind.schema();
            if self.refuses_dash(p)
                && let Some(obj) = item.as_object_mut()
            {
                obj.insert(crate::invoke::NO_DASH_KEY.into(), crate::invoke::no_dash());
            }
            let mut schema = if p.variadic {
                json!({"type": "array", "items": item, "minItems": 1})
            } else {
                item
            };
            if let Some(obj) = schema.as_object_mut() {
                obj.insert("description".into(), Value::String(p.description.clone()));
                if !p.examples.is_empty() && p.kind != ParamKind::Boolean {
                    let examples: Vec<Value> =
                        p.examples.iter().take(3).map(|e| p.value_of(e)).collect();
                    obj.insert("examples".into(), Value::Array(examples));
                }
            }
            properties.insert(p.name.clone(), schema);
            if p.required {
                required.push(Value::String(p.name.clone()));
            }
        }
        let mut schema = json!({"type": "object", "properties": properties});
        if !required.is_empty() {
            schema["required"] = Value::Array(required);
        }
        schema["additionalProperties"] = Value::Bool(false);
        schema
    }

    /// The manifest of a tool written from this spec.
    pub fn manifest(&self, version: semver::Version, generator: &str) -> Manifest {
        let entrypoint = match self.language {
            Language::Sh | Language::Bash => "run.sh",
            Language::Python => "run.py",
        };
        Manifest {
            api_version: manifest::API_VERSION.into(),
            name: self.name.clone(),
            version,
            description: self.description.clone(),
            interface: Interface {
                params: self.params_schema(),
                output: self.output,
                output_schema: self.output_schema.clone(),
            },
            runtime: Runtime {
                language: self.language,
                entrypoint: entrypoint.into(),
                requires: self.requires.clone(),
            },
            sandbox: self.sandbox.clone(),
            provenance: Provenance {
                origin: self.origin,
                pattern: self.pattern.clone(),
                support: self.support,
                evidence: self
                    .occurrences
                    .iter()
                    .map(|o| o.evidence.clone())
                    .take(20)
                    .collect(),
                generator: generator.into(),
                created: jiff::Timestamp::now(),
            },
            validation: None,
            deprecated: None,
            needs: Vec::new(),
            granted: Vec::new(),
        }
    }

    /// What the dry run of a tool following this spec prints for `params` (each parameter's
    /// value as seen in a log): one line per command, each word quoted as [`shell_quote`]
    /// does; a recovery runs its failing command, the recovery steps and the command again. A
    /// value an earlier step prints is unknown in a dry run and shows as `<name>`.
    pub fn dry_run_lines(&self, params: &BTreeMap<String, String>) -> Vec<String> {
        if self.is_lines() {
            return self.steps.iter().map(|s| s.typed_line(params)).collect();
        }
        let render = |step: &StepSpec| -> String {
            step.words
                .iter()
                .map(|word| {
                    if let [Piece::Param(name)] = word.as_slice()
                        && let Some(p) = self.params.iter().find(|p| &p.name == name && p.variadic)
                    {
                        let value = params.get(&p.name).map_or("", String::as_str);
                        return value
                            .split_whitespace()
                            .map(shell_quote)
                            .collect::<Vec<_>>()
                            .join(" ");
                    }
                    let text: String = word
                        .iter()
                        .map(|piece| match piece {
                            Piece::Literal(t) => t.clone(),
                            Piece::Param(n) => params.get(n).cloned().unwrap_or_default(),
                            Piece::Internal(n) => format!("<{n}>"),
                        })
                        .collect();
                    shell_quote(&text)
                })
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut lines = Vec::new();
        if let Some(trigger) = &self.trigger_step {
            lines.push(render(trigger));
        }
        lines.extend(self.steps.iter().map(render));
        if let Some(trigger) = &self.trigger_step {
            lines.push(render(trigger));
        }
        lines
    }

    /// A sandbox profile fit for the steps: the workspace writable (the commands agents run
    /// usually build or edit in place), the wall limit covering a slow occurrence three times.
    pub fn default_profile(median_ms: Option<u64>) -> SandboxProfile {
        let mut limits = Limits::default();
        if let Some(ms) = median_ms {
            let secs = (ms.saturating_mul(3) / 1000).clamp(60, 3600) as u32;
            limits.wall_s = secs;
            limits.cpu_s = secs;
        }
        SandboxProfile {
            workspace: WorkspaceAccess::Write,
            limits,
            ..SandboxProfile::default()
        }
    }
}
