//! Verification keys, each bound to exactly one algorithm, and key sets.

use core::fmt;

use der::{Decode as _, Encode as _};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use crate::backend::Verifier;
use crate::error::KeyProblem;
use crate::{Algorithm, Error, b64, json};

/// Maximum size of a JWKS document accepted by [`KeySet::from_jwks`].
pub const MAX_JWKS_BYTES: usize = 64 * 1024;
/// Maximum size of a PEM document accepted by [`KeySet::from_pem`].
pub const MAX_PEM_BYTES: usize = 256 * 1024;
/// Maximum number of keys in one [`KeySet`].
pub const MAX_KEYS: usize = 32;
/// Maximum length in bytes of a `kid`.
pub const MAX_KID_BYTES: usize = 256;
/// Smallest accepted RSA modulus, in bits.
pub const MIN_RSA_BITS: usize = 2048;
/// Largest RSA modulus a [`KeyPolicy`] can allow, in bits.
pub const MAX_RSA_BITS: usize = 8192;
/// Largest RSA modulus accepted by default ([`KeyPolicy::new`]), in bits.
pub const DEFAULT_MAX_RSA_BITS: usize = 4096;
/// Shortest accepted `HS256` secret, in bytes: the SHA-256 output size (RFC 7518 §3.2).
pub const MIN_HMAC_SECRET_BYTES: usize = 32;

const OID_RSA: der::asn1::ObjectIdentifier =
    der::asn1::ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const OID_EC: der::asn1::ObjectIdentifier =
    der::asn1::ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const OID_P256: der::asn1::ObjectIdentifier =
    der::asn1::ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const OID_P384: der::asn1::ObjectIdentifier =
    der::asn1::ObjectIdentifier::new_unwrap("1.3.132.0.34");
const OID_ED25519: der::asn1::ObjectIdentifier =
    der::asn1::ObjectIdentifier::new_unwrap("1.3.101.112");

/// Limits applied when keys are loaded into a [`KeySet`].
///
/// The cost of one RSA verification grows with the modulus, and a token is checked before
/// anyone is authenticated, so the default caps RSA keys at [`DEFAULT_MAX_RSA_BITS`] (4096, what
/// every Kubernetes distribution and OIDC provider uses at most); [`KeyPolicy::max_rsa_bits`]
/// raises it up to [`MAX_RSA_BITS`] (8192).
///
/// ```
/// use addon_jwt::{DEFAULT_MAX_RSA_BITS, KeyPolicy};
/// assert_eq!(KeyPolicy::new().rsa_bits_limit(), DEFAULT_MAX_RSA_BITS);
/// assert_eq!(KeyPolicy::new().max_rsa_bits(8192).rsa_bits_limit(), 8192);
/// assert_eq!(KeyPolicy::new().max_rsa_bits(1 << 20).rsa_bits_limit(), 8192); // clamped
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyPolicy {
    max_rsa_bits: usize,
}

impl KeyPolicy {
    /// The default policy: RSA keys up to [`DEFAULT_MAX_RSA_BITS`].
    #[must_use]
    pub const fn new() -> KeyPolicy {
        KeyPolicy {
            max_rsa_bits: DEFAULT_MAX_RSA_BITS,
        }
    }

    /// Accepts RSA keys up to `bits`, clamped to [`MIN_RSA_BITS`]..=[`MAX_RSA_BITS`].
    #[must_use]
    pub const fn max_rsa_bits(mut self, bits: usize) -> KeyPolicy {
        self.max_rsa_bits = if bits < MIN_RSA_BITS {
            MIN_RSA_BITS
        } else if bits > MAX_RSA_BITS {
            MAX_RSA_BITS
        } else {
            bits
        };
        self
    }

    /// The largest accepted RSA modulus, in bits.
    #[must_use]
    pub const fn rsa_bits_limit(&self) -> usize {
        self.max_rsa_bits
    }
}

impl Default for KeyPolicy {
    fn default() -> KeyPolicy {
        KeyPolicy::new()
    }
}

