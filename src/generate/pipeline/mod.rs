//! The generation loop: from an opportunity (a mined pattern, a request) to a validated
//! candidate awaiting review, or a failed one with the reason kept.
//!
//! ```text
//! pattern / request ─▶ ToolSpec ─▶ candidate (proposed) ─▶ generating ─▶ attempt-N staged
//!                                                             ▲              │
//!                                     repair prompt (LLM) ────┘         validating
//!                                                                            │
//!                                                     awaiting-review ◀──────┴──▶ failed
//! ```
//!
//! - **Templates** write one attempt: the generator is deterministic, so trying again would
//!   write the same files.
//! - **A model** gets what failed back and tries again, up to `max_attempts`. When it cannot be
//!   used at all (unreachable, rate limited beyond patience, refusing, over budget), a spec with
//!   steps (every mined pattern, a request with examples) is written from templates instead,
//!   and the candidate's reason says so; a request without steps fails with the model's error.
//! - Every attempt's files, the model's raw reply and the diagnostics stay in staging.
//! - A candidate that does what an existing tool (a registered one, or another candidate) does —
//!   the same pattern, the same request, or commands with the same canonical keys as an
//!   approved or awaiting-review candidate's — becomes that tool's next version, not a second
//!   tool.
//! - The process generating a candidate holds its claim (a lock the kernel drops when the
//!   process dies). A stage that is interrupted (the daemon stops, a one-shot `toolsmith new`
//!   is killed) leaves the candidate `generating` or `validating` with nobody holding it;
//!   [`Generator::recover`], called before every run, puts it back to `proposed`, and the next
//!   pass resumes it from its saved spec. A candidate a live process holds is left to it.
//!
//! Store writes go through [`Store::call`] (the one writer); sandbox runs happen on blocking
//! threads; model output is untrusted and never panics anything here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use tokio::sync::watch;

use super::candidates::{self, Asker, Candidate, CandidateError, NewCandidate, State};
use super::from_pattern::SpecError;
use super::llm::gateway::Gateway;
use super::llm::{LlmClient, LlmSettings, Provider, find_api_key};
use super::spec::ToolSpec;
use super::staging::{Staging, StagingError};
use super::template;
use crate::config::{Config, GenerateSettings, LlmConfig};
use crate::events::{Event, EventBus};
use crate::mine::pattern::{self, PatternStatus};
use crate::package::manifest::{self, Manifest, Origin};
use crate::registry::auto::AutoApproval;
use crate::registry::edits::EditFound;
use crate::registry::repo::Registry;
use crate::sandbox::toolchain::{Resolution, UserEnv, resolve};
use crate::sandbox::{Toolchain, WorkspaceAccess};
use crate::store::{Store, StoreError};
use crate::validate::run::{Validator, ValidatorError};

mod attempts;

/// The credential file read from `$CREDENTIALS_DIRECTORY` for the model's API key.
pub const CREDENTIAL_NAME: &str = "llm-api-key";

/// What writes a candidate's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The offline template generator.
    Template,
    /// A language model.
    Llm,
}

/// How generation runs (the `[generate]` table).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// What writes the code.
    pub backend: Backend,
    /// Mined patterns scoring at least this become candidates in a pass.
    pub min_score: f64,
    /// Attempts a model gets.
    pub max_attempts: u32,
    /// Most new candidates made from patterns in one pass.
    pub max_per_run: usize,
}

impl Settings {
    /// The settings of the `[generate]` table.
    pub fn from_config(config: &GenerateSettings) -> Settings {
        Settings {
            backend: if config.backend.value == "llm" {
                Backend::Llm
            } else {
                Backend::Template
            },
            min_score: f64::from(config.min_score.value),
            max_attempts: config.max_attempts.value.max(1),
            max_per_run: config.max_per_run.value.max(1) as usize,
        }
    }
}

