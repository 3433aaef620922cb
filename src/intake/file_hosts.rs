//! Where attached files may come from. A file object names its own URL, and Slack's needs the
//! bot token: a URL naming any other host would receive that token, and one naming a service on
//! the bot's own network would be fetched from inside it. So a file is downloaded only from
//! the platform's own file hosts (`slack.file_hosts`, `discord.file_hosts`), and a host name
//! is resolved to public addresses only.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

pub use crate::config::FileHost;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Whether `ip` is a public unicast address: not loopback, private, link-local, shared
/// (carrier-grade NAT), unique-local, multicast, documentation or unspecified.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0)
                || a >= 240)
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public(IpAddr::V4(v4)),
            None => {
                !(v6.is_loopback()
                    || v6.is_unspecified()
                    || v6.is_multicast()
                    || v6.is_unique_local()
                    || v6.is_unicast_link_local())
            }
        },
    }
}

/// A resolver that hands the client only public addresses, so a file host whose name resolves
/// to the bot's own network (a rebinding attack, a poisoned record) is never connected to. The
/// check is made on the addresses actually used for the connection, not on an earlier lookup.
#[derive(Debug, Default, Clone, Copy)]
pub struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_string();
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = found.into_iter().filter(|a| is_public(a.ip())).collect();
            if public.is_empty() {
                let e: Box<dyn std::error::Error + Send + Sync> =
                    format!("{host} resolves only to private or local addresses").into();
                return Err(e);
            }
            let addrs: Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}

/// The resolver as the client builder takes it.
pub fn public_only() -> Arc<PublicOnly> {
    Arc::new(PublicOnly)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_unicast_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.9",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            let ip: IpAddr = private.parse().expect("ip");
            assert!(!is_public(ip), "{private}");
        }
        for public in ["162.159.128.233", "52.85.1.1", "2606:4700::6810:84e5"] {
            let ip: IpAddr = public.parse().expect("ip");
            assert!(is_public(ip), "{public}");
        }
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_by_the_resolver() {
        let name: Name = "localhost".parse().expect("name");
        let got = PublicOnly.resolve(name).await;
        assert!(
            got.is_err(),
            "localhost must not resolve to a usable address"
        );
    }
}
