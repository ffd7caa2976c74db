//! The signature backend, chosen at compile time from the enabled features: `aws-lc-rs` if
//! enabled (the default), else `ring`, else `rust-crypto`. Each public key is handed to the
//! backend once, when its key set is built.

#[cfg(not(any(feature = "aws-lc-rs", feature = "ring", feature = "rust-crypto")))]
compile_error!(
    "addon-jwt needs a signature backend: enable the feature `aws-lc-rs` (the default), `ring` or `rust-crypto`"
);

/// aws-lc-rs and ring share one API; `lc` is whichever of the two is in use.
#[cfg(feature = "aws-lc-rs")]
pub(crate) use aws_lc_rs as lc;
#[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
pub(crate) use ring as lc;

use crate::key::Material;

/// The signature backend this build uses: `"aws-lc-rs"`, `"ring"` or `"rust-crypto"` (with several
/// backend features enabled, the first of these).
#[cfg(feature = "aws-lc-rs")]
pub const SIGNATURE_BACKEND: &str = "aws-lc-rs";
/// The signature backend this build uses: `"aws-lc-rs"`, `"ring"` or `"rust-crypto"` (with several
/// backend features enabled, the first of these).
#[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
pub const SIGNATURE_BACKEND: &str = "ring";
/// The signature backend this build uses: `"aws-lc-rs"`, `"ring"` or `"rust-crypto"` (with several
/// backend features enabled, the first of these).
#[cfg(not(any(feature = "aws-lc-rs", feature = "ring")))]
pub const SIGNATURE_BACKEND: &str = "rust-crypto";

/// A public key in the backend's form (HMAC keys are checked by the `hmac` crate instead).
#[derive(Clone)]
pub(crate) enum Verifier {
    /// aws-lc-rs: the key parsed once.
    #[cfg(feature = "aws-lc-rs")]
    Key(lc::signature::ParsedPublicKey),
    /// ring: the key's bytes and algorithm (ring parses them on every check).
    #[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
    Key(lc::signature::UnparsedPublicKey<Vec<u8>>),
    /// RustCrypto RSASSA-PKCS1-v1_5.
    #[cfg(all(
        feature = "rust-crypto",
        not(any(feature = "aws-lc-rs", feature = "ring"))
    ))]
    RsaPkcs1(rsa::pkcs1v15::VerifyingKey<sha2::Sha256>),
    /// RustCrypto RSASSA-PSS.
    #[cfg(all(
        feature = "rust-crypto",
        not(any(feature = "aws-lc-rs", feature = "ring"))
    ))]
    RsaPss(rsa::pss::VerifyingKey<sha2::Sha256>),
    /// RustCrypto ECDSA P-256.
    #[cfg(not(any(feature = "aws-lc-rs", feature = "ring")))]
    P256(p256::ecdsa::VerifyingKey),
    /// RustCrypto ECDSA P-384.
    #[cfg(not(any(feature = "aws-lc-rs", feature = "ring")))]
    P384(p384::ecdsa::VerifyingKey),
    /// ed25519-dalek, strict verification: also with ring, whose Ed25519 check is slower.
    #[cfg(not(feature = "aws-lc-rs"))]
    Ed25519(ed25519_dalek::VerifyingKey),
    /// The backend refused the key: nothing verifies with it (ring parses keys per check).
    #[cfg(any(feature = "aws-lc-rs", not(feature = "ring")))]
    Rejected,
    /// An HMAC key: not the backend's.
    Hmac,
}

impl Verifier {
    /// The backend's form of `material`.
    #[cfg(any(feature = "aws-lc-rs", feature = "ring"))]
    pub(crate) fn new(material: &Material) -> Verifier {
        use lc::signature as sig;
        let (alg, bytes): (&'static dyn sig::VerificationAlgorithm, Vec<u8>) = match material {
            Material::Rsa { pkcs1, pss: false } => {
                (&sig::RSA_PKCS1_2048_8192_SHA256, pkcs1.clone())
            }
            Material::Rsa { pkcs1, pss: true } => (&sig::RSA_PSS_2048_8192_SHA256, pkcs1.clone()),
            Material::P256(vk) => (
                &sig::ECDSA_P256_SHA256_FIXED,
                vk.to_encoded_point(false).as_bytes().to_vec(),
            ),
            Material::P384(vk) => (
                &sig::ECDSA_P384_SHA384_FIXED,
                vk.to_encoded_point(false).as_bytes().to_vec(),
            ),
            #[cfg(feature = "aws-lc-rs")]
            Material::Ed25519(vk) => (&sig::ED25519, vk.as_bytes().to_vec()),
            #[cfg(not(feature = "aws-lc-rs"))]
            Material::Ed25519(vk) => return Verifier::Ed25519(*vk),
            Material::Hmac(_) => return Verifier::Hmac,
        };
        #[cfg(feature = "aws-lc-rs")]
        let verifier = match sig::ParsedPublicKey::new(alg, bytes) {
            Ok(key) => Verifier::Key(key),
            Err(_) => Verifier::Rejected,
        };
        #[cfg(not(feature = "aws-lc-rs"))]
        let verifier = Verifier::Key(sig::UnparsedPublicKey::new(alg, bytes));
        verifier
    }

