//! Private keys as `openssl` writes them: SEC1 `EC PRIVATE KEY` (with and without the
//! `EC PARAMETERS` block of `openssl ecparam -genkey`) and the labels that need converting.
//! The fixtures in `tests/data/` were generated with the installed `openssl`.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, UNIX_EPOCH};

use addon_jwt::{
    Algorithm, Audience, Error, Issuer, KeyProblem, KeySet, SigningKey, Validation, verify,
};

const P256_SEC1_WITH_PARAMS: &str = include_str!("../data/ec_p256_sec1_with_params.pem");
const P256_PUBLIC: &str = include_str!("../data/ec_p256_sec1_public.pem");
const P384_SEC1: &str = include_str!("../data/ec_p384_sec1.pem");
const P384_PUBLIC: &str = include_str!("../data/ec_p384_sec1_public.pem");
const P521_SEC1: &str = include_str!("../data/ec_p521_sec1.pem");
const RSA_TRADITIONAL: &str = include_str!("../data/rsa_traditional.pem");
const ENCRYPTED_PKCS8: &str = include_str!("../data/ec_p384_encrypted_pkcs8.pem");

/// Signs with the loaded key and verifies with the public key `openssl ec -pubout` wrote.
fn signs_for_openssl_public_key(key: SigningKey, public_pem: &str, alg: Algorithm) {
    assert_eq!(key.algorithm(), alg);
    assert_eq!(
        key.public_key_pem().unwrap().trim(),
        public_pem.trim(),
        "the public half matches openssl's"
    );
    let now = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
    let (iss, aud) = (Issuer::new("https://iss"), Audience::new("ns/svc"));
    let token = key
        .sign(&iss, "jane", &aud, now, Duration::from_secs(60))
        .unwrap();
    let keys = KeySet::from_pem(public_pem, alg).unwrap();
    let claims = verify(
        token.expose_secret(),
        &keys,
        &Validation::new(iss, aud),
        now,
    )
    .unwrap();
    assert_eq!(claims.subject(), "jane");
}

#[test]
fn sec1_p256_key_from_openssl_ecparam_genkey_with_parameters_block_is_accepted() {
    let key = SigningKey::from_pem(P256_SEC1_WITH_PARAMS).unwrap();
    signs_for_openssl_public_key(key, P256_PUBLIC, Algorithm::Es256);
}

#[test]
fn sec1_p384_key_without_parameters_block_is_accepted() {
    let key = SigningKey::from_pem(P384_SEC1).unwrap();
    signs_for_openssl_public_key(key, P384_PUBLIC, Algorithm::Es384);
}

#[test]
fn sec1_key_on_another_curve_is_unsupported() {
    assert_eq!(
        SigningKey::from_pem(P521_SEC1).unwrap_err(),
        Error::UnsupportedKey
    );
}

#[test]
fn other_private_key_labels_say_how_to_convert() {
    for pem in [RSA_TRADITIONAL, ENCRYPTED_PKCS8] {
        for result in [SigningKey::from_pem(pem), SigningKey::from_pkcs8_pem(pem)] {
            let err = result.unwrap_err();
            assert_eq!(err, Error::InvalidKey(KeyProblem::PrivateKeyLabel));
            assert!(
                err.to_string().contains("openssl pkcs8 -topk8 -nocrypt"),
                "{err}"
            );
        }
    }
    // The PKCS#8-only loader points SEC1 keys to the same conversion.
    assert_eq!(
        SigningKey::from_pkcs8_pem(P384_SEC1).unwrap_err(),
        Error::InvalidKey(KeyProblem::PrivateKeyLabel)
    );
}

#[test]
fn private_key_pem_structure_is_strict() {
    let params_only = P256_SEC1_WITH_PARAMS
        .split("-----BEGIN EC PRIVATE KEY")
        .next()
        .unwrap();
    let two_keys = format!("{P384_SEC1}{P384_SEC1}");
    let junk_before = format!("junk\n{P384_SEC1}");
    let pkcs8_after_params = format!(
        "{params_only}-----BEGIN PRIVATE KEY-----\n\
         MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
         -----END PRIVATE KEY-----\n"
    );
    for bad in [
        "",
        params_only,
        &two_keys,
        &junk_before,
        &pkcs8_after_params,
    ] {
        assert_eq!(
            SigningKey::from_pem(bad).unwrap_err(),
            Error::InvalidKey(KeyProblem::PrivateKey),
            "{bad}"
        );
    }
}
