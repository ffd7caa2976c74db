//! What a certificate says of itself, for a log line: its subject and validity.

use std::time::SystemTime;

use der::Decode as _;
use x509_cert::Certificate;

use crate::error::Error;

/// The longest subject [`CertificateSummary::subject`] returns, in characters (a log line's
/// worth; a longer one is cut and ends in `...`).
pub const MAX_SUMMARY_SUBJECT_CHARS: usize = 256;

/// A certificate's subject and validity, read without checking anything else (for a log line
/// or a metric about a certificate that was verified elsewhere, or that is one's own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateSummary {
    subject: String,
    not_before: SystemTime,
    not_after: SystemTime,
}

/// Reads the subject (in RFC 4514 form) and the validity of the DER certificate `der`.
///
/// # Errors
///
/// [`Error::InvalidCertificate`] when `der` is not one X.509 certificate.
pub fn summarize_certificate(der: &[u8]) -> Result<CertificateSummary, Error> {
    let cert = Certificate::from_der(der).map_err(|_| Error::InvalidCertificate {
        reason: "not a DER X.509 certificate",
    })?;
    let tbs = &cert.tbs_certificate;
    let full = tbs.subject.to_string();
    let subject = if full.chars().count() > MAX_SUMMARY_SUBJECT_CHARS {
        let mut cut: String = full.chars().take(MAX_SUMMARY_SUBJECT_CHARS).collect();
        cut.push_str("...");
        cut
    } else {
        full
    };
    Ok(CertificateSummary {
        subject,
        not_before: tbs.validity.not_before.to_system_time(),
        not_after: tbs.validity.not_after.to_system_time(),
    })
}

impl CertificateSummary {
    /// The subject as RFC 4514 writes it (`CN=proxy,O=example`), at most
    /// [`MAX_SUMMARY_SUBJECT_CHARS`] characters and `...`.
    #[must_use]
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// `notBefore`.
    #[must_use]
    pub fn not_before(&self) -> SystemTime {
        self.not_before
    }

    /// `notAfter`.
    #[must_use]
    pub fn not_after(&self) -> SystemTime {
        self.not_after
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_subject_and_validity() {
        let mut params = rcgen::CertificateParams::new(vec!["proxy.example".to_owned()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "forward-proxy");
        params.not_before = rcgen::date_time_ymd(2030, 1, 2);
        params.not_after = rcgen::date_time_ymd(2031, 3, 4);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let summary = summarize_certificate(cert.der()).unwrap();
        assert_eq!(summary.subject(), "CN=forward-proxy");
        assert_eq!(crate::rfc3339(summary.not_before()), "2030-01-02T00:00:00Z");
        assert_eq!(crate::rfc3339(summary.not_after()), "2031-03-04T00:00:00Z");
    }

    #[test]
    fn refuses_what_is_not_a_certificate() {
        assert!(matches!(
            summarize_certificate(b"not a certificate"),
            Err(Error::InvalidCertificate { .. })
        ));
    }

    #[test]
    fn a_long_subject_is_cut() {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "x".repeat(1000));
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let summary = summarize_certificate(cert.der()).unwrap();
        assert_eq!(
            summary.subject().chars().count(),
            MAX_SUMMARY_SUBJECT_CHARS + 3
        );
        assert!(summary.subject().starts_with("CN=xxx") && summary.subject().ends_with("..."));
    }
}
