//! The node's private key.

use std::fmt;
use std::sync::Arc;

use der::asn1::ObjectIdentifier;
use der::{Decode as _, Encode as _};
use zeroize::Zeroizing;

use crate::backend::{Curve, Signer};
use crate::error::Error;
use crate::pem;
use crate::request::KeyType;

const OID_EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const OID_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const OID_ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
const OID_P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const OID_P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");

/// Curves a key may name that this crate does not sign with, by name (the error names them).
const OTHER_CURVES: [(&str, &str); 7] = [
    (
        "1.2.840.10045.3.1.1",
        "unsupported curve P-192 (prime192v1): only P-256 and P-384 are supported",
    ),
    (
        "1.3.132.0.33",
        "unsupported curve P-224 (secp224r1): only P-256 and P-384 are supported",
    ),
    (
        "1.3.132.0.35",
        "unsupported curve P-521 (secp521r1): only P-256 and P-384 are supported",
    ),
    (
        "1.3.132.0.10",
        "unsupported curve secp256k1: only P-256 and P-384 are supported",
    ),
    (
        "1.3.36.3.3.2.8.1.1.7",
        "unsupported curve brainpoolP256r1: only P-256 and P-384 are supported",
    ),
    (
        "1.3.36.3.3.2.8.1.1.11",
        "unsupported curve brainpoolP384r1: only P-256 and P-384 are supported",
    ),
    (
        "1.3.36.3.3.2.8.1.1.13",
        "unsupported curve brainpoolP512r1: only P-256 and P-384 are supported",
    ),
];

/// The largest private key PEM accepted, in bytes.
pub const MAX_KEY_PEM_BYTES: usize = 16 * 1024;

/// The smallest RSA modulus accepted, in bits.
pub const MIN_RSA_BITS: usize = 2048;
/// The largest RSA modulus accepted, in bits (kubeadm writes 2048, 3072 or 4096; ring signs
/// with keys up to 4096 bits).
pub const MAX_RSA_BITS: usize = 4096;

/// The node's key pair: ECDSA on P-256 (the key type the kubelet generates), ECDSA on P-384,
/// or RSA from 2048 to 4096 bits (as kubeadm writes them).
///
/// The private half never appears in `Debug` output and is zeroed on drop. The PEM the kubelet
/// writes comes out of [`NodeKey::to_pem`] (`EC PRIVATE KEY`, SEC 1, or `RSA PRIVATE KEY`,
/// PKCS#1); [`NodeKey::from_pem`] reads those and PKCS#8 (`PRIVATE KEY`).
///
/// | key | PEM read | request signed with | usages requested |
/// | --- | --- | --- | --- |
/// | ECDSA P-256 | `EC PRIVATE KEY`, `PRIVATE KEY` | ECDSA with SHA-256 | `digital signature`, `client auth` |
/// | ECDSA P-384 | `EC PRIVATE KEY`, `PRIVATE KEY` | ECDSA with SHA-384 | `digital signature`, `client auth` |
/// | RSA 2048–4096 | `RSA PRIVATE KEY`, `PRIVATE KEY` | RSA PKCS#1 v1.5 with SHA-256 | `digital signature`, `client auth`, `key encipherment` |
///
/// RSA keys need a provider (the `ring` or `aws-lc-rs` feature): without one no RSA
/// private-key operation is done. The provider checks the key's consistency; ring takes
/// primes whose size is a multiple of 512 bits (2048, 3072 and 4096-bit keys, kubeadm's
/// sizes).
pub struct NodeKey {
    secret: Secret,
    // EC: the uncompressed public point; RSA: the PKCS#1 `RSAPublicKey` DER.
    public_bits: Vec<u8>,
    // Built once (it holds the public point, whose computation is the costly part); shared by
    // clones.
    signer: Arc<Signer>,
    spki_der: Vec<u8>,
}

enum Secret {
    P256(p256::SecretKey),
    P384(p384::SecretKey),
    /// The PKCS#1 `RSAPrivateKey` DER, and the modulus size in bits.
    Rsa(Zeroizing<Vec<u8>>, usize),
}

