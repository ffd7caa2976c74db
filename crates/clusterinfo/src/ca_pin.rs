//! CA public-key pins, as kubeadm's `pubkeypin` package.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

use crate::ca_bundle::CaBundle;
use crate::error::{Error, bounded};

/// A CA public-key pin: the SHA-256 of a certificate's DER SubjectPublicKeyInfo, taken
/// verbatim from the certificate (never re-encoded).
///
/// Parses kubeadm's accepted forms (`sha256:<64 hex>`, the format name and the hex
/// case-insensitive) with kubeadm's error messages; displays as `sha256:<lowercase hex>`.
///
/// ```
/// use clusterinfo::Pin;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let pin: Pin = "SHA256:345959ACB2C3B2FEB87D281961C893F62A314207EF02599F1CC4A5FB255480B3".parse()?;
/// assert_eq!(pin.to_string(), "sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3");
/// assert!("sha1:abcd".parse::<Pin>().is_err());
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pin([u8; 32]);

impl Pin {
    /// The pin of the first certificate in a PEM bundle.
    ///
    /// # Errors
    ///
    /// As [`CaBundle::from_pem`]: garbage PEM, no certificate, a malformed certificate.
    pub fn from_certificate_pem(pem: &[u8]) -> Result<Pin, Error> {
        let bundle = CaBundle::from_pem(pem)?;
        bundle.first_pin().copied().ok_or(Error::NoCertificates)
    }

    /// The pin of a DER SubjectPublicKeyInfo (hashes the bytes as given).
    pub fn from_spki_der(spki: &[u8]) -> Pin {
        Pin(Sha256::digest(spki).into())
    }

    /// The 32 hash bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pin({self})")
    }
}

impl FromStr for Pin {
    type Err = Error;

    fn from_str(s: &str) -> Result<Pin, Error> {
        let mut parts = s.split(':');
        let (Some(format), Some(value), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Error::PinSyntax);
        };
        if !format.eq_ignore_ascii_case("sha256") {
            return Err(Error::PinUnknownFormat {
                format: bounded(format, 64),
            });
        }
        let found = value.len() / 2;
        if found != 32 {
            return Err(Error::PinLength {
                hash: bounded(s, 128),
                found,
            });
        }
        let bytes = value.as_bytes();
        let mut out = [0u8; 32];
        // Go's encoding/hex reports an invalid byte before an odd length.
        for &c in bytes {
            if hex_val(c).is_none() {
                return Err(Error::PinHex {
                    hash: bounded(s, 128),
                    reason: format!("encoding/hex: invalid byte: {}", go_rune_quote(c)),
                });
            }
        }
        if bytes.len() % 2 != 0 {
            return Err(Error::PinHex {
                hash: bounded(s, 128),
                reason: "encoding/hex: odd length hex string".to_owned(),
            });
        }
        for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            let (Some(&hi), Some(&lo)) = (pair.first(), pair.get(1)) else {
                return Err(Error::PinSyntax);
            };
            let (Some(hi), Some(lo)) = (hex_val(hi), hex_val(lo)) else {
                return Err(Error::PinSyntax);
            };
            *slot = (hi << 4) | lo;
        }
        Ok(Pin(out))
    }
}

/// A set of allowed pins (kubeadm's `pubkeypin.Set`).
///
/// ```
/// use clusterinfo::PinSet;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut pins = PinSet::new();
/// assert!(pins.is_empty());
/// pins.allow("sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3")?;
/// assert_eq!(pins.len(), 1);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PinSet {
    pins: Vec<Pin>,
}

impl PinSet {
    /// An empty set.
    pub fn new() -> PinSet {
        PinSet::default()
    }

    /// Parse and add a pin in kubeadm's syntax.
    ///
    /// # Errors
    ///
    /// The pin's parse error (see [`Pin`]'s `FromStr`).
    pub fn allow(&mut self, pin: &str) -> Result<(), Error> {
        let pin: Pin = pin.parse()?;
        self.insert(pin);
        Ok(())
    }

    /// Add an already parsed pin.
    pub fn insert(&mut self, pin: Pin) {
        if !self.pins.contains(&pin) {
            self.pins.push(pin);
        }
    }

    /// Whether no pin is present.
    pub fn is_empty(&self) -> bool {
        self.pins.is_empty()
    }

    /// The number of distinct pins.
    pub fn len(&self) -> usize {
        self.pins.len()
    }

    /// Whether the set holds `pin`.
    pub fn contains(&self, pin: &Pin) -> bool {
        self.pins.contains(pin)
    }

    /// Pass if **any** certificate of the bundle has a pinned public key (kubeadm's `CheckAny`).
    ///
    /// # Errors
    ///
    /// [`Error::NotPinned`] listing the bundle's pins joined with `:`, as kubeadm does.
    pub fn check_any(&self, bundle: &CaBundle) -> Result<(), Error> {
        if bundle.pins().any(|p| self.contains(p)) {
            return Ok(());
        }
        let hashes = bundle
            .pins()
            .map(Pin::to_string)
            .collect::<Vec<_>>()
            .join(":");
        Err(Error::NotPinned { hashes })
    }
}

impl FromIterator<Pin> for PinSet {
    fn from_iter<I: IntoIterator<Item = Pin>>(iter: I) -> PinSet {
        let mut set = PinSet::new();
        for pin in iter {
            set.insert(pin);
        }
        set
    }
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => c.checked_sub(b'0'),
        b'a'..=b'f' => c.checked_sub(b'a' - 10),
        b'A'..=b'F' => c.checked_sub(b'A' - 10),
        _ => None,
    }
}

/// Go's `%#U` rendering of a byte as a rune, used by `encoding/hex.InvalidByteError`:
/// `U+0067 'g'`.
fn go_rune_quote(b: u8) -> String {
    let c = char::from(b);
    if c.is_control() {
        format!("U+{:04X}", u32::from(c))
    } else {
        format!("U+{:04X} '{c}'", u32::from(c))
    }
}
