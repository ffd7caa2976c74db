//! A test CA (rcgen) that issues client certificates.

#![allow(
    dead_code,
    clippy::unwrap_used,
    reason = "each test file uses part of the support module; tests"
)]

use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

pub(crate) fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

pub(crate) struct Ca {
    pub(crate) cert: rcgen::Certificate,
    pub(crate) key: KeyPair,
}

impl Ca {
    pub(crate) fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).unwrap();
        Ca { cert, key }
    }

    pub(crate) fn pem(&self) -> String {
        self.cert.pem()
    }

    /// A client certificate (DER) with `cn` (none when empty) and `orgs`, for `usages`, valid
    /// for `validity` around [`now`].
    pub(crate) fn issue_with(
        &self,
        cn: &str,
        orgs: &[&str],
        usages: Vec<ExtendedKeyUsagePurpose>,
        validity: (SystemTime, SystemTime),
    ) -> Vec<u8> {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for o in orgs {
            params.distinguished_name.push(DnType::OrganizationName, *o);
        }
        if !cn.is_empty() {
            params.distinguished_name.push(DnType::CommonName, cn);
        }
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = usages;
        params.not_before = validity.0.into();
        params.not_after = validity.1.into();
        params
            .signed_by(&key, &self.cert, &self.key)
            .unwrap()
            .der()
            .to_vec()
    }

    pub(crate) fn issue(&self, cn: &str, orgs: &[&str]) -> Vec<u8> {
        self.issue_with(
            cn,
            orgs,
            vec![ExtendedKeyUsagePurpose::ClientAuth],
            (
                now() - Duration::from_secs(3600),
                now() + Duration::from_secs(3600),
            ),
        )
    }
}