/// A set of verification keys, each bound to one [`Algorithm`] and optionally named by a `kid`.
///
/// Keys come from trusted configuration only (a JWKS document, a `PUBLIC KEY` or `CERTIFICATE`
/// PEM, or an explicit HMAC secret); nothing in a token can add a key. A token whose header has a
/// `kid` is checked against the keys with that `kid` and the keys that have none (PEM keys);
/// a token without `kid` against all keys. A key only ever verifies its own algorithm. A token
/// that more than [`MAX_SIGNATURE_CHECKS`](crate::MAX_SIGNATURE_CHECKS) keys could verify is
/// refused unverified ([`Error::KeyIdRequired`]).
///
/// ```
/// use addon_jwt::{Algorithm, KeySet};
/// let pem = "-----BEGIN PUBLIC KEY-----\n\
/// MCowBQYDK2VwAyEA9RmsArMTEDUB1tKI9qCr+UfVcc5d4ZqvvVwS74+07Zw=\n\
/// -----END PUBLIC KEY-----\n";
/// let keys = KeySet::from_pem(pem, Algorithm::EdDsa)?;
/// assert_eq!(keys.len(), 1);
/// assert!(KeySet::from_pem(pem, Algorithm::Es256).is_err()); // key type and algorithm must fit
/// # Ok::<(), addon_jwt::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct KeySet {
    keys: Vec<Key>,
}

#[derive(Clone)]
pub(crate) struct Key {
    pub(crate) kid: Option<String>,
    pub(crate) alg: Algorithm,
    material: Material,
    /// The same public key in the signature backend's form, made once when the set is built.
    verifier: Verifier,
}

/// A validated key, independent of the signature backend.
#[derive(Clone)]
pub(crate) enum Material {
    /// A DER `RSAPublicKey` (PKCS#1) whose modulus and exponent passed the checks; PSS or
    /// PKCS#1 v1.5.
    Rsa {
        pkcs1: Vec<u8>,
        pss: bool,
    },
    P256(p256::ecdsa::VerifyingKey),
    P384(p384::ecdsa::VerifyingKey),
    Ed25519(ed25519_dalek::VerifyingKey),
    Hmac(Zeroizing<Vec<u8>>),
}

impl KeySet {
    /// An empty key set (verifies nothing); combine sets with [`KeySet::extend`].
    #[must_use]
    pub fn new() -> KeySet {
        KeySet::default()
    }

    /// Loads a JWKS document (`{"keys":[...]}`), as served at `/openid/v1/jwks`.
    ///
    /// Each key is bound to one algorithm: RSA keys to their `alg` (`RS256` when absent, or
    /// `PS256`), EC keys to `ES256`/`ES384` by `crv`, OKP `Ed25519` keys to `EdDSA`. Keys of types
    /// this crate does not implement (P-521, Ed448, X25519, unknown `kty`) are skipped. The
    /// document is limited to [`MAX_JWKS_BYTES`] and [`MAX_KEYS`] keys.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`], [`Error::Json`] (invalid JSON, duplicate members), or
    /// [`Error::InvalidJwks`]: no `keys` array, duplicate `kid`, private or symmetric key
    /// material (`d`, `k`, `oct`, ...), `use` other than `sig`, `key_ops` without `verify`, an
    /// `alg` that does not fit the key, malformed or non-minimal parameters, RSA keys below
    /// 2048 bits, above [`DEFAULT_MAX_RSA_BITS`] ([`KeyProblem::RsaTooLarge`]) or with a bad
    /// exponent, points off the curve, or no usable key.
    pub fn from_jwks(json_text: &str) -> Result<KeySet, Error> {
        KeySet::from_jwks_with(json_text, &KeyPolicy::new())
    }

    /// [`KeySet::from_jwks`] under `policy`.
    ///
    /// # Errors
    ///
    /// As [`KeySet::from_jwks`]; [`KeyProblem::RsaTooLarge`] for an RSA key above the policy's
    /// limit.
    pub fn from_jwks_with(json_text: &str, policy: &KeyPolicy) -> Result<KeySet, Error> {
        if json_text.len() > MAX_JWKS_BYTES {
            return Err(Error::TooLarge {
                what: "jwks",
                limit: MAX_JWKS_BYTES,
            });
        }
        let doc = json::parse_object(json_text.as_bytes(), "jwks")?;
        let Some(Value::Array(entries)) = doc.get("keys") else {
            return Err(Error::InvalidJwks(KeyProblem::Parameter));
        };
        if entries.len() > MAX_KEYS {
            return Err(Error::InvalidJwks(KeyProblem::TooManyKeys));
        }
        let mut set = KeySet::new();
        for entry in entries {
            let Value::Object(jwk) = entry else {
                return Err(Error::InvalidJwks(KeyProblem::Parameter));
            };
            if let Some(key) = key_from_jwk(jwk, policy).map_err(Error::InvalidJwks)? {
                set.push(key).map_err(Error::InvalidJwks)?;
            }
        }
        if set.keys.is_empty() {
            return Err(Error::InvalidJwks(KeyProblem::Empty));
        }
        Ok(set)
    }

