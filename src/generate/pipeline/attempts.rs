//! A candidate's attempts: from its saved spec to files written by the templates or a model,
//! validated in the sandbox, then accepted for review or failed with the reason kept (a
//! model's attempt that fails is repaired, up to `max_attempts`).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{
    ADOPT, Backend, GenerateError, Generator, Known, Pitch, toolchains_for, with_logged_cases,
    with_regression_cases,
};
use crate::action::stored::actions_between;
use crate::events::Event;
use crate::generate::candidates::{Candidate, State};
use crate::generate::llm::LlmError;
use crate::generate::llm::gateway::Gateway;
use crate::generate::logged::Recorded;
use crate::generate::prompt::SimilarTool;
use crate::generate::spec::ToolSpec;
use crate::generate::staging::Staging;
use crate::generate::{candidates, contract, logged, prompt, template};
use crate::ingest::store::provenance;
use crate::mine::pattern;
use crate::package::manifest::{self, Manifest, Origin};
use crate::registry::auto::AutoApproval;
use crate::registry::repo::{Landed, Proposal, Registry, RegistryError, Review};
use crate::validate::report::{CheckLayer, CheckReport, Diagnostics};
use crate::validate::run::Outcome;

impl Generator {
    /// Generates a candidate found waiting in `proposed` (new, or put back after an
    /// interruption) from its saved spec, or from its pattern when the spec was lost.
    pub(super) async fn resume(&self, c: Candidate) -> Result<Candidate, GenerateError> {
        if c.origin == ADOPT {
            // Its files were main's at the time: taken again, not from an old copy.
            let why = format!(
                "interrupted before it was proposed; adopt it again: `toolsmith adopt {}`",
                c.tool
            );
            return self.transition(&c.id, State::Failed, Some(why)).await;
        }
        if c.origin == super::EDIT {
            // Its files are its commit's: read again from the commit by the next look at the
            // edits, not from a copy.
            let why = format!(
                "{}; its commit is validated again by the next `toolsmith generate` (the daemon \
                 does it when it starts)",
                super::EDIT_INTERRUPTED
            );
            return self.transition(&c.id, State::Failed, Some(why)).await;
        }
        let mut spec = Staging::new(&self.state_dir, &c.id).spec();
        if spec.is_none()
            && let Some(pid) = c.pattern.clone()
        {
            let stored = self
                .db(move |conn| Ok(pattern::get_pattern(conn, &pid)?))
                .await?;
            spec = stored.and_then(|s| ToolSpec::from_pattern(&s.pattern, &|_| false).ok());
        }
        if let Some(spec) = spec.as_mut()
            && spec.origin != Origin::Request
            && spec.occurrences.iter().all(|o| o.logged.is_empty())
        {
            // Saved before the log's commands were kept with it: read them now.
            self.attach_log(spec).await?;
        }
        let Some(mut spec) = spec else {
            return self
                .transition(
                    &c.id,
                    State::Failed,
                    Some(
                        "its spec was lost (no spec.json in staging and no pattern to rebuild \
                          it from); make it again with `toolsmith generate` or `toolsmith new`"
                            .into(),
                    ),
                )
                .await;
        };
        spec.name = c.tool.clone();
        let version = c
            .version
            .as_deref()
            .and_then(|v| semver::Version::parse(v).ok())
            .unwrap_or_else(|| semver::Version::new(1, 0, 0));
        let known = self.known().await?;
        self.process(c, spec, version, &known).await
    }

