//! PEM bundles of CA certificates.

use base64::Engine as _;
use der::Decode as _;

use crate::ca_pin::Pin;
use crate::error::Error;

/// The most certificates a bundle may hold. A CA bundle carries the current CA and, during a
/// rotation, a few more; anything beyond this is hostile.
pub const MAX_BUNDLE_CERTIFICATES: usize = 64;

/// The largest PEM bundle accepted, in bytes (a ConfigMap cannot be bigger than 1 MiB).
pub const MAX_BUNDLE_BYTES: usize = 1024 * 1024;

/// One or more X.509 CA certificates, as found in `certificate-authority-data`.
///
/// The certificates are used only as containers for their public keys, as kubeadm does:
/// validity dates and extensions are not checked here (the TLS library checks them when the
/// bundle is used as a trust anchor).
///
/// Parsing is strict: every PEM block must be a `CERTIFICATE` without headers, only
/// whitespace may surround the blocks (trailing junk is rejected, unlike kubeadm, which
/// ignores it), and at least one and at most [`MAX_BUNDLE_CERTIFICATES`] certificates must be
/// present.
#[derive(Clone, PartialEq, Eq)]
pub struct CaBundle {
    pem: String,
    certs: Vec<Cert>,
}

#[derive(Clone, PartialEq, Eq)]
struct Cert {
    der: Vec<u8>,
    pin: Pin,
    is_ca: bool,
}

impl CaBundle {
    /// Parse a PEM bundle.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] over [`MAX_BUNDLE_BYTES`], [`Error::Pem`] for malformed armour,
    /// non-certificate blocks or trailing data, [`Error::NoCertificates`] when empty, and
    /// [`Error::Certificate`] when a block is not a well-formed X.509 certificate.
    pub fn from_pem(pem: &[u8]) -> Result<CaBundle, Error> {
        if pem.len() > MAX_BUNDLE_BYTES {
            return Err(Error::TooLarge {
                what: "CA bundle",
                len: pem.len(),
                max: MAX_BUNDLE_BYTES,
            });
        }
        let text = std::str::from_utf8(pem).map_err(|_| Error::Pem {
            reason: "not UTF-8",
        })?;
        let blocks = parse_pem_blocks(text)?;
        if blocks.is_empty() {
            return Err(Error::NoCertificates);
        }
        let mut certs = Vec::with_capacity(blocks.len());
        for (index, der) in blocks.into_iter().enumerate() {
            let spki = raw_spki(&der).ok_or(Error::Certificate { index })?;
            let Ok(parsed) = x509_cert::Certificate::from_der(&der) else {
                return Err(Error::Certificate { index });
            };
            let is_ca = is_ca(&parsed);
            let pin = Pin::from_spki_der(spki);
            certs.push(Cert { der, pin, is_ca });
        }
        Ok(CaBundle {
            pem: text.to_owned(),
            certs,
        })
    }

    /// The bundle exactly as given.
    pub fn as_pem(&self) -> &str {
        &self.pem
    }

    /// The number of certificates (at least one).
    pub fn len(&self) -> usize {
        self.certs.len()
    }

    /// Always `false`: a bundle holds at least one certificate.
    pub fn is_empty(&self) -> bool {
        self.certs.is_empty()
    }

    /// The DER encoding of each certificate, in bundle order.
    pub fn certificates_der(&self) -> impl Iterator<Item = &[u8]> {
        self.certs.iter().map(|c| c.der.as_slice())
    }

    /// The public-key pin of each certificate, in bundle order.
    pub fn pins(&self) -> impl Iterator<Item = &Pin> {
        self.certs.iter().map(|c| &c.pin)
    }

    /// Whether each certificate, in bundle order, says it is a CA (a basic constraints
    /// extension with `CA:TRUE`). The bundle's use does not depend on it, but a pin of a
    /// certificate that is not a CA (a server's, say) is not the cluster CA's pin, which is
    /// what kubeadm pins.
    pub fn ca_flags(&self) -> impl Iterator<Item = bool> {
        self.certs.iter().map(|c| c.is_ca)
    }

    /// The pin of the first certificate: what `kubeadm token create --print-join-command`
    /// prints as `--discovery-token-ca-cert-hash`.
    pub fn first_pin(&self) -> Option<&Pin> {
        self.certs.first().map(|c| &c.pin)
    }
}

