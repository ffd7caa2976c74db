//! Distinguished names as Go's `crypto/x509` reads them: one home for the subject rules that the
//! node's side (its request and its issued certificate) and an API server's side (the user a
//! client certificate names) share.

use der::asn1::ObjectIdentifier;
use der::{Decode as _, Tag, Tagged as _};
use x509_cert::Certificate;
use x509_cert::name::Name;

use crate::accept::MAX_CERTIFICATE_PEM_BYTES;
use crate::error::Error;
use crate::request::{OID_CN, OID_O};

/// The most attributes a subject may carry before it is refused (a bound on untrusted input;
/// a node's or a user's certificate has a handful).
pub const MAX_SUBJECT_ATTRIBUTES: usize = 256;

/// What a directory string's value is, as Go reads the value of one subject attribute.
pub(crate) enum GoString {
    /// A string type whose bytes are valid for it.
    Text(String),
    /// A string type whose bytes are not (Go: `invalid PrintableString`, ...).
    Invalid,
    /// Not one of the string types Go decodes.
    NotAString,
}

/// Go's `parseASN1String` (and `encoding/asn1`'s string cases, which agree): UTF8String (valid
/// UTF-8), PrintableString (Go's printable set, `*` and `&` included), IA5String (ASCII),
/// NumericString (digits and space), BMPString (UCS-2 big-endian, one trailing NUL pair
/// dropped, unpaired surrogates replaced) and T61String (its bytes; here they must be UTF-8,
/// since a Rust string cannot hold others).
pub(crate) fn go_string(value: &der::Any) -> GoString {
    let bytes = value.value();
    let text = |ok: bool| {
        if ok {
            std::str::from_utf8(bytes)
                .map(|s| GoString::Text(s.to_owned()))
                .unwrap_or(GoString::Invalid)
        } else {
            GoString::Invalid
        }
    };
    match value.tag() {
        Tag::Utf8String | Tag::TeletexString => text(true),
        Tag::PrintableString => text(bytes.iter().all(|b| is_go_printable(*b))),
        Tag::Ia5String => text(bytes.is_ascii()),
        Tag::NumericString => text(bytes.iter().all(|b| b.is_ascii_digit() || *b == b' ')),
        Tag::BmpString => bmp_string(bytes),
        _ => GoString::NotAString,
    }
}

/// Go's `isPrintable` as its x509 parser calls it (asterisk and ampersand allowed).
fn is_go_printable(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b' ' | b'\'' | b'(' | b')' | b'+' | b',' | b'-' | b'.' | b'/' | b':' | b'=' | b'?'
        )
        || b == b'*'
        || b == b'&'
}

fn bmp_string(bytes: &[u8]) -> GoString {
    if !bytes.len().is_multiple_of(2) {
        return GoString::Invalid;
    }
    let bytes = bytes.strip_suffix(&[0, 0]).unwrap_or(bytes);
    let units = bytes.chunks_exact(2).map(|pair| {
        u16::from_be_bytes([
            pair.first().copied().unwrap_or(0),
            pair.get(1).copied().unwrap_or(0),
        ])
    });
    GoString::Text(
        char::decode_utf16(units)
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect(),
    )
}

/// How a caller treats an attribute whose value is not a string.
#[derive(Clone, Copy)]
pub(crate) enum NonString {
    /// Go's certificate parser (`parseName`): the certificate does not parse.
    Refuse,
    /// Go's request parser (`encoding/asn1` into `pkix.RDNSequence`, then
    /// `FillFromRDNSequence`): the attribute is skipped.
    Skip,
}

/// A certificate's subject, read as Go's `crypto/x509` reads it: every attribute value must be
/// one of the string types Go decodes, and valid for its type.
///
/// This is what an API server's x509 authenticator reads a client certificate's user from
/// (`system:node:<name>` in the common name, `system:nodes` in the organization), and what a
/// node checks its issued certificate's subject with.
///
/// ```
/// # fn main() -> Result<(), tls_bootstrap::Error> {
/// # let der: &[u8] = &[];
/// # if der.is_empty() { return Ok(()); }
/// let subject = tls_bootstrap::Subject::of_certificate(der)?;
/// let user = subject.common_name();
/// let groups = subject.organizations();
/// # let _ = (user, groups);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    common_name: Option<String>,
    organizations: Vec<String>,
    attributes: Vec<(ObjectIdentifier, String)>,
}

