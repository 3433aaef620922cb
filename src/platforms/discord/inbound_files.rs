//! The attachments of a Discord message as download references (their CDN URLs need no
//! token).

use serenity::all::Attachment;

use crate::intake::download::FileRef;

/// Download references of `attachments`.
pub fn attachment_refs(attachments: &[Attachment]) -> Vec<FileRef> {
    attachments
        .iter()
        .map(|a| FileRef {
            name: a.filename.clone(),
            mime: a.content_type.clone().unwrap_or_default(),
            size: usize::try_from(a.size).unwrap_or(usize::MAX),
            url: a.url.clone(),
        })
        .collect()
}