impl std::fmt::Debug for CaBundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaBundle")
            .field(
                "pins",
                &self
                    .certs
                    .iter()
                    .map(|c| c.pin.to_string())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Whether the certificate has a basic constraints extension that says `CA:TRUE`.
fn is_ca(cert: &x509_cert::Certificate) -> bool {
    use der::oid::AssociatedOid as _;
    use x509_cert::ext::pkix::BasicConstraints;
    cert.tbs_certificate
        .extensions
        .iter()
        .flatten()
        .find(|e| e.extn_id == BasicConstraints::OID)
        .and_then(|e| BasicConstraints::from_der(e.extn_value.as_bytes()).ok())
        .is_some_and(|bc| bc.ca)
}

const BEGIN: &str = "-----BEGIN ";
const END: &str = "-----END ";
const DASHES: &str = "-----";

/// Split a PEM text into DER blocks; every block must be a header-less `CERTIFICATE`.
fn parse_pem_blocks(text: &str) -> Result<Vec<Vec<u8>>, Error> {
    let mut blocks = Vec::new();
    let mut lines = text.lines().map(|l| l.trim_end_matches('\r'));
    while let Some(line) = lines.next() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let Some(label) = line
            .strip_prefix(BEGIN)
            .and_then(|l| l.strip_suffix(DASHES))
        else {
            return Err(Error::Pem {
                reason: "data outside a PEM block",
            });
        };
        if label != "CERTIFICATE" {
            return Err(Error::Pem {
                reason: "a PEM block is not a CERTIFICATE",
            });
        }
        let mut b64 = String::new();
        let mut ended = false;
        for body in lines.by_ref() {
            let body = body.trim();
            if let Some(end_label) = body.strip_prefix(END).and_then(|l| l.strip_suffix(DASHES)) {
                if end_label != label {
                    return Err(Error::Pem {
                        reason: "mismatched PEM END line",
                    });
                }
                ended = true;
                break;
            }
            if body.contains(':') {
                return Err(Error::Pem {
                    reason: "PEM headers are not allowed",
                });
            }
            b64.push_str(body);
        }
        if !ended {
            return Err(Error::Pem {
                reason: "PEM block without END line",
            });
        }
        if blocks.len() >= MAX_BUNDLE_CERTIFICATES {
            return Err(Error::Pem {
                reason: "too many certificates in the bundle",
            });
        }
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64.as_bytes())
            .map_err(|_| Error::Pem {
                reason: "invalid base64 in a PEM block",
            })?;
        blocks.push(der);
    }
    Ok(blocks)
}

/// One DER TLV: (tag, whole TLV, content, rest of the input).
type Tlv<'a> = (u8, &'a [u8], &'a [u8], &'a [u8]);

/// Read one DER TLV at the start of `input`.
fn tlv(input: &[u8]) -> Option<Tlv<'_>> {
    let (&tag, after_tag) = input.split_first()?;
    let (&first, mut rest) = after_tag.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let (len_bytes, after) = rest.split_at_checked(n)?;
        rest = after;
        len_bytes.iter().try_fold(0usize, |acc, &b| {
            acc.checked_mul(256)?.checked_add(usize::from(b))
        })?
    };
    let header_len = input.len().checked_sub(rest.len())?;
    let (content, after) = rest.split_at_checked(len)?;
    let whole = input.get(..header_len.checked_add(len)?)?;
    Some((tag, whole, content, after))
}

/// The raw DER bytes of the certificate's SubjectPublicKeyInfo, exactly as stored.
fn raw_spki(cert: &[u8]) -> Option<&[u8]> {
    const SEQUENCE: u8 = 0x30;
    let (tag, _, cert_content, rest) = tlv(cert)?;
    if tag != SEQUENCE || !rest.is_empty() {
        return None;
    }
    let (tag, _, tbs, _) = tlv(cert_content)?;
    if tag != SEQUENCE {
        return None;
    }
    let mut fields = tbs;
    // [0] EXPLICIT version is optional.
    let (tag, _, _, after) = tlv(fields)?;
    if tag == 0xa0 {
        fields = after;
    }
    // serialNumber, signature, issuer, validity, subject.
    for _ in 0..5 {
        let (_, _, _, after) = tlv(fields)?;
        fields = after;
    }
    let (tag, whole, _, _) = tlv(fields)?;
    if tag != SEQUENCE {
        return None;
    }
    Some(whole)
}
