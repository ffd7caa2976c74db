//! A test CA (rcgen) that issues certificates from a `SigningPlan`, as a control plane would.

#![allow(dead_code, reason = "each test file uses part of the support module")]

use std::time::SystemTime;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, PublicKeyData, SignatureAlgorithm,
};
use tls_bootstrap::{KeyType, KeyUsage, SigningPlan};

pub(crate) struct Ca {
    pub(crate) cert: rcgen::Certificate,
    pub(crate) key: KeyPair,
}

pub(crate) struct PlanKey<'a> {
    bits: &'a [u8],
    alg: &'static SignatureAlgorithm,
}

impl PublicKeyData for PlanKey<'_> {
    fn der_bytes(&self) -> &[u8] {
        self.bits
    }
    fn algorithm(&self) -> &SignatureAlgorithm {
        self.alg
    }
}

impl Ca {
    pub(crate) fn new(name: &str) -> Ca {
        Ca::with_validity(name, None)
    }

    pub(crate) fn with_validity(name: &str, validity: Option<(SystemTime, SystemTime)>) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        if let Some((nb, na)) = validity {
            params.not_before = nb.into();
            params.not_after = na.into();
        }
        let cert = params.self_signed(&key).unwrap();
        Ca { cert, key }
    }

    pub(crate) fn pem(&self) -> String {
        self.cert.pem()
    }

    /// Issues a certificate as the plan says: the request's subject and key, the plan's
    /// validity and usages.
    pub(crate) fn issue(&self, plan: &SigningPlan) -> String {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for o in &plan.organizations {
            params
                .distinguished_name
                .push(DnType::OrganizationName, o.as_str());
        }
        params
            .distinguished_name
            .push(DnType::CommonName, plan.common_name.as_str());
        params.not_before = plan.not_before.into();
        params.not_after = plan.not_after.into();
        params.key_usages = plan
            .key_usages
            .iter()
            .map(|u| match u {
                KeyUsage::DigitalSignature => KeyUsagePurpose::DigitalSignature,
                KeyUsage::KeyEncipherment => KeyUsagePurpose::KeyEncipherment,
                other => panic!("unexpected usage {other}"),
            })
            .collect();
        params.extended_key_usages = plan
            .extended_key_usages
            .iter()
            .map(|u| match u {
                KeyUsage::ClientAuth => ExtendedKeyUsagePurpose::ClientAuth,
                KeyUsage::ServerAuth => ExtendedKeyUsagePurpose::ServerAuth,
                other => panic!("unexpected usage {other}"),
            })
            .collect();
        let alg = match plan.key_type {
            KeyType::EcdsaP256 => &rcgen::PKCS_ECDSA_P256_SHA256,
            KeyType::EcdsaP384 => &rcgen::PKCS_ECDSA_P384_SHA384,
            KeyType::Rsa => &rcgen::PKCS_RSA_SHA256,
            KeyType::Ed25519 => &rcgen::PKCS_ED25519,
            other => panic!("unexpected key type {other:?}"),
        };
        let key = PlanKey {
            bits: &plan.public_key_bits,
            alg,
        };
        params.signed_by(&key, &self.cert, &self.key).unwrap().pem()
    }
}

/// Runs a command, returns (success, stdout, stderr).
pub(crate) fn run(cmd: &str, args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd} not runnable: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A certificate request signed by `key`, with the organizations (none when empty), common name
/// (none when empty) and subject alternative names given: what a kubelet (or an impostor) files.
/// `None` when rcgen refuses the names (the property tests feed it arbitrary text); a request
/// rcgen made that tls-bootstrap cannot read fails the test.
pub(crate) fn node_request(
    key: &KeyPair,
    orgs: &[&str],
    cn: &str,
    sans: Vec<rcgen::SanType>,
) -> Option<tls_bootstrap::CertificateRequest> {
    let mut params = CertificateParams::new(Vec::<String>::new()).ok()?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    for org in orgs {
        params
            .distinguished_name
            .push(DnType::OrganizationName, *org);
    }
    if !cn.is_empty() {
        params.distinguished_name.push(DnType::CommonName, cn);
    }
    params.subject_alt_names = sans;
    let csr = params.serialize_request(key).ok()?;
    Some(tls_bootstrap::CertificateRequest::from_der(csr.der()).expect("rcgen's request reads"))
}
