//! JSON kept as the text it was written as, for the columns the store writes and reads whole
//! and never queries inside: history messages and audit rows, a turn's largest writes and
//! reads. Postgres keeps them as `json` (checked, then stored as text) rather than `jsonb`
//! (parsed into a tree on every write, printed back on every read); SQLite as text, as before.

use serde::Serialize;
use serde_json::value::RawValue;
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::types::Oid;
use sqlx::postgres::{PgArgumentBuffer, PgTypeInfo, Postgres};
use sqlx::sqlite::{Sqlite, SqliteArgumentValue, SqliteTypeInfo};
use sqlx::types::Json;

use super::{StoreError, StoreResult};

/// Postgres's `json` type.
const JSON_OID: Oid = Oid(114);

/// A JSON document as text: bound as `json` on Postgres, as text on SQLite.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonText(String);

impl JsonText {
    /// `value` written as compact JSON straight from its fields (no intermediate tree), with
    /// NUL characters in strings and keys replaced by U+FFFD: Postgres refuses them in JSON.
    pub(crate) fn of<T: Serialize + ?Sized>(value: &T) -> StoreResult<Self> {
        let text = serde_json::to_string(value)
            .map_err(|e| StoreError::Database(sqlx::Error::Encode(Box::new(e))))?;
        Ok(Self(without_nul_escapes(text)))
    }

    /// The same text for a `jsonb` column (Postgres parses it there; SQLite keeps the text).
    pub(crate) fn into_jsonb(self) -> StoreResult<Json<Box<RawValue>>> {
        RawValue::from_string(self.0)
            .map(Json)
            .map_err(|e| StoreError::Database(sqlx::Error::Encode(Box::new(e))))
    }
}

/// Replaces every `\u0000` escape of `json` (JSON text as serde_json writes it: a NUL inside
/// a string or key is always that escape) by `\ufffd`. An escaped backslash followed by the
/// letters `u0000` is text, not an escape, and is left alone.
fn without_nul_escapes(json: String) -> String {
    const NUL: &str = "\\u0000";
    if !json.contains(NUL) {
        return json;
    }
    let mut out = String::with_capacity(json.len());
    let mut rest = json.as_str();
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let escape = &rest[at..];
        // The backslash and what it escapes (always ASCII in JSON), or the whole NUL escape.
        let len = if escape.starts_with(NUL) {
            out.push_str("\\ufffd");
            NUL.len()
        } else {
            let len = escape[1..].chars().next().map_or(1, |c| 1 + c.len_utf8());
            out.push_str(&escape[..len]);
            len
        };
        rest = &escape[len..];
    }
    out.push_str(rest);
    out
}

impl sqlx::Type<Postgres> for JsonText {
    fn type_info() -> PgTypeInfo {
        PgTypeInfo::with_oid(JSON_OID)
    }
}

impl sqlx::Encode<'_, Postgres> for JsonText {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        // The binary form of `json` is its text.
        buf.extend(self.0.as_bytes());
        Ok(IsNull::No)
    }
}

impl sqlx::Type<Sqlite> for JsonText {
    fn type_info() -> SqliteTypeInfo {
        <String as sqlx::Type<Sqlite>>::type_info()
    }
}

impl<'q> sqlx::Encode<'q, Sqlite> for JsonText {
    fn encode_by_ref(
        &self,
        args: &mut Vec<SqliteArgumentValue<'q>>,
    ) -> Result<IsNull, BoxDynError> {
        args.push(SqliteArgumentValue::Text(self.0.clone().into()));
        Ok(IsNull::No)
    }

    fn encode(self, args: &mut Vec<SqliteArgumentValue<'q>>) -> Result<IsNull, BoxDynError> {
        args.push(SqliteArgumentValue::Text(self.0.into()));
        Ok(IsNull::No)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn nul_characters_become_replacement_characters_and_nothing_else_changes() {
        let v = json!({"a\u{0}b": ["x\u{0}", "\\u0000 typed", "é \u{1} \"q\""], "n": 1.5});
        let JsonText(text) = JsonText::of(&v).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back,
            json!({"a\u{fffd}b": ["x\u{fffd}", "\\u0000 typed", "é \u{1} \"q\""], "n": 1.5})
        );
        let plain = json!({"role": "user", "text": "60 A on 6 AWG"});
        assert_eq!(JsonText::of(&plain).unwrap().0, plain.to_string());
    }
}