    /// Loads a `PUBLIC KEY` (SubjectPublicKeyInfo) or `CERTIFICATE` PEM document, binding every
    /// key in it to `alg`. A bundle of several certificates gives one key per certificate.
    ///
    /// Certificates are used only as key containers, as kube-apiserver's
    /// `--service-account-key-file` does: validity dates, issuer and extensions are not checked.
    /// The keys have no `kid` and are tried for any token with a matching algorithm.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] above [`MAX_PEM_BYTES`]; [`Error::InvalidKey`] for other PEM labels,
    /// text outside the PEM blocks, bad DER, a key type that does not fit `alg` (including any
    /// PEM for `HS256`: an HMAC key is never derived from PEM text), RSA keys below
    /// 2048 bits, above [`DEFAULT_MAX_RSA_BITS`] ([`KeyProblem::RsaTooLarge`]) or with a bad
    /// exponent, invalid points, or more than [`MAX_KEYS`] keys.
    pub fn from_pem(pem: &str, alg: Algorithm) -> Result<KeySet, Error> {
        KeySet::from_pem_with(pem, alg, &KeyPolicy::new())
    }

    /// [`KeySet::from_pem`] under `policy`.
    ///
    /// # Errors
    ///
    /// As [`KeySet::from_pem`]; [`KeyProblem::RsaTooLarge`] for an RSA key above the policy's
    /// limit.
    pub fn from_pem_with(pem: &str, alg: Algorithm, policy: &KeyPolicy) -> Result<KeySet, Error> {
        if pem.len() > MAX_PEM_BYTES {
            return Err(Error::TooLarge {
                what: "pem",
                limit: MAX_PEM_BYTES,
            });
        }
        if alg == Algorithm::Hs256 {
            return Err(Error::InvalidKey(KeyProblem::AlgorithmMismatch));
        }
        let mut set = KeySet::new();
        for (label, der) in pem_blocks(pem).map_err(Error::InvalidKey)? {
            let spki = match label.as_str() {
                "PUBLIC KEY" => der,
                "CERTIFICATE" => {
                    let cert = x509_cert::Certificate::from_der(&der)
                        .map_err(|_| Error::InvalidKey(KeyProblem::Der))?;
                    cert.tbs_certificate
                        .subject_public_key_info
                        .to_der()
                        .map_err(|_| Error::InvalidKey(KeyProblem::Der))?
                }
                _ => return Err(Error::InvalidKey(KeyProblem::Pem)),
            };
            let material = material_from_spki(&spki, alg, policy).map_err(Error::InvalidKey)?;
            set.push(Key::new(None, alg, material))
                .map_err(Error::InvalidKey)?;
        }
        if set.keys.is_empty() {
            return Err(Error::InvalidKey(KeyProblem::Empty));
        }
        Ok(set)
    }

    /// Loads one DER-encoded SubjectPublicKeyInfo, bound to `alg`, without a `kid`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKey`] as for [`KeySet::from_pem`].
    pub fn from_spki_der(der: &[u8], alg: Algorithm) -> Result<KeySet, Error> {
        KeySet::from_spki_der_with(der, alg, &KeyPolicy::new())
    }

    /// [`KeySet::from_spki_der`] under `policy`.
    ///
    /// # Errors
    ///
    /// As [`KeySet::from_spki_der`]; [`KeyProblem::RsaTooLarge`] for an RSA key above the
    /// policy's limit.
    pub fn from_spki_der_with(
        der: &[u8],
        alg: Algorithm,
        policy: &KeyPolicy,
    ) -> Result<KeySet, Error> {
        if alg == Algorithm::Hs256 {
            return Err(Error::InvalidKey(KeyProblem::AlgorithmMismatch));
        }
        let material = material_from_spki(der, alg, policy).map_err(Error::InvalidKey)?;
        Ok(KeySet {
            keys: vec![Key::new(None, alg, material)],
        })
    }

