//! The digest of a tool version's files: what `validation.digest` records, so that a reviewer
//! (and later the registry) can tell the files validated from files changed since.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::manifest::FILE_NAME;

/// The tool's documentation, outside the digest.
pub const README: &str = "README.md";

/// `sha256:<hex>` of a tool's files other than its manifest (which holds the digest) and its
/// `README.md` (documentation, rewritten by a deprecation without touching what was validated),
/// in name order, each as its name, its length and its bytes, so that no two different sets of
/// files hash alike by moving bytes from one file to the next.
///
/// ```
/// use std::collections::BTreeMap;
/// use toolsmith::registry::digest::digest;
/// let mut files = BTreeMap::new();
/// files.insert("run.sh".to_owned(), "echo hi\n".to_owned());
/// let d = digest(&files);
/// assert!(d.starts_with("sha256:") && d.len() == 71);
/// files.insert("tool.yaml".to_owned(), "name: x\n".to_owned());
/// assert_eq!(digest(&files), d, "the manifest is not part of it");
/// ```
pub fn digest(files: &BTreeMap<String, String>) -> String {
    let mut hash = Sha256::new();
    for (name, content) in files
        .iter()
        .filter(|(n, _)| n.as_str() != FILE_NAME && n.as_str() != README)
    {
        hash.update(name.as_bytes());
        hash.update([0u8]);
        hash.update((content.len() as u64).to_le_bytes());
        hash.update(content.as_bytes());
    }
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_and_names_both_count() {
        let files = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(n, c)| ((*n).to_owned(), (*c).to_owned()))
                .collect()
        };
        let a = digest(&files(&[("a", "xy"), ("b", "z")]));
        assert_ne!(a, digest(&files(&[("a", "x"), ("b", "yz")])));
        assert_ne!(a, digest(&files(&[("a", "xy"), ("c", "z")])));
        assert_eq!(a, digest(&files(&[("b", "z"), ("a", "xy")])));
    }
}
