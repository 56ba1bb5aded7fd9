//! The TLS trust roots of every HTTPS client: Mozilla's root program, compiled into the
//! binary (`webpki-roots`, `webpki-root-certs`), instead of the system store.
//!
//! Loading the system store scans and parses every file under `/etc/ssl/certs` at cold start
//! (about 6.5 ms on the bench machine, for the upstream client and once more for the AWS
//! SDK's). Compiled-in roots cost next to nothing and are the same in every Lambda image.
//! Certificates are verified exactly as before: rustls/webpki chain building to one of these
//! roots, host name checks, TLS 1.2 and 1.3 only. A private CA is not trusted (neither was
//! it by the Lambda image's store).

use std::sync::Arc;

use aws_smithy_http_client::tls::rustls_provider::CryptoMode;
use aws_smithy_http_client::tls::{self, TlsContext, TrustStore};
use aws_smithy_runtime_api::client::connector_metadata::ConnectorMetadata;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use base64::Engine;
use rustls::RootCertStore;

use domain::{Error, Result};

/// The roots as rustls wants them: already-parsed trust anchors, nothing to decode.
fn root_store() -> RootCertStore {
    RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

/// The rustls configuration of the upstream HTTP client (`reqwest`): compiled-in roots,
/// aws-lc-rs crypto (as reqwest's own default), HTTP/2 and HTTP/1.1 offered by ALPN.
pub fn client_config() -> Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Config(format!("TLS configuration: {e}")))?
        .with_root_certificates(root_store())
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The AWS SDK's HTTP client (one per container, shared by every service client): the SDK's
/// own rustls connector with compiled-in roots. The SDK takes roots only as PEM, so the
/// certificates are encoded here once; it parses them when it builds a connector, at the
/// first AWS call of each timeout setting (the client keeps the connectors it built).
pub fn aws_http_client() -> Result<SharedHttpClient> {
    let context = TlsContext::builder()
        .with_trust_store(TrustStore::empty().with_pem_certificate(pem_bundle()))
        .build()
        .map_err(|e| Error::Config(format!("AWS SDK TLS context: {e}")))?;
    let client = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc))
        .tls_context(context)
        .build_https();
    Ok(SharedHttpClient::new(ConnectOnFirstCall(client)))
}

/// The SDK's client, minus the connector it builds and throws away each time a service
/// client is created (its `validate_base_client_config` does that to load system roots
/// early). With compiled-in roots there is nothing to load early, and each throwaway build
/// parsed the whole PEM bundle: about 1 ms per service client at cold start, five of them
/// in the tool functions (STS among them). Connectors are built as before, on first use.
#[derive(Debug)]
struct ConnectOnFirstCall(SharedHttpClient);

impl HttpClient for ConnectOnFirstCall {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        self.0.http_connector(settings, components)
    }

    fn connector_metadata(&self) -> Option<ConnectorMetadata> {
        self.0.connector_metadata()
    }
}

/// Every compiled-in root certificate as one PEM bundle.
fn pem_bundle() -> Vec<u8> {
    let engine = base64::engine::general_purpose::STANDARD;
    let mut pem = Vec::with_capacity(webpki_root_certs::TLS_SERVER_ROOT_CERTS.len() * 2048);
    for cert in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
        pem.extend_from_slice(b"-----BEGIN CERTIFICATE-----\n");
        let encoded = engine.encode(cert.as_ref());
        for line in encoded.as_bytes().chunks(64) {
            pem.extend_from_slice(line);
            pem.push(b'\n');
        }
        pem.extend_from_slice(b"-----END CERTIFICATE-----\n");
    }
    pem
}

#[cfg(test)]
mod tests {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    use super::*;

    #[test]
    fn the_pem_bundle_holds_every_certificate_and_each_parses_as_a_root() {
        // The SDK panics on a certificate it cannot parse, so every one must.
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem_bundle())
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        assert_eq!(certs.len(), webpki_root_certs::TLS_SERVER_ROOT_CERTS.len());
        let mut store = RootCertStore::empty();
        for cert in certs {
            store.add(cert).unwrap();
        }
        assert!(store.len() > 100, "{} roots", store.len());
    }

    #[test]
    fn both_crates_carry_the_same_roots() {
        // The upstream client and the AWS SDK must trust the same authorities.
        let mut parsed = RootCertStore::empty();
        parsed.add_parsable_certificates(webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned());
        let mut compiled: Vec<_> = root_store()
            .roots
            .iter()
            .map(|a| a.subject.as_ref().to_vec())
            .collect();
        let mut from_certs: Vec<_> = parsed
            .roots
            .iter()
            .map(|a| a.subject.as_ref().to_vec())
            .collect();
        compiled.sort();
        from_certs.sort();
        assert_eq!(compiled, from_certs);
    }

    #[test]
    fn the_client_config_offers_h2_and_http1() {
        let config = client_config().unwrap();
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }
}
