//! The placeholders redaction leaves in an action's text, `[REDACTED:<kind>]`: ingest writes
//! them (`ingest::redact`), mining and generation read them (a word holding one stood for a
//! secret and becomes a parameter, never a literal).

/// How every placeholder starts: `[REDACTED:<kind>]`. A word holding one stood for a secret;
/// mining makes it a parameter, never a literal.
pub const PLACEHOLDER_START: &str = "[REDACTED:";

/// Each placeholder in `text` replaced by what `with` makes of its kind (`None` when there is
/// none).
///
/// ```
/// use toolsmith::action::placeholder::replace_placeholders;
/// let text = "postgres://app:[REDACTED:url-password]@db/prod";
/// let out = replace_placeholders(text, |kind| format!("example-{kind}"));
/// assert_eq!(out.as_deref(), Some("postgres://app:example-url-password@db/prod"));
/// assert_eq!(replace_placeholders("git status", |_| String::new()), None);
/// ```
pub fn replace_placeholders(text: &str, with: impl Fn(&str) -> String) -> Option<String> {
    let mut out = String::new();
    let mut last = 0;
    let mut rest_at = 0;
    while let Some(at) = text[rest_at..].find(PLACEHOLDER_START).map(|n| rest_at + n) {
        let kind_at = at + PLACEHOLDER_START.len();
        let kind_len = text[kind_at..]
            .bytes()
            .take_while(|b| b.is_ascii_lowercase() || *b == b'-')
            .count();
        if kind_len == 0 || text.as_bytes().get(kind_at + kind_len) != Some(&b']') {
            rest_at = kind_at;
            continue;
        }
        out.push_str(&text[last..at]);
        out.push_str(&with(&text[kind_at..kind_at + kind_len]));
        last = kind_at + kind_len + 1;
        rest_at = last;
    }
    if last == 0 {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// The kinds of the placeholders in `text`, in order.
pub fn placeholder_kinds(text: &str) -> Vec<String> {
    let kinds = std::cell::RefCell::new(Vec::new());
    replace_placeholders(text, |kind| {
        kinds.borrow_mut().push(kind.to_owned());
        String::new()
    });
    kinds.into_inner()
}
