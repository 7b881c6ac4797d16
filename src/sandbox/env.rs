//! The command's environment: an allow-list, never the caller's environment minus a deny-list,
//! so a secret in a variable nobody thought of (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, an
//! agent's API key) never reaches generated code.

use super::grants::{HostPort, url_host};

/// The sandbox's `PATH`: system directories only, the ones the view contains.
pub(crate) const PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

/// Variables copied from the caller when set and harmless: locale, terminal type, time zone.
const PASSED: [&str; 4] = ["LANG", "LC_ALL", "TERM", "TZ"];

/// Longest value copied from the caller: a locale or a zone name is short; more is not one.
const MAX_PASSED_LEN: usize = 128;

/// Whether `name` is a portable environment variable name.
pub(crate) fn valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Builds the command's environment: `PATH`, `HOME`, `TMPDIR`, `LANG` (default `C.UTF-8`) and
/// the caller's `LC_ALL`, `TERM` and `TZ` when they look like what they claim, then the
/// explicit variables, which replace any of the same name. `host` reads the caller's
/// environment, so this is tested without touching the process's own.
pub(crate) fn environment(
    host: &dyn Fn(&str) -> Option<String>,
    home: &str,
    tmpdir: &str,
    explicit: &[(String, String)],
) -> Result<Vec<(String, String)>, String> {
    let mut env: Vec<(String, String)> = vec![
        ("PATH".into(), PATH.into()),
        ("HOME".into(), home.into()),
        ("TMPDIR".into(), tmpdir.into()),
    ];
    for name in PASSED {
        let value = host(name).filter(|v| {
            !v.is_empty()
                && v.len() <= MAX_PASSED_LEN
                && v.bytes().all(|b| b.is_ascii_graphic() && b != b'\\')
        });
        match value {
            Some(v) => env.push((name.into(), v)),
            None if name == "LANG" => env.push((name.into(), "C.UTF-8".into())),
            None => {}
        }
    }
    for (name, value) in explicit {
        if !valid_name(name) {
            return Err(format!(
                "environment variable name {name:?} is not valid: use letters, digits and _, \
                 not starting with a digit"
            ));
        }
        if value.contains('\0') {
            return Err(format!(
                "environment variable {name} contains a NUL byte, which execve cannot pass"
            ));
        }
        env.retain(|(n, _)| n != name);
        env.push((name.clone(), value.clone()));
    }
    Ok(env)
}

/// Package managers' index settings passed to a run with a network grant, when set: the
/// index a habit's package manager used is part of what the habit did. A URL is passed only
/// when its `host:port` is granted and it carries no credentials; the flags only with a URL.
const INDEX_URLS: [&str; 4] = [
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "NPM_CONFIG_REGISTRY",
    "npm_config_registry",
];

/// pip's flags that say how it installs (not where from), passed with a granted index.
const INDEX_FLAGS: [&str; 3] = [
    "PIP_BREAK_SYSTEM_PACKAGES",
    "PIP_DISABLE_PIP_VERSION_CHECK",
    "PIP_NO_CACHE_DIR",
];

