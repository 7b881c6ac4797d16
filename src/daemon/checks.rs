//! The stages' answers to config's questions ([`Checks`]): which source formats ingest reads,
//! and whether a policy file is usable by validation and the sandbox. The daemon wires them
//! because it sits above every stage they ask; config imports none of them.

use crate::config::Checks;

/// The stages' checks of a configuration file.
#[derive(Debug, Clone, Copy, Default)]
pub struct StageChecks;

/// The checks every configuration is loaded with.
pub static STAGES: StageChecks = StageChecks;

impl Checks for StageChecks {
    fn format_names(&self) -> Vec<&'static str> {
        crate::ingest::formats::names()
    }

    fn policy(&self, text: &str, name: &str) -> Result<(), String> {
        crate::validate::policy::CodePolicy::from_toml(text, name)
            .map(|_| ())
            .map_err(|e| e.to_string())?;
        crate::sandbox::SandboxPolicy::from_toml(text, name)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}
