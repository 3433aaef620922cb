//! TLS set-up shared by every HTTPS client of the process.

/// Installs `ring` as the process-wide rustls crypto provider. Call once at start-up, before
/// any TLS client is built; calling it again (or after another provider was installed) is
/// harmless.
pub fn install_default_crypto_provider() {
    // Err means a provider is already installed: that is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    #[test]
    fn install_is_idempotent() {
        super::install_default_crypto_provider();
        super::install_default_crypto_provider();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
