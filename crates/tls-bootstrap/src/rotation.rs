//! When a node certificate is replaced, and with which credential the request is made: the
//! decisions of client-go's certificate manager (`k8s.io/client-go/util/certificate`), which
//! the kubelet runs for its client and its serving certificate, as pure functions.
//!
//! What client-go does, in order, each time its rotation loop wakes:
//!
//! 1. with no certificate (none stored, or the stored one expired when the manager started),
//!    it requests one at once;
//! 2. when the certificate no longer satisfies the template (the common name differs, or an
//!    organization, DNS name or IP address of the template is missing from it: extra ones
//!    never trigger a request, and key usages are not compared), at once;
//! 3. otherwise at a deadline drawn uniformly from 70 % to 90 % of the certificate's lifetime,
//!    counted from `notBefore`;
//! 4. with no template (a serving certificate before the node knows its addresses), nothing is
//!    requested;
//! 5. a failed request is retried after 2 s, 4 s, 8 s and 16 s (each plus up to 10 % of
//!    jitter), five attempts in all, then every 32 s until one succeeds;
//! 6. the request is made with the current certificate while it is valid, else with the
//!    bootstrap credential (the kubelet's `--bootstrap-kubeconfig`).
//!
//! Here the clock reading (`now`) and the random draws (`jitter`, uniform in `[0, 1)`) are
//! the caller's, and every step says why it was taken. Where client-go would request a
//! certificate with no credential that can work (expired certificate, no bootstrap
//! credential or an expired one), [`Credential::Unavailable`] says so instead.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

use der::{Decode as _, Encode as _};
use x509_cert::Certificate;
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::ext::pkix::name::GeneralName;

use crate::accept::MAX_CERTIFICATE_PEM_BYTES;
use crate::error::Error;
use crate::name::{NonString, Subject};
use crate::request::{CertificateRequest, MAX_REQUEST_NAMES, OID_SAN};

/// The first retry delay after a failed request (client-go's `wait.Backoff.Duration`).
pub const RETRY_INITIAL_DELAY: Duration = Duration::from_secs(2);
/// The factor each retry delay grows by (`wait.Backoff.Factor`).
pub const RETRY_FACTOR: u32 = 2;
/// The most each backed-off delay is lengthened by, as a fraction of it (`wait.Backoff.Jitter`).
pub const RETRY_JITTER: f64 = 0.1;
/// Attempts made with growing delays before client-go falls back to polling
/// (`wait.Backoff.Steps`).
pub const RETRY_STEPS: u32 = 5;
/// The delay between attempts once the backed-off attempts all failed (client-go's
/// `wait.PollInfinite(32 * time.Second, ...)`), without jitter.
pub const RETRY_POLL_INTERVAL: Duration = Duration::from_secs(32);

/// What a node wants its certificate to say (client-go's template, an
/// `x509.CertificateRequest`): the common name, organizations, DNS names and IP addresses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Template {
    common_name: String,
    organizations: Vec<String>,
    dns_names: Vec<String>,
    ip_addresses: Vec<IpAddr>,
}

impl Template {
    /// A template for `common_name` with no organization, DNS name or IP address (an empty
    /// common name is Go's zero value, and is compared as such).
    #[must_use]
    pub fn new(common_name: &str) -> Template {
        Template {
            common_name: common_name.to_owned(),
            ..Template::default()
        }
    }

    /// What `request` asks for: its common name (empty if none), organizations, DNS names and
    /// IP addresses (the request a node files is its template).
    #[must_use]
    pub fn from_request(request: &CertificateRequest) -> Template {
        Template {
            common_name: request.common_name().unwrap_or_default().to_owned(),
            organizations: request.organizations().to_vec(),
            dns_names: request.dns_names().to_vec(),
            ip_addresses: request.ip_addresses().to_vec(),
        }
    }

    /// The template with these organizations.
    #[must_use]
    pub fn with_organizations<S: AsRef<str>>(mut self, organizations: &[S]) -> Template {
        self.organizations = organizations
            .iter()
            .map(|s| s.as_ref().to_owned())
            .collect();
        self
    }

