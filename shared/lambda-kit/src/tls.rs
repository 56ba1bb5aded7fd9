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
use rustls::pki_types::CertificateDer;

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

/// The roots every AWS endpoint's certificate chains to: Amazon Trust Services' four and
/// the Starfield root they are cross-signed by. AWS moved every service's certificates to
/// them (S3 and CloudFront last, in 2022).
const AWS_ROOTS: [&str; 5] = [
    "Amazon Root CA 1",
    "Amazon Root CA 2",
    "Amazon Root CA 3",
    "Amazon Root CA 4",
    "Starfield Services Root Certificate Authority - G2",
];

/// The AWS SDK's HTTP client (one per container, shared by every service client): the SDK's
/// own rustls connector, trusting the compiled-in [`AWS_ROOTS`] only. It talks to AWS and
/// nothing else, and it takes roots only as PEM, which it parses when it builds a connector
/// (at the first AWS call of each timeout setting): Mozilla's 150 roots took about 2 ms of
/// the first turn's CPU, these five a tenth of that.
pub fn aws_http_client() -> Result<SharedHttpClient> {
    let context = TlsContext::builder()
        .with_trust_store(TrustStore::empty().with_pem_certificate(pem_bundle(aws_roots())))
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

/// The compiled-in root certificates named in [`AWS_ROOTS`] (a root names itself as subject
/// and issuer; no other root carries an Amazon root's name).
fn aws_roots() -> impl Iterator<Item = &'static CertificateDer<'static>> {
    webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .filter(|cert| {
            AWS_ROOTS
                .iter()
                .any(|name| memchr::memmem::find(cert.as_ref(), name.as_bytes()).is_some())
        })
}

/// Root certificates as one PEM bundle.
fn pem_bundle<'a>(certs: impl Iterator<Item = &'a CertificateDer<'a>>) -> Vec<u8> {
    let engine = base64::engine::general_purpose::STANDARD;
    let mut pem = Vec::new();
    for cert in certs {
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
    use rustls::pki_types::pem::PemObject;

    use super::*;

    #[test]
    fn the_sdks_bundle_holds_each_aws_root_once_and_each_parses_as_a_root() {
        // The SDK panics on a certificate it cannot parse, so every one must.
        let bundle = pem_bundle(aws_roots());
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bundle)
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        assert_eq!(certs.len(), AWS_ROOTS.len());
        for name in AWS_ROOTS {
            let holding = certs
                .iter()
                .filter(|c| memchr::memmem::find(c.as_ref(), name.as_bytes()).is_some());
            assert_eq!(holding.count(), 1, "{name}");
        }
        let mut store = RootCertStore::empty();
        for cert in certs {
            store.add(cert).unwrap();
        }
        assert_eq!(store.len(), AWS_ROOTS.len());
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
