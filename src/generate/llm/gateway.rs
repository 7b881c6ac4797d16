//! The generator's way to a model: a response cache keyed by a hash of the prompt, a daily token
//! budget, and usage recorded per candidate — all in the state store, so they survive restarts.

use std::sync::Arc;

use rusqlite::{OptionalExtension, params};
use sha2::{Digest, Sha256};

use super::{Completion, LlmClient, LlmError, Message};
use crate::store::{Store, StoreError, unix_now};

/// A model client with its cache and budget.
#[derive(Debug, Clone)]
pub struct Gateway {
    client: Arc<LlmClient>,
    store: Store,
    daily_budget: u64,
}

/// Tokens spent, for reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Reply tokens.
    pub output_tokens: u64,
    /// Calls answered from the cache.
    pub cached_calls: u64,
    /// Calls that reached the service.
    pub calls: u64,
}

fn store_err(e: StoreError) -> LlmError {
    LlmError::Store(e.to_string())
}

/// Today's date in UTC, as the budget counts days.
fn today() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%d").to_string()
}

impl Gateway {
    /// A gateway over `client`, spending at most `daily_budget` tokens a day (0: unlimited).
    pub fn new(client: Arc<LlmClient>, store: Store, daily_budget: u64) -> Self {
        Gateway {
            client,
            store,
            daily_budget,
        }
    }

    /// The model's name, for provenance (`llm:<model>`).
    pub fn model(&self) -> &str {
        &self.client.settings().model
    }

    /// The cache key of a conversation with this client's model and settings.
    pub fn cache_key(&self, messages: &[Message]) -> String {
        let s = self.client.settings();
        let mut hasher = Sha256::new();
        let header = serde_json::json!({
            "provider": s.provider.as_str(),
            "base_url": s.base_url,
            "model": s.model,
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
        });
        hasher.update(header.to_string().as_bytes());
        for m in messages {
            hasher.update([0u8]);
            hasher.update(m.role.as_str().as_bytes());
            hasher.update([0u8]);
            hasher.update(m.content.as_bytes());
        }
        let digest = hasher.finalize();
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The reply to `messages`, from the cache when this exact prompt was answered before,
    /// else from the model (within today's budget). Usage is recorded against `candidate`.
    pub async fn complete(
        &self,
        candidate: &str,
        messages: &[Message],
    ) -> Result<Completion, LlmError> {
        let key = self.cache_key(messages);
        let lookup = key.clone();
        let hit = self
            .store
            .call(move |conn| {
                Ok(conn
                    .prepare_cached(
                        "SELECT text, model, input_tokens, output_tokens FROM llm_cache
                         WHERE key = ?1",
                    )?
                    .query_row([&lookup], |r| {
                        Ok(Completion {
                            text: r.get(0)?,
                            model: r.get(1)?,
                            input_tokens: r.get::<_, i64>(2)? as u64,
                            output_tokens: r.get::<_, i64>(3)? as u64,
                            cached: true,
                        })
                    })
                    .optional()?)
            })
            .await
            .map_err(store_err)?;
        if let Some(hit) = hit {
            self.record(candidate, &hit).await?;
            return Ok(hit);
        }
        if self.daily_budget > 0 {
            let used = self.used_today().await?;
            if used >= self.daily_budget {
                return Err(LlmError::Budget {
                    used,
                    limit: self.daily_budget,
                });
            }
        }
        let completion = match self.client.complete(messages).await {
            Ok(completion) => completion,
            Err(LlmError::CutOff { partial, reason }) => {
                // Spent though unusable: counted against the budget, never cached.
                self.record(candidate, &partial).await?;
                return Err(LlmError::CutOff { partial, reason });
            }
            Err(e) => return Err(e),
        };
        let (text, model) = (completion.text.clone(), completion.model.clone());
        let (input, output) = (completion.input_tokens, completion.output_tokens);
        self.store
            .call(move |conn| {
                conn.prepare_cached(
                    "INSERT OR REPLACE INTO llm_cache (key, text, model, input_tokens,
                                                       output_tokens, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?
                .execute(params![
                    key,
                    text,
                    model,
                    input as i64,
                    output as i64,
                    unix_now()
                ])?;
                Ok(())
            })
            .await
            .map_err(store_err)?;
        self.record(candidate, &completion).await?;
        Ok(completion)
    }

    async fn record(&self, candidate: &str, c: &Completion) -> Result<(), LlmError> {
        let row = (
            today(),
            candidate.to_owned(),
            c.model.clone(),
            c.input_tokens as i64,
            c.output_tokens as i64,
            c.cached,
        );
        self.store
            .call(move |conn| {
                conn.prepare_cached(
                    "INSERT INTO llm_usage (day, candidate, model, input_tokens, output_tokens,
                                            cached, at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )?
                .execute(params![
                    row.0,
                    row.1,
                    row.2,
                    row.3,
                    row.4,
                    row.5,
                    unix_now()
                ])?;
                Ok(())
            })
            .await
            .map_err(store_err)
    }

    /// Tokens spent today on calls that reached the service.
    pub async fn used_today(&self) -> Result<u64, LlmError> {
        let day = today();
        self.store
            .call(move |conn| {
                Ok(conn
                    .prepare_cached(
                        "SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM llm_usage
                         WHERE day = ?1 AND NOT cached",
                    )?
                    .query_row([day], |r| r.get::<_, i64>(0))? as u64)
            })
            .await
            .map_err(store_err)
    }
}

/// What `candidate` has cost so far.
pub fn usage_of(conn: &rusqlite::Connection, candidate: &str) -> Result<Usage, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT coalesce(sum(CASE WHEN cached THEN 0 ELSE input_tokens END), 0),
                    coalesce(sum(CASE WHEN cached THEN 0 ELSE output_tokens END), 0),
                    coalesce(sum(cached), 0), coalesce(sum(NOT cached), 0)
             FROM llm_usage WHERE candidate = ?1",
        )?
        .query_row([candidate], |r| {
            Ok(Usage {
                input_tokens: r.get::<_, i64>(0)? as u64,
                output_tokens: r.get::<_, i64>(1)? as u64,
                cached_calls: r.get::<_, i64>(2)? as u64,
                calls: r.get::<_, i64>(3)? as u64,
            })
        })?)
}
