//! Does a PEM private key belong to a certificate's public key? (Go's `tls.X509KeyPair` check.)

use der::Decode as _;
use der::asn1::ObjectIdentifier;
use pkcs8::DecodePrivateKey as _;
use x509_cert::spki::SubjectPublicKeyInfoOwned;

use crate::error::Error;

const RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const EC: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");
const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");

/// The key types a client identity may use (as Go's `crypto/tls`: RSA, ECDSA P-256/P-384,
/// Ed25519).
enum Public {
    Rsa { n: Vec<u8>, e: Vec<u8> },
    P256(Vec<u8>),
    P384(Vec<u8>),
    Ed25519(Vec<u8>),
}

/// Checks that the private key (DER from a block labelled `... PRIVATE KEY`) matches `spki`.
/// Errors carry fixed reasons only.
pub(crate) fn check(spki: &SubjectPublicKeyInfoOwned, der: &[u8]) -> Result<(), Error> {
    let cert_key = certificate_key(spki)?;
    let private = private_key_public(der, &cert_key)?;
    let same = match (&cert_key, &private) {
        (Public::Rsa { n: a, e: b }, Public::Rsa { n: c, e: d }) => a == c && b == d,
        (Public::P256(a), Public::P256(b))
        | (Public::P384(a), Public::P384(b))
        | (Public::Ed25519(a), Public::Ed25519(b)) => a == b,
        _ => return Err(bad("private key type does not match public key type")),
    };
    if same {
        Ok(())
    } else {
        Err(bad("private key does not match public key"))
    }
}

fn bad(reason: &str) -> Error {
    Error::InvalidKeyPair {
        reason: reason.to_owned(),
    }
}

fn certificate_key(spki: &SubjectPublicKeyInfoOwned) -> Result<Public, Error> {
    let bits = spki.subject_public_key.raw_bytes();
    let oid = spki.algorithm.oid;
    if oid == RSA {
        let k = pkcs1::RsaPublicKey::from_der(bits)
            .map_err(|_| bad("certificate RSA public key does not parse"))?;
        return Ok(Public::Rsa {
            n: k.modulus.as_bytes().to_vec(),
            e: k.public_exponent.as_bytes().to_vec(),
        });
    }
    if oid == ED25519 {
        return Ok(Public::Ed25519(bits.to_vec()));
    }
    if oid == EC {
        let curve = spki
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.decode_as::<ObjectIdentifier>().ok());
        return match curve {
            Some(c) if c == P256 => Ok(Public::P256(bits.to_vec())),
            Some(c) if c == P384 => Ok(Public::P384(bits.to_vec())),
            _ => Err(bad("unsupported elliptic curve in certificate")),
        };
    }
    Err(bad("unsupported public key algorithm in certificate"))
}

/// The public half of a private key, recognised by content whatever its PEM label says, in
/// Go's `tls.X509KeyPair` order: PKCS#1, then PKCS#8, then SEC1.
fn private_key_public(der: &[u8], cert_key: &Public) -> Result<Public, Error> {
    if let Ok(k) = pkcs1::RsaPrivateKey::from_der(der) {
        return Ok(Public::Rsa {
            n: k.modulus.as_bytes().to_vec(),
            e: k.public_exponent.as_bytes().to_vec(),
        });
    }
    if pkcs8::PrivateKeyInfo::from_der(der).is_ok() {
        return pkcs8_public(der);
    }
    if let Ok(k) = sec1::EcPrivateKey::from_der(der) {
        return sec1_public(der, &k, cert_key);
    }
    Err(bad("failed to parse private key"))
}

fn pkcs8_public(der: &[u8]) -> Result<Public, Error> {
    let info =
        pkcs8::PrivateKeyInfo::from_der(der).map_err(|_| bad("failed to parse private key"))?;
    let oid = info.algorithm.oid;
    if oid == RSA {
        return rsa_public(info.private_key);
    }
    if oid == ED25519 {
        let key = ed25519_dalek::SigningKey::from_pkcs8_der(der)
            .map_err(|_| bad("failed to parse private key"))?;
        return Ok(Public::Ed25519(key.verifying_key().to_bytes().to_vec()));
    }
    if oid == EC {
        let curve = info
            .algorithm
            .parameters
            .and_then(|p| p.decode_as::<ObjectIdentifier>().ok());
        return match curve {
            Some(c) if c == P256 => {
                let k = p256::SecretKey::from_pkcs8_der(der)
                    .map_err(|_| bad("failed to parse private key"))?;
                Ok(Public::P256(k.public_key().to_sec1_bytes().to_vec()))
            }
            Some(c) if c == P384 => {
                let k = p384::SecretKey::from_pkcs8_der(der)
                    .map_err(|_| bad("failed to parse private key"))?;
                Ok(Public::P384(k.public_key().to_sec1_bytes().to_vec()))
            }
            _ => Err(bad("unsupported elliptic curve in private key")),
        };
    }
    Err(bad("unsupported private key algorithm"))
}

fn rsa_public(der: &[u8]) -> Result<Public, Error> {
    let k = pkcs1::RsaPrivateKey::from_der(der).map_err(|_| bad("failed to parse private key"))?;
    Ok(Public::Rsa {
        n: k.modulus.as_bytes().to_vec(),
        e: k.public_exponent.as_bytes().to_vec(),
    })
}

/// A SEC1 key's curve is its named-curve parameter. Without one (Go rejects such keys) the
/// certificate's curve is used.
fn sec1_public(
    der: &[u8],
    key: &sec1::EcPrivateKey<'_>,
    cert_key: &Public,
) -> Result<Public, Error> {
    let curve = match key.parameters.as_ref().and_then(|p| p.named_curve()) {
        Some(oid) => oid,
        None if key.parameters.is_some() => {
            return Err(bad("unsupported elliptic curve in private key"));
        }
        None => match cert_key {
            Public::P384(_) => P384,
            _ => P256,
        },
    };
    if curve == P256 {
        let k =
            p256::SecretKey::from_sec1_der(der).map_err(|_| bad("failed to parse private key"))?;
        Ok(Public::P256(k.public_key().to_sec1_bytes().to_vec()))
    } else if curve == P384 {
        let k =
            p384::SecretKey::from_sec1_der(der).map_err(|_| bad("failed to parse private key"))?;
        Ok(Public::P384(k.public_key().to_sec1_bytes().to_vec()))
    } else {
        Err(bad("unsupported elliptic curve in private key"))
    }
}
