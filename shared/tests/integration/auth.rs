//! Bearer-token authentication: HS256 against an in-memory secret, RS256/ES256 against a
//! JWKS served over real HTTP by wiremock. The private keys under `tests/keys/` are test-only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use shared::Error;
use shared::http::ApiError;
use shared::http::auth::{
    AuthConfig, AuthenticatedUser, Authenticator, DevClaims, KeySource, TokenUse, mint_hs256,
};
use shared::secrets::{SecretSource, SecretString, SecretsCache};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const ISSUER: &str = "https://issuer.test/";
const AUDIENCE: &str = "chat-app";
const SECRET_NAME: &str = "test/jwt-hs256-secret";
const SECRET: &str = "test-only-hs256-secret-0123456789abcdef";
const RSA_KID: &str = "rsa-test-1";
const EC_KID: &str = "ec-test-1";
const JWKS_PATH: &str = "/.well-known/jwks.json";

/// Secrets held in memory: the HS256 tests need no Secrets Manager emulator.
struct MemorySecrets(Mutex<HashMap<String, String>>);

#[async_trait]
impl SecretSource for MemorySecrets {
    async fn fetch(&self, name: &str) -> shared::Result<SecretString> {
        let secrets = self.0.lock().unwrap();
        secrets
            .get(name)
            .map(|value| SecretString::new(value.as_str()))
            .ok_or_else(|| Error::Secret {
                name: name.to_owned(),
                message: "ResourceNotFoundException".into(),
            })
    }

    async fn store(&self, name: &str, value: &str) -> shared::Result<()> {
        self.0.lock().unwrap().insert(name.into(), value.into());
        Ok(())
    }
}

fn secrets() -> Arc<SecretsCache> {
    let source = MemorySecrets(Mutex::new(HashMap::from([(
        SECRET_NAME.to_owned(),
        SECRET.to_owned(),
    )])));
    Arc::new(SecretsCache::new(
        Arc::new(source),
        Duration::from_secs(300),
    ))
}

fn authenticator(verifier: KeySource) -> Authenticator {
    authenticator_with(verifier, None)
}

fn authenticator_with(verifier: KeySource, token_use: Option<TokenUse>) -> Authenticator {
    let config = AuthConfig {
        verifier,
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        leeway: Duration::from_secs(30),
        token_use,
    };
    let http = shared::upstream::http_client().unwrap();
    Authenticator::new(config, secrets(), http)
}

fn hs_authenticator() -> Authenticator {
    authenticator(KeySource::SharedSecret {
        secret_name: SECRET_NAME.into(),
    })
}