    /// The template with these DNS names.
    #[must_use]
    pub fn with_dns_names<S: AsRef<str>>(mut self, dns_names: &[S]) -> Template {
        self.dns_names = dns_names.iter().map(|s| s.as_ref().to_owned()).collect();
        self
    }

    /// The template with these IP addresses.
    #[must_use]
    pub fn with_ip_addresses(mut self, ip_addresses: &[IpAddr]) -> Template {
        self.ip_addresses = ip_addresses.to_vec();
        self
    }

    /// The common name.
    #[must_use]
    pub fn common_name(&self) -> &str {
        &self.common_name
    }

    /// The organizations.
    #[must_use]
    pub fn organizations(&self) -> &[String] {
        &self.organizations
    }

    /// The DNS names.
    #[must_use]
    pub fn dns_names(&self) -> &[String] {
        &self.dns_names
    }

    /// The IP addresses.
    #[must_use]
    pub fn ip_addresses(&self) -> &[IpAddr] {
        &self.ip_addresses
    }
}

/// What the rotation decision reads of the certificate in use: validity, common name,
/// organizations, DNS names and IP addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentCertificate {
    not_before: SystemTime,
    not_after: SystemTime,
    common_name: String,
    organizations: Vec<String>,
    dns_names: Vec<String>,
    ip_addresses: Vec<IpAddr>,
    public_key_der: Vec<u8>,
}

impl CurrentCertificate {
    /// A certificate valid from `not_before` to `not_after` with an empty subject and no
    /// alternative names (fill them in with the `with_` methods).
    #[must_use]
    pub fn new(not_before: SystemTime, not_after: SystemTime) -> CurrentCertificate {
        CurrentCertificate {
            not_before,
            not_after,
            common_name: String::new(),
            organizations: Vec::new(),
            dns_names: Vec::new(),
            ip_addresses: Vec::new(),
            public_key_der: Vec::new(),
        }
    }

    /// Reads the DER certificate `der` (the leaf of the pair in use) as Go's `crypto/x509`
    /// reads the fields the decision needs: the last common name, the organizations, and the
    /// DNS and IP subject alternative names.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] over [`MAX_CERTIFICATE_PEM_BYTES`]; [`Error::InvalidCertificate`]
    /// when `der` is not a certificate, a subject attribute is not a string, the subject
    /// alternative names are malformed or more than [`MAX_REQUEST_NAMES`], or an IP address
    /// name is neither 4 nor 16 bytes.
    pub fn from_der(der: &[u8]) -> Result<CurrentCertificate, Error> {
        if der.len() > MAX_CERTIFICATE_PEM_BYTES {
            return Err(Error::TooLarge {
                what: "certificate",
                len: der.len(),
                max: MAX_CERTIFICATE_PEM_BYTES,
            });
        }
        let invalid = |reason| Error::InvalidCertificate { reason };
        let cert =
            Certificate::from_der(der).map_err(|_| invalid("not a DER X.509 certificate"))?;
        let tbs = &cert.tbs_certificate;
        let subject = Subject::of_name(&tbs.subject, NonString::Refuse).map_err(invalid)?;
        let mut out = CurrentCertificate::new(
            tbs.validity.not_before.to_system_time(),
            tbs.validity.not_after.to_system_time(),
        );
        out.common_name = subject.common_name().unwrap_or_default().to_owned();
        out.organizations = subject.organizations().to_vec();
        out.public_key_der = tbs
            .subject_public_key_info
            .to_der()
            .map_err(|_| invalid("couldn't encode the public key"))?;
        for ext in tbs.extensions.iter().flatten() {
            if ext.extn_id != OID_SAN {
                continue;
            }
            let san = SubjectAltName::from_der(ext.extn_value.as_bytes())
                .map_err(|_| invalid("malformed subject alternative names"))?;
            for name in san.0 {
                if out.dns_names.len().saturating_add(out.ip_addresses.len()) >= MAX_REQUEST_NAMES {
                    return Err(invalid("too many subject alternative names"));
                }
                match name {
                    GeneralName::DnsName(s) => out.dns_names.push(s.to_string()),
                    GeneralName::IpAddress(o) => {
                        let bytes = o.as_bytes();
                        let ip = <[u8; 4]>::try_from(bytes)
                            .map(IpAddr::from)
                            .or_else(|_| <[u8; 16]>::try_from(bytes).map(IpAddr::from))
                            .map_err(|_| invalid("malformed IP address name"))?;
                        out.ip_addresses.push(ip);
                    }
                    _ => {}
                }
            }
        }
        Ok(out)
    }

