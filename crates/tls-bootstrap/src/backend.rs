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

/// Signs the node's certificate requests: ECDSA (P-256 with SHA-256, P-384 with SHA-384, DER
/// signatures) and RSA PKCS#1 v1.5 with SHA-256, the algorithms Go's
/// `x509.CreateCertificateRequest` picks for those keys. On the provider when one is enabled
/// (aws-lc-rs first when both are, as in addon-jwt and rustls); without one, ECDSA on
/// RustCrypto's `p256`/`p384` (deterministic nonces, RFC 6979) and no RSA (no RSA private-key
/// operation is ever done outside a provider: the pure-Rust `rsa` crate is not constant-time).
pub(crate) enum Signer {
    #[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
    RingEcdsa(ring::signature::EcdsaKeyPair),
    #[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
    RingRsa(ring::signature::RsaKeyPair),
    #[cfg(feature = "aws-lc-rs")]
    AwsLcEcdsa(aws_lc_rs::signature::EcdsaKeyPair),
    #[cfg(feature = "aws-lc-rs")]
    AwsLcRsa(aws_lc_rs::signature::RsaKeyPair),
    #[cfg_attr(any(feature = "ring", feature = "aws-lc-rs"), allow(dead_code))]
    P256(p256::ecdsa::SigningKey),
    #[cfg_attr(any(feature = "ring", feature = "aws-lc-rs"), allow(dead_code))]
    P384(p384::ecdsa::SigningKey),
}

/// Which ECDSA curve a [`Signer::ecdsa`] key is on.
#[derive(Clone, Copy)]
pub(crate) enum Curve {
    P256,
    P384,
}

impl Signer {
    /// The ECDSA signer for the big-endian `scalar` on `curve`, whose uncompressed public
    /// point is `public_point` (checked by the provider).
    pub(crate) fn ecdsa(curve: Curve, scalar: &[u8], public_point: &[u8]) -> Result<Signer, Error> {
        fn refused<E>(_: E) -> Error {
            Error::InvalidKey {
                reason: "the provider refused the key",
            }
        }
        let _ = (scalar, public_point);
        #[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
        {
            use ring::signature::{
                ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P384_SHA384_ASN1_SIGNING, EcdsaKeyPair,
            };
            let alg = match curve {
                Curve::P256 => &ECDSA_P256_SHA256_ASN1_SIGNING,
                Curve::P384 => &ECDSA_P384_SHA384_ASN1_SIGNING,
            };
            let rng = ring::rand::SystemRandom::new();
            return EcdsaKeyPair::from_private_key_and_public_key(alg, scalar, public_point, &rng)
                .map(Signer::RingEcdsa)
                .map_err(refused);
        }
        #[cfg(feature = "aws-lc-rs")]
        {
            use aws_lc_rs::signature::{
                ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P384_SHA384_ASN1_SIGNING, EcdsaKeyPair,
            };
            let alg = match curve {
                Curve::P256 => &ECDSA_P256_SHA256_ASN1_SIGNING,
                Curve::P384 => &ECDSA_P384_SHA384_ASN1_SIGNING,
            };
            return EcdsaKeyPair::from_private_key_and_public_key(alg, scalar, public_point)
                .map(Signer::AwsLcEcdsa)
                .map_err(refused);
        }
        #[allow(unreachable_code, reason = "reached only without a provider")]
        match curve {
            Curve::P256 => p256::ecdsa::SigningKey::from_slice(scalar)
                .map(Signer::P256)
                .map_err(refused),
            Curve::P384 => p384::ecdsa::SigningKey::from_slice(scalar)
                .map(Signer::P384)
                .map_err(refused),
        }
    }

    /// The RSA signer for a PKCS#1 `RSAPrivateKey`; the provider checks the key's consistency.
    ///
    /// [`Error::NoCryptoBackend`] without a provider.
    pub(crate) fn rsa(pkcs1_der: &[u8]) -> Result<Signer, Error> {
        let _ = pkcs1_der;
        #[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
        {
            return ring::signature::RsaKeyPair::from_der(pkcs1_der)
                .map(Signer::RingRsa)
                .map_err(|_| Error::InvalidKey {
                    reason: "the provider refused the RSA key",
                });
        }
        #[cfg(feature = "aws-lc-rs")]
        {
            return aws_lc_rs::signature::RsaKeyPair::from_der(pkcs1_der)
                .map(Signer::AwsLcRsa)
                .map_err(|_| Error::InvalidKey {
                    reason: "the provider refused the RSA key",
                });
        }
        #[allow(unreachable_code, reason = "reached only without a provider")]
        Err(Error::NoCryptoBackend)
    }