    /// A key set holding one shared secret for `HS256`, without a `kid`.
    ///
    /// This is the only way to obtain an `HS256` key: PEM text, JWKS `oct` keys and public keys
    /// can never become HMAC keys. The secret is zeroised on drop and never printed.
    ///
    /// The secret must be at least [`MIN_HMAC_SECRET_BYTES`] (32) bytes, the size of the hash
    /// output (RFC 7518 §3.2): an empty secret, as an unset environment variable gives, would let
    /// anyone mint tokens.
    ///
    /// ```
    /// use addon_jwt::{Error, KeyProblem, KeySet};
    /// assert!(KeySet::from_hmac_secret(b"a shared secret of at least 32 bytes!").is_ok());
    /// assert_eq!(
    ///     KeySet::from_hmac_secret(b"").unwrap_err(),
    ///     Error::InvalidKey(KeyProblem::HmacSecretTooShort),
    /// );
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKey`] with [`KeyProblem::HmacSecretTooShort`] for a secret shorter than
    /// [`MIN_HMAC_SECRET_BYTES`].
    pub fn from_hmac_secret(secret: &[u8]) -> Result<KeySet, Error> {
        if secret.len() < MIN_HMAC_SECRET_BYTES {
            return Err(Error::InvalidKey(KeyProblem::HmacSecretTooShort));
        }
        Ok(KeySet::hmac_unchecked(secret))
    }

    /// An `HS256` key of any length (the primitive test suites use short keys).
    pub(crate) fn hmac_unchecked(secret: &[u8]) -> KeySet {
        KeySet {
            keys: vec![Key::new(
                None,
                Algorithm::Hs256,
                Material::Hmac(Zeroizing::new(secret.to_vec())),
            )],
        }
    }

    /// Names every key in this set with `kid` (for example the Kubernetes key id
    /// of a PEM-loaded key), so that only tokens carrying that `kid` (or none) select them.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKeyId`] if `kid` is longer than [`MAX_KID_BYTES`].
    pub fn with_key_id(mut self, kid: &str) -> Result<KeySet, Error> {
        if kid.len() > MAX_KID_BYTES {
            return Err(Error::InvalidKeyId);
        }
        for key in &mut self.keys {
            key.kid = Some(kid.to_owned());
        }
        Ok(self)
    }

    /// Adds every key of `other` to this set.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKey`] with [`KeyProblem::DuplicateKeyId`] or [`KeyProblem::TooManyKeys`].
    pub fn extend(&mut self, other: KeySet) -> Result<(), Error> {
        for key in other.keys {
            self.push(key).map_err(Error::InvalidKey)?;
        }
        Ok(())
    }

    /// Number of keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the set has no keys.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The `(kid, algorithm)` of every key, in order.
    pub fn keys(&self) -> impl Iterator<Item = (Option<&str>, Algorithm)> + '_ {
        self.keys.iter().map(|k| (k.kid.as_deref(), k.alg))
    }

    pub(crate) fn entries(&self) -> &[Key] {
        &self.keys
    }

    fn push(&mut self, key: Key) -> Result<(), KeyProblem> {
        if self.keys.len() >= MAX_KEYS {
            return Err(KeyProblem::TooManyKeys);
        }
        if let Some(kid) = &key.kid
            && self.keys.iter().any(|k| k.kid.as_ref() == Some(kid))
        {
            return Err(KeyProblem::DuplicateKeyId);
        }
        self.keys.push(key);
        Ok(())
    }
}

impl fmt::Debug for KeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|k| (k.kid.as_deref(), k.alg)))
            .finish()
    }
}

impl Key {
    fn new(kid: Option<String>, alg: Algorithm, material: Material) -> Key {
        Key {
            kid,
            alg,
            verifier: Verifier::new(&material),
            material,
        }
    }