impl NodeKey {
    /// A fresh P-256 key from the operating system's random number generator.
    ///
    /// # Errors
    ///
    /// [`Error::Rng`] if the operating system has no randomness to give.
    pub fn generate() -> Result<NodeKey, Error> {
        if let Some(made) = Signer::generate_p256() {
            let (secret, public, signer) = made?;
            return NodeKey::assemble_p256(secret, &public, signer);
        }
        let mut failure = None;
        let key = NodeKey::generate_with(|buf| {
            if let Err(e) = getrandom::fill(buf) {
                failure = Some(e);
            }
        });
        match failure {
            Some(_) => Err(Error::Rng),
            None => key,
        }
    }

    /// A fresh P-256 key from caller-supplied randomness: `fill` is asked for 32 bytes at a
    /// time until they form a valid scalar (all but a 2^-32 fraction of draws do).
    ///
    /// # Errors
    ///
    /// [`Error::Rng`] if 64 draws in a row are not a valid scalar (a broken generator).
    pub fn generate_with(mut fill: impl FnMut(&mut [u8])) -> Result<NodeKey, Error> {
        let mut buf = Zeroizing::new([0u8; 32]);
        for _ in 0..64 {
            fill(buf.as_mut_slice());
            if let Ok(secret) = p256::SecretKey::from_slice(buf.as_slice()) {
                return NodeKey::from_p256(secret);
            }
        }
        Err(Error::Rng)
    }

    /// Reads a private key from PEM: `EC PRIVATE KEY` (SEC 1, what the kubelet writes) on P-256
    /// or P-384, `RSA PRIVATE KEY` (PKCS#1, what kubeadm writes for RSA), or `PRIVATE KEY`
    /// (PKCS#8) holding either. Other PEM blocks around it (the certificate in
    /// `kubelet-client-current.pem`) are skipped; exactly one key block must be present.
    ///
    /// The curve is checked in every form (a SEC 1 key without its optional public key names
    /// only its curve); a public key stored beside the private one must be the private key's.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`], [`Error::Pem`]; [`Error::InvalidKey`] for a malformed key, another
    /// curve (named), an RSA key outside 2048–4096 bits, a public key that is not the private
    /// key's, or another key type; [`Error::NoCryptoBackend`] for an RSA key without a
    /// provider.
    pub fn from_pem(pem_bytes: &[u8]) -> Result<NodeKey, Error> {
        if pem_bytes.len() > MAX_KEY_PEM_BYTES {
            return Err(Error::TooLarge {
                what: "private key PEM",
                len: pem_bytes.len(),
                max: MAX_KEY_PEM_BYTES,
            });
        }
        let blocks = pem::blocks(pem_bytes, "private key PEM", 8)?;
        let mut keys = blocks
            .iter()
            .filter(|b| b.label.ends_with("PRIVATE KEY"))
            .map(|b| (b.label.as_str(), Zeroizing::new(b.der.clone())));
        let (Some((label, der)), None) = (keys.next(), keys.next()) else {
            return Err(Error::InvalidKey {
                reason: "expected exactly one private key PEM block",
            });
        };
        match label {
            "EC PRIVATE KEY" => NodeKey::from_sec1(&der, None, None),
            "RSA PRIVATE KEY" => NodeKey::from_pkcs1(&der),
            "PRIVATE KEY" => NodeKey::from_pkcs8(&der),
            _ => Err(Error::InvalidKey {
                reason: "only EC PRIVATE KEY, RSA PRIVATE KEY and PRIVATE KEY blocks are supported",
            }),
        }
    }

    /// The private key as the kubelet writes it: an `EC PRIVATE KEY` PEM block (SEC 1, with the
    /// curve and the public key, as Go's `x509.MarshalECPrivateKey`) or an `RSA PRIVATE KEY`
    /// block (PKCS#1).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKey`] if encoding fails (it does not for a valid key).
    pub fn to_pem(&self) -> Result<Zeroizing<String>, Error> {
        let encode =
            |scalar: &[u8], curve: ObjectIdentifier| -> Result<Zeroizing<Vec<u8>>, Error> {
                // Version 1, the scalar, the named curve and the public point (OpenSSL needs the
                // curve to load the key).
                let key = sec1::EcPrivateKey {
                    private_key: scalar,
                    parameters: Some(sec1::EcParameters::NamedCurve(curve)),
                    public_key: Some(self.public_bits.as_slice()),
                };
                key.to_der()
                    .map(Zeroizing::new)
                    .map_err(|_| Error::InvalidKey {
                        reason: "couldn't encode the key",
                    })
            };
        match &self.secret {
            Secret::P256(s) => {
                let scalar = Zeroizing::new(s.to_bytes());
                let der = encode(AsRef::<[u8]>::as_ref(&*scalar), OID_P256)?;
                Ok(Zeroizing::new(pem::encode("EC PRIVATE KEY", &der)))
            }
            Secret::P384(s) => {
                let scalar = Zeroizing::new(s.to_bytes());
                let der = encode(AsRef::<[u8]>::as_ref(&*scalar), OID_P384)?;
                Ok(Zeroizing::new(pem::encode("EC PRIVATE KEY", &der)))
            }
            Secret::Rsa(der, _) => Ok(Zeroizing::new(pem::encode("RSA PRIVATE KEY", der))),
        }
    }

