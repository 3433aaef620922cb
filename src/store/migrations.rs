//! Embedded migrations of each backend (their newest version is what this binary supports).

use std::borrow::Cow;
use std::sync::LazyLock;

use include_dir::{include_dir, Dir};
use sqlx::migrate::{Migration, MigrationType, Migrator};

pub use super::postgres::INDEXED_DIMS;

static POSTGRES_FILES: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/migrations/postgres");
static SQLITE_FILES: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/migrations/sqlite");

/// Migrations for Postgres.
pub static POSTGRES: LazyLock<Migrator> = LazyLock::new(|| migrator(&POSTGRES_FILES));

/// Migrations for SQLite.
pub static SQLITE: LazyLock<Migrator> = LazyLock::new(|| migrator(&SQLITE_FILES));

/// The `<version>_<description>.sql` files of `dir` read the way sqlx reads a migrations
/// folder, so each checksum is the one a database migrated by an earlier build recorded.
/// Built at run time rather than by sqlx's `migrate!` macro, whose compile-time drivers were a
/// second build of sqlx, rustls and SQLite for the build machine.
fn migrator(dir: &'static Dir<'static>) -> Migrator {
    let mut migrations: Vec<Migration> = dir
        .files()
        .filter_map(|file| {
            let name = file.path().file_name()?.to_str()?;
            let (version, rest) = name.split_once('_')?;
            let version: i64 = version.parse().ok()?;
            if !rest.ends_with(".sql") {
                return None;
            }
            let kind = MigrationType::from_filename(rest);
            let description = rest.trim_end_matches(kind.suffix()).replace('_', " ");
            let sql = file.contents_utf8()?;
            let no_tx = sql.starts_with("-- no-transaction");
            Some(Migration::new(
                version,
                Cow::Owned(description),
                kind,
                Cow::Borrowed(sql),
                no_tx,
            ))
        })
        .collect();
    migrations.sort_by_key(|m| m.version);
    Migrator {
        migrations: Cow::Owned(migrations),
        ..Migrator::DEFAULT
    }
}
