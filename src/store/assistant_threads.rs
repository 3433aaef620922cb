//! Assistant threads (Slack's split-view AI app): the channel each thread works for and
//! whether it has its title.

use async_trait::async_trait;

use super::{AssistantThread, StoreResult};
use crate::domain::session::SessionKey;

/// What is remembered of each assistant thread.
#[async_trait]
pub trait AssistantThreadStore: Send + Sync {
    /// Records the thread `key` opened by `user` (created when new). A `context_channel` of
    /// `Some` replaces the one remembered; `None` (the person is viewing no channel) keeps it.
    async fn record_assistant_thread(
        &self,
        key: &SessionKey,
        user: &str,
        context_channel: Option<&str>,
    ) -> StoreResult<AssistantThread>;
    /// The assistant thread `key`, when it is one.
    async fn assistant_thread(&self, key: &SessionKey) -> StoreResult<Option<AssistantThread>>;
    /// Marks the thread as titled; whether this call did (of racing callers, one does).
    async fn claim_assistant_title(&self, key: &SessionKey) -> StoreResult<bool>;
}

/// Emits `impl AssistantThreadStore` for a backend store type.
macro_rules! impl_assistant_threads {
    ($store:ty, $db:ty) => {
        const _: () = {
            use async_trait::async_trait;

            use $crate::domain::session::SessionKey;
            use $crate::store::common::*;
            use $crate::store::{AssistantThread, AssistantThreadStore, StoreResult};

            fn thread_from(r: &impl RowExt) -> StoreResult<AssistantThread> {
                Ok(AssistantThread {
                    key: SessionKey::new(
                        r.string("platform")?,
                        r.string("workspace")?,
                        r.string("channel")?,
                        r.string("thread")?,
                    ),
                    user: r.string("user_id")?,
                    context_channel: r.opt_string("context_channel")?,
                    titled: r.bool("titled")?,
                })
            }

            #[async_trait]
            impl AssistantThreadStore for $store {
                async fn record_assistant_thread(
                    &self,
                    key: &SessionKey,
                    user: &str,
                    context_channel: Option<&str>,
                ) -> StoreResult<AssistantThread> {
                    let at = now();
                    let row = sqlx::query(
                        "INSERT INTO assistant_threads (platform, workspace, channel, thread, user_id, \
                         context_channel, titled, created_at, updated_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) \
                         ON CONFLICT (platform, workspace, channel, thread) DO UPDATE SET \
                         context_channel = COALESCE(excluded.context_channel, assistant_threads.context_channel), \
                         updated_at = excluded.updated_at \
                         RETURNING *",
                    )
                    .bind(&key.platform)
                    .bind(&key.workspace)
                    .bind(&key.channel)
                    .bind(&key.thread)
                    .bind(user)
                    .bind(context_channel)
                    .bind(false)
                    .bind(at)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db)?;
                    thread_from(&row)
                }

                async fn assistant_thread(
                    &self,
                    key: &SessionKey,
                ) -> StoreResult<Option<AssistantThread>> {
                    sqlx::query(
                        "SELECT * FROM assistant_threads \
                         WHERE platform = $1 AND workspace = $2 AND channel = $3 AND thread = $4",
                    )
                    .bind(&key.platform)
                    .bind(&key.workspace)
                    .bind(&key.channel)
                    .bind(&key.thread)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?
                    .map(|r| thread_from(&r))
                    .transpose()
                }

                async fn claim_assistant_title(&self, key: &SessionKey) -> StoreResult<bool> {
                    // One conditional update decides, whichever replica asks first.
                    let done = sqlx::query(
                        "UPDATE assistant_threads SET titled = $5, updated_at = $7 \
                         WHERE platform = $1 AND workspace = $2 AND channel = $3 AND thread = $4 \
                         AND titled = $6",
                    )
                    .bind(&key.platform)
                    .bind(&key.workspace)
                    .bind(&key.channel)
                    .bind(&key.thread)
                    .bind(true)
                    .bind(false)
                    .bind(now())
                    .execute(&self.pool)
                    .await
                    .map_err(db)?;
                    Ok(done.rows_affected() == 1)
                }
            }
        };
    };
}
pub(crate) use impl_assistant_threads;
