//! Minting tokens (the API server side).

use core::fmt;
use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use p256::pkcs8::der::Decode as _;
use p256::pkcs8::{DecodePrivateKey as _, EncodePublicKey as _};
use zeroize::Zeroizing;

use crate::claims::{MAX_SUBJECT_BYTES, unix_seconds};
use crate::error::KeyProblem;
use crate::key::kubernetes_kid;
use crate::{Algorithm, Audience, BearerToken, Error, Issuer, KeySet, b64};

/// Default token lifetime: 60 seconds.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);
/// Default number of cached tokens in a [`Minter`].
pub const DEFAULT_MINT_CACHE: usize = 1024;

/// A private signing key: ECDSA P-256 (`ES256`), ECDSA P-384 (`ES384`) or Ed25519 (`EdDSA`);
/// with the `aws-lc-rs` (default) or `ring` backend also RSA (`RS256`).
///
/// With only the `rust-crypto` backend RSA private keys are refused: the pure-Rust `rsa` crate's
/// private-key operations are not constant time (RUSTSEC-2023-0071), so that build only verifies
/// RSA. ECDSA and Ed25519 signing use the RustCrypto crates with every backend (deterministic
/// RFC 6979 and RFC 8032 signatures). The key id is the one Kubernetes uses:
/// base64url(SHA-256(SubjectPublicKeyInfo DER)).
pub struct SigningKey {
    alg: Algorithm,
    kid: String,
    spki_der: Vec<u8>,
    inner: Inner,
}

enum Inner {
    #[cfg(any(feature = "aws-lc-rs", feature = "ring"))]
    Rsa(crate::backend::lc::signature::RsaKeyPair),
    P256(p256::ecdsa::SigningKey),
    P384(p384::ecdsa::SigningKey),
    Ed25519(ed25519_dalek::SigningKey),
}

impl SigningKey {
    /// Loads a PKCS#8 `PRIVATE KEY` PEM document.
    ///
    /// [`SigningKey::from_pem`] also takes the SEC1 `EC PRIVATE KEY` that
    /// `openssl ecparam -genkey` writes.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKey`] with [`KeyProblem::PrivateKey`] when the text is not a PKCS#8
    /// P-256, P-384 or Ed25519 key, or with [`KeyProblem::PrivateKeyLabel`] (whose message says
    /// how to convert) for any other PEM label; [`Error::UnsupportedKey`] for an RSA key without
    /// an RSA signing backend, or another curve.
    pub fn from_pkcs8_pem(pem: &str) -> Result<SigningKey, Error> {
        match private_key_block(pem)? {
            (PrivateLabel::Pkcs8, der) => SigningKey::from_pkcs8_der(&der),
            (PrivateLabel::Sec1, _) => Err(Error::InvalidKey(KeyProblem::PrivateKeyLabel)),
        }
    }

    /// Loads a private key PEM document: PKCS#8 `PRIVATE KEY` (P-256, P-384, Ed25519, and RSA
    /// with an RSA signing backend) or SEC1 `EC PRIVATE KEY` (P-256, P-384), with or without the
    /// `EC PARAMETERS` block that `openssl ecparam -genkey` writes before it.
    ///
    /// ```
    /// use addon_jwt::{Algorithm, SigningKey};
    /// // openssl ecparam -name prime256v1 -genkey
    /// let pem = "-----BEGIN EC PARAMETERS-----\n\
    /// BggqhkjOPQMBBw==\n\
    /// -----END EC PARAMETERS-----\n\
    /// -----BEGIN EC PRIVATE KEY-----\n\
    /// MHcCAQEEIJFZpRJAX+WsT7/IUBPHMJdHA/1d+u8D0IoRqdfG4uZYoAoGCCqGSM49\n\
    /// AwEHoUQDQgAELrJQgovwbn0zSIcWqhNWO+xrp377nSopEIhB5uvqazSTvfvGAnxB\n\
    /// 7zkZZ4SbZxdlMNoNxNrIAiZiRiXsrXNEjQ==\n\
    /// -----END EC PRIVATE KEY-----\n";
    /// assert_eq!(SigningKey::from_pem(pem)?.algorithm(), Algorithm::Es256);
    /// # Ok::<(), addon_jwt::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`SigningKey::from_pkcs8_pem`]; [`KeyProblem::PrivateKeyLabel`] names the conversion
    /// (`openssl pkcs8 -topk8 -nocrypt`) for other labels (`RSA PRIVATE KEY`,
    /// `ENCRYPTED PRIVATE KEY`, ...).
    pub fn from_pem(pem: &str) -> Result<SigningKey, Error> {
        match private_key_block(pem)? {
            (PrivateLabel::Pkcs8, der) => SigningKey::from_pkcs8_der(&der),
            (PrivateLabel::Sec1, der) => SigningKey::from_sec1_der(&der),
        }
    }