fn jwks_authenticator(server: &MockServer, cache_ttl: Duration) -> Authenticator {
    authenticator(KeySource::Jwks {
        url: format!("{}{JWKS_PATH}", server.uri()),
        cache_ttl,
    })
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Valid claims with `changes` applied; a `null` change removes the claim.
fn claims(changes: Value) -> Value {
    let mut claims = json!({
        "sub": "user-1",
        "iss": ISSUER,
        "aud": AUDIENCE,
        "iat": now(),
        "exp": now() + 600,
    });
    for (name, value) in changes.as_object().unwrap() {
        let map = claims.as_object_mut().unwrap();
        if value.is_null() {
            map.remove(name);
        } else {
            map.insert(name.clone(), value.clone());
        }
    }
    claims
}

fn sign(algorithm: Algorithm, kid: Option<&str>, claims: &Value, key: &EncodingKey) -> String {
    let mut header = Header::new(algorithm);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn hs_token(claims: &Value) -> String {
    sign(
        Algorithm::HS256,
        None,
        claims,
        &EncodingKey::from_secret(SECRET.as_bytes()),
    )
}

/// The DER inside a PEM file (the crate is built without its PEM feature).
fn pem_der(pem: &str) -> Vec<u8> {
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    STANDARD.decode(body).unwrap()
}

fn rsa_key() -> EncodingKey {
    EncodingKey::from_rsa_der(&pem_der(include_str!("../keys/rsa-test-private.pem")))
}

fn ec_key() -> EncodingKey {
    EncodingKey::from_ec_der(&pem_der(include_str!("../keys/ec-p256-test-private.pem")))
}

/// The public JWK of a test key, as an identity provider publishes it.
fn public_jwk(key: &EncodingKey, algorithm: Algorithm, kid: &str) -> Value {
    let mut jwk = Jwk::from_encoding_key(key, algorithm).unwrap();
    jwk.common.key_id = Some(kid.into());
    serde_json::to_value(jwk).unwrap()
}

fn jwks_body() -> Value {
    json!({"keys": [
        public_jwk(&rsa_key(), Algorithm::RS256, RSA_KID),
        public_jwk(&ec_key(), Algorithm::ES256, EC_KID),
    ]})
}

async fn jwks_server(response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(JWKS_PATH))
        .respond_with(response)
        .mount(&server)
        .await;
    server
}

async fn jwks_fetches(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

async fn reason(auth: &Authenticator, token: &str) -> String {
    unauthorized_reason(auth.authenticate(Some(&bearer(token))).await)
}

fn unauthorized_reason(result: shared::Result<AuthenticatedUser>) -> String {
    match result {
        Err(Error::Unauthorized(reason)) => reason,
        other => format!("not Unauthorized: {other:?}"),
    }
}

#[tokio::test]
async fn hs256_token_yields_the_subject() {
    let auth = hs_authenticator();
    let token = hs_token(&claims(json!({})));
    let user = auth.authenticate(Some(&bearer(&token))).await.unwrap();
    assert_eq!(user.user_id, "user-1");

    let header = format!("  bearer \t{token}  ");
    let user = auth.authenticate(Some(&header)).await.unwrap();
    assert_eq!(user.user_id, "user-1");
}

#[tokio::test]
async fn minted_dev_tokens_are_accepted() {
    let claims = DevClaims::new("dev-user", ISSUER, AUDIENCE, Duration::from_secs(600));
    let token = mint_hs256(SECRET, &claims).unwrap();
    let user = hs_authenticator()
        .authenticate(Some(&bearer(&token)))
        .await
        .unwrap();
    assert_eq!(user.user_id, "dev-user");
}

#[tokio::test]
async fn missing_header_or_other_scheme() {
    let auth = hs_authenticator();
    let token = hs_token(&claims(json!({})));
    for header in [
        None,
        Some(String::new()),
        Some("Bearer ".into()),
        Some("Basic dXNlcjpwYXNz".into()),
        Some(format!("Token {token}")),
        Some(token.clone()),
    ] {
        let result = auth.authenticate(header.as_deref()).await;
        assert_eq!(
            unauthorized_reason(result),
            "missing bearer token",
            "{header:?}"
        );
    }
}

#[tokio::test]
async fn garbage_tokens_are_malformed() {
    let auth = hs_authenticator();
    for token in ["not-a-jwt", "a.b.c", "a.b", "e30.e30.e30", "x y z"] {
        assert_eq!(reason(&auth, token).await, "malformed token", "{token}");
    }
    // Right signature, but no `exp`.
    let token = hs_token(&claims(json!({"exp": null})));
    assert_eq!(reason(&auth, &token).await, "malformed token");
}

#[tokio::test]
async fn expiry_is_checked_with_leeway() {
    let auth = hs_authenticator();
    let expired = hs_token(&claims(json!({"exp": now() - 120})));
    assert_eq!(reason(&auth, &expired).await, "token expired");

    let within_leeway = hs_token(&claims(json!({"exp": now() - 10})));
    assert!(
        auth.authenticate(Some(&bearer(&within_leeway)))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn not_before_is_honoured() {
    let auth = hs_authenticator();
    let early = hs_token(&claims(json!({"nbf": now() + 300})));
    assert_eq!(reason(&auth, &early).await, "token not yet valid");

    let within_leeway = hs_token(&claims(json!({"nbf": now() + 10})));
    assert!(
        auth.authenticate(Some(&bearer(&within_leeway)))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn issuer_must_match() {
    let auth = hs_authenticator();
    let token = hs_token(&claims(json!({"iss": "https://evil.test/"})));
    assert_eq!(reason(&auth, &token).await, "wrong issuer");
    let token = hs_token(&claims(json!({"iss": null})));
    assert_eq!(reason(&auth, &token).await, "wrong issuer");
}

#[tokio::test]
async fn audience_must_match() {
    let auth = hs_authenticator();
    let token = hs_token(&claims(json!({"aud": "other-app"})));
    assert_eq!(reason(&auth, &token).await, "wrong audience");
    let token = hs_token(&claims(json!({"aud": null})));
    assert_eq!(reason(&auth, &token).await, "wrong audience");

    let token = hs_token(&claims(json!({"aud": ["other-app", AUDIENCE]})));
    assert!(auth.authenticate(Some(&bearer(&token))).await.is_ok());
}

fn token_use_authenticator(token_use: TokenUse) -> Authenticator {
    let verifier = KeySource::SharedSecret {
        secret_name: SECRET_NAME.into(),
    };
    authenticator_with(verifier, Some(token_use))
}

/// The claims of a Cognito access token (`token_use: access`, no `aud`, the app client in
/// `client_id`) with `changes` applied.
fn access_claims(changes: Value) -> Value {
    let mut all = json!({"token_use": "access", "aud": null, "client_id": AUDIENCE});
    let map = all.as_object_mut().unwrap();
    map.extend(changes.as_object().unwrap().clone());
    claims(all)
}

#[tokio::test]
async fn id_tokens_only_when_token_use_is_id() {
    let auth = token_use_authenticator(TokenUse::Id);
    let token = hs_token(&claims(json!({"token_use": "id"})));
    let user = auth.authenticate(Some(&bearer(&token))).await.unwrap();
    assert_eq!(user.user_id, "user-1");

    let wrong_type = "wrong token type: send the ID token";
    for (sent, expected) in [
        (access_claims(json!({})), wrong_type),
        (claims(json!({"token_use": "access"})), wrong_type),
        (claims(json!({})), wrong_type),
        (claims(json!({"token_use": "ID"})), wrong_type),
        (claims(json!({"token_use": ["id"]})), "malformed token"),
        // The other checks still apply.
        (
            claims(json!({"token_use": "id", "aud": "other-app"})),
            "wrong audience",
        ),
    ] {
        assert_eq!(reason(&auth, &hs_token(&sent)).await, expected, "{sent}");
    }
}

#[tokio::test]
async fn access_tokens_only_when_token_use_is_access() {
    let auth = token_use_authenticator(TokenUse::Access);
    let token = hs_token(&access_claims(json!({})));
    let user = auth.authenticate(Some(&bearer(&token))).await.unwrap();
    assert_eq!(user.user_id, "user-1");
    // Providers that do put `aud` in access tokens.
    let token = hs_token(&claims(json!({"token_use": "access"})));
    assert!(auth.authenticate(Some(&bearer(&token))).await.is_ok());

    let wrong_type = "wrong token type: send the access token";
    for (changes, expected) in [
        (json!({"token_use": "id"}), wrong_type),
        (json!({"token_use": null}), wrong_type),
        (json!({"client_id": "other-app"}), "wrong audience"),
        (json!({"client_id": null}), "wrong audience"),
        (json!({"aud": "other-app"}), "wrong audience"),
    ] {
        let token = hs_token(&access_claims(changes.clone()));
        assert_eq!(reason(&auth, &token).await, expected, "{changes}");
    }
}

#[tokio::test]
async fn no_token_use_check_unless_configured() {
    let auth = hs_authenticator();
    for token_use in [json!(null), json!("id"), json!("access")] {
        let token = hs_token(&claims(json!({ "token_use": token_use })));
        assert!(auth.authenticate(Some(&bearer(&token))).await.is_ok());
    }
    // Without the check, `client_id` never stands in for `aud`.
    let token = hs_token(&access_claims(json!({})));
    assert_eq!(reason(&auth, &token).await, "wrong audience");
}

#[tokio::test]
async fn subject_is_required() {
    let auth = hs_authenticator();
    for sub in [json!(null), json!(""), json!("  ")] {
        let token = hs_token(&claims(json!({ "sub": sub })));
        assert_eq!(reason(&auth, &token).await, "missing subject", "{sub}");
    }
}

#[tokio::test]
async fn wrong_secret_is_an_invalid_signature() {
    let auth = hs_authenticator();
    let token = sign(
        Algorithm::HS256,
        None,
        &claims(json!({})),
        &EncodingKey::from_secret(b"another-secret-that-is-long-enough-0123"),
    );
    assert_eq!(reason(&auth, &token).await, "invalid signature");
}

#[tokio::test]
async fn alg_none_and_other_algorithms_are_rejected() {
    let auth = hs_authenticator();
    let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims(json!({})).to_string());
    for token in [
        format!("{header}.{payload}."),
        format!("{header}.{payload}.c2ln"),
    ] {
        assert_eq!(reason(&auth, &token).await, "unsupported algorithm");
    }

    let hs512 = sign(
        Algorithm::HS512,
        None,
        &claims(json!({})),
        &EncodingKey::from_secret(SECRET.as_bytes()),
    );
    assert_eq!(reason(&auth, &hs512).await, "unsupported algorithm");

    let rs256 = sign(
        Algorithm::RS256,
        Some(RSA_KID),
        &claims(json!({})),
        &rsa_key(),
    );
    assert_eq!(reason(&auth, &rs256).await, "unsupported algorithm");
}

#[tokio::test]
async fn unreadable_secret_is_our_fault() {
    let auth = authenticator(KeySource::SharedSecret {
        secret_name: "test/missing".into(),
    });
    let token = hs_token(&claims(json!({})));
    let err = auth.authenticate(Some(&bearer(&token))).await.unwrap_err();
    assert!(matches!(err, Error::Secret { .. }), "{err:?}");
    assert_eq!(ApiError::from(&err).status(), 500);
}

#[tokio::test]
async fn rs256_and_es256_via_jwks() {
    let server = jwks_server(ResponseTemplate::new(200).set_body_json(jwks_body())).await;
    let auth = jwks_authenticator(&server, Duration::from_secs(3600));

    let rs = sign(
        Algorithm::RS256,
        Some(RSA_KID),
        &claims(json!({})),
        &rsa_key(),
    );
    let user = auth.authenticate(Some(&bearer(&rs))).await.unwrap();
    assert_eq!(user.user_id, "user-1");

    let es = sign(
        Algorithm::ES256,
        Some(EC_KID),
        &claims(json!({"sub": "user-2"})),
        &ec_key(),
    );
    let user = auth.authenticate(Some(&bearer(&es))).await.unwrap();
    assert_eq!(user.user_id, "user-2");

    // Both answered from one fetch.
    assert_eq!(jwks_fetches(&server).await, 1);

    // The claims are checked the same way as with a shared secret.
    let expired = sign(
        Algorithm::RS256,
        Some(RSA_KID),
        &claims(json!({"exp": now() - 120})),
        &rsa_key(),
    );
    assert_eq!(reason(&auth, &expired).await, "token expired");
    let foreign = sign(
        Algorithm::ES256,
        Some(EC_KID),
        &claims(json!({"aud": "other-app"})),
        &ec_key(),
    );
    assert_eq!(reason(&auth, &foreign).await, "wrong audience");
}

#[tokio::test]
async fn jwks_token_checks_kid_and_key_type() {
    let server = jwks_server(ResponseTemplate::new(200).set_body_json(jwks_body())).await;
    let auth = jwks_authenticator(&server, Duration::from_secs(3600));

    let no_kid = sign(Algorithm::RS256, None, &claims(json!({})), &rsa_key());
    assert_eq!(reason(&auth, &no_kid).await, "unknown signing key");

    // An ES256 token naming the RSA key cannot carry a valid signature.
    let mismatched = sign(
        Algorithm::ES256,
        Some(RSA_KID),
        &claims(json!({})),
        &ec_key(),
    );
    assert_eq!(reason(&auth, &mismatched).await, "invalid signature");

    // Signed by the EC key but claiming to be the RSA key's token.
    let forged = sign(
        Algorithm::RS256,
        Some(RSA_KID),
        &claims(json!({})),
        &rsa_key(),
    );
    let (head, rest) = forged.split_once('.').unwrap();
    let (payload, _) = rest.split_once('.').unwrap();
    let other = sign(
        Algorithm::ES256,
        Some(EC_KID),
        &claims(json!({})),
        &ec_key(),
    );
    let other_sig = other.rsplit('.').next().unwrap();
    let tampered = format!("{head}.{payload}.{other_sig}");
    assert_eq!(reason(&auth, &tampered).await, "invalid signature");
}

#[tokio::test]
async fn hs256_token_is_rejected_when_jwks_is_configured() {
    let server = jwks_server(ResponseTemplate::new(200).set_body_json(jwks_body())).await;
    let auth = jwks_authenticator(&server, Duration::from_secs(3600));

    let token = hs_token(&claims(json!({})));
    assert_eq!(reason(&auth, &token).await, "unsupported algorithm");

    // The classic confusion: HMAC keyed with the public key's published modulus.
    let jwks = jwks_body();
    let modulus = jwks["keys"][0]["n"].as_str().unwrap().to_owned();
    let confused = sign(
        Algorithm::HS256,
        Some(RSA_KID),
        &claims(json!({})),
        &EncodingKey::from_secret(modulus.as_bytes()),
    );
    assert_eq!(reason(&auth, &confused).await, "unsupported algorithm");
    // Rejected before any key was looked up.
    assert_eq!(jwks_fetches(&server).await, 0);
}

#[tokio::test]
async fn unknown_kid_refetches_at_most_once_a_minute() {
    let server = jwks_server(ResponseTemplate::new(200).set_body_json(jwks_body())).await;
    let auth = jwks_authenticator(&server, Duration::from_secs(3600));

    let valid = sign(
        Algorithm::RS256,
        Some(RSA_KID),
        &claims(json!({})),
        &rsa_key(),
    );
    auth.authenticate(Some(&bearer(&valid))).await.unwrap();
    assert_eq!(jwks_fetches(&server).await, 1);

    let unknown = sign(
        Algorithm::RS256,
        Some("rotated-1"),
        &claims(json!({})),
        &rsa_key(),
    );
    assert_eq!(reason(&auth, &unknown).await, "unknown signing key");
    assert_eq!(
        jwks_fetches(&server).await,
        2,
        "one refetch for the unknown kid"
    );

    let another = sign(
        Algorithm::RS256,
        Some("rotated-2"),
        &claims(json!({})),
        &rsa_key(),
    );
    assert_eq!(reason(&auth, &another).await, "unknown signing key");
    assert_eq!(reason(&auth, &unknown).await, "unknown signing key");
    assert_eq!(jwks_fetches(&server).await, 2, "no refetch within 60 s");

    // Known keys keep working from the cache.
    auth.authenticate(Some(&bearer(&valid))).await.unwrap();
    assert_eq!(jwks_fetches(&server).await, 2);
}

#[tokio::test]
async fn unknown_kid_on_a_cold_cache_fetches_once() {
    let server = jwks_server(ResponseTemplate::new(200).set_body_json(jwks_body())).await;
    let auth = jwks_authenticator(&server, Duration::from_secs(3600));

    let unknown = sign(
        Algorithm::RS256,
        Some("nobody"),
        &claims(json!({})),
        &rsa_key(),
    );
    assert_eq!(reason(&auth, &unknown).await, "unknown signing key");
    assert_eq!(jwks_fetches(&server).await, 1);
}

#[tokio::test]
async fn rotated_key_is_picked_up_by_the_refetch() {
    let rsa_only = json!({"keys": [public_jwk(&rsa_key(), Algorithm::RS256, RSA_KID)]});
    let server = jwks_server(ResponseTemplate::new(200).set_body_json(rsa_only)).await;
    let auth = jwks_authenticator(&server, Duration::from_secs(3600));

    let rs = sign(
        Algorithm::RS256,
        Some(RSA_KID),
        &claims(json!({})),
        &rsa_key(),
    );
    auth.authenticate(Some(&bearer(&rs))).await.unwrap();

    // The IdP starts publishing the EC key.
    server.reset().await;
    Mock::given(method("GET"))
        .and(path(JWKS_PATH))
        .respond_with(ResponseTemplate::new(200).set_body_json(jwks_body()))
        .expect(1)
        .mount(&server)
        .await;

    let es = sign(
        Algorithm::ES256,
        Some(EC_KID),
        &claims(json!({})),
        &ec_key(),
    );
    let user = auth.authenticate(Some(&bearer(&es))).await.unwrap();
    assert_eq!(user.user_id, "user-1");
    server.verify().await;
}

#[tokio::test]
async fn unreachable_jwks_is_our_fault() {
    let server = jwks_server(ResponseTemplate::new(500)).await;
    let auth = jwks_authenticator(&server, Duration::from_secs(3600));
    let token = sign(
        Algorithm::RS256,
        Some(RSA_KID),
        &claims(json!({})),
        &rsa_key(),
    );

    let err = auth.authenticate(Some(&bearer(&token))).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::UpstreamUnavailable {
                service: "jwks",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(ApiError::from(&err).status(), 502);

    // A 404 (wrong JWT_JWKS_URL) is a misconfiguration too, not the caller's 4xx.
    let server = jwks_server(ResponseTemplate::new(404)).await;
    let auth = jwks_authenticator(&server, Duration::from_secs(3600));
    let err = auth.authenticate(Some(&bearer(&token))).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Upstream {
                service: "jwks",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(ApiError::from(&err).status(), 502);
}

#[tokio::test]
async fn expired_keys_stay_in_use_while_the_jwks_is_down() {
    let server = jwks_server(ResponseTemplate::new(200).set_body_json(jwks_body())).await;
    let auth = jwks_authenticator(&server, Duration::from_secs(1));
    let token = sign(
        Algorithm::RS256,
        Some(RSA_KID),
        &claims(json!({})),
        &rsa_key(),
    );
    auth.authenticate(Some(&bearer(&token))).await.unwrap();

    server.reset().await;
    Mock::given(method("GET"))
        .and(path(JWKS_PATH))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    tokio::time::sleep(Duration::from_millis(1100)).await;

    let user = auth.authenticate(Some(&bearer(&token))).await.unwrap();
    assert_eq!(user.user_id, "user-1");
    let failed_attempts = jwks_fetches(&server).await;
    assert!(failed_attempts >= 1);
    // The failed refresh is not retried on every request.
    auth.authenticate(Some(&bearer(&token))).await.unwrap();
    assert_eq!(jwks_fetches(&server).await, failed_attempts);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_cold_requests_share_one_fetch() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(JWKS_PATH))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(jwks_body())
                // Keeps the fetch in flight while the other requests arrive.
                .set_delay(Duration::from_millis(200)),
        )
        .expect(1)
        .mount(&server)
        .await;
    let auth = Arc::new(jwks_authenticator(&server, Duration::from_secs(3600)));
    let token = sign(
        Algorithm::ES256,
        Some(EC_KID),
        &claims(json!({})),
        &ec_key(),
    );

    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let auth = Arc::clone(&auth);
            let header = bearer(&token);
            tokio::spawn(async move { auth.authenticate(Some(&header)).await })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap().user_id, "user-1");
    }
    assert_eq!(jwks_fetches(&server).await, 1);
    server.verify().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_cold_unknown_kids_share_one_fetch() {
    let server = jwks_server(
        ResponseTemplate::new(200)
            .set_body_json(jwks_body())
            .set_delay(Duration::from_millis(200)),
    )
    .await;
    let auth = Arc::new(jwks_authenticator(&server, Duration::from_secs(3600)));

    // Requests that waited for the cold fetch do not refetch for their unknown kid: the
    // keys they waited for are as new as a refetch would get.
    // Signed up front: RSA signing in a debug build is slow enough to let the fetch finish
    // before the last request starts.
    let tokens: Vec<_> = (0..5)
        .map(|i| {
            let kid = format!("random-{i}");
            sign(Algorithm::RS256, Some(&kid), &claims(json!({})), &rsa_key())
        })
        .collect();
    let tasks: Vec<_> = tokens
        .into_iter()
        .map(|token| {
            let auth = Arc::clone(&auth);
            tokio::spawn(async move { auth.authenticate(Some(&bearer(&token))).await })
        })
        .collect();
    for task in tasks {
        assert_eq!(
            unauthorized_reason(task.await.unwrap()),
            "unknown signing key"
        );
    }
    assert_eq!(jwks_fetches(&server).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_share_a_failed_fetch() {
    let server =
        jwks_server(ResponseTemplate::new(500).set_delay(Duration::from_millis(100))).await;
    let auth = Arc::new(jwks_authenticator(&server, Duration::from_secs(3600)));
    let token = sign(
        Algorithm::ES256,
        Some(EC_KID),
        &claims(json!({})),
        &ec_key(),
    );

    let tasks: Vec<_> = (0..5)
        .map(|_| {
            let auth = Arc::clone(&auth);
            let header = bearer(&token);
            tokio::spawn(async move { auth.authenticate(Some(&header)).await })
        })
        .collect();
    for task in tasks {
        let err = task.await.unwrap().unwrap_err();
        assert!(
            matches!(
                err,
                Error::UpstreamUnavailable {
                    service: "jwks",
                    ..
                }
            ),
            "{err:?}"
        );
    }
    // One fetch (with its one retry), not one per waiting request.
    assert!(jwks_fetches(&server).await <= 2);

    // A later request tries again.
    let before = jwks_fetches(&server).await;
    assert!(auth.authenticate(Some(&bearer(&token))).await.is_err());
    assert!(jwks_fetches(&server).await > before);
}