/// A model client for the `[llm]` table, with the key from `$CREDENTIALS_DIRECTORY` or the
/// configured environment variable (read through `env`).
pub fn llm_client(
    config: &LlmConfig,
    credentials_dir: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<LlmClient, String> {
    let provider = match config.provider.value.as_str() {
        "anthropic" => Provider::Anthropic,
        _ => Provider::OpenAi,
    };
    if config.model.value.trim().is_empty() {
        return Err("no model is configured: set llm.model".into());
    }
    let mut settings = LlmSettings::new(provider, config.model.value.clone());
    settings.base_url = config.base_url.value.clone();
    settings.api_key = find_api_key(
        &config.api_key_env.value,
        CREDENTIAL_NAME,
        credentials_dir,
        env,
    );
    settings.timeout = std::time::Duration::from_secs(config.timeout_s.value.into());
    settings.max_retries = config.max_retries.value;
    settings.max_tokens = config.max_tokens.value;
    LlmClient::new(settings).map_err(|e| e.to_string())
}

/// A generator as `config` describes it: its backend and model, the policy of
/// `generate.policy` (else the built-in one) for validation and the sandbox, scratch
/// workspaces under `<state>/scratch`, candidates compared with the registry's tools. A model
/// that cannot be set up is not an error here: the generator says why when it falls back.
pub fn configured(config: &Config, store: Store) -> Result<Generator, ValidatorError> {
    let state = config.paths.state.value.clone();
    let scratch = state.join(crate::config::SCRATCH_DIR);
    let mut validator = match &config.generate.policy.value {
        Some(policy) => Validator::from_file(policy, scratch)?,
        None => Validator::with_default_policy(scratch)?,
    };
    validator.own = config.own_places();
    let auto = match &config.generate.policy.value {
        Some(policy) => {
            let text = std::fs::read_to_string(policy).map_err(|source| ValidatorError::Read {
                file: policy.display().to_string(),
                source,
            })?;
            AutoApproval::from_toml(&text, &policy.display().to_string())
        }
        None => AutoApproval::from_toml(
            crate::validate::run::DEFAULT_POLICY,
            crate::sandbox::policy::DEFAULT_FILE,
        ),
    }
    .map_err(|e| ValidatorError::Review(e.to_string()))?;
    let settings = Settings::from_config(&config.generate);
    let llm_wanted = settings.backend == Backend::Llm;
    let mut generator = Generator::new(store.clone(), state, settings, validator)
        .with_registry(config.paths.registry.value.clone())
        .with_user_env(config.user_env())
        .with_shell_definitions(crate::mine::miner::UserShell::from_config(config).definitions);
    generator.auto_approval = auto;
    generator.approve_specs = config.review.approve_specs.value;
    if llm_wanted {
        let credentials = std::env::var_os("CREDENTIALS_DIRECTORY").map(PathBuf::from);
        match llm_client(&config.llm, credentials.as_deref(), |name| {
            std::env::var(name).ok()
        }) {
            Ok(client) => {
                let gateway = Gateway::new(
                    Arc::new(client),
                    store,
                    u64::from(config.llm.daily_token_budget.value),
                );
                generator = generator.with_llm(gateway);
            }
            Err(problem) => generator = generator.with_llm_problem(problem),
        }
    }
    Ok(generator)
}

/// What a generation run is asked to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Job {
    /// Resume candidates waiting in `proposed`, then make candidates of the new patterns that
    /// score above the threshold.
    Pending,
    /// Make a candidate of this pattern, whatever its score.
    Pattern(String),
    /// Make a candidate of a person's request.
    Request {
        /// What the tool should do.
        text: String,
        /// Example commands.
        examples: Vec<String>,
        /// The id the candidate takes, given to the asker before generation began (an agent's
        /// `toolsmith_request` answers with it at once); none: a fresh one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Who asked, when an agent did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        asker: Option<Asker>,
    },
    /// Make a repair of a registered tool's version on `main`, through the [`Healer`] the health
    /// stage hands the generator (`health::repair::heal`).
    Heal {
        /// The tool.
        tool: String,
        /// Whether a person asked (`toolsmith heal`) rather than the scheduled health check.
        manual: bool,
    },
    /// Make a candidate of a registered tool's files as they are on `main`, when they are not
    /// an approved version (see [`Generator::adopt`]).
    Adopt {
        /// The tool.
        tool: String,
    },
    /// Make candidates of the people's edits on review branches (`toolsmith edit`, or commits
    /// by hand on `review/<tool>/<version>`) not validated yet (see [`Generator::edits`]).
    Edits,
    /// A person accepts the spec of a request awaiting spec review (`toolsmith approve-spec`):
    /// recorded, then the candidate is generated.
    AcceptSpec {
        /// The candidate.
        id: String,
    },
    /// A person rejects the spec of a request awaiting spec review (`toolsmith reject-spec`).
    RejectSpec {
        /// The candidate.
        id: String,
        /// Why: kept as the candidate's reason.
        reason: String,
    },
}

/// The origin of a candidate made by [`Generator::adopt`].
pub const ADOPT: &str = "adopt";

/// The origin of a candidate made of a person's edit ([`Generator::edits`]).
pub const EDIT: &str = "edit";

/// How the reason of an edit's candidate interrupted before it was proposed begins: its commit
/// is validated again.
const EDIT_INTERRUPTED: &str = "interrupted before it was proposed";

/// Whether the commit of `c`, a candidate made of an edit, is to be validated again: its
/// validation was interrupted (every other outcome stands until the branch moves).
pub fn to_validate_again(c: &Candidate) -> bool {
    c.state == State::Failed
        && c.reason
            .as_deref()
            .is_some_and(|r| r.starts_with(EDIT_INTERRUPTED))
}

/// What a proposal's commit says besides its files: why it was made, its trailers, and
/// whether a policy rule may approve it without a person.
#[derive(Debug, Clone)]
struct Pitch {
    why: String,
    trailers: Vec<(String, String)>,
    auto: bool,
    /// The person's edit it proposes (on the edit's own branch), for an `edit` candidate.
    edit: Option<EditFound>,
}

/// Why a run could not go on. A candidate that fails is not an error: it ends `failed` with
/// its reason.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A candidate could not change state.
    #[error(transparent)]
    Candidate(#[from] CandidateError),
    /// No spec could be built.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// No such pattern.
    #[error("no pattern `{0}`: `toolsmith patterns` lists them")]
    UnknownPattern(String),
    /// A repair cannot be made (what to do is in the text).
    #[error("{0}")]
    Heal(String),
    /// A tool cannot be adopted (what to do is in the text).
    #[error("{0}")]
    Adopt(String),
    /// A request only a model can write, and none is configured.
    #[error(
        "`toolsmith new` without --example needs the LLM backend: set generate.backend = \
         \"llm\" and llm.model in the configuration{0}, or give the commands the tool should run \
         with --example (templates then write it offline)"
    )]
    NeedsModel(String),
    /// The staging area could not be written.
    #[error(transparent)]
    Staging(#[from] StagingError),
    /// The run was stopped (the daemon is shutting down); interrupted candidates resume later.
    #[error("generation was interrupted; the candidate resumes when generation runs again")]
    Cancelled,
    /// Another live process is generating the candidate.
    #[error("candidate {0} is being generated by another process")]
    Busy(String),
}

/// How one candidate ended up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateReport {
    /// The candidate.
    pub id: String,
    /// The tool it would be.
    pub tool: String,
    /// The version it would become.
    pub version: Option<String>,
    /// Where it stands.
    pub state: State,
    /// Why.
    pub reason: Option<String>,
    /// Attempts made.
    pub attempts: u32,
    /// What wrote the last attempt.
    pub generator: Option<String>,
}