    /// The public key as DER `SubjectPublicKeyInfo` (Go's `x509.MarshalPKIXPublicKey`).
    pub fn public_key_der(&self) -> &[u8] {
        &self.spki_der
    }

    /// The key's type: [`KeyType::EcdsaP256`], [`KeyType::EcdsaP384`] or [`KeyType::Rsa`].
    pub fn key_type(&self) -> KeyType {
        match self.secret {
            Secret::P256(_) => KeyType::EcdsaP256,
            Secret::P384(_) => KeyType::EcdsaP384,
            Secret::Rsa(..) => KeyType::Rsa,
        }
    }

    /// A signature of `message` in the key's request signature algorithm.
    pub(crate) fn sign(&self, message: &[u8]) -> Result<Vec<u8>, Error> {
        self.signer.sign(message)
    }

    /// The `subjectPublicKey` bits: the uncompressed EC point, or the PKCS#1 RSA public key.
    pub(crate) fn public_bits(&self) -> &[u8] {
        &self.public_bits
    }

    /// `sec1_der` (an `ECPrivateKey`); `outer_curve` and `outer_public` are a PKCS#8
    /// wrapper's curve and public key, if any.
    fn from_sec1(
        sec1_der: &[u8],
        outer_curve: Option<ObjectIdentifier>,
        outer_public: Option<&[u8]>,
    ) -> Result<NodeKey, Error> {
        let invalid = |reason| Error::InvalidKey { reason };
        let ec = sec1::EcPrivateKey::from_der(sec1_der)
            .map_err(|_| invalid("not a SEC 1 EC private key"))?;
        let inner_curve = ec.parameters.and_then(|p| p.named_curve());
        let curve = match (outer_curve, inner_curve) {
            (Some(a), Some(b)) if a != b => {
                return Err(invalid("the PKCS#8 and SEC 1 curves of the key differ"));
            }
            (Some(c), _) | (None, Some(c)) => c,
            (None, None) => return Err(invalid("the EC private key names no curve")),
        };
        let publics = [ec.public_key, outer_public];
        let mismatch = || invalid("the public key stored with the private key is not its own");
        if curve == OID_P256 {
            let secret = p256::SecretKey::from_slice(ec.private_key)
                .map_err(|_| invalid("not a valid P-256 private key"))?;
            let public = secret.public_key();
            for given in publics.into_iter().flatten() {
                if p256::PublicKey::from_sec1_bytes(given).ok() != Some(public) {
                    return Err(mismatch());
                }
            }
            NodeKey::from_p256(secret)
        } else if curve == OID_P384 {
            let secret = p384::SecretKey::from_slice(ec.private_key)
                .map_err(|_| invalid("not a valid P-384 private key"))?;
            let public = secret.public_key();
            for given in publics.into_iter().flatten() {
                if p384::PublicKey::from_sec1_bytes(given).ok() != Some(public) {
                    return Err(mismatch());
                }
            }
            NodeKey::from_p384(secret)
        } else {
            Err(invalid(curve_name(curve)))
        }
    }

