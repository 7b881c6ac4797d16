//! How a tool is called: its parameters (a JSON object, checked against the manifest's JSON
//! Schema) become command-line options of its entry point.
//!
//! The convention every generated tool follows, and that `toolsmith run`, the MCP server and
//! validation all use:
//!
//! - a string, integer or number parameter `name` is passed as two arguments,
//!   `--name VALUE` (underscores in the name become hyphens: `test_name` → `--test-name`);
//! - a boolean is `--name` when true and absent when false;
//! - an array passes `--name ITEM` once per item, in order;
//! - `--help` prints usage and exits 0; a missing or bad parameter exits 2 with a message;
//! - with `TOOLSMITH_DRY_RUN=1` in the environment the tool prints the commands it would run,
//!   one per line, and runs none of them.
//!
//! Arguments are handed to `execve` one by one: no shell ever re-reads a value, so a parameter
//! cannot inject a command. Nor an option: a text parameter whose values never began with `-`
//! in the log says so in its schema (`"not": {"pattern": "^-"}`), and a value beginning with
//! `-` is then refused here, for every caller, with exit code 2 (the command would have read
//! `--version` given as a path as its own option); the generated code checks it again.

use serde_json::{Map, Value};

use crate::package::manifest::Manifest;

/// The environment variable that asks a tool to print its commands instead of running them.
pub const DRY_RUN_ENV: &str = "TOOLSMITH_DRY_RUN";

/// The schema keyword that marks a text parameter whose values never begin with `-`.
pub const NO_DASH_KEY: &str = "not";

/// The value of [`NO_DASH_KEY`]: no value beginning with `-`.
pub fn no_dash() -> Value {
    serde_json::json!({"pattern": "^-"})
}

/// Whether a parameter's (or an array's items') schema refuses values beginning with `-`.
fn refuses_dash(schema: &Value) -> bool {
    schema.get(NO_DASH_KEY) == Some(&no_dash())
}

/// Parameters that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid parameters for `{tool}`: {}", problems.join("; "))]
pub struct ParamError {
    /// The tool.
    pub tool: String,
    /// Each problem, naming the parameter.
    pub problems: Vec<String>,
}

/// The option a parameter is passed as.
///
/// ```
/// assert_eq!(toolsmith::invoke::option_name("test_name"), "--test-name");
/// ```
pub fn option_name(param: &str) -> String {
    format!("--{}", param.replace('_', "-"))
}

/// Checks `params` against the manifest's parameter schema.
pub fn validate(manifest: &Manifest, params: &Map<String, Value>) -> Result<(), ParamError> {
    let fail = |problems: Vec<String>| ParamError {
        tool: manifest.name.clone(),
        problems,
    };
    let validator = jsonschema::validator_for(&manifest.interface.params)
        .map_err(|e| fail(vec![format!("the tool's parameter schema is invalid: {e}")]))?;
    let instance = Value::Object(params.clone());
    // Said first and in plain words: the schema's own message for `not` names no reason.
    let mut problems = dash_problems(manifest, params);
    let dashed = !problems.is_empty();
    problems.extend(
        validator
            .iter_errors(&instance)
            .filter(|e| {
                !(dashed && matches!(e.kind(), jsonschema::error::ValidationErrorKind::Not { .. }))
            })
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("parameter `{}`: {e}", at.trim_start_matches('/'))
                }
            }),
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(fail(problems))
    }
}

/// The values beginning with `-` given to parameters whose schema refuses them, each named.
fn dash_problems(manifest: &Manifest, params: &Map<String, Value>) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, schema) in manifest.params() {
        let Some(value) = params.get(name) else {
            continue;
        };
        let (values, item_schema): (Vec<&Value>, &Value) = match value {
            Value::Array(items) => (
                items.iter().collect(),
                schema.get("items").unwrap_or(&Value::Null),
            ),
            one => (vec![one], schema),
        };
        if !refuses_dash(item_schema) {
            continue;
        }
        for text in values.iter().filter_map(|v| v.as_str()) {
            if text.starts_with('-') {
                problems.push(format!(
                    "parameter `{name}`: `{text}` begins with `-`, so the tool's command would \
                     take it for an option; its values never began with `-` in the log the tool \
                     was made from, so it is refused (a file named so can be given as `./{text}`)"
                ));
            }
        }
    }
    problems
}