    /// Reads what the log recorded for each of `spec`'s occurrences (ingest's own reading of
    /// the actions in each occurrence's range) into the occurrences, which the derived tests
    /// then expect word for word.
    pub(super) async fn attach_log(&self, spec: &mut ToolSpec) -> Result<(), GenerateError> {
        let ranges: Vec<(String, u64, u64)> = spec
            .occurrences
            .iter()
            .map(|o| {
                (
                    o.evidence.session.clone(),
                    o.evidence.first_seq,
                    o.evidence.last_seq,
                )
            })
            .collect();
        let definitions = Arc::clone(&self.definitions);
        let recorded = self
            .db(move |conn| {
                let mut all = Vec::with_capacity(ranges.len());
                for (session, first, last) in &ranges {
                    let actions = actions_between(conn, session, *first, *last)?;
                    all.push(
                        actions
                            .iter()
                            .map(|a| Recorded::from_stored(a).through(&definitions, &a.source))
                            .collect(),
                    );
                }
                Ok(all)
            })
            .await?;
        logged::attach(spec, &recorded);
        Ok(())
    }

    /// Where `spec`'s first occurrences were read, one line each (`session S: actions 12–14
    /// (/logs/s.jsonl lines 120, 125)`): what a reviewer opens to check the habit.
    pub(super) async fn read_from(&self, spec: &ToolSpec) -> Result<Vec<String>, GenerateError> {
        let ranges: Vec<(String, u64, u64)> = spec
            .occurrences
            .iter()
            .take(EVIDENCE_TRAILERS)
            .map(|o| {
                (
                    o.evidence.session.clone(),
                    o.evidence.first_seq,
                    o.evidence.last_seq,
                )
            })
            .collect();
        self.db(move |conn| {
            let mut lines = Vec::with_capacity(ranges.len());
            for (session, first, last) in &ranges {
                let place = provenance(conn, session, *first, *last)?;
                // A trailer is one line, whatever a path holds.
                let line: String = format!("session {session}: {place}")
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect();
                lines.push(line);
            }
            Ok(lines)
        })
        .await
    }

    /// Generates and validates a proposed candidate until it awaits review or fails.
    pub(super) async fn process(
        &self,
        c: Candidate,
        mut spec: ToolSpec,
        version: semver::Version,
        known: &[Known],
    ) -> Result<Candidate, GenerateError> {
        // The profile a generator writes fits the policy: validation refuses one above its
        // maxima (a slow habit's wall limit is three times its duration, unbounded by it).
        spec.sandbox.limits = self.validator.sandbox_policy.clamp(spec.sandbox.limits).0;
        // What the tool may reach is derived here, from where its programs come from for the
        // user, never written by a generator or a model; validation checks it against the
        // policy's grants.
        spec.sandbox.toolchains = toolchains_for(&spec, &self.user_env);
        // What the tool may reach comes from the evidence (the package indexes its package
        // managers are configured with, the git remotes it names), never from a generator;
        // validation refuses what the policy's [grants] does not list, naming the line.
        spec.sandbox.hosts = super::super::reach::hosts(&spec, &super::super::reach::current());
        spec.sandbox.host_sockets =
            super::super::reach::sockets(&spec, &super::super::reach::current());
        let staging = Staging::new(&self.state_dir, &c.id);
        if self.approve_specs
            && c.origin == Origin::Request.as_str()
            && c.spec_accepted.is_none()
            && c.state == State::Proposed
        {
            // A person asked to see what a requested tool will do before anything is written:
            // the spec is kept as it would be generated (what it may reach included) and the
            // candidate waits; accepting it puts it back to `proposed`.
            if let Err(e) = staging.write_spec(&spec) {
                return self
                    .fail(&c.id, format!("its spec could not be saved: {e}"))
                    .await;
            }
            return self
                .transition(
                    &c.id,
                    State::SpecAwaitingReview,
                    Some(format!(
                        "its spec awaits a person's review before generation: `toolsmith show \
                         {id}` shows it; `toolsmith approve-spec {id}` accepts it, `toolsmith \
                         reject-spec {id} --reason …` rejects it",
                        id = c.id
                    )),
                )
                .await;
        }
        // Held until this returns, however it returns: while it is held the candidate is this
        // process's; once the process is gone, whoever runs next resumes it.
        let _claim = match staging.try_claim() {
            Ok(Some(claim)) => claim,
            Ok(None) => return Err(GenerateError::Busy(c.id)),
            Err(e) => {
                return self
                    .fail(&c.id, format!("its staging cannot be used: {e}"))
                    .await;
            }
        };
        if !spec.occurrences.is_empty() && spec.occurrences.iter().all(|o| o.logged.is_empty()) {
            // Its tests would have nothing from the log to hold it to.
            return self
                .fail(
                    &c.id,
                    "none of its occurrences could be read back from the store's actions, so \
                     nothing could test it against what was run; mine again \
                     (`toolsmith mine`) and generate"
                        .into(),
                )
                .await;
        }
        let c = self
            .transition(&c.id, State::Generating, c.reason.clone())
            .await?;
        let result = match (self.settings.backend, &self.llm) {
            (Backend::Llm, Some(gateway)) => {
                self.with_model(&c, &spec, &version, &staging, gateway, known)
                    .await
            }
            (Backend::Llm, None) => {
                let note = format!(
                    "the model is not usable ({}); written from templates instead",
                    self.llm_problem
                        .as_deref()
                        .unwrap_or("no [llm] client configured")
                );
                self.with_template(&c, &spec, &version, &staging, Some(note))
                    .await
            }
            (Backend::Template, _) => {
                self.with_template(&c, &spec, &version, &staging, None)
                    .await
            }
        };
        match result {
            Ok(done) => Ok(done),
            Err(GenerateError::Cancelled) => Err(GenerateError::Cancelled),
            Err(e) => {
                // Whatever broke, the candidate does not stay half-way: it fails with the reason.
                tracing::warn!(candidate = %c.id, "generation failed: {e}");
                let id = c.id.clone();
                let current = self.db(move |conn| candidates::get(conn, &id)).await?;
                if current.state.is_final() || current.state == State::AwaitingReview {
                    return Ok(current);
                }
                self.transition(&c.id, State::Failed, Some(e.to_string()))
                    .await
            }
        }
    }