    /// Verifies `signature` over `signing_input` with this key (its algorithm is `self.alg`).
    pub(crate) fn verify(&self, signing_input: &[u8], signature: &[u8]) -> Result<(), Error> {
        #[cfg(test)]
        VERIFICATIONS.with(|n| n.set(n.get().saturating_add(1)));
        let ok = match &self.material {
            Material::Hmac(secret) => {
                use hmac::Mac as _;
                match hmac::Hmac::<Sha256>::new_from_slice(secret) {
                    Ok(mut mac) => {
                        mac.update(signing_input);
                        mac.verify_slice(signature).is_ok()
                    }
                    Err(_) => false,
                }
            }
            _ => self.verifier.verify(signing_input, signature),
        };
        if ok { Ok(()) } else { Err(Error::BadSignature) }
    }
}

#[cfg(test)]
thread_local! {
    /// Signature checks made on this thread (tests count the work per token).
    static VERIFICATIONS: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// Resets this thread's count of signature checks.
#[cfg(test)]
pub(crate) fn reset_verifications() {
    VERIFICATIONS.with(|n| n.set(0));
}

/// Signature checks made on this thread since the last reset.
#[cfg(test)]
pub(crate) fn verifications() -> usize {
    VERIFICATIONS.with(core::cell::Cell::get)
}

/// The Kubernetes key id of a DER SubjectPublicKeyInfo: base64url(SHA-256(DER)), unpadded.
pub(crate) fn kubernetes_kid(spki_der: &[u8]) -> String {
    b64::encode(&Sha256::digest(spki_der))
}

/// Bits in a big-endian unsigned integer without leading zero bytes.
fn bit_length(n: &[u8]) -> usize {
    let Some((first, rest)) = n.split_first() else {
        return 0;
    };
    let top = usize::try_from(u8::BITS.saturating_sub(first.leading_zeros())).unwrap_or(0);
    rest.len().saturating_mul(8).saturating_add(top)
}

/// Checks an RSA public key given as big-endian `n` and `e` without leading zeros, and encodes
/// it as a PKCS#1 `RSAPublicKey` for the signature backend.
fn rsa_material(
    n: &[u8],
    e: &[u8],
    alg: Algorithm,
    policy: &KeyPolicy,
) -> Result<Material, KeyProblem> {
    let pss = match alg {
        Algorithm::Rs256 => false,
        Algorithm::Ps256 => true,
        _ => return Err(KeyProblem::AlgorithmMismatch),
    };
    if n.first() == Some(&0) || e.first() == Some(&0) {
        return Err(KeyProblem::Parameter);
    }
    let bits = bit_length(n);
    if bits < MIN_RSA_BITS {
        return Err(KeyProblem::RsaParameters);
    }
    if bits > policy.rsa_bits_limit() {
        return Err(KeyProblem::RsaTooLarge);
    }
    // An RSA modulus is odd.
    if n.last().is_none_or(|b| b % 2 == 0) {
        return Err(KeyProblem::RsaParameters);
    }
    // e odd, 3 <= e < 2^33.
    let e_ok = e.len() <= 5 && {
        let mut v: u64 = 0;
        for b in e {
            v = (v << 8) | u64::from(*b);
        }
        (3..(1u64 << 33)).contains(&v) && v % 2 == 1
    };
    if !e_ok {
        return Err(KeyProblem::RsaParameters);
    }
    let key = pkcs1::RsaPublicKey {
        modulus: der::asn1::UintRef::new(n).map_err(|_| KeyProblem::Parameter)?,
        public_exponent: der::asn1::UintRef::new(e).map_err(|_| KeyProblem::Parameter)?,
    };
    let pkcs1 = key.to_der().map_err(|_| KeyProblem::Parameter)?;
    Ok(Material::Rsa { pkcs1, pss })
}

fn material_from_spki(
    der: &[u8],
    alg: Algorithm,
    policy: &KeyPolicy,
) -> Result<Material, KeyProblem> {
    let spki = spki::SubjectPublicKeyInfoRef::try_from(der).map_err(|_| KeyProblem::Der)?;
    let key_bytes = spki.subject_public_key.as_bytes().ok_or(KeyProblem::Der)?;
    let oid = spki.algorithm.oid;
    if oid == OID_RSA {
        if !matches!(alg, Algorithm::Rs256 | Algorithm::Ps256) {
            return Err(KeyProblem::AlgorithmMismatch);
        }
        let pk = pkcs1::RsaPublicKey::from_der(key_bytes).map_err(|_| KeyProblem::Der)?;
        return rsa_material(
            pk.modulus.as_bytes(),
            pk.public_exponent.as_bytes(),
            alg,
            policy,
        );
    }
    if oid == OID_EC {
        let curve = spki
            .algorithm
            .parameters
            .and_then(|p| p.decode_as::<der::asn1::ObjectIdentifier>().ok())
            .ok_or(KeyProblem::Der)?;
        return if curve == OID_P256 {
            if alg != Algorithm::Es256 {
                return Err(KeyProblem::AlgorithmMismatch);
            }
            p256::ecdsa::VerifyingKey::from_sec1_bytes(key_bytes)
                .map(Material::P256)
                .map_err(|_| KeyProblem::InvalidPoint)
        } else if curve == OID_P384 {
            if alg != Algorithm::Es384 {
                return Err(KeyProblem::AlgorithmMismatch);
            }
            p384::ecdsa::VerifyingKey::from_sec1_bytes(key_bytes)
                .map(Material::P384)
                .map_err(|_| KeyProblem::InvalidPoint)
        } else {
            Err(KeyProblem::Unsupported)
        };
    }
    if oid == OID_ED25519 {
        if alg != Algorithm::EdDsa {
            return Err(KeyProblem::AlgorithmMismatch);
        }
        return ed25519_material(key_bytes);
    }
    Err(KeyProblem::Unsupported)
}

fn ed25519_material(bytes: &[u8]) -> Result<Material, KeyProblem> {
    let arr = <&[u8; 32]>::try_from(bytes).map_err(|_| KeyProblem::InvalidPoint)?;
    let vk = ed25519_dalek::VerifyingKey::from_bytes(arr).map_err(|_| KeyProblem::InvalidPoint)?;
    if vk.is_weak() {
        return Err(KeyProblem::InvalidPoint);
    }
    Ok(Material::Ed25519(vk))
}

const PRIVATE_MEMBERS: [&str; 8] = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

fn str_member<'a>(jwk: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, KeyProblem> {
    match jwk.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(KeyProblem::Parameter),
    }
}