    fn from_pkcs8(der: &[u8]) -> Result<NodeKey, Error> {
        let invalid = |reason| Error::InvalidKey { reason };
        let info = pkcs8::PrivateKeyInfo::from_der(der)
            .map_err(|_| invalid("not a PKCS#8 private key"))?;
        let alg = info.algorithm.oid;
        if alg == OID_EC_PUBLIC_KEY {
            let curve = info
                .algorithm
                .parameters_oid()
                .map_err(|_| invalid("the PKCS#8 EC key names no curve"))?;
            NodeKey::from_sec1(info.private_key, Some(curve), info.public_key)
        } else if alg == OID_RSA {
            // The parameters are NULL (or, from some encoders, absent).
            if info.algorithm.parameters.is_some_and(|p| !p.is_null()) {
                return Err(invalid("the PKCS#8 RSA key has parameters"));
            }
            NodeKey::from_pkcs1(info.private_key)
        } else if alg == OID_ED25519 {
            Err(invalid(
                "unsupported key type Ed25519: only ECDSA P-256, P-384 and RSA are supported",
            ))
        } else {
            Err(invalid(
                "unsupported key type: only ECDSA P-256, P-384 and RSA are supported",
            ))
        }
    }

    fn from_pkcs1(der: &[u8]) -> Result<NodeKey, Error> {
        let invalid = |reason| Error::InvalidKey { reason };
        let key = pkcs1::RsaPrivateKey::from_der(der)
            .map_err(|_| invalid("not a PKCS#1 RSA private key"))?;
        if key.other_prime_infos.is_some() {
            return Err(invalid("multi-prime RSA keys are not supported"));
        }
        let modulus = key.modulus.as_bytes();
        let bits = match modulus.first() {
            Some(first) => modulus
                .len()
                .saturating_mul(8)
                .saturating_sub(first.leading_zeros() as usize),
            None => 0,
        };
        if !(MIN_RSA_BITS..=MAX_RSA_BITS).contains(&bits) {
            return Err(invalid("the RSA key must have a 2048 to 4096-bit modulus"));
        }
        let public_bits = key
            .public_key()
            .to_der()
            .map_err(|_| invalid("couldn't encode the RSA public key"))?;
        let spki = spki::SubjectPublicKeyInfoOwned {
            algorithm: spki::AlgorithmIdentifierOwned {
                oid: OID_RSA,
                parameters: Some(der::Any::null()),
            },
            subject_public_key: der::asn1::BitString::from_bytes(&public_bits)
                .map_err(|_| invalid("couldn't encode the RSA public key"))?,
        };
        let spki_der = spki
            .to_der()
            .map_err(|_| invalid("couldn't encode the RSA public key"))?;
        let signer = Signer::rsa(der)?;
        Ok(NodeKey {
            secret: Secret::Rsa(Zeroizing::new(der.to_vec()), bits),
            public_bits,
            signer: Arc::new(signer),
            spki_der,
        })
    }

    fn from_p256(secret: p256::SecretKey) -> Result<NodeKey, Error> {
        use p256::elliptic_curve::sec1::ToEncodedPoint as _;
        let public = secret.public_key();
        let scalar = Zeroizing::new(secret.to_bytes());
        let signer = Signer::ecdsa(
            Curve::P256,
            AsRef::<[u8]>::as_ref(&*scalar),
            public.to_encoded_point(false).as_bytes(),
        )?;
        NodeKey::assemble_p256(secret, &public, signer)
    }

    fn assemble_p256(
        secret: p256::SecretKey,
        public: &p256::PublicKey,
        signer: Signer,
    ) -> Result<NodeKey, Error> {
        use p256::elliptic_curve::sec1::ToEncodedPoint as _;
        use p256::pkcs8::EncodePublicKey as _;
        let spki_der = public
            .to_public_key_der()
            .map_err(|_| Error::InvalidKey {
                reason: "couldn't encode the public key",
            })?
            .into_vec();
        Ok(NodeKey {
            secret: Secret::P256(secret),
            public_bits: public.to_encoded_point(false).as_bytes().to_vec(),
            signer: Arc::new(signer),
            spki_der,
        })
    }

    fn from_p384(secret: p384::SecretKey) -> Result<NodeKey, Error> {
        use p384::elliptic_curve::sec1::ToEncodedPoint as _;
        use p384::pkcs8::EncodePublicKey as _;
        let public = secret.public_key();
        let point = public.to_encoded_point(false);
        let scalar = Zeroizing::new(secret.to_bytes());
        let signer = Signer::ecdsa(
            Curve::P384,
            AsRef::<[u8]>::as_ref(&*scalar),
            point.as_bytes(),
        )?;
        let spki_der = public
            .to_public_key_der()
            .map_err(|_| Error::InvalidKey {
                reason: "couldn't encode the public key",
            })?
            .into_vec();
        Ok(NodeKey {
            secret: Secret::P384(secret),
            public_bits: point.as_bytes().to_vec(),
            signer: Arc::new(signer),
            spki_der,
        })
    }
}