impl Subject {
    /// The subject of the DER certificate `der` (at most [`MAX_CERTIFICATE_PEM_BYTES`]).
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`]; [`Error::InvalidCertificate`] when the DER is not a certificate,
    /// an attribute value is not a string or not valid for its string type, or the subject
    /// has more than [`MAX_SUBJECT_ATTRIBUTES`] attributes.
    pub fn of_certificate(der: &[u8]) -> Result<Subject, Error> {
        if der.len() > MAX_CERTIFICATE_PEM_BYTES {
            return Err(Error::TooLarge {
                what: "certificate",
                len: der.len(),
                max: MAX_CERTIFICATE_PEM_BYTES,
            });
        }
        let cert = Certificate::from_der(der).map_err(|_| Error::InvalidCertificate {
            reason: "not a DER X.509 certificate",
        })?;
        Subject::of_name(&cert.tbs_certificate.subject, NonString::Refuse)
            .map_err(|reason| Error::InvalidCertificate { reason })
    }

    pub(crate) fn of_name(name: &Name, non_string: NonString) -> Result<Subject, &'static str> {
        let mut subject = Subject {
            common_name: None,
            organizations: Vec::new(),
            attributes: Vec::new(),
        };
        for rdn in name.0.iter() {
            for atv in rdn.0.iter() {
                if subject.attributes.len() >= MAX_SUBJECT_ATTRIBUTES {
                    return Err("too many subject attributes");
                }
                let value = match go_string(&atv.value) {
                    GoString::Text(v) => v,
                    GoString::Invalid => return Err("a subject attribute is not a valid string"),
                    GoString::NotAString => match non_string {
                        NonString::Refuse => return Err("a subject attribute is not a string"),
                        NonString::Skip => continue,
                    },
                };
                if atv.oid == OID_CN {
                    subject.common_name = Some(value.clone());
                } else if atv.oid == OID_O {
                    subject.organizations.push(value.clone());
                }
                subject.attributes.push((atv.oid, value));
            }
        }
        Ok(subject)
    }

    /// The last common name (`2.5.4.3`), as Go's `pkix.Name` keeps it.
    #[must_use]
    pub fn common_name(&self) -> Option<&str> {
        self.common_name.as_deref()
    }

    /// Every organization (`2.5.4.10`), in order.
    #[must_use]
    pub fn organizations(&self) -> &[String] {
        &self.organizations
    }

    /// The values of every attribute of type `oid` (dotted, for example `"2.5.4.3"`), in order:
    /// Go's `pkix.Name.Names`. An `oid` that is not a valid object identifier has none.
    pub fn values<'a>(&'a self, oid: &str) -> impl Iterator<Item = &'a str> + 'a {
        let oid = ObjectIdentifier::new(oid).ok();
        self.attributes
            .iter()
            .filter(move |(o, _)| Some(*o) == oid)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn into_fields(self) -> (Option<String>, Vec<String>) {
        (self.common_name, self.organizations)
    }
}

#[cfg(test)]
mod tests {
    use super::{GoString, go_string};
    use der::{Any, Tag};

    fn read(tag: Tag, bytes: &[u8]) -> Option<String> {
        let any = Any::new(tag, bytes).ok()?;
        match go_string(&any) {
            GoString::Text(s) => Some(s),
            GoString::Invalid | GoString::NotAString => None,
        }
    }

    #[test]
    fn strings_read_as_go_reads_them() {
        // Go's parseASN1String, type by type.
        assert_eq!(read(Tag::PrintableString, b"test").as_deref(), Some("test"));
        assert_eq!(read(Tag::PrintableString, b"*&").as_deref(), Some("*&"));
        assert_eq!(read(Tag::PrintableString, b"\xff"), None);
        assert_eq!(read(Tag::PrintableString, b"_"), None);
        assert_eq!(read(Tag::Utf8String, b"\xff"), None);
        assert_eq!(read(Tag::Utf8String, "Ω".as_bytes()).as_deref(), Some("Ω"));
        assert_eq!(read(Tag::Ia5String, b"\x7f").as_deref(), Some("\x7f"));
        assert_eq!(read(Tag::Ia5String, b"\x80"), None);
        assert_eq!(read(Tag::NumericString, b"12 3").as_deref(), Some("12 3"));
        assert_eq!(read(Tag::NumericString, b"a"), None);
        assert_eq!(
            read(Tag::BmpString, b"\x00t\x00e\x00s\x00t").as_deref(),
            Some("test")
        );
        assert_eq!(
            read(Tag::BmpString, b"\x00t\x00e\x00s\x00t\x00\x00").as_deref(),
            Some("test")
        );
        assert_eq!(read(Tag::BmpString, b"\x00t\x00e\x00s\x00t\x00"), None);
        assert_eq!(read(Tag::BmpString, b"\x03\xa9").as_deref(), Some("Ω"));
        assert_eq!(
            read(Tag::BmpString, b"\xd8\x00").as_deref(),
            Some("\u{fffd}")
        );
        assert_eq!(read(Tag::Integer, b"\x01"), None);
    }
}
