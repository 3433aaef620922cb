//! Posting a message with a file attached: `multipart/form-data` with the message as
//! `payload_json` and the file as `files[0]`, as Discord's API documents.

use serde_json::{json, Value};

use super::rest::{MessageRef, Rest};
use crate::core::FileAttachment;
use crate::platforms::surface::SurfaceError;

/// The multipart body and its content type.
pub fn multipart(payload: &Value, file: &FileAttachment) -> (String, Vec<u8>) {
    let boundary = format!("sparky-{}", uuid::Uuid::new_v4().simple());
    // Quotes and line breaks cannot appear in a header parameter.
    let name: String = file
        .file_name
        .chars()
        .map(|c| if c == '"' || c.is_control() { '_' } else { c })
        .collect();
    let mut body = Vec::with_capacity(file.bytes.len() + 512);
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"payload_json\"\r\nContent-Type: application/json\r\n\r\n{payload}\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"files[0]\"; filename=\"{name}\"\r\nContent-Type: {}\r\n\r\n",
            file.mime
        )
        .as_bytes(),
    );
    body.extend_from_slice(&file.bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

impl Rest {
    /// Posts `file` in `channel` with `content` as the message text.
    pub async fn post_file(
        &self,
        channel: &str,
        content: &str,
        file: &FileAttachment,
    ) -> Result<MessageRef, SurfaceError> {
        let payload = json!({
            "content": content,
            "attachments": [{"id": 0, "filename": file.file_name, "description": file.title}],
            "allowed_mentions": {"parse": []},
        });
        let (content_type, body) = multipart(&payload, file);
        let path = format!("/channels/{channel}/messages");
        let v = self.post_multipart(&path, &content_type, &body).await?;
        let id = v
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| SurfaceError::Failed(format!("POST {path}: no message id")))?;
        Ok(MessageRef {
            channel: channel.to_string(),
            id: id.to_string(),
        })
    }
}