    pub(super) async fn fail(&self, id: &str, reason: String) -> Result<Candidate, GenerateError> {
        self.transition(id, State::Failed, Some(reason)).await
    }

    /// One attempt written by the template generator.
    async fn with_template(
        &self,
        c: &Candidate,
        spec: &ToolSpec,
        version: &semver::Version,
        staging: &Staging,
        note: Option<String>,
    ) -> Result<Candidate, GenerateError> {
        let files = match template::generate(spec, version.clone()) {
            Ok(files) => with_regression_cases(files, &spec.regression_cases),
            Err(e) => {
                let reason = match note {
                    Some(note) => format!("{note}, but {e}"),
                    None => e.to_string(),
                };
                return self.fail(&c.id, reason).await;
            }
        };
        let (outcome, attempt) = self
            .attempt(c, staging, files, template::generator_of(spec), version)
            .await?;
        if outcome.passed() {
            self.accept(c, staging, attempt, &outcome, note, None).await
        } else {
            // The generator is deterministic: another attempt would write the same files.
            let reason = format!(
                "{}; see `toolsmith show {} --attempts`",
                outcome.summary(),
                c.id
            );
            self.fail(&c.id, reason).await
        }
    }

    /// Stages `files` as the next attempt, validates it, records it. Leaves the candidate
    /// `validating`.
    pub(super) async fn attempt(
        &self,
        c: &Candidate,
        staging: &Staging,
        files: BTreeMap<String, String>,
        generator: &str,
        version: &semver::Version,
    ) -> Result<(Outcome, u32), GenerateError> {
        if self.cancelled() {
            return Err(GenerateError::Cancelled);
        }
        let n = staging.new_attempt(&files)?;
        self.transition(
            &c.id,
            State::Validating,
            Some(format!("validating attempt {n}")),
        )
        .await?;
        let validator = Arc::clone(&self.validator);
        let tool_dir = staging.tool_dir(n);
        let checked = files.clone();
        let cancel = self.cancel.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let stop = || cancel.as_ref().is_some_and(|c| *c.borrow());
            validator.validate_until(&tool_dir, &checked, &stop)
        })
        .await
        .unwrap_or_else(|e| Outcome {
            checks: vec![CheckReport {
                layer: CheckLayer::Validate,
                name: "runner".into(),
                passed: false,
                details: vec![format!("the validation task failed: {e}")],
            }],
            manifest: None,
            validation: None,
            tests: manifest::TestCounts {
                passed: 0,
                failed: 0,
            },
            needs: Vec::new(),
        });
        if self.cancelled() {
            // Left `validating`: the next start puts it back to `proposed` and validates again.
            return Err(GenerateError::Cancelled);
        }
        staging.write_diagnostics(n, &outcome.diagnostics(generator))?;
        let (id, g, v) = (c.id.clone(), generator.to_owned(), version.to_string());
        self.db(move |conn| candidates::record_attempt(conn, &id, n, &g, &v))
            .await?;
        self.publish(Event::CandidateAttempt {
            id: c.id.clone(),
            tool: c.tool.clone(),
            attempt: n,
            generator: generator.to_owned(),
            passed: outcome.passed(),
            summary: outcome.summary(),
        });
        Ok((outcome, n))
    }

    /// Writes the validation into the attempt's manifest and puts the candidate up for review.
    /// What the proposal says comes from the candidate's spec unless `pitch` says it.
    pub(super) async fn accept(
        &self,
        c: &Candidate,
        staging: &Staging,
        attempt: u32,
        outcome: &Outcome,
        note: Option<String>,
        pitch: Option<Pitch>,
    ) -> Result<Candidate, GenerateError> {
        if let Some(mut manifest) = outcome.manifest.clone() {
            manifest.validation = outcome.validation.clone();
            manifest.needs = outcome.needs.clone();
            staging.write_manifest(attempt, &manifest)?;
        }
        let mut reason = outcome.summary();
        if let Some(note) = note {
            reason = format!("{reason}; {note}");
        }
        if let Some(dir) = self.registry_dir.clone() {
            let read_from = match (&pitch, staging.spec()) {
                (None, Some(spec)) => self.read_from(&spec).await?,
                _ => Vec::new(),
            };
            let pitch = pitch.unwrap_or_else(|| {
                let spec = staging.spec();
                Pitch {
                    why: spec.as_ref().map(why_made).unwrap_or_default(),
                    trailers: spec
                        .as_ref()
                        .map(|s| {
                            let generator = outcome
                                .manifest
                                .as_ref()
                                .map(|m| m.provenance.generator.as_str());
                            proposal_trailers(s, outcome, generator, &read_from)
                        })
                        .unwrap_or_default(),
                    auto: true,
                    edit: None,
                }
            });
            let mut trailers = pitch.trailers;
            // Who asked, for a reviewer to weigh: an agent's words, kept to one line whoever
            // handed them in (a trailer ends at a line's end).
            if let Some(asker) = &c.asker {
                let line = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
                trailers.push((
                    "Requested-by".into(),
                    format!(
                        "{} (MCP session {})",
                        line(&asker.agent),
                        line(&asker.session)
                    ),
                ));
            }
            let proposal = Proposal {
                candidate: c.id.clone(),
                files: staging.files(attempt),
                why: pitch.why,
                trailers,
            };
            let auto = if pitch.auto {
                self.auto_approval.clone()
            } else {
                AutoApproval::default()
            };
            let manifest = outcome.manifest.clone();
            let state = self.state_dir.clone();
            let edit = pitch.edit;
            let proposed = tokio::task::spawn_blocking(move || {
                let registry = Registry::open_or_init(&dir, &state)?;
                let review = match &edit {
                    Some(edit) => registry.propose_edit(&proposal, edit)?,
                    None => registry.propose(&proposal)?,
                };
                let landed = auto_approve(&registry, &auto, &review, manifest.as_ref())?;
                Ok::<(Review, Option<Landed>), RegistryError>((review, landed))
            })
            .await
            .map_err(|e| RegistryError::Conflict(format!("the proposal did not finish: {e}")));
            match proposed.and_then(|r| r) {
                Ok((review, landed)) => {
                    // The registry decides the version (from the interface diff).
                    if let Some(mut manifest) = outcome.manifest.clone()
                        && let Ok(v) = semver::Version::parse(&review.version)
                    {
                        manifest.validation = outcome.validation.clone();
                        manifest.needs = outcome.needs.clone();
                        manifest.version = v;
                        staging.write_manifest(attempt, &manifest)?;
                    }
                    let (id, v) = (c.id.clone(), review.version.clone());
                    self.db(move |conn| candidates::set_version(conn, &id, &v))
                        .await?;
                    reason = format!("{reason}; proposed on {}", review.branch);
                    self.publish(Event::CandidateOnBranch {
                        id: c.id.clone(),
                        tool: review.name.clone(),
                        version: review.version.clone(),
                        branch: review.branch.clone(),
                        commit: review.commit.clone(),
                    });
                    if let Some(landed) = landed {
                        self.transition(&c.id, State::AwaitingReview, Some(reason))
                            .await?;
                        self.publish(landed.event());
                        let why = format!("approved by {} as {}", landed.approved_by, landed.tag);
                        return self.transition(&c.id, State::Approved, Some(why)).await;
                    }
                }
                Err(e) => {
                    let why = format!("validated, but the registry refused the proposal: {e}");
                    return self.transition(&c.id, State::Failed, Some(why)).await;
                }
            }
        }
        self.transition(&c.id, State::AwaitingReview, Some(reason))
            .await
    }

    /// The model's attempts, each told what failed before.
    async fn with_model(
        &self,
        c: &Candidate,
        spec: &ToolSpec,
        version: &semver::Version,
        staging: &Staging,
        gateway: &Gateway,
        known: &[Known],
    ) -> Result<Candidate, GenerateError> {
        let similar: Vec<SimilarTool> = known
            .iter()
            .filter(|k| k.name != spec.name && !k.description.is_empty())
            .filter(|k| {
                let first = |n: &str| n.split('-').next().unwrap_or_default().to_owned();
                first(&k.name) == first(&spec.name)
            })
            .take(5)
            .map(|k| SimilarTool {
                name: k.name.clone(),
                description: k.description.clone(),
            })
            .collect();
        let rules: Vec<(String, String)> = self
            .validator
            .code_policy
            .rules()
            .iter()
            .map(|r| (r.id.clone(), r.reason.clone()))
            .collect();
        let mut messages = prompt::initial(spec, &similar, &rules, spec.heal.as_ref());
        let names = prompt::reply_files(spec.language);
        let generator = format!("llm:{}", gateway.model());
        let budget = self.settings.max_attempts.saturating_sub(c.attempts).max(1);
        let mut last = String::new();
        for round in 1..=budget {
            if self.cancelled() {
                return Err(GenerateError::Cancelled);
            }
            let asked = std::time::Instant::now();
            let reply = match &self.cancel {
                Some(cancel) => {
                    let mut cancel = cancel.clone();
                    tokio::select! {
                        r = gateway.complete(&c.id, &messages) => r,
                        _ = cancel.wait_for(|stop| *stop) => return Err(GenerateError::Cancelled),
                    }
                }
                None => gateway.complete(&c.id, &messages).await,
            };
            let waited = asked.elapsed().as_secs_f64();
            let (completion, cut_off) = match reply {
                Ok(completion) => (completion, None),
                // A cut-off reply is the model's attempt all the same: kept, diagnosed, and
                // answered with a repair turn that says so.
                Err(LlmError::CutOff { partial, reason }) => {
                    let problem = format!(
                        "the reply was cut off at the token limit after {} tokens ({reason}): \
                         answer again with shorter files",
                        partial.output_tokens
                    );
                    (partial, Some(problem))
                }
                Err(e) => {
                    let has_steps = !spec.steps.is_empty() || spec.trigger_step.is_some();
                    // A repair's steps are the broken ones unless evidence repaired them.
                    let steps_work = spec.heal.as_ref().is_none_or(|h| h.steps_repaired);
                    if has_steps && steps_work {
                        let note = format!(
                            "the model could not be used ({e}); written from templates instead"
                        );
                        return self
                            .with_template(c, spec, version, staging, Some(note))
                            .await;
                    }
                    return self
                        .fail(&c.id, format!("the model could not be used: {e}"))
                        .await;
                }
            };
            // Every prompt and its answer stay with the attempt they made, with what it cost.
            let trace = serde_json::json!({
                "messages": &messages,
                "model": &completion.model,
                "input_tokens": completion.input_tokens,
                "output_tokens": completion.output_tokens,
                "cached": completion.cached,
                "seconds": waited,
            });
            // Err: what the reason says, and the check's detail.
            let parsed = match cut_off {
                Some(problem) => Err((problem.clone(), problem)),
                None => contract::parse(&completion.text, &names)
                    .map_err(|e| (e.to_string(), e.problem)),
            };
            let failures = match parsed {
                Err((summary, problem)) => {
                    // Nothing to validate: the attempt keeps the reply and the diagnosis.
                    let n = staging.new_attempt(&BTreeMap::new())?;
                    staging.write_reply(n, &completion.text)?;
                    staging.write_prompt(n, &trace)?;
                    let diagnostics = Diagnostics {
                        generator: generator.clone(),
                        passed: false,
                        checks: vec![CheckReport {
                            layer: CheckLayer::Contract,
                            name: "output contract".into(),
                            passed: false,
                            details: vec![problem],
                        }],
                        finished: jiff::Timestamp::now().to_string(),
                    };
                    staging.write_diagnostics(n, &diagnostics)?;
                    let (id, g, v) = (c.id.clone(), generator.clone(), version.to_string());
                    self.db(move |conn| candidates::record_attempt(conn, &id, n, &g, &v))
                        .await?;
                    last = format!("attempt {n}: {summary}");
                    diagnostics.failures()
                }
                Ok(mut files) => {
                    // The manifest is the spec's, never the model's: a reply cannot widen the
                    // sandbox profile or rename the tool.
                    files.insert(
                        manifest::FILE_NAME.to_owned(),
                        spec.manifest(version.clone(), &generator).to_yaml(),
                    );
                    let files = with_logged_cases(files, spec);
                    let files = with_regression_cases(files, &spec.regression_cases);
                    let (outcome, n) = self.attempt(c, staging, files, &generator, version).await?;
                    staging.write_reply(n, &completion.text)?;
                    staging.write_prompt(n, &trace)?;
                    if outcome.passed() {
                        return self.accept(c, staging, n, &outcome, None, None).await;
                    }
                    last = format!("attempt {n}: {}", outcome.summary());
                    outcome.diagnostics(&generator).failures()
                }
            };
            if round < budget {
                let id = c.id.clone();
                let state = self.db(move |conn| candidates::get(conn, &id)).await?.state;
                let reason = format!("repairing after {last}");
                if state == State::Validating {
                    self.transition(&c.id, State::Generating, Some(reason))
                        .await?;
                }
                messages = prompt::repair(&messages, &completion.text, &failures);
            }
        }
        self.fail(
            &c.id,
            format!(
                "gave up after {budget} attempt(s); last, {last}; see `toolsmith show {} \
                 --attempts`",
                c.id
            ),
        )
        .await
    }
}