    /// The certificate with this common name and these organizations.
    #[must_use]
    pub fn with_subject<S: AsRef<str>>(
        mut self,
        common_name: &str,
        organizations: &[S],
    ) -> CurrentCertificate {
        common_name.clone_into(&mut self.common_name);
        self.organizations = organizations
            .iter()
            .map(|s| s.as_ref().to_owned())
            .collect();
        self
    }

    /// The certificate with these DNS names.
    #[must_use]
    pub fn with_dns_names<S: AsRef<str>>(mut self, dns_names: &[S]) -> CurrentCertificate {
        self.dns_names = dns_names.iter().map(|s| s.as_ref().to_owned()).collect();
        self
    }

    /// The certificate with these IP addresses.
    #[must_use]
    pub fn with_ip_addresses(mut self, ip_addresses: &[IpAddr]) -> CurrentCertificate {
        self.ip_addresses = ip_addresses.to_vec();
        self
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

    /// The certificate's public key (DER `SubjectPublicKeyInfo`), to compare with
    /// [`NodeKey::public_key_der`](crate::NodeKey::public_key_der); empty for a certificate made
    /// with [`CurrentCertificate::new`].
    #[must_use]
    pub fn public_key_der(&self) -> &[u8] {
        &self.public_key_der
    }

    /// The common name (empty if none).
    #[must_use]
    pub fn common_name(&self) -> &str {
        &self.common_name
    }

    /// The organizations.
    #[must_use]
    pub fn organizations(&self) -> &[String] {
        &self.organizations
    }

    /// The DNS names.
    #[must_use]
    pub fn dns_names(&self) -> &[String] {
        &self.dns_names
    }

    /// The IP addresses.
    #[must_use]
    pub fn ip_addresses(&self) -> &[IpAddr] {
        &self.ip_addresses
    }

    /// Whether the certificate has expired at `now`: `now` is after `notAfter` (Go's
    /// `now.After(NotAfter)`; at `notAfter` itself it is still valid).
    #[must_use]
    pub fn is_expired(&self, now: SystemTime) -> bool {
        now > self.not_after
    }

    /// [`rotation_deadline`] for this certificate.
    #[must_use]
    pub fn rotation_deadline(&self, jitter: f64) -> SystemTime {
        rotation_deadline(self.not_before, self.not_after, jitter)
    }
}

/// Why a certificate does not satisfy the template (client-go's `certSatisfiesTemplate`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unsatisfied {
    /// There is no certificate.
    NoCertificate,
    /// The common name differs from the template's.
    CommonName {
        /// The certificate's.
        current: String,
        /// The template's.
        wanted: String,
    },
    /// Organizations of the template the certificate lacks, sorted.
    MissingOrganizations(Vec<String>),
    /// DNS names of the template the certificate lacks, sorted.
    MissingDnsNames(Vec<String>),
    /// IP addresses of the template the certificate lacks, sorted.
    MissingIpAddresses(Vec<IpAddr>),
}

/// client-go's `certSatisfiesTemplate`: whether `current` still says what `template` asks
/// for. With no certificate, never; with no template, always. Otherwise the common names are
/// equal and every organization, DNS name and IP address of the template is in the
/// certificate (extra ones in the certificate are fine; IPv4-mapped IPv6 addresses equal
/// their IPv4 form, as Go compares `net.IP.String()`). Checked in client-go's order: common
/// name, DNS names, IP addresses, organizations. Key usages are not compared.
///
/// # Errors
///
/// The first [`Unsatisfied`] reason found.
pub fn satisfies_template(
    current: Option<&CurrentCertificate>,
    template: Option<&Template>,
) -> Result<(), Unsatisfied> {
    let Some(current) = current else {
        return Err(Unsatisfied::NoCertificate);
    };
    let Some(template) = template else {
        return Ok(());
    };
    if template.common_name != current.common_name {
        return Err(Unsatisfied::CommonName {
            current: current.common_name.clone(),
            wanted: template.common_name.clone(),
        });
    }
    let missing_dns = missing(&template.dns_names, &current.dns_names);
    if !missing_dns.is_empty() {
        return Err(Unsatisfied::MissingDnsNames(missing_dns));
    }
    let canonical = |ips: &[IpAddr]| ips.iter().map(|ip| ip.to_canonical()).collect::<Vec<_>>();
    let missing_ips = missing(
        &canonical(&template.ip_addresses),
        &canonical(&current.ip_addresses),
    );
    if !missing_ips.is_empty() {
        return Err(Unsatisfied::MissingIpAddresses(missing_ips));
    }
    let missing_orgs = missing(&template.organizations, &current.organizations);
    if !missing_orgs.is_empty() {
        return Err(Unsatisfied::MissingOrganizations(missing_orgs));
    }
    Ok(())
}

