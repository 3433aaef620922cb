//! Opening a store by where it lives.

use std::path::Path;
use std::sync::Arc;

use super::{PostgresStore, SqliteStore, Store, StoreError};

/// Opens Postgres when `url` is not blank, otherwise the SQLite file at `sqlite_path` (its
/// directory is created). Refuses a schema newer than this binary
/// ([`StoreError::SchemaTooNew`]) and applies pending migrations.
pub async fn open(
    url: &str,
    sqlite_path: &Path,
    max_connections: u32,
) -> Result<Arc<dyn Store>, StoreError> {
    let url = url.trim();
    if url.is_empty() {
        let store = SqliteStore::open_with(sqlite_path, max_connections).await?;
        tracing::info!(path = %sqlite_path.display(), "using the SQLite store");
        Ok(Arc::new(store))
    } else {
        let store = PostgresStore::connect(url, max_connections).await?;
        tracing::info!("using the Postgres store");
        Ok(Arc::new(store))
    }
}