/// The error reason for an EC key on `curve`, which is neither P-256 nor P-384.
fn curve_name(curve: ObjectIdentifier) -> &'static str {
    let dotted = curve.to_string();
    OTHER_CURVES.iter().find(|(oid, _)| *oid == dotted).map_or(
        "unsupported curve (an unknown OID): only P-256 and P-384 are supported",
        |(_, reason)| reason,
    )
}

impl Clone for NodeKey {
    fn clone(&self) -> NodeKey {
        NodeKey {
            secret: match &self.secret {
                Secret::P256(s) => Secret::P256(s.clone()),
                Secret::P384(s) => Secret::P384(s.clone()),
                Secret::Rsa(der, bits) => Secret::Rsa(der.clone(), *bits),
            },
            public_bits: self.public_bits.clone(),
            signer: Arc::clone(&self.signer),
            spki_der: self.spki_der.clone(),
        }
    }
}

impl fmt::Debug for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.secret {
            Secret::P256(_) => f.write_str("NodeKey(P-256, <redacted>)"),
            Secret::P384(_) => f.write_str("NodeKey(P-384, <redacted>)"),
            Secret::Rsa(_, bits) => write!(f, "NodeKey(RSA-{bits}, <redacted>)"),
        }
    }
}

impl PartialEq for NodeKey {
    fn eq(&self, other: &NodeKey) -> bool {
        use subtle::ConstantTimeEq as _;
        match (&self.secret, &other.secret) {
            (Secret::P256(a), Secret::P256(b)) => a.to_bytes().ct_eq(&b.to_bytes()).into(),
            (Secret::P384(a), Secret::P384(b)) => a.to_bytes().ct_eq(&b.to_bytes()).into(),
            (Secret::Rsa(a, _), Secret::Rsa(b, _)) => a.as_slice().ct_eq(b.as_slice()).into(),
            _ => false,
        }
    }
}

impl Eq for NodeKey {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_round_trip_and_redaction() {
        let key = NodeKey::generate().unwrap();
        let pem = key.to_pem().unwrap();
        assert!(pem.starts_with("-----BEGIN EC PRIVATE KEY-----\n"));
        let back = NodeKey::from_pem(pem.as_bytes()).unwrap();
        assert_eq!(back, key);
        assert_eq!(back.public_key_der(), key.public_key_der());
        assert_eq!(key.public_key_der().len(), 91);
        let debug = format!("{key:?}");
        assert!(!debug.contains(&pem[40..80]));
        assert_eq!(debug, "NodeKey(P-256, <redacted>)");
    }

    #[test]
    fn caller_randomness_is_used() {
        let a = NodeKey::generate_with(|b| b.fill(7)).unwrap();
        let b = NodeKey::generate_with(|b| b.fill(7)).unwrap();
        assert_eq!(a, b);
        assert!(NodeKey::generate_with(|b| b.fill(0)).is_err());
        assert!(NodeKey::generate_with(|b| b.fill(0xff)).is_err());
    }

    #[test]
    fn rejects_other_keys() {
        assert!(NodeKey::from_pem(b"").is_err());
        let key = NodeKey::generate().unwrap();
        let pem = key.to_pem().unwrap();
        let twice = format!("{}{}", pem.as_str(), pem.as_str());
        assert!(NodeKey::from_pem(twice.as_bytes()).is_err());
        let rsa = pem.replace("EC PRIVATE KEY", "RSA PRIVATE KEY");
        assert!(NodeKey::from_pem(rsa.as_bytes()).is_err());
        let big = vec![b'a'; MAX_KEY_PEM_BYTES + 1];
        assert!(matches!(
            NodeKey::from_pem(&big),
            Err(Error::TooLarge { .. })
        ));
    }

    #[test]
    fn every_other_curve_is_named() {
        for (oid, reason) in OTHER_CURVES {
            let oid = ObjectIdentifier::new(oid).unwrap();
            assert_eq!(curve_name(oid), reason);
        }
        assert!(curve_name(ObjectIdentifier::new_unwrap("1.2.3.4")).contains("unknown"));
    }
}