fn b64_member(jwk: &Map<String, Value>, name: &str) -> Result<Vec<u8>, KeyProblem> {
    let s = str_member(jwk, name)?.ok_or(KeyProblem::Parameter)?;
    b64::decode(s, "jwk").map_err(|_| KeyProblem::Parameter)
}

/// Parses one JWK; `Ok(None)` for a key type this crate does not implement.
fn key_from_jwk(jwk: &Map<String, Value>, policy: &KeyPolicy) -> Result<Option<Key>, KeyProblem> {
    if PRIVATE_MEMBERS.iter().any(|m| jwk.contains_key(*m)) {
        return Err(KeyProblem::PrivateMaterial);
    }
    let kty = str_member(jwk, "kty")?.ok_or(KeyProblem::Parameter)?;
    if kty == "oct" {
        return Err(KeyProblem::PrivateMaterial);
    }
    if let Some(usage) = str_member(jwk, "use")?
        && usage != "sig"
    {
        return Err(KeyProblem::WrongUse);
    }
    match jwk.get("key_ops") {
        None => {}
        Some(Value::Array(ops)) => {
            if !ops.iter().all(Value::is_string) {
                return Err(KeyProblem::Parameter);
            }
            if !ops.iter().any(|o| o.as_str() == Some("verify")) {
                return Err(KeyProblem::WrongUse);
            }
        }
        Some(_) => return Err(KeyProblem::Parameter),
    }
    let kid = match str_member(jwk, "kid")? {
        Some(k) if k.len() > MAX_KID_BYTES => return Err(KeyProblem::Parameter),
        Some(k) => Some(k.to_owned()),
        None => None,
    };
    let declared: Option<Result<Algorithm, Error>> = str_member(jwk, "alg")?.map(str::parse);
    let (alg, material) = match kty {
        "RSA" => {
            let alg = match declared {
                None => Algorithm::Rs256,
                Some(Ok(a @ (Algorithm::Rs256 | Algorithm::Ps256))) => a,
                Some(Ok(_)) => return Err(KeyProblem::AlgorithmMismatch),
                Some(Err(_)) => return Ok(None),
            };
            let n = b64_member(jwk, "n")?;
            let e = b64_member(jwk, "e")?;
            if n.first() == Some(&0) || e.first() == Some(&0) || e.is_empty() {
                return Err(KeyProblem::Parameter);
            }
            (alg, rsa_material(&n, &e, alg, policy)?)
        }
        "EC" => {
            let crv = str_member(jwk, "crv")?.ok_or(KeyProblem::Parameter)?;
            let alg = match crv {
                "P-256" => Algorithm::Es256,
                "P-384" => Algorithm::Es384,
                _ => return Ok(None),
            };
            match declared {
                None => {}
                Some(Ok(a)) if a == alg => {}
                Some(_) => return Err(KeyProblem::AlgorithmMismatch),
            }
            let x = b64_member(jwk, "x")?;
            let y = b64_member(jwk, "y")?;
            let material = if alg == Algorithm::Es256 {
                let (Ok(x), Ok(y)) = (<[u8; 32]>::try_from(x), <[u8; 32]>::try_from(y)) else {
                    return Err(KeyProblem::Parameter);
                };
                let point =
                    p256::EncodedPoint::from_affine_coordinates(&x.into(), &y.into(), false);
                Material::P256(
                    p256::ecdsa::VerifyingKey::from_encoded_point(&point)
                        .map_err(|_| KeyProblem::InvalidPoint)?,
                )
            } else {
                let (Ok(x), Ok(y)) = (<[u8; 48]>::try_from(x), <[u8; 48]>::try_from(y)) else {
                    return Err(KeyProblem::Parameter);
                };
                let point =
                    p384::EncodedPoint::from_affine_coordinates(&x.into(), &y.into(), false);
                Material::P384(
                    p384::ecdsa::VerifyingKey::from_encoded_point(&point)
                        .map_err(|_| KeyProblem::InvalidPoint)?,
                )
            };
            (alg, material)
        }
        "OKP" => {
            let crv = str_member(jwk, "crv")?.ok_or(KeyProblem::Parameter)?;
            if crv != "Ed25519" {
                return Ok(None);
            }
            match declared {
                None | Some(Ok(Algorithm::EdDsa)) => {}
                Some(_) => return Err(KeyProblem::AlgorithmMismatch),
            }
            let x = b64_member(jwk, "x")?;
            (Algorithm::EdDsa, ed25519_material(&x)?)
        }
        _ => return Ok(None),
    };
    Ok(Some(Key::new(kid, alg, material)))
}