/// Why a certificate is requested now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// There is no certificate.
    NoCertificate,
    /// The certificate has expired.
    Expired,
    /// The certificate no longer satisfies the template (never
    /// [`Unsatisfied::NoCertificate`]: that is [`Reason::NoCertificate`]).
    TemplateNotSatisfied(Unsatisfied),
    /// The rotation deadline has passed.
    DeadlinePassed {
        /// The deadline.
        deadline: SystemTime,
    },
}

/// The bootstrap credential the node holds (the kubelet's `--bootstrap-kubeconfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Bootstrap {
    /// None.
    Absent,
    /// One that does not expire as far as the node knows (a bootstrap token).
    Present,
    /// One that is valid until this instant (a bootstrap client certificate's `notAfter`).
    ValidUntil(SystemTime),
}

/// The credential a certificate request is made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    /// The current certificate: it is valid.
    Current,
    /// The bootstrap credential: there is no valid certificate (none, or it expired, perhaps
    /// while the node was down).
    Bootstrap,
    /// Neither: no valid certificate and no valid bootstrap credential. A request can only be
    /// refused; a new bootstrap credential is needed.
    Unavailable,
}

/// What to do next about a certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// Request a new certificate now, with `credential`.
    Rotate {
        /// Why.
        reason: Reason,
        /// With what.
        credential: Credential,
    },
    /// Nothing to do until `at` (the rotation deadline), unless the template changes.
    WaitUntil {
        /// When to decide again.
        at: SystemTime,
    },
    /// There is no template, so nothing is requested (client-go waits for one).
    NoTemplate,
}

/// client-go's rotation decision at `now` for the certificate in use (`current`, `None` if
/// there is none), the `template` (`None` if there is none yet) and the `bootstrap`
/// credential; `jitter` is the caller's uniform draw from `[0, 1)` for the deadline (draw
/// once per certificate, so that the deadline stays put). See the module docs.
#[must_use]
pub fn next_step(
    current: Option<&CurrentCertificate>,
    template: Option<&Template>,
    bootstrap: Bootstrap,
    now: SystemTime,
    jitter: f64,
) -> Step {
    let rotate = |reason| Step::Rotate {
        reason,
        credential: request_credential(current, bootstrap, now),
    };
    let deadline = current.map(|c| c.rotation_deadline(jitter));
    let Some(template) = template else {
        return match deadline {
            Some(at) if now < at => Step::WaitUntil { at },
            _ => Step::NoTemplate,
        };
    };
    let Some(cert) = current else {
        return rotate(Reason::NoCertificate);
    };
    if cert.is_expired(now) {
        return rotate(Reason::Expired);
    }
    if let Err(why) = satisfies_template(Some(cert), Some(template)) {
        return rotate(Reason::TemplateNotSatisfied(why));
    }
    let at = cert.rotation_deadline(jitter);
    if now >= at {
        rotate(Reason::DeadlinePassed { deadline: at })
    } else {
        Step::WaitUntil { at }
    }
}

/// The credential a request at `now` is made with, as the kubelet picks it: the current
/// certificate while it is valid (not after `notAfter`), else the bootstrap credential while
/// it is valid, else [`Credential::Unavailable`].
#[must_use]
pub fn request_credential(
    current: Option<&CurrentCertificate>,
    bootstrap: Bootstrap,
    now: SystemTime,
) -> Credential {
    if current.is_some_and(|c| !c.is_expired(now)) {
        return Credential::Current;
    }
    match bootstrap {
        Bootstrap::Present => Credential::Bootstrap,
        Bootstrap::ValidUntil(not_after) if now <= not_after => Credential::Bootstrap,
        _ => Credential::Unavailable,
    }
}