/// The command-line arguments for `params` (checked first).
pub fn argv(manifest: &Manifest, params: &Map<String, Value>) -> Result<Vec<String>, ParamError> {
    validate(manifest, params)?;
    let known = manifest.params();
    let unknown: Vec<String> = params
        .keys()
        .filter(|k| !known.contains_key(k.as_str()))
        .map(|k| format!("parameter `{k}` is not one of the tool's"))
        .collect();
    if !unknown.is_empty() {
        return Err(ParamError {
            tool: manifest.name.clone(),
            problems: unknown,
        });
    }
    let mut args = Vec::new();
    // In the manifest's (sorted) order, so the same parameters always give the same argv.
    for (name, _) in known {
        let Some(value) = params.get(name) else {
            continue;
        };
        let option = option_name(name);
        match value {
            Value::Bool(true) => args.push(option),
            Value::Bool(false) | Value::Null => {}
            Value::Array(items) => {
                for item in items {
                    args.push(option.clone());
                    args.push(scalar(item));
                }
            }
            other => {
                args.push(option);
                args.push(scalar(other));
            }
        }
    }
    Ok(args)
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Reads `name=value` pairs (as `toolsmith run --param` takes them) into parameters, typed by
/// the manifest's schema: integers, numbers and booleans are parsed; a repeated array
/// parameter collects its values.
pub fn params_from_pairs(
    manifest: &Manifest,
    pairs: &[String],
) -> Result<Map<String, Value>, ParamError> {
    let fail = |problem: String| ParamError {
        tool: manifest.name.clone(),
        problems: vec![problem],
    };
    let known = manifest.params();
    let mut params = Map::new();
    for pair in pairs {
        let Some((name, text)) = pair.split_once('=') else {
            return Err(fail(format!("`{pair}` is not name=value")));
        };
        let name = name.trim().replace('-', "_");
        let Some(schema) = known.get(name.as_str()) else {
            let names: Vec<&str> = known.keys().copied().collect();
            return Err(fail(format!(
                "`{name}` is not a parameter of this tool (its parameters: {})",
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                }
            )));
        };
        let kind = schema
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("string");
        let item_kind = schema
            .get("items")
            .and_then(|i| i.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("string");
        let parse = |kind: &str| -> Result<Value, ParamError> {
            Ok(match kind {
                "integer" => Value::from(
                    text.trim()
                        .parse::<i64>()
                        .map_err(|_| fail(format!("`{name}` wants an integer, got `{text}`")))?,
                ),
                "number" => {
                    let n = text
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .and_then(serde_json::Number::from_f64)
                        .ok_or_else(|| fail(format!("`{name}` wants a number, got `{text}`")))?;
                    Value::Number(n)
                }
                "boolean" => match text.trim() {
                    "true" | "1" | "yes" | "on" => Value::Bool(true),
                    "false" | "0" | "no" | "off" => Value::Bool(false),
                    _ => return Err(fail(format!("`{name}` wants true or false, got `{text}`"))),
                },
                _ => Value::String(text.to_owned()),
            })
        };
        if kind == "array" {
            let item = parse(item_kind)?;
            match params
                .entry(name.clone())
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                Value::Array(items) => items.push(item),
                _ => return Err(fail("an array parameter was given a single value".into())),
            }
        } else {
            let value = parse(kind)?;
            params.insert(name.clone(), value);
        }
    }
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        let text = r#"apiVersion: toolsmith/v1
name: cargo-test-one
version: 1.0.0
description: Run one test of one package.
interface:
  params:
    type: object
    properties:
      package: { type: string, minLength: 1 }
      test_name: { type: string }
      jobs: { type: integer, minimum: 1 }
      release: { type: boolean }
      features: { type: array, items: { type: string } }
    required: [package]
  output: text
runtime: { language: sh, entrypoint: run.sh }
provenance: { origin: request, generator: human, created: 2026-11-22T10:00:00Z }
"#;
        Manifest::parse(text, "t").expect("manifest")
    }

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn parameters_become_options_in_a_stable_order() {
        let m = manifest();
        let args = argv(
            &m,
            &map(serde_json::json!({
                "test_name": "it works; rm -rf /",
                "package": "core",
                "jobs": 4,
                "release": true,
                "features": ["a", "b c"]
            })),
        )
        .expect("valid");
        assert_eq!(
            args,
            [
                "--features",
                "a",
                "--features",
                "b c",
                "--jobs",
                "4",
                "--package",
                "core",
                "--release",
                "--test-name",
                "it works; rm -rf /"
            ]
        );
        let args = argv(
            &m,
            &map(serde_json::json!({"package": "x", "release": false})),
        )
        .expect("valid");
        assert_eq!(args, ["--package", "x"]);
    }

    #[test]
    fn bad_parameters_are_named() {
        let m = manifest();
        for (params, expect) in [
            (serde_json::json!({}), "package"),
            (serde_json::json!({"package": ""}), "package"),
            (
                serde_json::json!({"package": "x", "jobs": 0}),
                "parameter `jobs`",
            ),
            (
                serde_json::json!({"package": "x", "jobs": "many"}),
                "parameter `jobs`",
            ),
            (
                serde_json::json!({"package": "x", "colour": "red"}),
                "`colour` is not one",
            ),
        ] {
            let err = argv(&m, &map(params.clone()))
                .expect_err("refused")
                .to_string();
            assert!(err.contains(expect), "{params}: {err}");
            assert!(err.contains("cargo-test-one"), "{err}");
        }
    }

    #[test]
    fn values_like_options_are_refused_where_the_schema_says_so() {
        let text = r#"apiVersion: toolsmith/v1
name: sort-file
version: 1.0.0
description: Sort a file.
interface:
  params:
    type: object
    properties:
      path: { type: string, minLength: 1, not: { pattern: "^-" } }
      paths: { type: array, items: { type: string, not: { pattern: "^-" } } }
      lines: { type: string }
  output: text
runtime: { language: sh, entrypoint: run.sh }
provenance: { origin: request, generator: human, created: 2026-11-22T10:00:00Z }
"#;
        let m = Manifest::parse(text, "t").expect("manifest");
        let err = argv(&m, &map(serde_json::json!({"path": "--version"})))
            .expect_err("refused")
            .to_string();
        assert!(err.contains("parameter `path`"), "{err}");
        assert!(err.contains("`--version` begins with `-`"), "{err}");
        assert!(
            !err.contains("is not allowed"),
            "one message, not the schema's: {err}"
        );
        let err = argv(&m, &map(serde_json::json!({"paths": ["a", "-rf"]})))
            .expect_err("refused")
            .to_string();
        assert!(err.contains("parameter `paths`: `-rf`"), "{err}");
        // Where the schema does not say so (the log had such values), they pass.
        let args = argv(
            &m,
            &map(serde_json::json!({"lines": "-5", "path": "./--version"})),
        )
        .expect("valid");
        assert_eq!(args, ["--lines", "-5", "--path", "./--version"]);
    }

    #[test]
    fn name_value_pairs_are_typed_by_the_schema() {
        let m = manifest();
        let pairs: Vec<String> = [
            "package=core",
            "jobs=8",
            "release=yes",
            "features=a",
            "features=b",
            "test-name=x=y",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let params = params_from_pairs(&m, &pairs).expect("valid");
        assert_eq!(
            Value::Object(params),
            serde_json::json!({"package": "core", "jobs": 8, "release": true,
                               "features": ["a", "b"], "test_name": "x=y"})
        );
        for (pair, expect) in [
            ("jobs=lots", "wants an integer"),
            ("release=maybe", "wants true or false"),
            ("nope=1", "not a parameter"),
            ("package", "not name=value"),
        ] {
            let err = params_from_pairs(&m, &[pair.to_owned()])
                .expect_err(pair)
                .to_string();
            assert!(err.contains(expect), "{pair}: {err}");
        }
    }
}