    /// Loads a SEC1 `ECPrivateKey` DER (RFC 5915) on P-256 (`ES256`) or P-384 (`ES384`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKey`] with [`KeyProblem::PrivateKey`] for malformed DER;
    /// [`Error::UnsupportedKey`] for another curve.
    pub fn from_sec1_der(der: &[u8]) -> Result<SigningKey, Error> {
        let (alg, inner) = if let Ok(k) = p256::SecretKey::from_sec1_der(der) {
            (Algorithm::Es256, Inner::P256(k.into()))
        } else if let Ok(k) = p384::SecretKey::from_sec1_der(der) {
            (Algorithm::Es384, Inner::P384(k.into()))
        } else if p256::pkcs8::der::Document::from_der(der).is_ok() {
            return Err(Error::UnsupportedKey);
        } else {
            return Err(Error::InvalidKey(KeyProblem::PrivateKey));
        };
        SigningKey::with_inner(alg, inner)
    }

    /// Loads a PKCS#8 DER private key.
    ///
    /// # Errors
    ///
    /// As [`SigningKey::from_pkcs8_pem`].
    pub fn from_pkcs8_der(der: &[u8]) -> Result<SigningKey, Error> {
        let bad = Error::InvalidKey(KeyProblem::PrivateKey);
        let info = p256::pkcs8::PrivateKeyInfo::try_from(der).map_err(|_| bad.clone())?;
        let oid = info.algorithm.oid.to_string();
        let (alg, inner) = match oid.as_str() {
            #[cfg(any(feature = "aws-lc-rs", feature = "ring"))]
            "1.2.840.113549.1.1.1" => (
                Algorithm::Rs256,
                Inner::Rsa(
                    crate::backend::lc::signature::RsaKeyPair::from_pkcs8(der)
                        .map_err(|_| bad.clone())?,
                ),
            ),
            #[cfg(any(feature = "aws-lc-rs", feature = "ring"))]
            "1.2.840.113549.1.1.10" => return Err(Error::UnsupportedKey),
            #[cfg(not(any(feature = "aws-lc-rs", feature = "ring")))]
            "1.2.840.113549.1.1.1" | "1.2.840.113549.1.1.10" => return Err(Error::UnsupportedKey),
            "1.3.101.112" => (
                Algorithm::EdDsa,
                Inner::Ed25519(
                    ed25519_dalek::SigningKey::from_pkcs8_der(der).map_err(|_| bad.clone())?,
                ),
            ),
            "1.2.840.10045.2.1" => {
                if let Ok(k) = p256::ecdsa::SigningKey::from_pkcs8_der(der) {
                    (Algorithm::Es256, Inner::P256(k))
                } else if let Ok(k) = p384::ecdsa::SigningKey::from_pkcs8_der(der) {
                    (Algorithm::Es384, Inner::P384(k))
                } else {
                    return Err(Error::UnsupportedKey);
                }
            }
            _ => return Err(bad),
        };
        SigningKey::with_inner(alg, inner)
    }

