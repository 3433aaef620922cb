//! The files of a Slack message (`file_share`, or files on a mention) as download references:
//! `url_private` is fetched with the bot token (scope `files:read`).

use slack_morphism::prelude::SlackFile;

use crate::intake::download::FileRef;

/// Download references of `files`; files without a private URL (external links) are skipped.
pub fn file_refs(files: &[SlackFile]) -> Vec<FileRef> {
    files
        .iter()
        .filter_map(|f| {
            let url = f.url_private.as_ref().or(f.url_private_download.as_ref())?;
            Some(FileRef {
                name: f
                    .name
                    .clone()
                    .or_else(|| f.title.clone())
                    .unwrap_or_else(|| f.id.0.clone()),
                mime: f.mimetype.as_ref().map(|m| m.0.clone()).unwrap_or_default(),
                // Slack's file object carries a size, but slack-morphism does not keep it;
                // the download enforces the limit on the bytes themselves.
                size: 0,
                url: url.to_string(),
            })
        })
        .collect()
}