impl From<&Candidate> for CandidateReport {
    fn from(c: &Candidate) -> Self {
        CandidateReport {
            id: c.id.clone(),
            tool: c.tool.clone(),
            version: c.version.clone(),
            state: c.state,
            reason: c.reason.clone(),
            attempts: c.attempts,
            generator: c.generator.clone(),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// The candidates worked on, in order.
    pub candidates: Vec<CandidateReport>,
    /// What was left alone, and why.
    pub skipped: Vec<String>,
}

/// A tool known already: registered, or a candidate (a failed or rejected one still holds its
/// name, so that listings never show two tools of one name, but no version).
#[derive(Debug, Clone)]
struct Known {
    name: String,
    /// The version it has or would become; `None` for a candidate given up.
    version: Option<semver::Version>,
    pattern: Option<String>,
    request: Option<String>,
    description: String,
    /// The canonical keys of its commands, for an approved or awaiting-review candidate (what
    /// it does is known to work).
    keys: Vec<String>,
}

/// A repair's future, as a [`Healer`] returns it.
pub type HealFuture<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Candidate, GenerateError>> + Send + 'a>,
>;

/// Repairs of registered tools. Healing is the health stage's (above generation): it reads the
/// runs, decides whether a repair may be made, prepares its spec and hands it back to
/// [`Generator::propose_repair`]. Generation declares this so that `Job::Heal` runs through it.
pub trait Healer: Send + Sync {
    /// Makes a repair of `tool`'s version on `main` with `generator` (`manual`: a person asked).
    fn heal<'a>(&'a self, generator: &'a Generator, tool: &'a str, manual: bool) -> HealFuture<'a>;
}

/// The generation loop. Cheap to share behind an `Arc`; one run at a time.
pub struct Generator {
    store: Store,
    state_dir: PathBuf,
    registry_dir: Option<PathBuf>,
    settings: Settings,
    llm: Option<Gateway>,
    llm_problem: Option<String>,
    validator: Arc<Validator>,
    events: Option<EventBus>,
    cancel: Option<watch::Receiver<bool>>,
    /// The policy's auto-approval rules (none by default).
    pub auto_approval: AutoApproval,
    /// The health stage's repairs, through which `Job::Heal` runs (none: refused).
    healer: Option<Arc<dyn Healer>>,
    /// Whether a requested candidate waits with its spec for a person before generation
    /// (`[review] approve_specs`).
    pub approve_specs: bool,
    /// Where the user's programs come from: a spec's required programs are resolved here
    /// into the toolchains its manifest binds.
    user_env: UserEnv,
    /// The user's shell definitions, which mining read the lines through: the log's lines are
    /// read through them again for the tests' expectations (`gia x` ran `git add x`).
    definitions: Arc<crate::mine::defs::ShellDefinitions>,
}

impl std::fmt::Debug for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator")
            .field("state_dir", &self.state_dir)
            .field("settings", &self.settings)
            .field("llm", &self.llm.as_ref().map(Gateway::model))
            .finish()
    }
}

/// The user's toolchains the programs `spec` requires come from: each program resolved on the
/// user's `PATH` as their shell would; those in a system directory, not found, or in nothing the
/// sandbox can show need no entry (validation's requires check names what is missing). The
/// interpreter of a Python tool is the system's `python3`.
pub fn toolchains_for(spec: &ToolSpec, user: &UserEnv) -> Vec<Toolchain> {
    let writable = spec.sandbox.workspace == WorkspaceAccess::Write;
    spec.requires
        .iter()
        .filter(|p| !(spec.language == manifest::Language::Python && p.as_str() == "python3"))
        .filter_map(|program| match resolve(program, user, writable) {
            Resolution::Toolchain { toolchain, .. } => Some(toolchain),
            Resolution::Unusable { why, .. } => {
                tracing::info!(tool = %spec.name, %program, "no toolchain to bind: {why}");
                None
            }
            Resolution::NotFound | Resolution::System { .. } => None,
        })
        .collect()
}

/// Holds a model's tool to the log: the dry-run case of every occurrence the log gives
/// ([`template::logged_cases`]) goes into the tests it wrote, in place of any case of the same
/// name, so a tool that reorders, drops or adds a word of what was run fails validation
/// whatever tests its writer chose. A tests file that does not read is left for validation to
/// report. A repair whose steps the evidence did not repair is not held to them: what was run
/// before is what stopped working (a renamed flag), and the model is asked for the new way.
fn with_logged_cases(
    mut files: BTreeMap<String, String>,
    spec: &ToolSpec,
) -> BTreeMap<String, String> {
    use crate::validate::cases::{CASES_FILE, Cases};
    if spec.heal.as_ref().is_some_and(|h| !h.steps_repaired) {
        return files;
    }
    let logged = template::logged_cases(spec);
    if logged.is_empty() {
        return files;
    }
    let mut cases = match files.get(CASES_FILE).map(|t| Cases::parse(t, CASES_FILE)) {
        Some(Ok(cases)) => cases,
        Some(Err(_)) => return files,
        None => Cases { cases: Vec::new() },
    };
    cases
        .cases
        .retain(|c| !logged.iter().any(|l| l.name == c.name));
    cases.cases.extend(logged);
    files.insert(CASES_FILE.to_owned(), cases.to_json());
    files
}

/// Adds a repair's regression cases to the tests a generator wrote (a file that does not read is
/// left for validation to report).
fn with_regression_cases(
    mut files: BTreeMap<String, String>,
    extra: &[crate::validate::cases::Case],
) -> BTreeMap<String, String> {
    use crate::validate::cases::{CASES_FILE, Cases};
    if extra.is_empty() {
        return files;
    }
    let Some(Ok(mut cases)) = files.get(CASES_FILE).map(|t| Cases::parse(t, CASES_FILE)) else {
        return files;
    };
    for case in extra {
        if !cases.cases.iter().any(|c| c.name == case.name) {
            cases.cases.push(case.clone());
        }
    }
    files.insert(CASES_FILE.to_owned(), cases.to_json());
    files
}