/// Why a tool was made, for its proposal's commit body.
fn why_made(spec: &ToolSpec) -> String {
    let steps: Vec<String> = spec
        .trigger_step
        .iter()
        .chain(&spec.steps)
        .map(|s| format!("`{}`", s.display()))
        .collect();
    let seen = match (&spec.pattern, spec.support) {
        (Some(p), Some(n)) => format!("Mined as pattern {p}, seen in {n} sessions"),
        (Some(p), None) => format!("Mined as pattern {p}"),
        _ => String::new(),
    };
    let mut text = match (spec.origin, &spec.trigger) {
        (Origin::ErrorRecovery, Some(t)) => format!(
            "{seen}: when {} fails with `{}`, the agent recovered by running {}, then ran it \
             again.",
            steps.first().cloned().unwrap_or_default(),
            t.error_template,
            steps.iter().skip(1).cloned().collect::<Vec<_>>().join(", ")
        ),
        (Origin::Request, _) => format!(
            "Requested: \"{}\"{}.",
            spec.request.as_deref().unwrap_or(&spec.description),
            if spec.examples.is_empty() {
                String::new()
            } else {
                format!(", with examples {}", steps.join(", "))
            }
        ),
        _ => format!("{seen}: the agent ran, by hand, {}.", steps.join(", then ")),
    };
    if let Some(ms) = spec.median_ms {
        text.push_str(&format!(
            " Each time took {:.1} s and {} calls; the tool does it in one.",
            ms as f64 / 1000.0,
            steps.len()
        ));
    }
    text
}

