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
