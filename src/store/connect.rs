//! Opening the configured store.

use std::sync::Arc;

use super::{PostgresStore, SqliteStore, Store, StoreError};
use crate::config::Config;

/// Opens the configured database: Postgres when `database.url` is set, otherwise the SQLite
/// file (its directory is created). Refuses a schema newer than this binary
/// ([`StoreError::SchemaTooNew`]) and applies pending migrations.
pub async fn connect(config: &Config) -> Result<Arc<dyn Store>, StoreError> {
    let url = config.database.url.trim();
    if url.is_empty() {
        let path = config.sqlite_file();
        let store = SqliteStore::open_with(&path, config.database.max_connections).await?;
        tracing::info!(path = %path.display(), "using the SQLite store");
        Ok(Arc::new(store))
    } else {
        let store = PostgresStore::connect(url, config.database.max_connections).await?;
        tracing::info!("using the Postgres store");
        Ok(Arc::new(store))
    }
}
