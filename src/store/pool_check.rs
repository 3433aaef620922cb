//! When a pooled connection is checked before use.
//!
//! sqlx pings every connection it hands out by default: one extra round trip to the server
//! for every query or transaction, a fifth or more of a turn's database time. A connection
//! in steady use has just proved itself alive, so only one that sat idle for a while is
//! pinged; a broken one is then dropped and another is taken, as before.

use std::time::Duration;

use futures::future::BoxFuture;
use sqlx::pool::PoolConnectionMetadata;
use sqlx::Connection;

/// Connections idle longer than this are pinged before use.
pub const PING_AFTER_IDLE: Duration = Duration::from_secs(5);

/// The pool's `before_acquire` hook: pings a connection that was idle past
/// [`PING_AFTER_IDLE`], refusing it (so the pool opens or takes another) if the ping fails.
pub(crate) fn ping_if_idle<C: Connection>(
    conn: &mut C,
    meta: PoolConnectionMetadata,
) -> BoxFuture<'_, Result<bool, sqlx::Error>> {
    Box::pin(async move {
        if meta.idle_for < PING_AFTER_IDLE {
            return Ok(true);
        }
        match conn.ping().await {
            Ok(()) => Ok(true),
            Err(error) => {
                tracing::info!(%error, "a pooled database connection was dead; replacing it");
                Ok(false)
            }
        }
    })
}

/// The pool's `after_release` hook: closes a connection that comes back still inside a
/// transaction. A turn cancelled between `BEGIN` and the moment sqlx hands out its
/// `Transaction` (a lease lost mid-write) leaves no guard to roll it back; on SQLite that
/// open `BEGIN IMMEDIATE` would keep the database's write lock on an idle connection until
/// every other writer timed out. Closing the connection rolls the transaction back.
pub(crate) fn close_if_in_transaction<C: Connection>(
    conn: &mut C,
    _meta: PoolConnectionMetadata,
) -> BoxFuture<'_, Result<bool, sqlx::Error>> {
    Box::pin(async move {
        if conn.is_in_transaction() {
            tracing::warn!("a database connection came back inside a transaction; closing it");
            return Ok(false);
        }
        Ok(true)
    })
}