/// Whether a request still pending for `last_requested` should be abandoned because the
/// template changed (client-go's dynamic-template check): the current certificate does not
/// satisfy the new `template`, and the template differs from the one last requested (field by
/// field and in order, as Go's `reflect.DeepEqual`).
#[must_use]
pub fn abandon_pending_request(
    current: Option<&CurrentCertificate>,
    last_requested: Option<&Template>,
    template: Option<&Template>,
) -> bool {
    satisfies_template(current, template).is_err() && last_requested != template
}

/// client-go's rotation deadline for a certificate valid from `not_before` to `not_after`:
/// `not_before` plus 70 % of the lifetime plus `jitter` × 20 % of it, to the nanosecond
/// (rounded down). `jitter` is the caller's uniform draw from `[0, 1)`; values outside it are
/// clamped and NaN is 0. A certificate whose `notAfter` precedes its `notBefore` is never
/// valid: its deadline is `not_after`, the earlier of the two. (Go's `time.Duration` saturates at about 292 years; here the deadline stays
/// within 70 % to 90 % of any lifetime.)
#[must_use]
pub fn rotation_deadline(not_before: SystemTime, not_after: SystemTime, jitter: f64) -> SystemTime {
    let Ok(lifetime) = not_after.duration_since(not_before) else {
        return not_after;
    };
    let lifetime = lifetime.as_nanos();
    // 70 % exactly, then at most 20 % more for the jitter.
    let seventy = lifetime.saturating_mul(7) / 10;
    let twenty = lifetime.saturating_mul(2) / 10;
    let extra = scaled(lifetime, 0.2 * clamp_unit(jitter)).min(twenty);
    let offset = from_nanos(seventy.saturating_add(extra));
    not_before.checked_add(offset).unwrap_or(not_after)
}

/// How long to wait before the next attempt after `failed_attempts` consecutive failed
/// requests (client-go's backoff): 2 s, 4 s, 8 s, 16 s after the first four failures, each
/// plus `jitter` × 10 % ( `jitter` the caller's uniform draw from `[0, 1)`, clamped), then
/// 32 s after each further failure. Zero failures: no wait.
#[must_use]
pub fn retry_delay(failed_attempts: u32, jitter: f64) -> Duration {
    if failed_attempts == 0 {
        return Duration::ZERO;
    }
    if failed_attempts >= RETRY_STEPS {
        return RETRY_POLL_INTERVAL;
    }
    let base = RETRY_FACTOR
        .checked_pow(failed_attempts.saturating_sub(1))
        .and_then(|f| RETRY_INITIAL_DELAY.checked_mul(f))
        .unwrap_or(RETRY_POLL_INTERVAL);
    base.saturating_add(from_nanos(scaled(
        base.as_nanos(),
        RETRY_JITTER * clamp_unit(jitter),
    )))
}

const NANOS_PER_SEC: u128 = 1_000_000_000;

fn from_nanos(nanos: u128) -> Duration {
    let secs = u64::try_from(nanos / NANOS_PER_SEC).unwrap_or(u64::MAX);
    let sub = u32::try_from(nanos % NANOS_PER_SEC).unwrap_or(0);
    Duration::new(secs, sub)
}

fn clamp_unit(jitter: f64) -> f64 {
    if jitter.is_nan() {
        0.0
    } else {
        jitter.clamp(0.0, 1.0)
    }
}

/// `value × fraction`, rounded down (`fraction` in `[0, 1]`), as Go's
/// `time.Duration(fraction * float64(d))`.
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a fraction of a duration in float, as Go computes it; `as` saturates"
)]
fn scaled(value: u128, fraction: f64) -> u128 {
    (value as f64 * fraction) as u128
}

fn missing<T: Ord + Clone>(wanted: &[T], have: &[T]) -> Vec<T> {
    let have: BTreeSet<&T> = have.iter().collect();
    let missing: BTreeSet<&T> = wanted.iter().filter(|w| !have.contains(w)).collect();
    missing.into_iter().cloned().collect()
}
