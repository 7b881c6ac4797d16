//! Token keys interned as dense `u32` symbols: the alphabet sequence mining works on.

use std::collections::HashMap;

use thiserror::Error;

/// Why a key could not be interned.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum InternError {
    /// Every `u32` is already in use.
    #[error("more than {} distinct tokens", u32::MAX)]
    Full,
}

/// Maps token keys to dense `u32` symbols (0, 1, 2, … in first-seen order) and back.
#[derive(Debug, Clone, Default)]
pub struct Interner {
    ids: HashMap<String, u32>,
    keys: Vec<String>,
}

impl Interner {
    /// An empty interner.
    pub fn new() -> Self {
        Interner::default()
    }

    /// The symbol of `key`, assigning the next one if the key is new.
    pub fn intern(&mut self, key: &str) -> Result<u32, InternError> {
        if let Some(&id) = self.ids.get(key) {
            return Ok(id);
        }
        let id = u32::try_from(self.keys.len()).map_err(|_| InternError::Full)?;
        self.ids.insert(key.to_owned(), id);
        self.keys.push(key.to_owned());
        Ok(id)
    }

    /// The symbol of `key`, if it was interned.
    pub fn get(&self, key: &str) -> Option<u32> {
        self.ids.get(key).copied()
    }

    /// The key of a symbol.
    pub fn resolve(&self, id: u32) -> Option<&str> {
        self.keys.get(usize::try_from(id).ok()?).map(String::as_str)
    }

    /// How many keys are interned.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key is interned.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Every interned key, indexed by symbol.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interner_assigns_dense_ids() {
        let mut interner = Interner::new();
        assert!(interner.is_empty());
        let a = interner.intern("cargo test -p <string>").unwrap();
        let b = interner.intern("git status").unwrap();
        assert_eq!((a, b), (0, 1));
        assert_eq!(interner.intern("cargo test -p <string>"), Ok(0));
        assert_eq!(interner.get("git status"), Some(1));
        assert_eq!(interner.get("nope"), None);
        assert_eq!(interner.resolve(1), Some("git status"));
        assert_eq!(interner.resolve(2), None);
        assert_eq!(interner.len(), 2);
        assert_eq!(interner.keys(), ["cargo test -p <string>", "git status"]);
    }

    #[test]
    fn every_interned_key_resolves_back_to_itself() {
        let keys = [
            "git status",
            "cargo test -p <string>",
            "git status",
            "Read <path>",
            "",
        ];
        let mut interner = Interner::new();
        let ids: Vec<u32> = keys
            .iter()
            .map(|k| interner.intern(k).expect("room for a symbol"))
            .collect();
        assert_eq!(ids, [0, 1, 0, 2, 3]);
        for (key, id) in keys.iter().zip(&ids) {
            assert_eq!(interner.resolve(*id), Some(*key));
            assert_eq!(interner.get(key), Some(*id));
        }
        assert_eq!(interner.len(), 4);
    }
}
