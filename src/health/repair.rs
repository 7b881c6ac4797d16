//! Repairs: healing in one place. A failing or degraded version of a registered tool is
//! repaired from its recorded runs (error templates, new evidence of how its commands are run,
//! regression cases) by preparing a repair spec here and handing it to generation
//! ([`Generator::propose_repair`]), which validates it and proposes it for review like any
//! candidate. Generation runs `Job::Heal` through the [`Healer`] this module implements.

use std::path::Path;
use std::sync::Arc;

use super::actions::{self, ActionKind, ActionTrigger};
use super::executions;
use super::heal;
use super::score::{HealthPolicy, Status};
use crate::config::Config;
use crate::generate::candidates::{self, Candidate, State};
use crate::generate::pipeline::{self, GenerateError, Generator, HealFuture, Healer};
use crate::generate::spec::{HealContext, ToolSpec};
use crate::generate::staging::Staging;
use crate::package::manifest::Origin;
use crate::registry::repo::{Registry, RegistryError};
use crate::store::Store;
use crate::validate::run::ValidatorError;

/// The health stage's repairs, bounded by the policy's `[health]` table.
#[derive(Debug, Clone)]
pub struct Repairs {
    /// What a repair may be made for, and how many times.
    pub policy: HealthPolicy,
}

impl Healer for Repairs {
    fn heal<'a>(&'a self, generator: &'a Generator, tool: &'a str, manual: bool) -> HealFuture<'a> {
        Box::pin(heal(generator, &self.policy, tool, manual))
    }
}

/// A generator as `config` describes it (`generate::pipeline::configured`), repairing tools
/// through the health stage, with the policy's `[health]` table it repairs by.
pub fn configured(
    config: &Config,
    store: Store,
) -> Result<(Generator, HealthPolicy), ValidatorError> {
    let generator = pipeline::configured(config, store)?;
    let policy = HealthPolicy::configured(config.generate.policy.value.as_deref())
        .map_err(|e| ValidatorError::Review(e.to_string()))?;
    let repairs = Repairs {
        policy: policy.clone(),
    };
    Ok((generator.with_healer(Arc::new(repairs)), policy))
}

/// What a repair is made from, read in one go from the store.
struct Gathered {
    health: executions::VersionHealth,
    attempts: u32,
    open: Option<String>,
    spec: Option<ToolSpec>,
    evidence: Vec<heal::EvidenceCommand>,
    cases: Vec<crate::validate::cases::Case>,
}