/// How many occurrences a proposal's commit names where they were read (`Evidence:`).
const EVIDENCE_TRAILERS: usize = 8;

/// The trailers of a proposal's commit; `read_from`: where its first occurrences were read
/// (see [`Generator::read_from`]), one `Evidence` trailer each.
fn proposal_trailers(
    spec: &ToolSpec,
    outcome: &Outcome,
    generator: Option<&str>,
    read_from: &[String],
) -> Vec<(String, String)> {
    let mut t = vec![("Origin".to_owned(), spec.origin.as_str().to_owned())];
    if let Some(p) = &spec.pattern {
        t.push(("Pattern".into(), p.clone()));
    }
    if let Some(n) = spec.support {
        t.push(("Support".into(), format!("{n} sessions")));
    }
    t.push((
        "Tests".into(),
        format!(
            "{} passed, {} failed in the sandbox",
            outcome.tests.passed, outcome.tests.failed
        ),
    ));
    if let Some(g) = generator {
        t.push(("Generator".into(), g.to_owned()));
    }
    // What a reviewer opens to check the habit: action ids, files and lines.
    for place in read_from {
        t.push(("Evidence".into(), place.clone()));
    }
    // What a person must grant at approval (`toolsmith approve --grant`).
    for need in &outcome.needs {
        t.push(("Needs".into(), need.to_string()));
    }
    // What the tool may reach beyond the system directories, for the reviewer.
    let toolchains = outcome
        .manifest
        .as_ref()
        .map_or(&spec.sandbox.toolchains, |m| &m.sandbox.toolchains);
    for tc in toolchains {
        let paths: Vec<String> = tc.paths.iter().map(|p| p.display().to_string()).collect();
        t.push((
            "Toolchain".into(),
            format!(
                "{} from {}, read-only: {}",
                tc.program,
                tc.kind,
                paths.join(", ")
            ),
        ));
    }
    t
}

/// Approves a fresh proposal when a policy rule says so.
fn auto_approve(
    registry: &Registry,
    auto: &AutoApproval,
    review: &Review,
    manifest: Option<&Manifest>,
) -> Result<Option<Landed>, RegistryError> {
    let Some(manifest) = manifest else {
        return Ok(None);
    };
    let Some(rule) = auto.approving_rule(manifest, review.bump) else {
        return Ok(None);
    };
    let approver = format!("toolsmith policy rule {}", rule.id);
    let key = review.candidate.as_deref().unwrap_or(&review.branch);
    registry.approve(key, &approver, None).map(Some)
}