    fn with_inner(alg: Algorithm, inner: Inner) -> Result<SigningKey, Error> {
        let bad = Error::InvalidKey(KeyProblem::PrivateKey);
        let spki_der = match &inner {
            #[cfg(any(feature = "aws-lc-rs", feature = "ring"))]
            Inner::Rsa(k) => rsa_spki(k),
            Inner::P256(k) => k.verifying_key().to_public_key_der(),
            Inner::P384(k) => k.verifying_key().to_public_key_der(),
            Inner::Ed25519(k) => k.verifying_key().to_public_key_der(),
        }
        .map_err(|_| bad)?
        .into_vec();
        Ok(SigningKey {
            alg,
            kid: kubernetes_kid(&spki_der),
            spki_der,
            inner,
        })
    }

    /// The algorithm this key signs with.
    #[must_use]
    pub fn algorithm(&self) -> Algorithm {
        self.alg
    }

    /// The key id placed in the header: base64url(SHA-256(SubjectPublicKeyInfo DER)).
    #[must_use]
    pub fn key_id(&self) -> &str {
        &self.kid
    }

    /// The public half as a `PUBLIC KEY` PEM document (what a sidecar is configured with).
    ///
    /// # Errors
    ///
    /// [`Error::Signing`] if the encoding fails (it does not for valid keys).
    pub fn public_key_pem(&self) -> Result<String, Error> {
        pem_rfc7468::encode_string("PUBLIC KEY", pem_rfc7468::LineEnding::LF, &self.spki_der)
            .map_err(|_| Error::Signing)
    }

    /// The public half as a [`KeySet`] entry named by [`SigningKey::key_id`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKey`] if the public key cannot be loaded (it can for valid keys).
    pub fn public_key_set(&self) -> Result<KeySet, Error> {
        KeySet::from_spki_der(&self.spki_der, self.alg)?.with_key_id(&self.kid)
    }

    /// Signs a token for `user` (`sub`) and `audience` (`aud`, e.g. `<namespace>/<service>`) from
    /// `issuer`, valid from `now` for `ttl`.
    ///
    /// The header is `{"alg":..,"kid":..}` (no `typ`, as Kubernetes), the payload
    /// `{"aud":[..],"exp":..,"iat":..,"iss":..,"nbf":..,"sub":..}` with keys sorted as go-jose
    /// writes them.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for an empty user, audience or issuer, a user longer than
    /// [`MAX_SUBJECT_BYTES`](crate::MAX_SUBJECT_BYTES) or one with control characters;
    /// [`Error::Signing`] if signing fails.
    pub fn sign(
        &self,
        issuer: &Issuer,
        user: &str,
        audience: &Audience,
        now: SystemTime,
        ttl: Duration,
    ) -> Result<BearerToken, Error> {
        check_input(user, "user")?;
        let (issuer, audience) = (issuer.as_str(), audience.as_str());
        check_input(audience, "audience")?;
        check_input(issuer, "issuer")?;
        let iat = clamp(unix_seconds(now));
        let exp = clamp(unix_seconds(now).saturating_add(i128::from(ttl.as_secs())));
        let header = format!(
            "{{\"alg\":\"{}\",\"kid\":{}}}",
            self.alg.as_str(),
            json_string(&self.kid)?
        );
        let payload = format!(
            "{{\"aud\":[{}],\"exp\":{exp},\"iat\":{iat},\"iss\":{},\"nbf\":{iat},\"sub\":{}}}",
            json_string(audience)?,
            json_string(issuer)?,
            json_string(user)?
        );
        let mut token = String::with_capacity(256);
        token.push_str(&b64::encode(header.as_bytes()));
        token.push('.');
        token.push_str(&b64::encode(payload.as_bytes()));
        let signature = self.sign_bytes(token.as_bytes())?;
        token.push('.');
        token.push_str(&b64::encode(&signature));
        Ok(BearerToken::new(token))
    }

