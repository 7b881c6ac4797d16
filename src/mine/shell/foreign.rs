//! Lines in another shell's language: PowerShell and `cmd.exe`, as agents on Windows run them
//! (Codex's `shell_command` there is PowerShell). Many such lines are also valid POSIX syntax
//! (`Get-ChildItem -Force` is a command with one flag), so the grammar cannot tell them apart:
//! markers that a POSIX line does not have can.

/// PowerShell's approved verbs that agents' cmdlets start with (`Get-Content`, `Set-Location`).
const VERBS: &[&str] = &[
    "Add",
    "Clear",
    "Compare",
    "Compress",
    "ConvertFrom",
    "ConvertTo",
    "Copy",
    "Disable",
    "Enable",
    "Expand",
    "Export",
    "Find",
    "ForEach",
    "Format",
    "Get",
    "Group",
    "Import",
    "Install",
    "Invoke",
    "Join",
    "Measure",
    "Move",
    "New",
    "Out",
    "Pop",
    "Push",
    "Read",
    "Register",
    "Remove",
    "Rename",
    "Resolve",
    "Restart",
    "Select",
    "Set",
    "Sort",
    "Split",
    "Start",
    "Stop",
    "Test",
    "Uninstall",
    "Unregister",
    "Update",
    "Wait",
    "Where",
    "Write",
];

/// `cmd.exe` built-ins that take `/x` switches.
const CMD_BUILTINS: &[&str] = &[
    "dir", "del", "erase", "rd", "rmdir", "copy", "xcopy", "robocopy", "move", "md", "mkdir",
    "ren", "type", "findstr", "where", "set", "tasklist", "taskkill",
];

/// The other shell `line` is written for, if it has a marker of one.
pub(super) fn foreign_shell(line: &str) -> Option<&'static str> {
    if is_powershell(line) {
        return Some("powershell");
    }
    if is_cmd(line) {
        return Some("cmd");
    }
    None
}

fn is_powershell(line: &str) -> bool {
    let bytes = line.as_bytes();
    // `$env:NAME`: an environment variable.
    if memchr::memmem::find(bytes, b"$env:").is_some() {
        return true;
    }
    // A cmdlet, `Verb-Noun`, where a command starts.
    if line.contains('-') && command_starts(line).any(is_cmdlet) {
        return true;
    }
    // `$name = …` starting a statement, `@(…)`/`@{…}`, a backtick ending a line (PowerShell's
    // line continuation).
    for statement in line.lines() {
        let s = statement.trim_start();
        if let Some(rest) = s.strip_prefix('$') {
            let name = rest
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                .count();
            if name > 0
                && rest.as_bytes().get(name..).is_some_and(|after| {
                    let after = after.trim_ascii_start();
                    after.starts_with(b"=") && !after.starts_with(b"==")
                })
            {
                return true;
            }
        }
        if s.trim_end().ends_with(" `") {
            return true;
        }
    }
    memchr::memmem::find(bytes, b"= @(").is_some() || memchr::memmem::find(bytes, b"= @{").is_some()
}

/// The first word of each command of `line`, roughly: after the start, a newline, `;`, `|`,
/// `&&`, `||`, `{` or `(`.
fn command_starts(line: &str) -> impl Iterator<Item = &str> {
    line.split(['\n', ';', '|', '&', '{', '('])
        .filter_map(|part| part.split_ascii_whitespace().next())
}

fn is_cmdlet(word: &str) -> bool {
    let Some((verb, noun)) = word.split_once('-') else {
        return false;
    };
    VERBS.contains(&verb)
        && noun.len() > 1
        && noun.starts_with(|c: char| c.is_ascii_uppercase())
        && noun.bytes().all(|b| b.is_ascii_alphanumeric())
}

fn is_cmd(line: &str) -> bool {
    let mut words = line.split_ascii_whitespace();
    let first = words.next().unwrap_or("");
    let second = words.next().unwrap_or("");
    // `cmd /c …`, `cmd.exe /k …`.
    let program = first.trim_matches('"').to_ascii_lowercase();
    if matches!(program.as_str(), "cmd" | "cmd.exe")
        && matches!(
            second.to_ascii_lowercase().as_str(),
            "/c" | "/k" | "/s" | "/q"
        )
    {
        return true;
    }
    // `dir /s /b`, `del /q x`: a built-in with a switch.
    if CMD_BUILTINS.contains(&program.as_str())
        && line.split_ascii_whitespace().skip(1).any(is_switch)
    {
        return true;
    }
    // `%NAME%`: a variable.
    has_percent_variable(line)
}

/// `/s`, `/b`, `/Q`, `/AD`: a letter or two after a slash, nothing else.
fn is_switch(word: &str) -> bool {
    word.strip_prefix('/')
        .is_some_and(|s| (1..=2).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphabetic()))
}

/// `%USERPROFILE%`, `%cd%`: two or more name characters between percent signs (one is a
/// `date +%Y%m%d` format, not a variable).
fn has_percent_variable(line: &str) -> bool {
    let bytes = line.as_bytes();
    let mut at = 0;
    while let Some(open) = memchr::memchr(b'%', bytes.get(at..).unwrap_or(&[])) {
        let start = at + open + 1;
        let name = bytes
            .get(start..)
            .unwrap_or(&[])
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .count();
        if name >= 2
            && bytes.get(start + name) == Some(&b'%')
            && bytes.get(start).is_some_and(|b| b.is_ascii_alphabetic())
        {
            return true;
        }
        at = start;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::foreign_shell;

    #[test]
    fn powershell_and_cmd_lines_are_recognised() {
        for line in [
            "Get-ChildItem -Force",
            "Get-Content -Raw C:\\Users\\me\\SKILL.md",
            "if (Test-Path \"$env:USERPROFILE\\.x\") { 'yes' } else { 'no' }",
            "$ErrorActionPreference='SilentlyContinue'\n$exports = @()",
            "Set-Location src; Write-Host done",
            "npm test | Select-String error",
            "git status `\n  --short",
        ] {
            assert_eq!(foreign_shell(line), Some("powershell"), "{line}");
        }
        for line in [
            "cmd /c dir",
            "cmd.exe /C \"npm test\"",
            "dir /s /b *.rs",
            "del /q build\\out.txt",
            "echo %USERPROFILE%",
            "cd %CD%\\src",
        ] {
            assert_eq!(foreign_shell(line), Some("cmd"), "{line}");
        }
    }

    #[test]
    fn posix_lines_are_not_foreign() {
        for line in [
            "cargo test -p core",
            "date +%Y%m%d%H",
            "printf '%s%s\\n' a b",
            "git log --format=%H%n",
            "get-deps --all",
            "Get-foo -x",
            "x=$(ls) && [ \"$x\" = y ]",
            "ls /tmp /s",
            "echo $HOME == $env",
            "bash ~/.claude/skills/export-session.sh .",
            "awk '{print $1}' f",
            "curl -X POST -H 'Content-Type: application/json' http://x",
        ] {
            assert_eq!(foreign_shell(line), None, "{line}");
        }
    }
}