    /// The backend's form of `material`.
    #[cfg(not(any(feature = "aws-lc-rs", feature = "ring")))]
    pub(crate) fn new(material: &Material) -> Verifier {
        match material {
            #[cfg(feature = "rust-crypto")]
            Material::Rsa { pkcs1, pss } => {
                use rsa::pkcs1::DecodeRsaPublicKey as _;
                match rsa::RsaPublicKey::from_pkcs1_der(pkcs1) {
                    Ok(key) if *pss => Verifier::RsaPss(rsa::pss::VerifyingKey::new(key)),
                    Ok(key) => Verifier::RsaPkcs1(rsa::pkcs1v15::VerifyingKey::new(key)),
                    Err(_) => Verifier::Rejected,
                }
            }
            #[cfg(not(feature = "rust-crypto"))]
            Material::Rsa { .. } => Verifier::Rejected,
            Material::P256(vk) => Verifier::P256(*vk),
            Material::P384(vk) => Verifier::P384(*vk),
            Material::Ed25519(vk) => Verifier::Ed25519(*vk),
            Material::Hmac(_) => Verifier::Hmac,
        }
    }

    /// Whether `signature` over `message` verifies with this key.
    pub(crate) fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        #[cfg(not(any(feature = "aws-lc-rs", feature = "ring")))]
        use signature::Verifier as _;
        match self {
            #[cfg(feature = "aws-lc-rs")]
            Verifier::Key(key) => key.verify_sig(message, signature).is_ok(),
            #[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
            Verifier::Key(key) => key.verify(message, signature).is_ok(),
            #[cfg(all(
                feature = "rust-crypto",
                not(any(feature = "aws-lc-rs", feature = "ring"))
            ))]
            Verifier::RsaPkcs1(vk) => rsa::pkcs1v15::Signature::try_from(signature)
                .is_ok_and(|s| vk.verify(message, &s).is_ok()),
            #[cfg(all(
                feature = "rust-crypto",
                not(any(feature = "aws-lc-rs", feature = "ring"))
            ))]
            Verifier::RsaPss(vk) => rsa::pss::Signature::try_from(signature)
                .is_ok_and(|s| vk.verify(message, &s).is_ok()),
            #[cfg(not(any(feature = "aws-lc-rs", feature = "ring")))]
            Verifier::P256(vk) => p256::ecdsa::Signature::from_slice(signature)
                .is_ok_and(|s| vk.verify(message, &s).is_ok()),
            #[cfg(not(any(feature = "aws-lc-rs", feature = "ring")))]
            Verifier::P384(vk) => p384::ecdsa::Signature::from_slice(signature)
                .is_ok_and(|s| vk.verify(message, &s).is_ok()),
            #[cfg(not(feature = "aws-lc-rs"))]
            Verifier::Ed25519(vk) => <&[u8; 64]>::try_from(signature).is_ok_and(|s| {
                vk.verify_strict(message, &ed25519_dalek::Signature::from_bytes(s))
                    .is_ok()
            }),
            #[cfg(any(feature = "aws-lc-rs", not(feature = "ring")))]
            Verifier::Rejected => false,
            Verifier::Hmac => false,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn backend_follows_the_documented_precedence() {
        let want = if cfg!(feature = "aws-lc-rs") {
            "aws-lc-rs"
        } else if cfg!(feature = "ring") {
            "ring"
        } else {
            "rust-crypto"
        };
        assert_eq!(super::SIGNATURE_BACKEND, want);
    }
}
