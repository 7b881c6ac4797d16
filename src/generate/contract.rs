//! The output contract a model must follow, and its strict reader.
//!
//! A reply is a sequence of file blocks and nothing else (blank lines between them are fine):
//!
//! `````text
//! ````file run.sh
//! #!/bin/sh
//! …
//! ````
//! ````file README.md
//! …
//! ````
//! `````
//!
//! A block opens with a fence of three or more backticks followed by `file <name>`, and closes
//! with a line holding only a fence at least as long. Four backticks let a README contain
//! ordinary three-backtick code blocks. Only the names asked for are accepted, each at most once;
//! anything else — prose around the blocks, an unknown or duplicate name, a block that never
//! closes, a missing file — is a failure with a diagnosis that goes back to the model.

use std::collections::BTreeMap;

/// Largest file accepted from a model.
pub const MAX_FILE_BYTES: usize = 256 * 1024;

/// Why a reply does not follow the contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the reply does not follow the output contract: {problem}")]
pub struct ContractError {
    /// What is wrong, with the line it was found on.
    pub problem: String,
}

fn fail(problem: String) -> ContractError {
    ContractError { problem }
}

/// The contract as told to the model, for the files `names`.
pub fn instructions(names: &[&str]) -> String {
    let list = names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "Answer with exactly these files and nothing else: {list}. Write each file as a block \
         that starts with a line of four backticks followed by `file` and the file name (for \
         example ````file {first}) and ends with a line of four backticks. No text before, \
         between or after the blocks.",
        first = names.first().copied().unwrap_or("run.sh")
    )
}

/// Reads the files of a reply. `names` are the files asked for; all of them must be present.
pub fn parse(reply: &str, names: &[&str]) -> Result<BTreeMap<String, String>, ContractError> {
    let mut files = BTreeMap::new();
    let mut lines = reply.lines().enumerate();
    while let Some((number, line)) = lines.next() {
        let line_no = number + 1;
        if line.trim().is_empty() {
            continue;
        }
        let ticks = line.bytes().take_while(|&b| b == b'`').count();
        let rest = line[ticks..].trim();
        let Some(name) = rest
            .strip_prefix("file")
            .map(str::trim)
            .filter(|_| ticks >= 3)
        else {
            let shown: String = line.chars().take(80).collect();
            return Err(fail(format!(
                "line {line_no} is outside any file block: `{shown}`; answer with file blocks only"
            )));
        };
        if !names.contains(&name) {
            return Err(fail(format!(
                "line {line_no} opens a block for `{}`, which was not asked for (asked: {})",
                name.chars().take(80).collect::<String>(),
                names.join(", ")
            )));
        }
        if files.contains_key(name) {
            return Err(fail(format!("line {line_no}: `{name}` is given twice")));
        }
        let mut body = String::new();
        let mut closed = false;
        for (_, inner) in lines.by_ref() {
            let inner_ticks = inner.bytes().take_while(|&b| b == b'`').count();
            if inner_ticks >= ticks && inner[inner_ticks..].trim().is_empty() {
                closed = true;
                break;
            }
            body.push_str(inner);
            body.push('\n');
            if body.len() > MAX_FILE_BYTES {
                return Err(fail(format!(
                    "`{name}` is over {MAX_FILE_BYTES} bytes; keep tools small"
                )));
            }
        }
        if !closed {
            return Err(fail(format!(
                "the block for `{name}` opened on line {line_no} is never closed (a line of {ticks} \
                 backticks)"
            )));
        }
        files.insert(name.to_owned(), body);
    }
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !files.contains_key(*n))
        .collect();
    if !missing.is_empty() {
        return Err(fail(format!("missing file(s): {}", missing.join(", "))));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &[&str] = &["run.sh", "tests/cases.json", "README.md"];

    fn reply(parts: &[(&str, &str)]) -> String {
        parts
            .iter()
            .map(|(name, body)| format!("````file {name}\n{body}````\n"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn files_are_read_with_inner_fences_kept() {
        let readme = "# t\n\n```sh\ntoolsmith run t\n```\n";
        let text = reply(&[
            ("run.sh", "#!/bin/sh\necho hi\n"),
            ("tests/cases.json", "{\"cases\": []}\n"),
            ("README.md", readme),
        ]);
        let files = parse(&text, NAMES).expect("valid");
        assert_eq!(files["run.sh"], "#!/bin/sh\necho hi\n");
        assert_eq!(files["README.md"], readme);
        // Three-backtick fences work too when the body has none.
        let text = "```file run.sh\necho\n```\n```file tests/cases.json\n{}\n```\n```file README.md\nx\n```";
        assert_eq!(parse(text, NAMES).expect("valid").len(), 3);
    }

    #[test]
    fn anything_else_is_diagnosed() {
        let good = reply(&[
            ("run.sh", "echo\n"),
            ("tests/cases.json", "{}\n"),
            ("README.md", "x\n"),
        ]);
        let cases = [
            (
                format!("Here you go:\n{good}"),
                "line 1 is outside any file block",
            ),
            (
                format!("{good}\nHope this helps!"),
                "outside any file block",
            ),
            (
                good.replace("file README.md", "file ../../etc/passwd"),
                "not asked for",
            ),
            (
                format!("{good}````file run.sh\necho\n````\n"),
                "given twice",
            ),
            (good.replace("x\n````", "x\n"), "never closed"),
            (
                reply(&[("run.sh", "echo\n"), ("README.md", "x\n")]),
                "missing file(s): tests/cases.json",
            ),
            (String::new(), "missing file(s)"),
            (
                reply(&[
                    ("run.sh", &"x".repeat(MAX_FILE_BYTES + 10)),
                    ("tests/cases.json", "{}"),
                    ("README.md", ""),
                ]),
                "over",
            ),
        ];
        for (text, expect) in cases {
            let err = parse(&text, NAMES).expect_err("refused");
            assert!(err.to_string().contains(expect), "{expect}: {err}");
        }
    }

    /// A model never writes the manifest, so it cannot grant a tool a toolchain, a network
    /// host or a host socket (or anything else of the sandbox profile): what a tool may reach
    /// is derived from the evidence, and a reply carrying a manifest is refused whole.
    #[test]
    fn a_manifest_from_the_model_is_refused() {
        for manifest in [
            "sandbox:\n  toolchains:\n    - { program: sh, kind: local-bin, paths: [/home/u] }\n",
            "sandbox:\n  hosts: [\"evil.example:443\"]\n  host_sockets: [/run/docker.sock]\n",
        ] {
            let text = reply(&[
                ("run.sh", "echo\n"),
                ("tests/cases.json", "{}\n"),
                ("README.md", "x\n"),
                ("tool.yaml", manifest),
            ]);
            let err = parse(&text, NAMES).expect_err("refused");
            assert!(
                err.to_string()
                    .contains("`tool.yaml`, which was not asked for"),
                "{err}"
            );
        }
    }

    #[test]
    fn the_instructions_name_every_file() {
        let text = instructions(NAMES);
        for name in NAMES {
            assert!(text.contains(name));
        }
    }
}