/// Normalises a request's text for comparison.
fn same_text(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.split_whitespace()
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
            .join(" ")
    };
    norm(a) == norm(b)
}

impl Generator {
    /// A generator writing candidates under `state_dir/staging` and recording them in `store`.
    pub fn new(store: Store, state_dir: PathBuf, settings: Settings, validator: Validator) -> Self {
        Generator {
            store,
            state_dir,
            registry_dir: None,
            settings,
            llm: None,
            llm_problem: None,
            validator: Arc::new(validator),
            events: None,
            cancel: None,
            auto_approval: AutoApproval::default(),
            healer: None,
            approve_specs: false,
            user_env: UserEnv::from_process(None),
            definitions: Arc::default(),
        }
    }

    /// Reads the log's command lines through the user's shell definitions, as mining did.
    pub fn with_shell_definitions(
        mut self,
        definitions: Arc<crate::mine::defs::ShellDefinitions>,
    ) -> Self {
        self.definitions = definitions;
        self
    }

    /// Resolves the programs a tool requires in `user` (the user's `PATH`, `[sandbox] path`)
    /// rather than in this process's environment.
    pub fn with_user_env(mut self, user: UserEnv) -> Self {
        self.user_env = user;
        self
    }

    /// Uses `gateway` when the backend is `llm`.
    pub fn with_llm(mut self, gateway: Gateway) -> Self {
        self.llm = Some(gateway);
        self
    }

    /// Records why the configured model cannot be used (mentioned when falling back).
    pub fn with_llm_problem(mut self, problem: String) -> Self {
        self.llm_problem = Some(problem);
        self
    }

    /// Compares candidates with the tools registered under `dir` (`tools/<name>/tool.yaml`).
    pub fn with_registry(mut self, dir: PathBuf) -> Self {
        self.registry_dir = Some(dir);
        self
    }

    /// Publishes `candidate.*` events on `events`.
    pub fn with_events(mut self, events: EventBus) -> Self {
        self.events = Some(events);
        self
    }

