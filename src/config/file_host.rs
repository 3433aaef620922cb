//! An origin (scheme, host, port) that attached files may be downloaded from: a
//! configuration value, checked when the configuration is loaded.

use std::net::IpAddr;

use reqwest::Url;
use serde::{Deserialize, Deserializer};

/// One origin (scheme, host, port) files may be downloaded from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHost {
    scheme: String,
    host: String,
    port: u16,
}

impl FileHost {
    /// Parses `https://files.slack.com` (an origin: no path, query or credentials). Plain
    /// `http` is accepted only for an IP literal, a test server the operator names explicitly.
    pub fn parse(origin: &str) -> Result<Self, String> {
        let url = Url::parse(origin).map_err(|e| format!("{origin:?} is not a URL: {e}"))?;
        let host = url
            .host_str()
            .ok_or_else(|| format!("{origin:?} names no host"))?
            .to_ascii_lowercase();
        let plain_ok = host.parse::<IpAddr>().is_ok() || host.starts_with('[');
        match url.scheme() {
            "https" => {}
            "http" if plain_ok => {}
            _ => return Err(format!("{origin:?} must be an https:// origin")),
        }
        if url.path() != "/" || url.query().is_some() || !url.username().is_empty() {
            return Err(format!(
                "{origin:?} must be an origin only (no path or credentials)"
            ));
        }
        let port = url
            .port_or_known_default()
            .ok_or_else(|| format!("{origin:?} has no port"))?;
        Ok(Self {
            scheme: url.scheme().to_string(),
            host,
            port,
        })
    }

    /// Whether `url` is on this origin.
    pub fn serves(&self, url: &Url) -> bool {
        url.scheme() == self.scheme
            && url
                .host_str()
                .is_some_and(|h| h.eq_ignore_ascii_case(&self.host))
            && url.port_or_known_default() == Some(self.port)
    }
}

impl std::fmt::Display for FileHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let default = if self.scheme == "https" { 443 } else { 80 };
        if self.port == default {
            write!(f, "{}://{}", self.scheme, self.host)
        } else {
            write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
        }
    }
}

impl<'de> Deserialize<'de> for FileHost {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let origin = String::deserialize(d)?;
        Self::parse(origin.trim()).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_file_hosts_are_the_platforms_own() {
        let c = crate::config::Config::load(None, &Default::default()).expect("defaults");
        let shown = |hosts: &[FileHost]| hosts.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(shown(&c.slack.file_hosts), ["https://files.slack.com"]);
        assert_eq!(
            shown(&c.discord.file_hosts),
            ["https://cdn.discordapp.com", "https://media.discordapp.net"]
        );
    }

    #[test]
    fn origins_parse_and_match_only_their_own_urls() {
        let slack = FileHost::parse("https://files.slack.com").expect("origin");
        let ok = Url::parse("https://files.slack.com/files-pri/T1-F1/a.png").expect("url");
        assert!(slack.serves(&ok));
        for other in [
            "http://files.slack.com/files-pri/T1-F1/a.png",
            "https://files.slack.com:8443/a.png",
            "https://files.slack.com.evil.example/a.png",
            "https://evil.example/files.slack.com/a.png",
            "https://127.0.0.1/a.png",
        ] {
            let url = Url::parse(other).expect("url");
            assert!(!slack.serves(&url), "{other}");
        }
        assert!(
            FileHost::parse("http://files.slack.com").is_err(),
            "plain http by name"
        );
        assert!(FileHost::parse("https://files.slack.com/files-pri").is_err());
        assert!(FileHost::parse("https://u:p@files.slack.com").is_err());
        let test = FileHost::parse("http://127.0.0.1:4100").expect("an IP literal");
        assert!(test.serves(&Url::parse("http://127.0.0.1:4100/f").expect("url")));
        assert!(!test.serves(&Url::parse("http://127.0.0.1:4101/f").expect("url")));
    }
}
