//! The TLS set-up of the model client, with the system's root certificates loaded at the first
//! certificate check instead of when the client is built.
//!
//! reqwest's own rustls set-up reads the whole native root store (~150 files under
//! `/etc/ssl/certs`) while the client is built — before the first request, and even when the base
//! URL is plain `http://` and no certificate is ever checked. That was most of Elph's time from
//! spawn to the first request byte. Here the same verifier (rustls-platform-verifier, what reqwest
//! uses) is created once, on the first server certificate it has to check.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// A rustls client configuration for reqwest: TLS 1.2 and 1.3, HTTP/1.1 over ALPN (the only HTTP
/// version this build of reqwest speaks), and the system's roots loaded on first use.
pub(crate) fn client_config() -> Result<rustls::ClientConfig, rustls::Error> {
    // The process-wide provider when one is installed, as reqwest does; else ring: unlike
    // aws-lc-rs (reqwest's default), it builds without cmake and in a fraction of the time.
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(LazyPlatformVerifier::new(provider)))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// A reqwest client builder with this TLS set-up, for the binary's other HTTP clients (MCP servers
/// over HTTP): reqwest is built without a crypto provider of its own, so a plain
/// `reqwest::Client::new()` would have none.
pub fn http_client_builder() -> Result<reqwest::ClientBuilder, rustls::Error> {
    Ok(reqwest::Client::builder().tls_backend_preconfigured(client_config()?))
}

/// The platform verifier, created at the first certificate check. A failure to load the roots is
/// kept and returned by every check (each one a failed handshake, reported as a connection error).
#[derive(Debug)]
struct LazyPlatformVerifier {
    provider: Arc<CryptoProvider>,
    verifier: OnceLock<Result<rustls_platform_verifier::Verifier, rustls::Error>>,
}

impl LazyPlatformVerifier {
    fn new(provider: Arc<CryptoProvider>) -> Self {
        LazyPlatformVerifier {
            provider,
            verifier: OnceLock::new(),
        }
    }

    fn verifier(&self) -> Result<&rustls_platform_verifier::Verifier, rustls::Error> {
        self.verifier
            .get_or_init(|| rustls_platform_verifier::Verifier::new(self.provider.clone()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Whether the roots have been loaded (for tests).
    #[cfg(test)]
    fn loaded(&self) -> bool {
        self.verifier.get().is_some()
    }
}

impl ServerCertVerifier for LazyPlatformVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    // The signature checks and the scheme list need no roots: they are what the platform verifier
    // itself answers on Linux (WebPKI with the provider's algorithms), without forcing the load —
    // rustls asks for the schemes while it writes the ClientHello.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_not_loaded_until_a_certificate_is_checked() {
        let verifier = LazyPlatformVerifier::new(Arc::new(rustls::crypto::ring::default_provider()));
        assert!(!verifier.supported_verify_schemes().is_empty());
        assert!(!verifier.loaded());
        // A certificate that is not one: the roots load, then the check fails on the bytes.
        let bogus = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x00]);
        let name = ServerName::try_from("example.com").unwrap();
        let result = verifier.verify_server_cert(&bogus, &[], &name, &[], UnixTime::now());
        assert!(result.is_err());
        assert!(verifier.loaded());
    }

    #[test]
    fn the_configuration_speaks_http1_only() {
        let config = client_config().unwrap();
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }
}