/// The package index settings of the caller to pass to a run granted `hosts` (see
/// [`INDEX_URLS`]).
pub(crate) fn index_variables(
    host: &dyn Fn(&str) -> Option<String>,
    hosts: &[HostPort],
) -> Vec<(String, String)> {
    let mut vars = Vec::new();
    for name in INDEX_URLS {
        let Some(value) = host(name) else { continue };
        let urls: Vec<&str> = value.split_whitespace().collect();
        let granted = !urls.is_empty()
            && urls
                .iter()
                .all(|u| url_host(u).is_some_and(|h| hosts.contains(&h)));
        if granted && !value.contains('\0') {
            vars.push((name.to_owned(), value));
        }
    }
    if !vars.is_empty() {
        for name in INDEX_FLAGS {
            if let Some(value) = host(name).filter(|v| v.len() <= 16 && !v.contains('\0')) {
                vars.push((name.to_owned(), value));
            }
        }
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str) -> Option<String> {
        match name {
            "LANG" => Some("de_DE.UTF-8".into()),
            "TERM" => Some("xterm-256color".into()),
            "TZ" => Some("Europe/Berlin\n; rm -rf /".into()),
            "GITHUB_TOKEN" => Some("ghp_secret".into()),
            "HOME" => Some("/home/alice".into()),
            _ => None,
        }
    }

    #[test]
    fn only_the_allow_list_passes() {
        let explicit = [("TOOLSMITH_DRY_RUN".to_string(), "1".to_string())];
        let env = environment(&host, "/work", "/tmp", &explicit).expect("valid");
        let names: Vec<&str> = env.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "PATH",
                "HOME",
                "TMPDIR",
                "LANG",
                "TERM",
                "TOOLSMITH_DRY_RUN"
            ]
        );
        let get = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("HOME"), Some("/work"), "never the caller's home");
        assert_eq!(get("LANG"), Some("de_DE.UTF-8"));
        assert_eq!(
            get("TZ"),
            None,
            "a value with control characters is dropped"
        );
        assert_eq!(get("GITHUB_TOKEN"), None);
        assert_eq!(get("PATH"), Some(PATH));
    }

    #[test]
    fn defaults_and_overrides() {
        let none = |_: &str| None;
        let explicit = [
            ("LANG".to_string(), "C".to_string()),
            ("PATH".to_string(), "/tool:/usr/bin".to_string()),
        ];
        let env = environment(&none, "/w", "/t", &explicit).expect("valid");
        assert_eq!(
            env,
            [
                ("HOME".to_string(), "/w".to_string()),
                ("TMPDIR".into(), "/t".into()),
                ("LANG".into(), "C".into()),
                ("PATH".into(), "/tool:/usr/bin".into()),
            ]
        );
        let env = environment(&none, "/w", "/t", &[]).expect("valid");
        assert!(env.contains(&("LANG".into(), "C.UTF-8".into())));
    }

    #[test]
    fn bad_explicit_variables_are_refused() {
        let none = |_: &str| None;
        for (name, value) in [
            ("1X", "v"),
            ("A-B", "v"),
            ("", "v"),
            ("A=B", "v"),
            ("OK", "a\0b"),
        ] {
            let err = environment(&none, "/w", "/t", &[(name.into(), value.into())]);
            assert!(err.is_err(), "{name:?}={value:?}");
        }
        assert!(valid_name("_X1") && valid_name("TOOLSMITH_DRY_RUN"));
    }

    #[test]
    fn granted_package_indexes_pass_and_nothing_else() {
        let granted = vec![HostPort::parse("127.0.0.1:8080", false).unwrap()];
        let host = |name: &str| match name {
            "PIP_INDEX_URL" => Some("http://127.0.0.1:8080/simple".to_owned()),
            "PIP_EXTRA_INDEX_URL" => Some("https://pypi.org/simple".to_owned()),
            "npm_config_registry" => Some("http://u:secret@127.0.0.1:8080/".to_owned()),
            "PIP_BREAK_SYSTEM_PACKAGES" => Some("1".to_owned()),
            _ => None,
        };
        assert_eq!(
            index_variables(&host, &granted),
            vec![
                (
                    "PIP_INDEX_URL".to_owned(),
                    "http://127.0.0.1:8080/simple".to_owned()
                ),
                ("PIP_BREAK_SYSTEM_PACKAGES".to_owned(), "1".to_owned()),
            ]
        );
        assert!(index_variables(&host, &[]).is_empty());
        assert_eq!(
            url_host("https://pypi.org/simple")
                .map(|h| h.to_string())
                .as_deref(),
            Some("pypi.org:443")
        );
        assert_eq!(
            url_host("http://[::1]:81/x")
                .map(|h| h.to_string())
                .as_deref(),
            Some("[::1]:81")
        );
        assert_eq!(url_host("ftp://x.org/"), None);
    }
}
