//! `toolsmith notices [--session-start]`: the line telling the person that proposals await
//! review, once per proposal. The agents' session-start hooks (`toolsmith install --agents`)
//! run it with `--session-start`, which records what it told and answers in the hooks' JSON.

use std::io::Write;

use serde_json::json;

use super::{Cli, Failure, load_config, output};
use crate::generate::notices::{self, Channel};

/// `toolsmith notices [--session-start]`.
pub(super) fn notices(cli: &Cli, session_start: bool, out: &mut impl Write) -> Result<(), Failure> {
    let config = load_config(cli)?;
    let path = config.store_path();
    // No store yet: nothing was ever proposed, and a hook must not create one.
    if !path.exists() {
        return Ok(());
    }
    let conn = crate::store::open_for_update(&path)?;
    let notice = if session_start {
        notices::claim(
            &conn,
            Channel::SessionStart,
            jiff::Timestamp::now().as_second(),
        )?
    } else {
        notices::pending(&conn, Channel::SessionStart)?
    };
    let line = notice.line();
    if cli.global.json {
        let ids: Vec<&str> = notice.new.iter().map(|c| c.id.as_str()).collect();
        return output::json(
            out,
            &json!({"line": line, "new": ids, "waiting": notice.waiting}),
        );
    }
    let Some(line) = line else {
        return Ok(());
    };
    if session_start {
        // The hooks' answer (Claude Code, Gemini CLI and Codex read the same fields): the
        // line shown to the person, and given to the agent so it can tell them too.
        let answer = json!({
            "systemMessage": line,
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": line,
            },
        });
        writeln!(out, "{answer}")?;
    } else {
        writeln!(out, "{line}")?;
    }
    Ok(())
}
