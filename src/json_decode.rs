//! JSON from outside (platform payloads, model provider bodies) decoded into our types, with
//! an error that names where the document went wrong (`choices[0].delta.tool_calls[0].index`),
//! so a malformed body is diagnosed from the log line alone.
//!
//! Layer: foundation. Imports no other layer.

use serde::de::DeserializeOwned;

/// A JSON document that is not JSON, or not of the expected shape.
#[derive(Debug, thiserror::Error)]
#[error("at {path}: {message}")]
pub struct JsonError {
    /// Where in the document: `.` for the document itself, else `a.b[0].c`.
    pub path: String,
    /// What was wrong there.
    pub message: String,
}

impl JsonError {
    fn of(e: serde_path_to_error::Error<serde_json::Error>) -> Self {
        // Text that is not JSON has no path to name (serde_path_to_error says `?`); its
        // message carries the line and column instead.
        let path = if e.inner().is_syntax() || e.inner().is_eof() {
            ".".to_string()
        } else {
            e.path().to_string()
        };
        Self {
            path,
            message: e.into_inner().to_string(),
        }
    }
}

/// Decodes `text`.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, JsonError> {
    from_slice(text.as_bytes())
}

/// Decodes `bytes`.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, JsonError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(JsonError::of)?;
    de.end().map_err(|e| JsonError {
        path: ".".into(),
        message: e.to_string(),
    })?;
    Ok(value)
}

/// Decodes an already parsed document.
pub fn from_value<T: DeserializeOwned>(value: &serde_json::Value) -> Result<T, JsonError> {
    serde_path_to_error::deserialize(value).map_err(JsonError::of)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct Outer {
        #[allow(dead_code)]
        items: Vec<Inner>,
    }

    #[derive(Debug, serde::Deserialize)]
    struct Inner {
        #[allow(dead_code)]
        n: u32,
    }

    #[test]
    fn errors_name_the_path_from_text_bytes_and_values() {
        let body = r#"{"items": [{"n": 1}, {"n": "two"}]}"#;
        let from_text = from_str::<Outer>(body).err().map(|e| e.path);
        assert_eq!(from_text.as_deref(), Some("items[1].n"));
        let from_bytes = from_slice::<Outer>(body.as_bytes()).err().map(|e| e.path);
        assert_eq!(from_bytes.as_deref(), Some("items[1].n"));
        let value: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        let err = from_value::<Outer>(&value).err();
        assert_eq!(err.as_ref().map(|e| e.path.as_str()), Some("items[1].n"));
        assert!(
            err.is_some_and(|e| e.to_string().starts_with("at items[1].n: invalid type")),
            "the message says where and what"
        );
    }

    #[test]
    fn text_that_is_not_json_or_has_trailing_bytes_is_refused() {
        assert!(from_str::<Outer>("{").is_err());
        assert!(from_str::<Outer>(r#"{"items": []} x"#).is_err());
        assert!(from_str::<Outer>(r#"{"items": []}"#).is_ok());
    }
}