/// Makes a repair of `tool`'s version on `main` and takes it through validation to review,
/// like any candidate: its failures (error templates with examples) and the new evidence of
/// how its commands are run go to the model; without a model, the templates rewrite its
/// steps from that evidence (a renamed flag). Regression cases from the failing runs join
/// its tests. Attempts are bounded per version (`health.max_heal_attempts`) and each is
/// recorded, made or not.
pub async fn heal(
    generator: &Generator,
    policy: &HealthPolicy,
    tool: &str,
    manual: bool,
) -> Result<Candidate, GenerateError> {
    let trigger = if manual {
        ActionTrigger::Manual
    } else {
        ActionTrigger::Schedule
    };
    let Some(dir) = generator.registry_dir().map(Path::to_path_buf) else {
        return Err(GenerateError::Heal("no registry to repair tools in".into()));
    };
    let name = tool.to_owned();
    let state = generator.state_dir().to_path_buf();
    let (manifest, code) = tokio::task::spawn_blocking(move || {
        let registry = Registry::open(&dir, &state)?;
        let (manifest, dir) = registry.runnable(&name)?;
        let code =
            std::fs::read_to_string(dir.join(&manifest.runtime.entrypoint)).unwrap_or_default();
        Ok::<_, RegistryError>((manifest, code))
    })
    .await
    .map_err(|e| GenerateError::Heal(format!("reading {tool} failed: {e}")))?
    .map_err(|e| GenerateError::Heal(e.to_string()))?;
    let version = manifest.version.to_string();
    let shared = policy.clone();
    let (t, v) = (tool.to_owned(), version.clone());
    let state_dir = generator.state_dir().to_path_buf();
    let gathered = generator
        .store()
        .call(move |conn| {
            let gather = || -> Result<Gathered, GenerateError> {
                let health = executions::version_health(conn, &t, &v, &shared)?;
                let attempts = actions::count(conn, &t, &v, ActionKind::Heal)?;
                let open = candidates::open_repair(conn, &t)?.map(|c| c.id);
                let spec = candidates::made_version(conn, &t, &v)?
                    .and_then(|c| Staging::new(&state_dir, &c.id).spec());
                let evidence = match &spec {
                    Some(spec) => heal::new_evidence(conn, spec)?,
                    None => Vec::new(),
                };
                let cases = heal::regression_cases(conn, &t, &v)?;
                Ok(Gathered {
                    health,
                    attempts,
                    open,
                    spec,
                    evidence,
                    cases,
                })
            };
            Ok(gather())
        })
        .await??;
    let refuse = |why: String| heal_refused(generator, tool, &version, trigger, why);
    if let Some(open) = &gathered.open {
        return Err(GenerateError::Heal(format!(
            "a repair of {tool} is already under way: candidate {open} (`toolsmith show {open}`)"
        )));
    }
    let health = &gathered.health;
    if health.runs == 0 || health.successes == health.runs {
        return Err(GenerateError::Heal(format!(
            "{tool} {version} has no failed run among its last {} ({}): nothing to repair",
            health.runs,
            health.status.as_str()
        )));
    }
    if !manual && !matches!(health.status, Status::Failing | Status::Degraded) {
        return Err(GenerateError::Heal(format!(
            "{tool} {version} is {} ({:.0}): not repaired automatically",
            health.status.as_str(),
            health.score
        )));
    }
    if gathered.attempts >= policy.max_heal_attempts {
        return Err(GenerateError::Heal(format!(
            "{tool} {version}: {} repair attempts made, the most health.max_heal_attempts                  allows; `toolsmith health {tool}` shows them — fix it by hand, or raise the                  bound in the policy",
            gathered.attempts
        )));
    }
    let Some(mut spec) = gathered.spec.clone() else {
        return refuse(format!(
            "{tool} {version} has no generation record here (it was not made by toolsmith on                  this machine, or its staging was removed): repair it by hand and propose it                  with git"
        ))
        .await;
    };
    let patched = heal::patch_spec(&spec, &gathered.evidence);
    let with_model = generator.has_model();
    let how = match (&patched, with_model) {
        (Some(p), false) => format!(
            "steps rewritten from new evidence: {}",
            p.changes.join("; ")
        ),
        (Some(p), true) => format!(
            "repaired by the model, steps already rewritten from new evidence: {}",
            p.changes.join("; ")
        ),
        (None, true) => "repaired by the model from its failures".to_owned(),
        (None, false) => {
            let why = if gathered.evidence.is_empty() {
                "the recorded commands show no new way of running its steps"
            } else {
                "the new evidence changes the steps' shape (options added or removed)"
            };
            return refuse(format!(
                "templates cannot repair {tool} {version}: {why}; configure a model ([llm]                      and generate.backend = \"llm\") or fix it by hand"
            ))
            .await;
        }
    };
    if let Some(p) = &patched {
        spec = p.spec.clone();
    }
    spec.name = tool.to_owned();
    spec.origin = Origin::Heal;
    spec.pattern = None;
    spec.regression_cases = gathered.cases.clone();
    spec.heal = Some(HealContext {
        code,
        failures: health
            .top_errors
            .iter()
            .map(|t| {
                format!(
                    "{} [{}; {} runs] e.g. {}",
                    t.template,
                    t.class.as_str(),
                    t.count,
                    t.examples.join(" | ")
                )
            })
            .collect(),
        new_evidence: gathered.evidence.iter().map(|e| e.line.clone()).collect(),
        steps_repaired: patched.is_some(),
    });
    let made = generator.propose_repair(tool, spec).await?;
    let outcome = match made.state {
        State::AwaitingReview | State::Approved => "proposed",
        _ => "failed",
    };
    let detail = match &made.reason {
        Some(reason) if outcome == "failed" => format!("{how}; {reason}"),
        _ => how,
    };
    let (t, v, id) = (tool.to_owned(), version.clone(), made.id.clone());
    generator
        .db(move |conn| {
            Ok(actions::record(
                conn,
                &t,
                &v,
                ActionKind::Heal,
                trigger,
                outcome,
                Some(&id),
                &detail,
            )?)
        })
        .await?;
    Ok(made)
}

/// Records a repair that could not be made, and says why.
async fn heal_refused(
    generator: &Generator,
    tool: &str,
    version: &str,
    trigger: ActionTrigger,
    why: String,
) -> Result<Candidate, GenerateError> {
    let (t, v, w) = (tool.to_owned(), version.to_owned(), why.clone());
    generator
        .db(move |conn| {
            Ok(actions::record(
                conn,
                &t,
                &v,
                ActionKind::Heal,
                trigger,
                "failed",
                None,
                &w,
            )?)
        })
        .await?;
    Err(GenerateError::Heal(why))
}