    /// Signs `claims`, the JSON text of a JWT claim set the caller built (a service-account
    /// token's `kubernetes.io` claim, several audiences, a `jti`...), as a compact JWS with the
    /// header [`SigningKey::sign`] writes. The claims are signed as given; only their being one
    /// JSON object is checked.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] when `claims` is not a JSON object; [`Error::Signing`] if signing
    /// fails.
    pub fn sign_claims(&self, claims: &str) -> Result<BearerToken, Error> {
        if crate::json::parse_object(claims.as_bytes(), "payload").is_err() {
            return Err(Error::InvalidInput("claims"));
        }
        let header = format!(
            "{{\"alg\":\"{}\",\"kid\":{}}}",
            self.alg.as_str(),
            json_string(&self.kid)?
        );
        let mut token = String::with_capacity(claims.len().saturating_mul(2).saturating_add(256));
        token.push_str(&b64::encode(header.as_bytes()));
        token.push('.');
        token.push_str(&b64::encode(claims.as_bytes()));
        let signature = self.sign_bytes(token.as_bytes())?;
        token.push('.');
        token.push_str(&b64::encode(&signature));
        Ok(BearerToken::new(token))
    }

    fn sign_bytes(&self, message: &[u8]) -> Result<Vec<u8>, Error> {
        use signature::Signer as _;
        Ok(match &self.inner {
            #[cfg(any(feature = "aws-lc-rs", feature = "ring"))]
            Inner::Rsa(k) => {
                // PKCS#1 v1.5 signing is deterministic; the backend takes a generator by API shape only
                // (the operating system's, never a `rand` type).
                #[cfg(feature = "aws-lc-rs")]
                let len = k.public_modulus_len();
                #[cfg(not(feature = "aws-lc-rs"))]
                let len = k.public().modulus_len();
                let mut sig = vec![0u8; len];
                k.sign(
                    &crate::backend::lc::signature::RSA_PKCS1_SHA256,
                    &crate::backend::lc::rand::SystemRandom::new(),
                    message,
                    &mut sig,
                )
                .map_err(|_| Error::Signing)?;
                sig
            }
            Inner::P256(k) => {
                let sig: p256::ecdsa::Signature =
                    k.try_sign(message).map_err(|_| Error::Signing)?;
                sig.to_bytes().to_vec()
            }
            Inner::P384(k) => {
                let sig: p384::ecdsa::Signature =
                    k.try_sign(message).map_err(|_| Error::Signing)?;
                sig.to_bytes().to_vec()
            }
            Inner::Ed25519(k) => k
                .try_sign(message)
                .map_err(|_| Error::Signing)?
                .to_bytes()
                .to_vec(),
        })
    }
}

/// The two private-key PEM labels a [`SigningKey`] reads.
enum PrivateLabel {
    /// `PRIVATE KEY` (PKCS#8).
    Pkcs8,
    /// `EC PRIVATE KEY` (SEC1).
    Sec1,
}

/// The one private key in a PEM document: `PRIVATE KEY`, or `EC PRIVATE KEY` optionally after an
/// `EC PARAMETERS` block; only whitespace around the blocks.
fn private_key_block(pem: &str) -> Result<(PrivateLabel, Zeroizing<Vec<u8>>), Error> {
    let bad = Error::InvalidKey(KeyProblem::PrivateKey);
    let mut found: Option<(PrivateLabel, Zeroizing<Vec<u8>>)> = None;
    let mut parameters = false;
    let mut rest = pem.trim_start();
    while !rest.is_empty() {
        if !rest.starts_with("-----BEGIN ") {
            return Err(bad);
        }
        // The block ends after `-----END <label>-----`.
        let (_, after_end) = rest.split_once("-----END ").ok_or_else(|| bad.clone())?;
        let (end_label, after) = after_end.split_once("-----").ok_or_else(|| bad.clone())?;
        let block_len = rest
            .len()
            .checked_sub(after.len())
            .ok_or_else(|| bad.clone())?;
        let block = rest.get(..block_len).ok_or_else(|| bad.clone())?;
        if found.is_some() {
            return Err(bad); // one key per document
        }
        match end_label {
            "EC PARAMETERS" if !parameters => parameters = true,
            "PRIVATE KEY" | "EC PRIVATE KEY" => {
                let (label, der) =
                    pem_rfc7468::decode_vec(block.as_bytes()).map_err(|_| bad.clone())?;
                let der = Zeroizing::new(der);
                let kind = match label {
                    "PRIVATE KEY" if !parameters => PrivateLabel::Pkcs8,
                    "EC PRIVATE KEY" => PrivateLabel::Sec1,
                    _ => return Err(bad),
                };
                found = Some((kind, der));
            }
            // `RSA PRIVATE KEY`, `ENCRYPTED PRIVATE KEY`, `DSA PRIVATE KEY`, ...: convertible.
            label if label.ends_with("PRIVATE KEY") => {
                return Err(Error::InvalidKey(KeyProblem::PrivateKeyLabel));
            }
            // `PUBLIC KEY`, `CERTIFICATE`, ...: not a private key at all.
            _ => return Err(bad),
        }
        rest = after.trim_start();
    }
    found.ok_or(bad)
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &self.alg)
            .field("kid", &self.kid)
            .field("private", &"<redacted>")
            .finish()
    }
}

