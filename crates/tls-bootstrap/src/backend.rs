//! Signature verification: rustls-webpki's algorithms on the selected provider.

use rustls_pki_types::SignatureVerificationAlgorithm;
use spki::AlgorithmIdentifierOwned;

use crate::error::Error;

/// The algorithms certificates and requests may be signed with: what rustls-webpki offers on
/// the enabled provider (ECDSA P-256/P-384 (and P-521 on aws-lc-rs), RSA PKCS#1 v1.5 and PSS
/// from 2048 bits, Ed25519).
pub(crate) fn algorithms() -> &'static [&'static dyn SignatureVerificationAlgorithm] {
    webpki::ALL_VERIFICATION_ALGS
}

/// Verifies `signature` over `message` by the key in `spki` (algorithm and key bits), with the
/// algorithm `signature_alg` names.
pub(crate) fn verify(
    spki: &spki::SubjectPublicKeyInfoOwned,
    signature_alg: &AlgorithmIdentifierOwned,
    message: &[u8],
    signature: &[u8],
) -> Result<(), Error> {
    let algs = algorithms();
    if algs.is_empty() {
        return Err(Error::NoCryptoBackend);
    }
    let key_alg = value_bytes(&spki.algorithm)?;
    let sig_alg = value_bytes(signature_alg)?;
    let alg = algs
        .iter()
        .find(|a| {
            a.public_key_alg_id().as_ref() == key_alg.as_slice()
                && a.signature_alg_id().as_ref() == sig_alg.as_slice()
        })
        .ok_or(Error::UnsupportedAlgorithm)?;
    let key = spki
        .subject_public_key
        .as_bytes()
        .ok_or(Error::BadSignature)?;
    alg.verify_signature(key, message, signature)
        .map_err(|_| Error::BadSignature)
}

/// The DER contents (without tag and length) of an `AlgorithmIdentifier`, the form
/// rustls-pki-types compares.
fn value_bytes(alg: &AlgorithmIdentifierOwned) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    der::EncodeValue::encode_value(alg, &mut out).map_err(|_| Error::UnsupportedAlgorithm)?;
    Ok(out)
}

/// ECDSA P-256 with SHA-256 signing, DER signatures: on the provider when one is enabled (ring
/// first), else RustCrypto's `p256` (deterministic nonces, RFC 6979).
pub(crate) enum EcdsaSigner {
    #[cfg(feature = "ring")]
    Ring(ring::signature::EcdsaKeyPair),
    #[cfg(all(feature = "aws-lc-rs", not(feature = "ring")))]
    AwsLc(aws_lc_rs::signature::EcdsaKeyPair),
    #[cfg_attr(any(feature = "ring", feature = "aws-lc-rs"), allow(dead_code))]
    RustCrypto(p256::ecdsa::SigningKey),
}

impl EcdsaSigner {
    /// The signer for `secret`, whose uncompressed public point is `public_point`.
    pub(crate) fn new(secret: &p256::SecretKey, public_point: &[u8]) -> Result<EcdsaSigner, Error> {
        let scalar = zeroize::Zeroizing::new(secret.to_bytes());
        let _ = (&scalar, public_point);
        #[cfg(feature = "ring")]
        {
            let rng = ring::rand::SystemRandom::new();
            return ring::signature::EcdsaKeyPair::from_private_key_and_public_key(
                &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                AsRef::<[u8]>::as_ref(&*scalar),
                public_point,
                &rng,
            )
            .map(EcdsaSigner::Ring)
            .map_err(|_| Error::InvalidKey {
                reason: "the provider refused the key",
            });
        }
        #[cfg(all(feature = "aws-lc-rs", not(feature = "ring")))]
        {
            return aws_lc_rs::signature::EcdsaKeyPair::from_private_key_and_public_key(
                &aws_lc_rs::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                AsRef::<[u8]>::as_ref(&*scalar),
                public_point,
            )
            .map(EcdsaSigner::AwsLc)
            .map_err(|_| Error::InvalidKey {
                reason: "the provider refused the key",
            });
        }
        #[allow(unreachable_code, reason = "reached only without a provider")]
        Ok(EcdsaSigner::RustCrypto(p256::ecdsa::SigningKey::from(
            secret,
        )))
    }

