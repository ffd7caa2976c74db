//! The node's private key.

use std::fmt;

use p256::pkcs8::{DecodePrivateKey as _, EncodePublicKey as _};
use zeroize::Zeroizing;

use crate::backend::EcdsaSigner;
use crate::error::Error;
use crate::pem;

const P256_OID: der::asn1::ObjectIdentifier =
    der::asn1::ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");

/// The largest private key PEM accepted, in bytes.
pub const MAX_KEY_PEM_BYTES: usize = 16 * 1024;

/// The node's key pair: ECDSA on P-256, the key type the kubelet generates.
///
/// The private half never appears in `Debug` output and is zeroed on drop. The PEM the kubelet
/// writes (`EC PRIVATE KEY`, SEC 1) comes out of [`NodeKey::to_pem`]; [`NodeKey::from_pem`]
/// reads that and PKCS#8 (`PRIVATE KEY`).
pub struct NodeKey {
    secret: p256::SecretKey,
    // The uncompressed public point (65 bytes).
    public_point: Vec<u8>,
    // Built once: it holds the public point, whose computation is the costly part.
    signer: EcdsaSigner,
    spki_der: Vec<u8>,
}

impl NodeKey {
    /// A fresh key from the operating system's random number generator.
    ///
    /// # Errors
    ///
    /// [`Error::Rng`] if the operating system has no randomness to give.
    pub fn generate() -> Result<NodeKey, Error> {
        if let Some(made) = EcdsaSigner::generate() {
            let (secret, public, signer) = made?;
            return NodeKey::assemble(secret, &public, signer);
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

    /// A fresh key from caller-supplied randomness: `fill` is asked for 32 bytes at a time
    /// until they form a valid scalar (all but a 2^-32 fraction of draws do).
    ///
    /// # Errors
    ///
    /// [`Error::Rng`] if 64 draws in a row are not a valid scalar (a broken generator).
    pub fn generate_with(mut fill: impl FnMut(&mut [u8])) -> Result<NodeKey, Error> {
        let mut buf = Zeroizing::new([0u8; 32]);
        for _ in 0..64 {
            fill(buf.as_mut_slice());
            if let Ok(secret) = p256::SecretKey::from_slice(buf.as_slice()) {
                return NodeKey::from_secret(secret);
            }
        }
        Err(Error::Rng)
    }

    /// Reads a P-256 private key from PEM: `EC PRIVATE KEY` (SEC 1, what the kubelet writes)
    /// or `PRIVATE KEY` (PKCS#8). Other PEM blocks around it (the certificate in
    /// `kubelet-client-current.pem`) are skipped; exactly one key block must be present.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`], [`Error::Pem`], [`Error::InvalidKey`] (not P-256, or malformed).
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
        let secret = match label {
            "EC PRIVATE KEY" => {
                p256::SecretKey::from_sec1_der(&der).map_err(|_| Error::InvalidKey {
                    reason: "not a SEC 1 P-256 private key",
                })?
            }
            "PRIVATE KEY" => {
                p256::SecretKey::from_pkcs8_der(&der).map_err(|_| Error::InvalidKey {
                    reason: "not a PKCS#8 P-256 private key",
                })?
            }
            _ => {
                return Err(Error::InvalidKey {
                    reason: "only P-256 keys (EC PRIVATE KEY or PRIVATE KEY) are supported",
                });
            }
        };
        NodeKey::from_secret(secret)
    }

    /// The private key as the kubelet writes it: an `EC PRIVATE KEY` PEM block (SEC 1, with
    /// the curve and the public key).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidKey`] if encoding fails (it does not for a valid key).
    pub fn to_pem(&self) -> Result<Zeroizing<String>, Error> {
        use der::Encode as _;
        let encode = || -> Result<Zeroizing<Vec<u8>>, der::Error> {
            let scalar = Zeroizing::new(self.secret.to_bytes());
            // Go's `x509.MarshalECPrivateKey`: version 1, the scalar, the named curve and the
            // public point (OpenSSL needs the curve to load the key).
            let key = sec1::EcPrivateKey {
                private_key: AsRef::<[u8]>::as_ref(&*scalar),
                parameters: Some(sec1::EcParameters::NamedCurve(P256_OID)),
                public_key: Some(self.public_point.as_slice()),
            };
            Ok(Zeroizing::new(key.to_der()?))
        };
        let der = encode().map_err(|_| Error::InvalidKey {
            reason: "couldn't encode the key",
        })?;
        Ok(Zeroizing::new(pem::encode("EC PRIVATE KEY", &der)))
    }

    /// The public key as DER `SubjectPublicKeyInfo` (Go's `x509.MarshalPKIXPublicKey`).
    pub fn public_key_der(&self) -> &[u8] {
        &self.spki_der
    }

    /// A DER ECDSA P-256 SHA-256 signature of `message`.
    pub(crate) fn sign(&self, message: &[u8]) -> Result<Vec<u8>, Error> {
        self.signer.sign(message)
    }

    /// The uncompressed public point (`04 || x || y`).
    pub(crate) fn public_point(&self) -> &[u8] {
        &self.public_point
    }

    fn from_secret(secret: p256::SecretKey) -> Result<NodeKey, Error> {
        use p256::elliptic_curve::sec1::ToEncodedPoint as _;
        let public = secret.public_key();
        let signer = EcdsaSigner::new(&secret, public.to_encoded_point(false).as_bytes())?;
        NodeKey::assemble(secret, &public, signer)
    }

    fn assemble(
        secret: p256::SecretKey,
        public: &p256::PublicKey,
        signer: EcdsaSigner,
    ) -> Result<NodeKey, Error> {
        use p256::elliptic_curve::sec1::ToEncodedPoint as _;
        let spki_der = public
            .to_public_key_der()
            .map_err(|_| Error::InvalidKey {
                reason: "couldn't encode the public key",
            })?
            .into_vec();
        Ok(NodeKey {
            secret,
            public_point: public.to_encoded_point(false).as_bytes().to_vec(),
            signer,
            spki_der,
        })
    }
}

impl Clone for NodeKey {
    fn clone(&self) -> NodeKey {
        NodeKey {
            secret: self.secret.clone(),
            public_point: self.public_point.clone(),
            // The key was accepted once; the provider accepts it again.
            signer: EcdsaSigner::new(&self.secret, &self.public_point)
                .unwrap_or_else(|_| EcdsaSigner::RustCrypto((&self.secret).into())),
            spki_der: self.spki_der.clone(),
        }
    }
}

impl fmt::Debug for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NodeKey(P-256, <redacted>)")
    }
}

impl PartialEq for NodeKey {
    fn eq(&self, other: &NodeKey) -> bool {
        use subtle::ConstantTimeEq as _;
        self.secret
            .to_bytes()
            .ct_eq(&other.secret.to_bytes())
            .into()
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
}