/// Mints add-on tokens and caches them per (user, audience), as the API server's proxy does
/// ("check for a cached token first").
///
/// A cached token is handed back while less than half its lifetime has passed, so a caller
/// always receives a token with at least `ttl / 2` left. The cache holds at most
/// `capacity` tokens; when full, expired entries are dropped first, then the oldest.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use addon_jwt::{Audience, Issuer, Minter, SigningKey, Validation, verify};
/// let pem = "-----BEGIN PRIVATE KEY-----\n\
/// MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
/// -----END PRIVATE KEY-----\n";
/// let key = SigningKey::from_pkcs8_pem(pem)?;
/// let keys = key.public_key_set()?;
/// let issuer = Issuer::new("https://apiserver.example");
/// let audience = Audience::new("kube-system/dashboard");
/// let mut minter = Minter::new(key, issuer.clone());
/// let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
/// let token = minter.mint("jane", &audience, now)?;
/// let again = minter.mint("jane", &audience, now + Duration::from_secs(5))?;
/// assert_eq!(token, again); // served from the cache
///
/// let validation = Validation::new(issuer, audience);
/// let claims = verify(token.expose_secret(), &keys, &validation, now)?;
/// assert_eq!(claims.subject(), "jane");
/// # Ok::<(), addon_jwt::Error>(())
/// ```
#[derive(Debug)]
pub struct Minter {
    key: SigningKey,
    issuer: Issuer,
    ttl: Duration,
    capacity: usize,
    cache: HashMap<String, Cached>,
    /// The cache key of the last call (`user`, NUL, audience): reused, so a cache hit allocates
    /// nothing for its key.
    key_buffer: String,
}

#[derive(Debug)]
struct Cached {
    token: BearerToken,
    issued: i128,
}

impl Minter {
    /// A minter signing with `key` as `issuer`, TTL [`DEFAULT_TTL`], cache [`DEFAULT_MINT_CACHE`].
    #[must_use]
    pub fn new(key: SigningKey, issuer: Issuer) -> Minter {
        Minter {
            key,
            issuer,
            ttl: DEFAULT_TTL,
            capacity: DEFAULT_MINT_CACHE,
            cache: HashMap::new(),
            key_buffer: String::new(),
        }
    }

