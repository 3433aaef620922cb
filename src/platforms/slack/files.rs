//! Uploading a file into a thread with Slack's current flow: `files.getUploadURLExternal`
//! (name and size), the bytes POSTed to the returned URL, then
//! `files.completeUploadExternal` sharing it in the channel's thread.

use slack_morphism::prelude::*;

use super::thread::{surface_error, SlackApi};
use crate::core::FileAttachment;
use crate::platforms::surface::SurfaceError;

impl SlackApi {
    /// Uploads `file` into `thread_ts` of `channel`; returns the file id.
    pub async fn upload_file(
        &self,
        channel: &str,
        thread_ts: &str,
        file: &FileAttachment,
    ) -> Result<String, SurfaceError> {
        let client = self.client();
        let session = client.open_session(self.token());
        let url = session
            .get_upload_url_external(&SlackApiFilesGetUploadUrlExternalRequest::new(
                file.file_name.clone(),
                file.bytes.len(),
            ))
            .await
            .map_err(surface_error)?;
        session
            .files_upload_via_url(&SlackApiFilesUploadViaUrlRequest::new(
                url.upload_url,
                file.bytes.clone(),
                file.mime.clone(),
            ))
            .await
            .map_err(surface_error)?;
        let mut done =
            SlackApiFilesCompleteUploadExternalRequest::new(vec![SlackApiFilesComplete::new(
                url.file_id.clone(),
            )
            .with_title(file.title.clone())]);
        done.channel_id = Some(channel.into());
        done.thread_ts = Some(SlackTs(thread_ts.to_string()));
        session
            .files_complete_upload_external(&done)
            .await
            .map_err(surface_error)?;
        Ok(url.file_id.0)
    }
}