    /// Stops between stages (and during a model call) once `cancel` turns true.
    pub fn with_cancel(mut self, cancel: watch::Receiver<bool>) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Runs `Job::Heal` through `healer` (the health stage's repairs).
    pub fn with_healer(mut self, healer: Arc<dyn Healer>) -> Self {
        self.healer = Some(healer);
        self
    }

    fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| *c.borrow())
    }

    fn publish(&self, event: Event) {
        if let Some(events) = &self.events {
            events.publish(event);
        }
    }

    /// Runs `f` on the store's writer.
    /// Runs `f` on the store's connection, its errors as a generation error.
    pub async fn db<R, F>(&self, f: F) -> Result<R, GenerateError>
    where
        R: Send + 'static,
        F: FnOnce(&mut rusqlite::Connection) -> Result<R, CandidateError> + Send + 'static,
    {
        Ok(self.store.call(move |conn| Ok(f(conn))).await??)
    }

    async fn transition(
        &self,
        id: &str,
        to: State,
        reason: Option<String>,
    ) -> Result<Candidate, GenerateError> {
        let id = id.to_owned();
        let c = self
            .db(move |conn| candidates::transition(conn, &id, to, reason.as_deref()))
            .await?;
        self.publish(Event::CandidateMoved(c.event_info()));
        Ok(c)
    }

    /// Puts candidates left `generating` or `validating` by a process that is gone back to
    /// `proposed`, to be resumed by the next run; those a live process holds stay its own.
    /// Returns their ids.
    pub async fn recover(&self) -> Result<Vec<String>, GenerateError> {
        let state_dir = self.state_dir.clone();
        let ids = self
            .db(move |conn| candidates::recover_interrupted(conn, &state_dir))
            .await?;
        for id in &ids {
            tracing::info!(candidate = %id, "interrupted candidate put back to proposed");
        }
        Ok(ids)
    }

    /// Does `job`, after putting back what an interrupted process left half-way.
    pub async fn run(&self, job: Job) -> Result<Report, GenerateError> {
        self.recover().await?;
        let mut report = Report::default();
        match job {
            Job::Edits => {
                report
                    .candidates
                    .extend(self.edits().await?.iter().map(CandidateReport::from));
            }
            Job::Pending => {
                // People's edits first: a person is waiting for them.
                report
                    .candidates
                    .extend(self.edits().await?.iter().map(CandidateReport::from));
                let waiting = self
                    .db(|conn| candidates::in_state(conn, State::Proposed))
                    .await?;
                for c in waiting {
                    if self.cancelled() {
                        return Err(GenerateError::Cancelled);
                    }
                    let done = match self.resume(c).await {
                        Err(GenerateError::Busy(id)) => {
                            report
                                .skipped
                                .push(format!("candidate {id} is being generated elsewhere"));
                            continue;
                        }
                        done => done?,
                    };
                    report.candidates.push(CandidateReport::from(&done));
                }
                let min = self.settings.min_score;
                let patterns = self
                    .db(|conn| Ok(pattern::list_patterns(conn, None, 10_000)?))
                    .await?;
                let mut made = 0;
                for stored in patterns {
                    if made >= self.settings.max_per_run {
                        break;
                    }
                    // Listed best first: the rest score lower still.
                    if stored.pattern.score < min {
                        break;
                    }
                    // Not a habit (one command, or neighbours by chance): kept, shown with its
                    // reason by `toolsmith patterns ID`, judged again at the next mining run,
                    // made only when a person asks for it.
                    if stored.status != PatternStatus::New || stored.pattern.not_a_habit().is_some()
                    {
                        continue;
                    }
                    if self.cancelled() {
                        return Err(GenerateError::Cancelled);
                    }
                    match self.make_from_pattern(&stored.pattern).await {
                        Ok(Some(c)) => {
                            made += 1;
                            report.candidates.push(CandidateReport::from(&c));
                        }
                        Ok(None) => {}
                        Err(GenerateError::Spec(e)) => {
                            // A pattern no tool can be made of is not proposed again.
                            let id = stored.pattern.id.clone();
                            let reason = e.to_string();
                            report.skipped.push(reason.clone());
                            self.db(move |conn| {
                                Ok(pattern::set_status(
                                    conn,
                                    &id,
                                    PatternStatus::Rejected,
                                    Some(&reason),
                                )?)
                            })
                            .await?;
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            Job::Pattern(id) => {
                let lookup = id.clone();
                let stored = self
                    .db(move |conn| Ok(pattern::get_pattern(conn, &lookup)?))
                    .await?
                    .ok_or(GenerateError::UnknownPattern(id.clone()))?;
                let pid = id.clone();
                if let Some(open) = self
                    .db(move |conn| candidates::open_for_pattern(conn, &pid))
                    .await?
                {
                    report.skipped.push(format!(
                        "pattern {id} already has candidate {} ({}, {})",
                        open.id, open.tool, open.state
                    ));
                    return Ok(report);
                }
                if let Some(c) = self.make_from_pattern(&stored.pattern).await? {
                    report.candidates.push(CandidateReport::from(&c));
                }
            }
            Job::Request {
                text,
                examples,
                id,
                asker,
            } => {
                let asked = id.zip(asker);
                let c = self.make_from_request(&text, &examples, asked).await?;
                report.candidates.push(CandidateReport::from(&c));
            }
            Job::Heal { tool, manual } => {
                let Some(healer) = self.healer.clone() else {
                    return Err(GenerateError::Heal(
                        "no health stage to repair tools with (see `health::repair::configured`)"
                            .into(),
                    ));
                };
                let c = healer.heal(self, &tool, manual).await?;
                report.candidates.push(CandidateReport::from(&c));
            }
            Job::Adopt { tool } => {
                let c = self.adopt(&tool).await?;
                report.candidates.push(CandidateReport::from(&c));
            }
            Job::AcceptSpec { id } => {
                let by = self.reviewer().await;
                let c = self
                    .db(move |conn| candidates::accept_spec(conn, &id, &by))
                    .await?;
                self.publish(Event::CandidateMoved(c.event_info()));
                let c = self.resume(c).await?;
                report.candidates.push(CandidateReport::from(&c));
            }
            Job::RejectSpec { id, reason } => {
                let c = self
                    .db(move |conn| candidates::reject_spec(conn, &id, &reason))
                    .await?;
                self.publish(Event::CandidateMoved(c.event_info()));
                report.candidates.push(CandidateReport::from(&c));
            }
        }
        Ok(report)
    }

    /// Who is deciding, as approvals name the approver (the registry's git identity, else the
    /// login name).
    async fn reviewer(&self) -> String {
        let fallback = || {
            std::env::var("USER")
                .or_else(|_| std::env::var("LOGNAME"))
                .unwrap_or_else(|_| "unknown".into())
        };
        let Some(dir) = self.registry_dir.clone() else {
            return fallback();
        };
        let state = self.state_dir.clone();
        tokio::task::spawn_blocking(move || Registry::open(&dir, &state).map(|r| r.approver()))
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_else(fallback)
    }

    /// Makes a candidate of `tool`'s files as they are on `main` when they are not an approved
    /// version (committed by hand, a manifest widened, a tag missing): the files are taken as
    /// they are — the manifest's profile too, never rewritten — validated in the sandbox like
    /// any candidate's, and proposed for review, where the diff is against the version approved
    /// last. Approving it tags those files, and `main` is an approved version again. A policy
    /// rule never approves it: a person does.
    pub async fn adopt(&self, tool: &str) -> Result<Candidate, GenerateError> {
        let Some(dir) = self.registry_dir.clone() else {
            return Err(GenerateError::Adopt(
                "no registry to adopt tools from".into(),
            ));
        };
        let name = tool.to_owned();
        let state = self.state_dir.clone();
        let found = tokio::task::spawn_blocking(move || {
            let registry = Registry::open(&dir, &state)?;
            registry.reconcile()?;
            registry.unapproved(&name)
        })
        .await
        .map_err(|e| GenerateError::Adopt(format!("reading {tool} failed: {e}")))?
        .map_err(|e| GenerateError::Adopt(e.to_string()))?;
        let t = tool.to_owned();
        if let Some(open) = self
            .db(move |conn| candidates::open_for_tool(conn, &t, ADOPT))
            .await?
        {
            return Err(GenerateError::Adopt(format!(
                "{tool} is being adopted already: candidate {} is {} (`toolsmith show {}`)",
                open.id, open.state, open.id
            )));
        }
        let mut files = found.files;
        for name in files.keys() {
            super::staging::check_name(name).map_err(|e| {
                GenerateError::Adopt(format!(
                    "tools/{tool}/{name} cannot be part of a candidate: {e}; rename it, or roll \
                     the tool back (`toolsmith rollback {tool}`)"
                ))
            })?;
        }
        let text = files.get(manifest::FILE_NAME).cloned().unwrap_or_default();
        let mut manifest =
            Manifest::parse(&text, &format!("tools/{tool}/tool.yaml")).map_err(|e| {
                GenerateError::Adopt(format!(
                    "{e}; a candidate needs a manifest that reads: fix it on main, or roll the \
                     tool back (`toolsmith rollback {tool}`)"
                ))
            })?;
        if manifest.name != tool {
            return Err(GenerateError::Adopt(format!(
                "tools/{tool}/tool.yaml names the tool `{}`; a tool's directory and name must \
                 match",
                manifest.name
            )));
        }
        // Validation writes the record; what wrote the files is a person. The profile (the
        // interface, the runtime and the sandbox) stays as it is: it is what is validated and
        // what the reviewer sees.
        manifest.validation = None;
        manifest.provenance.generator = "human".into();
        files.insert(manifest::FILE_NAME.to_owned(), manifest.to_yaml());
        let version = manifest.version.clone();
        let new = NewCandidate {
            tool: tool.to_owned(),
            origin: ADOPT.to_owned(),
            pattern: None,
            request: None,
        };
        let v = version.to_string();
        let c = self
            .db(move |conn| {
                let c = candidates::create(conn, &new)?;
                candidates::set_version(conn, &c.id, &v)?;
                candidates::get(conn, &c.id)
            })
            .await?;
        self.publish(Event::CandidateProposed {
            candidate: c.event_info(),
            origin: ADOPT.to_owned(),
        });
        let c = self
            .transition(&c.id, State::Generating, Some("adopted from main".into()))
            .await?;
        let staging = Staging::new(&self.state_dir, &c.id);
        let (outcome, attempt) = match self.attempt(&c, &staging, files, "human", &version).await {
            Ok(done) => done,
            Err(GenerateError::Cancelled) => return Err(GenerateError::Cancelled),
            Err(e) => return self.fail(&c.id, e.to_string()).await,
        };
        if !outcome.passed() {
            let reason = format!(
                "{}; see `toolsmith show {} --attempts`; fix the files on main and adopt again, or \
                 roll the tool back (`toolsmith rollback {tool}`)",
                outcome.summary(),
                c.id
            );
            return self.fail(&c.id, reason).await;
        }
        let compared = match &found.approved {
            Some(tag) => format!(" The review diff is against {tag}, the version approved last."),
            None => " No version of it was approved before.".to_owned(),
        };
        let pitch = Pitch {
            why: format!(
                "Adopted from main ({}): tools/{tool} there is not an approved version: {}. \
                 These are its files as they are on main, validated in the sandbox; approving \
                 them makes main an approved version again.{compared}",
                &found.main[..12.min(found.main.len())],
                found.problem
            ),
            trailers: vec![
                ("Origin".into(), ADOPT.into()),
                ("Adopted-from".into(), found.main.clone()),
                (
                    "Tests".into(),
                    format!(
                        "{} passed, {} failed in the sandbox",
                        outcome.tests.passed, outcome.tests.failed
                    ),
                ),
                ("Generator".into(), "human".into()),
            ],
            auto: false,
            edit: None,
        };
        self.accept(&c, &staging, attempt, &outcome, None, Some(pitch))
            .await
    }

    /// Makes a candidate of each person's edit waiting on a review branch (a commit made in
    /// `toolsmith edit`'s worktree, or by hand on `review/<tool>/<version>`) that no candidate
    /// was made of: its files, read from the commit by its id, are validated in the sandbox as
    /// they are (origin `edit`, the commit's author kept) and proposed on the edit's branch
    /// ([`Registry::propose_edit`]: only while the branch is still that commit). A commit is
    /// validated once; a branch that moves holds a new commit, validated again, and the
    /// candidate of the commit before is failed as superseded. A policy rule never approves an
    /// edit: a person does.
    pub async fn edits(&self) -> Result<Vec<Candidate>, GenerateError> {
        let Some(dir) = self.registry_dir.clone() else {
            return Ok(Vec::new());
        };
        let state = self.state_dir.clone();
        let found = tokio::task::spawn_blocking(move || {
            let registry = Registry::open(&dir, &state)?;
            registry
                .edits()?
                .into_iter()
                .map(|e| {
                    let files = registry.edit_files(&e);
                    Ok((e, files))
                })
                .collect::<Result<Vec<_>, crate::registry::repo::RegistryError>>()
        })
        .await
        .map_err(|e| GenerateError::Adopt(format!("reading the edits failed: {e}")))?;
        let found = match found {
            Ok(found) => found,
            Err(e) => {
                // No registry yet (or one that cannot be read): no edit to make.
                tracing::debug!("no edits read: {e}");
                return Ok(Vec::new());
            }
        };
        let mut made = Vec::new();
        for (edit, files) in found {
            if self.cancelled() {
                return Err(GenerateError::Cancelled);
            }
            let commit = edit.commit.clone();
            if self
                .db(move |conn| candidates::for_edit_commit(conn, &commit))
                .await?
                .is_some_and(|c| !to_validate_again(&c))
            {
                continue;
            }
            made.push(self.make_from_edit(edit, files).await?);
        }
        Ok(made)
    }

    async fn make_from_edit(
        &self,
        edit: EditFound,
        files: Result<BTreeMap<String, String>, crate::registry::repo::RegistryError>,
    ) -> Result<Candidate, GenerateError> {
        let tool = edit.name.clone();
        // The edit before on the same branch, still open, is superseded by this one.
        let (t, branch) = (tool.clone(), edit.branch.clone());
        let superseded = format!(
            "superseded: {} moved to commit {}, which is validated instead",
            edit.branch,
            &edit.commit[..12.min(edit.commit.len())]
        );
        let before = self
            .db(move |conn| {
                let open = candidates::open_for_tool(conn, &t, EDIT)?;
                Ok(open.filter(|c| {
                    c.version
                        .as_deref()
                        .is_some_and(|v| branch.ends_with(&format!("/{v}")))
                }))
            })
            .await?;
        if let Some(before) = before
            && before.state == State::AwaitingReview
        {
            self.transition(&before.id, State::Failed, Some(superseded))
                .await?;
        }
        let new = NewCandidate {
            tool: tool.clone(),
            origin: EDIT.to_owned(),
            pattern: None,
            request: None,
        };
        let recorded = candidates::Edit {
            commit: edit.commit.clone(),
            author: edit.author.clone(),
        };
        let version = edit.version.clone();
        let c = self
            .db(move |conn| {
                let c = candidates::create(conn, &new)?;
                candidates::set_version(conn, &c.id, &version)?;
                candidates::set_edit(conn, &c.id, &recorded)?;
                candidates::get(conn, &c.id)
            })
            .await?;
        self.publish(Event::CandidateProposed {
            candidate: c.event_info(),
            origin: EDIT.to_owned(),
        });
        let c = self
            .transition(
                &c.id,
                State::Generating,
                Some(format!(
                    "{}'s edit, commit {} on {}",
                    edit.author,
                    &edit.commit[..12.min(edit.commit.len())],
                    edit.branch
                )),
            )
            .await?;
        let fix = format!(
            "fix it and commit again on {} (`toolsmith show {} --attempts` says what failed)",
            edit.branch, c.id
        );
        let mut files = match files {
            Ok(files) => files,
            Err(e) => return self.fail(&c.id, format!("{e}; {fix}")).await,
        };
        for name in files.keys() {
            if let Err(e) = super::staging::check_name(name) {
                let why = format!("tools/{tool}/{name} cannot be part of a candidate: {e}; {fix}");
                return self.fail(&c.id, why).await;
            }
        }
        let text = files.get(manifest::FILE_NAME).cloned().unwrap_or_default();
        let mut manifest = match Manifest::parse(&text, &format!("tools/{tool}/tool.yaml")) {
            Ok(m) => m,
            Err(e) => return self.fail(&c.id, format!("{e}; {fix}")).await,
        };
        if manifest.name != tool {
            let why = format!(
                "tools/{tool}/tool.yaml names the tool `{}`; a tool's directory and name must                  match; {fix}",
                manifest.name
            );
            return self.fail(&c.id, why).await;
        }
        let Ok(version) = semver::Version::parse(&edit.version) else {
            let why = format!("{} does not name a version; {fix}", edit.branch);
            return self.fail(&c.id, why).await;
        };
        // Validation writes its record; the version is the branch's; the rest — the interface,
        // the runtime, the sandbox — is the person's, validated as it is.
        manifest.validation = None;
        manifest.version = version.clone();
        manifest.provenance.generator = "human".into();
        files.insert(manifest::FILE_NAME.to_owned(), manifest.to_yaml());
        let staging = Staging::new(&self.state_dir, &c.id);
        let (outcome, attempt) = match self.attempt(&c, &staging, files, "human", &version).await {
            Ok(done) => done,
            Err(GenerateError::Cancelled) => return Err(GenerateError::Cancelled),
            Err(e) => return self.fail(&c.id, e.to_string()).await,
        };
        if !outcome.passed() {
            let reason = format!("{}; {fix}", outcome.summary());
            return self.fail(&c.id, reason).await;
        }
        let pitch = Pitch {
            why: format!(
                "Edited by {} in commit {} on {} (\"{}\"), validated in the sandbox as it is.",
                edit.author, edit.commit, edit.branch, edit.subject
            ),
            trailers: vec![
                ("Origin".into(), EDIT.into()),
                ("Edited-by".into(), edit.author.clone()),
                ("Edited-in".into(), edit.commit.clone()),
                (
                    "Tests".into(),
                    format!(
                        "{} passed, {} failed in the sandbox",
                        outcome.tests.passed, outcome.tests.failed
                    ),
                ),
                ("Generator".into(), "human".into()),
            ],
            auto: false,
            edit: Some(edit),
        };
        self.accept(&c, &staging, attempt, &outcome, None, Some(pitch))
            .await
    }

    /// Makes a candidate of a repair's `spec` (the health stage prepares it: see
    /// `health::repair`) under `tool`'s name and its next version, and takes it through
    /// validation to review like any candidate.
    pub async fn propose_repair(
        &self,
        tool: &str,
        spec: ToolSpec,
    ) -> Result<Candidate, GenerateError> {
        let known = self.known().await?;
        let (_, next) = Self::name_and_version(tool, |k| k.name == tool, &known);
        let new = NewCandidate {
            tool: tool.to_owned(),
            origin: Origin::Heal.as_str().to_owned(),
            pattern: None,
            request: None,
        };
        let c = self.create(new, &spec, &next).await?;
        self.process(c, spec, next, &known).await
    }

    /// The registry this generator proposes to, when it has one.
    pub fn registry_dir(&self) -> Option<&Path> {
        self.registry_dir.as_deref()
    }

    /// The state directory (staging lives under it).
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The store candidates are recorded in.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Whether a model writes the code (the LLM backend, set up).
    pub fn has_model(&self) -> bool {
        self.settings.backend == Backend::Llm && self.llm.is_some()
    }

    /// The tools known already: registered ones and every candidate (one given up keeps its
    /// name taken, but has no version to follow).
    async fn known(&self) -> Result<Vec<Known>, GenerateError> {
        let listed = self.db(|conn| candidates::list(conn)).await?;
        let mut known: Vec<Known> = listed
            .into_iter()
            .map(|c| {
                let given_up = matches!(c.state, State::Failed | State::Rejected);
                let spec = Staging::new(&self.state_dir, &c.id).spec();
                let works = matches!(c.state, State::Approved | State::AwaitingReview);
                let keys = spec
                    .as_ref()
                    .filter(|_| works)
                    .map(|s| s.keys.clone())
                    .unwrap_or_default();
                let description = spec.map(|s| s.description).unwrap_or_default();
                Known {
                    version: c
                        .version
                        .as_deref()
                        .filter(|_| !given_up)
                        .and_then(|v| semver::Version::parse(v).ok()),
                    name: c.tool,
                    pattern: c.pattern,
                    request: c.request,
                    description,
                    keys,
                }
            })
            .collect();
        if let Some(dir) = &self.registry_dir
            && let Ok(entries) = std::fs::read_dir(dir.join("tools"))
        {
            // `tools/` also holds the registry's `.gitkeep`: only directories are tools.
            for entry in entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            {
                match Manifest::load(&entry.path()) {
                    Ok(m) => known.push(Known {
                        name: m.name,
                        version: Some(m.version),
                        pattern: m.provenance.pattern,
                        request: None,
                        description: m.description,
                        keys: Vec::new(),
                    }),
                    Err(e) => tracing::warn!("registry tool not read: {e}"),
                }
            }
        }
        Ok(known)
    }

    /// The name and version for a spec: an existing tool doing the same (same pattern, same
    /// request, or the same canonical keys as a working candidate) gets its next version;
    /// otherwise a name no other tool has, version 1.0.0.
    fn name_and_version(
        spec_name: &str,
        same: impl Fn(&Known) -> bool,
        known: &[Known],
    ) -> (String, semver::Version) {
        if let Some(existing) = known.iter().find(|k| same(k)) {
            let latest = known
                .iter()
                .filter(|k| k.name == existing.name)
                .filter_map(|k| k.version.clone())
                .max();
            let version = match latest {
                Some(v) => semver::Version::new(v.major, v.minor + 1, 0),
                None => semver::Version::new(1, 0, 0),
            };
            return (existing.name.clone(), version);
        }
        let name =
            super::from_pattern::unique_name(spec_name, &|n| known.iter().any(|k| k.name == n));
        (name, semver::Version::new(1, 0, 0))
    }

    /// Makes and generates a candidate of `p`; `None` when one is already under way.
    async fn make_from_pattern(
        &self,
        p: &pattern::Pattern,
    ) -> Result<Option<Candidate>, GenerateError> {
        let pid = p.id.clone();
        if let Some(open) = self
            .db(move |conn| candidates::open_for_pattern(conn, &pid))
            .await?
        {
            tracing::debug!(pattern = %p.id, candidate = %open.id, "already a candidate");
            return Ok(None);
        }
        let known = self.known().await?;
        let mut spec = ToolSpec::from_pattern(p, &|n| known.iter().any(|k| k.name == n))?;
        self.attach_log(&mut spec).await?;
        let (name, version) = Self::name_and_version(
            &spec.name,
            |k| k.pattern.as_deref() == Some(p.id.as_str()) || spec.same_keys(&k.keys),
            &known,
        );
        spec.name = name;
        let new = NewCandidate {
            tool: spec.name.clone(),
            origin: spec.origin.as_str().to_owned(),
            pattern: Some(p.id.clone()),
            request: None,
        };
        let c = self.create(new, &spec, &version).await?;
        let pid = p.id.clone();
        let cid = c.id.clone();
        self.db(move |conn| {
            Ok(pattern::set_status(
                conn,
                &pid,
                PatternStatus::Proposed,
                Some(&format!("candidate {cid}")),
            )?)
        })
        .await?;
        Ok(Some(self.process(c, spec, version, &known).await?))
    }

    async fn make_from_request(
        &self,
        text: &str,
        examples: &[String],
        asked: Option<(String, Asker)>,
    ) -> Result<Candidate, GenerateError> {
        let known = self.known().await?;
        let mut spec =
            ToolSpec::from_request(text, examples, &|n| known.iter().any(|k| k.name == n))?;
        let has_steps = !spec.steps.is_empty() || spec.trigger_step.is_some();
        if !has_steps && (self.settings.backend != Backend::Llm || self.llm.is_none()) {
            let why = match (&self.settings.backend, &self.llm_problem) {
                (Backend::Llm, Some(problem)) => format!(" (the model is not usable: {problem})"),
                _ => String::new(),
            };
            return Err(GenerateError::NeedsModel(why));
        }
        let (name, version) = Self::name_and_version(
            &spec.name,
            |k| k.request.as_deref().is_some_and(|r| same_text(r, text)) || spec.same_keys(&k.keys),
            &known,
        );
        spec.name = name;
        let new = NewCandidate {
            tool: spec.name.clone(),
            origin: Origin::Request.as_str().to_owned(),
            pattern: None,
            request: spec.request.clone(),
        };
        let c = match asked {
            Some((id, asker)) => {
                self.create_requested(new, &spec, &version, id, asker)
                    .await?
            }
            None => self.create(new, &spec, &version).await?,
        };
        self.process(c, spec, version, &known).await
    }

    /// [`Self::create`] for a request an agent made: the candidate takes the id the agent was
    /// given, and records who asked.
    async fn create_requested(
        &self,
        new: NewCandidate,
        spec: &ToolSpec,
        version: &semver::Version,
        id: String,
        asker: Asker,
    ) -> Result<Candidate, GenerateError> {
        let v = version.to_string();
        let c = self
            .db(move |conn| {
                let c = candidates::create_requested(conn, &new, &id, &asker)?;
                candidates::set_version(conn, &c.id, &v)?;
                candidates::get(conn, &c.id)
            })
            .await?;
        self.staged(c, spec).await
    }

    async fn create(
        &self,
        new: NewCandidate,
        spec: &ToolSpec,
        version: &semver::Version,
    ) -> Result<Candidate, GenerateError> {
        let v = version.to_string();
        let c = self
            .db(move |conn| {
                let c = candidates::create(conn, &new)?;
                candidates::set_version(conn, &c.id, &v)?;
                candidates::get(conn, &c.id)
            })
            .await?;
        self.staged(c, spec).await
    }

    /// Saves a new candidate's spec in staging (failing the candidate when it cannot be) and
    /// announces it.
    async fn staged(&self, c: Candidate, spec: &ToolSpec) -> Result<Candidate, GenerateError> {
        if let Err(e) = Staging::new(&self.state_dir, &c.id).write_spec(spec) {
            let id = c.id.clone();
            let reason = format!("its spec could not be saved: {e}");
            self.db(move |conn| candidates::transition(conn, &id, State::Failed, Some(&reason)))
                .await?;
            return Err(e.into());
        }
        self.publish(Event::CandidateProposed {
            candidate: c.event_info(),
            origin: c.origin.clone(),
        });
        Ok(c)
    }
}