    /// Sets the token lifetime.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Minter {
        self.ttl = ttl;
        self
    }

    /// Sets the cache capacity (0 disables caching).
    #[must_use]
    pub fn cache_capacity(mut self, capacity: usize) -> Minter {
        self.capacity = capacity;
        self
    }

    /// The signing key.
    #[must_use]
    pub fn signing_key(&self) -> &SigningKey {
        &self.key
    }

    /// Number of cached tokens.
    #[must_use]
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    /// A token for `user` and `audience` at `now`: the cached one while fresh, else a new one.
    ///
    /// # Errors
    ///
    /// As [`SigningKey::sign`].
    pub fn mint(
        &mut self,
        user: &str,
        audience: &Audience,
        now: SystemTime,
    ) -> Result<BearerToken, Error> {
        self.mint_with(user, &[audience.as_str()], now, BearerToken::clone)
            .map(|(token, _)| token)
    }

    /// The cached token for `user` and `audience` (its pieces concatenated) while fresh at
    /// `now`, handed to `read`; `None` when [`Minter::mint_with`] would sign one.
    pub(crate) fn cached_with<R>(
        &mut self,
        user: &str,
        audience: &[&str],
        now: SystemTime,
        read: impl FnOnce(&BearerToken) -> R,
    ) -> Option<R> {
        let now_s = unix_seconds(now);
        let half = i128::from(self.ttl.as_secs() / 2);
        self.fill_key_buffer(user, audience);
        self.cache
            .get(self.key_buffer.as_str())
            .filter(|c| now_s >= c.issued && now_s < c.issued.saturating_add(half))
            .map(|hit| read(&hit.token))
    }

    /// The cache key of `user` and `audience` in the buffer kept between calls. User and
    /// audience contain no control characters (checked when signing), so NUL separates them
    /// unambiguously.
    fn fill_key_buffer(&mut self, user: &str, audience: &[&str]) {
        self.key_buffer.clear();
        self.key_buffer.push_str(user);
        self.key_buffer.push('\u{0}');
        for piece in audience {
            self.key_buffer.push_str(piece);
        }
    }

    /// [`Minter::mint`] for the audience `audience` (its pieces concatenated), handing the token
    /// to `read` instead of cloning it, and telling whether it was signed now (`true`) or came
    /// from the cache (`false`).
    pub(crate) fn mint_with<R>(
        &mut self,
        user: &str,
        audience: &[&str],
        now: SystemTime,
        read: impl FnOnce(&BearerToken) -> R,
    ) -> Result<(R, bool), Error> {
        let now_s = unix_seconds(now);
        let half = i128::from(self.ttl.as_secs() / 2);
        self.fill_key_buffer(user, audience);
        if let Some(hit) = self
            .cache
            .get(self.key_buffer.as_str())
            .filter(|c| now_s >= c.issued && now_s < c.issued.saturating_add(half))
        {
            return Ok((read(&hit.token), false));
        }
        let audience = Audience::new(audience.concat());
        let token = self
            .key
            .sign(&self.issuer, user, &audience, now, self.ttl)?;
        let read = read(&token);
        if self.capacity > 0 {
            if self.cache.len() >= self.capacity {
                let ttl = i128::from(self.ttl.as_secs());
                self.cache
                    .retain(|_, c| now_s >= c.issued && now_s < c.issued.saturating_add(ttl));
            }
            if self.cache.len() >= self.capacity
                && let Some(oldest) = self
                    .cache
                    .iter()
                    .min_by_key(|(_, c)| c.issued)
                    .map(|(k, _)| k.clone())
            {
                self.cache.remove(&oldest);
            }
            self.cache.insert(
                self.key_buffer.clone(),
                Cached {
                    token,
                    issued: now_s,
                },
            );
        }
        Ok((read, true))
    }
}

/// SubjectPublicKeyInfo DER of a ring or aws-lc-rs RSA key pair (rsaEncryption, NULL parameters).
#[cfg(any(feature = "aws-lc-rs", feature = "ring"))]
fn rsa_spki(k: &crate::backend::lc::signature::RsaKeyPair) -> Result<der::Document, spki::Error> {
    use crate::backend::lc::signature::KeyPair as _;
    let pkcs1 = k.public_key().as_ref();
    let info = spki::SubjectPublicKeyInfoRef {
        algorithm: spki::AlgorithmIdentifierRef {
            oid: der::asn1::ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1"),
            parameters: Some(der::asn1::AnyRef::NULL),
        },
        subject_public_key: der::asn1::BitStringRef::from_bytes(pkcs1)?,
    };
    Ok(der::Document::encode_msg(&info)?)
}

fn check_input(value: &str, what: &'static str) -> Result<(), Error> {
    if value.is_empty() || value.len() > MAX_SUBJECT_BYTES || value.chars().any(char::is_control) {
        return Err(Error::InvalidInput(what));
    }
    Ok(())
}

fn clamp(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

fn json_string(s: &str) -> Result<String, Error> {
    serde_json::to_string(s).map_err(|_| Error::Signing)
}
