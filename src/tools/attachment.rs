//! Files a tool hands back for delivery into the conversation (a rendered report).
//!
//! A read tool puts the file into its JSON result under [`ATTACHMENT_KEY`] (base64). The core
//! takes it out before the result is stored, audited or sent to the model, so the model and
//! the history see only the file's name and size, and emits it as [`crate::core::Effect::File`] for
//! the front end to upload.

use std::sync::Arc;

use base64::Engine;
use serde::Serialize;
use serde_json::{json, Value};

/// Where a tool result carries its file.
pub const ATTACHMENT_KEY: &str = "attachment";

/// A file to deliver in the thread.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileAttachment {
    /// File name with extension ("panel-schedule-LP-1.pdf").
    pub file_name: String,
    /// Title shown with the file.
    pub title: String,
    /// MIME type.
    pub mime: String,
    /// Size in bytes.
    pub size: usize,
    /// The content (not serialised: effects printed as JSON carry only the metadata).
    #[serde(skip)]
    pub bytes: Vec<u8>,
}

impl FileAttachment {
    /// A file from its parts.
    pub fn new(
        file_name: impl Into<String>,
        title: impl Into<String>,
        mime: impl Into<String>,
        bytes: Vec<u8>,
    ) -> Self {
        Self {
            file_name: file_name.into(),
            title: title.into(),
            mime: mime.into(),
            size: bytes.len(),
            bytes,
        }
    }
}

/// Adds `file` to a tool result object.
pub fn attach(result: &mut Value, file: &FileAttachment) {
    if let Value::Object(m) = result {
        m.insert(
            ATTACHMENT_KEY.into(),
            json!({
                "file_name": file.file_name,
                "title": file.title,
                "mime": file.mime,
                "size": file.size,
                "base64": base64::engine::general_purpose::STANDARD.encode(&file.bytes),
            }),
        );
    }
}

/// Takes the file out of a tool result, leaving its name and size in its place.
pub fn take_attachment(result: &mut Value) -> Option<FileAttachment> {
    let m = result.as_object_mut()?;
    let a = m.get_mut(ATTACHMENT_KEY)?.as_object_mut()?;
    let data = a.remove("base64")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.as_str()?)
        .ok()?;
    let text = |k: &str| {
        a.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let file = FileAttachment::new(text("file_name"), text("title"), text("mime"), bytes);
    a.insert("delivered".into(), Value::Bool(true));
    Some(file)
}

/// A tool result without file content (for the audit row).
pub fn redacted(result: &Arc<Value>) -> Arc<Value> {
    let carries_file = result
        .get(ATTACHMENT_KEY)
        .and_then(|a| a.get("base64"))
        .is_some();
    if !carries_file {
        return Arc::clone(result);
    }
    let mut v = Value::clone(result);
    if let Some(a) = v
        .as_object_mut()
        .and_then(|m| m.get_mut(ATTACHMENT_KEY))
        .and_then(Value::as_object_mut)
    {
        a.remove("base64");
    }
    Arc::new(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachment_round_trips_and_leaves_only_metadata() {
        let file = FileAttachment::new("a.pdf", "A", "application/pdf", b"%PDF-1.7 bytes".to_vec());
        let mut v = json!({"summary": "ok"});
        attach(&mut v, &file);
        assert!(redacted(&Arc::new(v.clone()))[ATTACHMENT_KEY]
            .get("base64")
            .is_none());
        assert!(v[ATTACHMENT_KEY].get("base64").is_some());
        let got = take_attachment(&mut v).expect("file");
        assert_eq!(got, file);
        assert_eq!(v[ATTACHMENT_KEY]["size"], 14);
        assert_eq!(v[ATTACHMENT_KEY]["delivered"], true);
        assert!(v[ATTACHMENT_KEY].get("base64").is_none());
        assert!(take_attachment(&mut v).is_none());
        assert!(take_attachment(&mut json!({"attachment": {"base64": "!!"}})).is_none());
    }
}
