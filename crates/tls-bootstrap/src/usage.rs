//! Key usages as the `certificates.k8s.io` API names them.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// A key usage of a `CertificateSigningRequest` (`spec.usages`), named as the
/// `certificates.k8s.io/v1` API names it (`"client auth"`, `"digital signature"`, ...).
/// Kubernetes' API validation accepts exactly these strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum KeyUsage {
    /// `signing`
    Signing,
    /// `digital signature`
    DigitalSignature,
    /// `content commitment`
    ContentCommitment,
    /// `key encipherment`
    KeyEncipherment,
    /// `key agreement`
    KeyAgreement,
    /// `data encipherment`
    DataEncipherment,
    /// `cert sign`
    CertSign,
    /// `crl sign`
    CrlSign,
    /// `encipher only`
    EncipherOnly,
    /// `decipher only`
    DecipherOnly,
    /// `any`
    Any,
    /// `server auth`
    ServerAuth,
    /// `client auth`
    ClientAuth,
    /// `code signing`
    CodeSigning,
    /// `email protection`
    EmailProtection,
    /// `s/mime`
    Smime,
    /// `ipsec end system`
    IpsecEndSystem,
    /// `ipsec tunnel`
    IpsecTunnel,
    /// `ipsec user`
    IpsecUser,
    /// `timestamping`
    Timestamping,
    /// `ocsp signing`
    OcspSigning,
    /// `microsoft sgc`
    MicrosoftSgc,
    /// `netscape sgc`
    NetscapeSgc,
}

const ALL: [(KeyUsage, &str); 23] = [
    (KeyUsage::Signing, "signing"),
    (KeyUsage::DigitalSignature, "digital signature"),
    (KeyUsage::ContentCommitment, "content commitment"),
    (KeyUsage::KeyEncipherment, "key encipherment"),
    (KeyUsage::KeyAgreement, "key agreement"),
    (KeyUsage::DataEncipherment, "data encipherment"),
    (KeyUsage::CertSign, "cert sign"),
    (KeyUsage::CrlSign, "crl sign"),
    (KeyUsage::EncipherOnly, "encipher only"),
    (KeyUsage::DecipherOnly, "decipher only"),
    (KeyUsage::Any, "any"),
    (KeyUsage::ServerAuth, "server auth"),
    (KeyUsage::ClientAuth, "client auth"),
    (KeyUsage::CodeSigning, "code signing"),
    (KeyUsage::EmailProtection, "email protection"),
    (KeyUsage::Smime, "s/mime"),
    (KeyUsage::IpsecEndSystem, "ipsec end system"),
    (KeyUsage::IpsecTunnel, "ipsec tunnel"),
    (KeyUsage::IpsecUser, "ipsec user"),
    (KeyUsage::Timestamping, "timestamping"),
    (KeyUsage::OcspSigning, "ocsp signing"),
    (KeyUsage::MicrosoftSgc, "microsoft sgc"),
    (KeyUsage::NetscapeSgc, "netscape sgc"),
];

impl KeyUsage {
    /// The API's name for this usage.
    pub fn as_str(self) -> &'static str {
        ALL.iter().find(|(u, _)| *u == self).map_or("", |(_, s)| s)
    }

    /// Every usage the API knows, in the API's order.
    pub fn all() -> impl Iterator<Item = KeyUsage> {
        ALL.iter().map(|(u, _)| *u)
    }
}

impl FromStr for KeyUsage {
    type Err = Error;

    fn from_str(s: &str) -> Result<KeyUsage, Error> {
        ALL.iter()
            .find(|(_, name)| *name == s)
            .map(|(u, _)| *u)
            .ok_or(Error::UnknownUsage)
    }
}

impl fmt::Display for KeyUsage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for KeyUsage {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for KeyUsage {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<KeyUsage, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse()
            .map_err(|_| serde::de::Error::custom("unknown key usage"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for u in KeyUsage::all() {
            assert_eq!(u.as_str().parse::<KeyUsage>().unwrap(), u);
            assert_eq!(serde_json::to_string(&u).unwrap(), format!("\"{u}\""));
        }
        assert!("Client Auth".parse::<KeyUsage>().is_err());
        assert!("client auth ".parse::<KeyUsage>().is_err());
    }
}