    /// A fresh key from the provider's generator (the operating system's randomness), with its
    /// public key; `None` without a provider.
    pub(crate) fn generate()
    -> Option<Result<(p256::SecretKey, p256::PublicKey, EcdsaSigner), Error>> {
        #[cfg(feature = "ring")]
        {
            use ring::signature::{
                ECDSA_P256_SHA256_ASN1_SIGNING as ALG, EcdsaKeyPair, KeyPair as _,
            };
            let rng = ring::rand::SystemRandom::new();
            let made = EcdsaKeyPair::generate_pkcs8(&ALG, &rng)
                .map_err(|_| Error::Rng)
                .and_then(|pkcs8| {
                    let pair = EcdsaKeyPair::from_pkcs8(&ALG, pkcs8.as_ref(), &rng)
                        .map_err(|_| Error::Rng)?;
                    let (secret, public) = parts(pkcs8.as_ref(), pair.public_key().as_ref())?;
                    Ok((secret, public, EcdsaSigner::Ring(pair)))
                });
            return Some(made);
        }
        #[cfg(all(feature = "aws-lc-rs", not(feature = "ring")))]
        {
            use aws_lc_rs::signature::{
                ECDSA_P256_SHA256_ASN1_SIGNING as ALG, EcdsaKeyPair, KeyPair as _,
            };
            let made = EcdsaKeyPair::generate(&ALG)
                .map_err(|_| Error::Rng)
                .and_then(|pair| {
                    let pkcs8 = pair.to_pkcs8v1().map_err(|_| Error::Rng)?;
                    let (secret, public) = parts(pkcs8.as_ref(), pair.public_key().as_ref())?;
                    Ok((secret, public, EcdsaSigner::AwsLc(pair)))
                });
            return Some(made);
        }
        #[allow(unreachable_code, reason = "reached only without a provider")]
        None
    }

    /// A DER ECDSA signature of `message`.
    pub(crate) fn sign(&self, message: &[u8]) -> Result<Vec<u8>, Error> {
        let failed = |_| Error::InvalidKey {
            reason: "signing failed",
        };
        match self {
            #[cfg(feature = "ring")]
            EcdsaSigner::Ring(k) => k
                .sign(&ring::rand::SystemRandom::new(), message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| Error::Rng),
            #[cfg(all(feature = "aws-lc-rs", not(feature = "ring")))]
            EcdsaSigner::AwsLc(k) => k
                .sign(&aws_lc_rs::rand::SystemRandom::new(), message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| Error::Rng),
            EcdsaSigner::RustCrypto(k) => {
                use signature::Signer as _;
                let sig: p256::ecdsa::DerSignature = k.try_sign(message).map_err(failed)?;
                Ok(sig.as_bytes().to_vec())
            }
        }
    }
}

/// The RustCrypto halves of a provider-made key: the scalar from its PKCS#8 document, the public
/// key from the point the provider computed (checked to be on the curve).
#[cfg(any(feature = "ring", feature = "aws-lc-rs"))]
fn parts(pkcs8: &[u8], point: &[u8]) -> Result<(p256::SecretKey, p256::PublicKey), Error> {
    use der::Decode as _;
    let bad = |_| Error::InvalidKey {
        reason: "the provider's key does not parse",
    };
    // The scalar alone: `SecretKey::from_pkcs8_der` would recompute the public point to compare
    // it with the embedded one, a full scalar multiplication the provider has just done.
    let info = pkcs8::PrivateKeyInfo::from_der(pkcs8).map_err(bad)?;
    let sec1 = sec1::EcPrivateKey::from_der(info.private_key).map_err(bad)?;
    let secret = p256::SecretKey::from_slice(sec1.private_key).map_err(|_| Error::InvalidKey {
        reason: "the provider's key does not parse",
    })?;
    let public = p256::PublicKey::from_sec1_bytes(point).map_err(|_| Error::InvalidKey {
        reason: "the provider's public key does not parse",
    })?;
    Ok((secret, public))
}