    /// A fresh P-256 key from the provider's generator (the operating system's randomness),
    /// with its public key; `None` without a provider.
    pub(crate) fn generate_p256()
    -> Option<Result<(p256::SecretKey, p256::PublicKey, Signer), Error>> {
        #[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
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
                    Ok((secret, public, Signer::RingEcdsa(pair)))
                });
            return Some(made);
        }
        #[cfg(feature = "aws-lc-rs")]
        {
            use aws_lc_rs::encoding::AsBigEndian as _;
            use aws_lc_rs::signature::{
                ECDSA_P256_SHA256_ASN1_SIGNING as ALG, EcdsaKeyPair, KeyPair as _,
            };
            // One base-point multiplication: the pair is ready to sign, and its scalar and point
            // are read as they are (no PKCS#8 document to write and parse back).
            let made = EcdsaKeyPair::generate(&ALG)
                .map_err(|_| Error::Rng)
                .and_then(|pair| {
                    let scalar = pair.private_key().as_be_bytes().map_err(|_| Error::Rng)?;
                    let secret = p256::SecretKey::from_slice(scalar.as_ref()).map_err(|_| {
                        Error::InvalidKey {
                            reason: "the provider's key does not parse",
                        }
                    })?;
                    let public = p256::PublicKey::from_sec1_bytes(pair.public_key().as_ref())
                        .map_err(|_| Error::InvalidKey {
                            reason: "the provider's public key does not parse",
                        })?;
                    Ok((secret, public, Signer::AwsLcEcdsa(pair)))
                });
            return Some(made);
        }
        #[allow(unreachable_code, reason = "reached only without a provider")]
        None
    }

    /// A DER ECDSA signature, or a PKCS#1 v1.5 RSA signature, of `message`.
    pub(crate) fn sign(&self, message: &[u8]) -> Result<Vec<u8>, Error> {
        fn failed<E>(_: E) -> Error {
            Error::InvalidKey {
                reason: "signing failed",
            }
        }
        match self {
            #[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
            Signer::RingEcdsa(k) => k
                .sign(&ring::rand::SystemRandom::new(), message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| Error::Rng),
            #[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
            Signer::RingRsa(k) => {
                let mut sig = vec![0u8; k.public().modulus_len()];
                // ring checks its result against the public key (a fault or an inconsistent
                // key fails here).
                k.sign(
                    &ring::signature::RSA_PKCS1_SHA256,
                    &ring::rand::SystemRandom::new(),
                    message,
                    &mut sig,
                )
                .map_err(failed)?;
                Ok(sig)
            }
            #[cfg(feature = "aws-lc-rs")]
            Signer::AwsLcEcdsa(k) => k
                .sign(&aws_lc_rs::rand::SystemRandom::new(), message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| Error::Rng),
            #[cfg(feature = "aws-lc-rs")]
            Signer::AwsLcRsa(k) => {
                let mut sig = vec![0u8; k.public_modulus_len()];
                k.sign(
                    &aws_lc_rs::signature::RSA_PKCS1_SHA256,
                    &aws_lc_rs::rand::SystemRandom::new(),
                    message,
                    &mut sig,
                )
                .map_err(failed)?;
                Ok(sig)
            }
            Signer::P256(k) => {
                use signature::Signer as _;
                let sig: p256::ecdsa::DerSignature = k.try_sign(message).map_err(failed)?;
                Ok(sig.as_bytes().to_vec())
            }
            Signer::P384(k) => {
                use signature::Signer as _;
                let sig: p384::ecdsa::DerSignature = k.try_sign(message).map_err(failed)?;
                Ok(sig.as_bytes().to_vec())
            }
        }
    }
}

/// The RustCrypto halves of a provider-made key: the scalar from its PKCS#8 document, the public
/// key from the point the provider computed (checked to be on the curve).
#[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
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
