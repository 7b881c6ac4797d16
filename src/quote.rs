//! Shell quoting, the one way every stage prints a word for a shell to read back: generated
//! tools' dry runs, the commands a mined pattern replays, and the runs log.

/// Quotes a word the way the generated tools print commands in a dry run: as is when it holds
/// only safe characters, else in single quotes.
///
/// ```
/// use toolsmith::quote::shell_quote;
/// assert_eq!(shell_quote("src/main.rs"), "src/main.rs");
/// assert_eq!(shell_quote("fix the tests"), "'fix the tests'");
/// assert_eq!(shell_quote("it's"), r"'it'\''s'");
/// ```
pub fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:=@%+,~-".contains(&b));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