/// Splits a PEM document into `(label, der)` blocks; only whitespace may surround them.
fn pem_blocks(text: &str) -> Result<Vec<(String, Vec<u8>)>, KeyProblem> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        if !rest.starts_with("-----BEGIN ") {
            return Err(KeyProblem::Pem);
        }
        let (body, after_end) = rest.split_once("-----END ").ok_or(KeyProblem::Pem)?;
        let (end_label, after) = after_end.split_once("-----").ok_or(KeyProblem::Pem)?;
        if end_label.len() > 64 || out.len() >= MAX_KEYS {
            return Err(KeyProblem::Pem);
        }
        let block = format!("{body}-----END {end_label}-----\n");
        let (label, der) =
            pem_rfc7468::decode_vec(block.as_bytes()).map_err(|_| KeyProblem::Pem)?;
        out.push((label.to_owned(), der));
        rest = after;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_lists_only_ids_and_algorithms() {
        let set = KeySet::from_hmac_secret(b"CANARY-KEY-0123456789abcdef0123456789").unwrap();
        let dbg = format!("{set:?}");
        assert!(!dbg.contains("CANARY"), "{dbg}");
        assert!(dbg.contains("Hs256"), "{dbg}");
    }

    #[test]
    fn hmac_secrets_shorter_than_32_bytes_are_refused() {
        for len in [0, 1, 16, 31] {
            assert_eq!(
                KeySet::from_hmac_secret(&vec![b'k'; len]).unwrap_err(),
                Error::InvalidKey(KeyProblem::HmacSecretTooShort),
                "{len}"
            );
        }
        assert_eq!(KeySet::from_hmac_secret(&[b'k'; 32]).unwrap().len(), 1);
    }

    #[test]
    fn pem_rejects_junk_and_empty() {
        assert_eq!(
            KeySet::from_pem("", Algorithm::Rs256).unwrap_err(),
            Error::InvalidKey(KeyProblem::Empty)
        );
        assert_eq!(
            KeySet::from_pem("junk", Algorithm::Rs256).unwrap_err(),
            Error::InvalidKey(KeyProblem::Pem)
        );
    }
}
