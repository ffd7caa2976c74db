//! The rotation decision against client-go's certificate manager tests
//! (`k8s.io/client-go/util/certificate/certificate_manager_test.go`), their cases as data.

use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use tls_bootstrap::rotation::{
    Bootstrap, Credential, CurrentCertificate, RETRY_POLL_INTERVAL, Reason, Step, Template,
    Unsatisfied, abandon_pending_request, next_step, request_credential, retry_delay,
    rotation_deadline, satisfies_template,
};

const HOUR: Duration = Duration::from_secs(3600);

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// `TestSetRotationDeadline`: (Go case name, notBefore and notAfter relative to now in
/// seconds). Go replaces the jitter with the lower bound and checks the deadline is
/// notBefore + 70 % of the lifetime; here jitter 0 is that lower bound. Go's `shouldRotate`
/// column is not checked by the Go test (and disagrees with the 70 % deadline for "long
/// duration" and "short duration"); here whether the deadline has passed at `now` is
/// computed from the deadline itself.
const DEADLINE_CASES: &[(&str, i64, i64)] = &[
    ("just issued, still good", -3600, 99 * 3600),
    ("half way expired, still good", -24 * 3600, 24 * 3600),
    ("mostly expired, still good", -69 * 3600, 31 * 3600),
    ("just about expired, should rotate", -91 * 3600, 9 * 3600),
    ("nearly expired, should rotate", -99 * 3600, 3600),
    ("already expired, should rotate", -10 * 3600, -3600),
    ("long duration", -6 * 30 * 24 * 3600, 6 * 30 * 24 * 3600),
    ("short duration", -30, 30),
];

fn at(offset_secs: i64) -> SystemTime {
    if offset_secs >= 0 {
        now() + Duration::from_secs(offset_secs.unsigned_abs())
    } else {
        now() - Duration::from_secs(offset_secs.unsigned_abs())
    }
}

#[test]
fn set_rotation_deadline_cases() {
    for &(name, nb, na) in DEADLINE_CASES {
        let (nb, na) = (at(nb), at(na));
        let lifetime = na.duration_since(nb).unwrap();
        let lower = nb + lifetime.mul_f64(0.7);
        let deadline = rotation_deadline(nb, na, 0.0);
        let diff = deadline
            .duration_since(lower)
            .unwrap_or_else(|e| e.duration());
        assert!(diff <= Duration::from_nanos(1), "{name}: {deadline:?}");
        let cert = CurrentCertificate::new(nb, na);
        let step = next_step(
            Some(&cert),
            Some(&Template::default()),
            Bootstrap::Absent,
            now(),
            0.0,
        );
        let expected = if now() > na {
            Step::Rotate {
                reason: Reason::Expired,
                credential: Credential::Unavailable,
            }
        } else if now() >= deadline {
            Step::Rotate {
                reason: Reason::DeadlinePassed { deadline },
                credential: Credential::Current,
            }
        } else {
            Step::WaitUntil { at: deadline }
        };
        assert_eq!(step, expected, "{name}");
    }
    // The rows whose fate the numbers settle: 70 % of the lifetime has passed in these and
    // not in those.
    let rotates = |nb: i64, na: i64| now() >= rotation_deadline(at(nb), at(na), 0.0);
    assert!(!rotates(-3600, 99 * 3600));
    assert!(!rotates(-24 * 3600, 24 * 3600));
    assert!(!rotates(-69 * 3600, 31 * 3600));
    assert!(rotates(-91 * 3600, 9 * 3600));
    assert!(rotates(-99 * 3600, 3600));
    assert!(!rotates(-6 * 30 * 24 * 3600, 6 * 30 * 24 * 3600));
    assert!(!rotates(-30, 30));
}

struct SatisfiesCase {
    go_name: &'static str,
    cert: Option<CurrentCertificate>,
    template: Option<Template>,
    satisfies: bool,
}

fn cert() -> CurrentCertificate {
    CurrentCertificate::new(now() - HOUR, now() + 99 * HOUR)
}

fn satisfies_cases() -> Vec<SatisfiesCase> {
    let none: &[&str] = &[];
    vec![
        SatisfiesCase {
            go_name: "No certificate, no template",
            cert: None,
            template: None,
            satisfies: false,
        },
        SatisfiesCase {
            go_name: "No certificate",
            cert: None,
            template: Some(Template::default()),
            satisfies: false,
        },
        SatisfiesCase {
            go_name: "No template",
            cert: Some(cert().with_subject("system:node:fake-node-name", none)),
            template: None,
            satisfies: true,
        },
        SatisfiesCase {
            go_name: "Mismatched common name",
            cert: Some(cert().with_subject("system:node:fake-node-name-2", none)),
            template: Some(Template::new("system:node:fake-node-name")),
            satisfies: false,
        },
        SatisfiesCase {
            go_name: "Missing orgs in certificate",
            cert: Some(cert().with_subject("", &["system:nodes"])),
            template: Some(Template::new("").with_organizations(&["system:nodes", "foobar"])),
            satisfies: false,
        },
        SatisfiesCase {
            go_name: "Extra orgs in certificate",
            cert: Some(cert().with_subject("", &["system:nodes", "foobar"])),
            template: Some(Template::new("").with_organizations(&["system:nodes"])),
            satisfies: true,
        },
        SatisfiesCase {
            go_name: "Missing DNS names in certificate",
            cert: Some(cert().with_dns_names(&["foo.example.com"])),
            template: Some(
                Template::new("").with_dns_names(&["foo.example.com", "bar.example.com"]),
            ),
            satisfies: false,
        },
        SatisfiesCase {
            go_name: "Extra DNS names in certificate",
            cert: Some(cert().with_dns_names(&["foo.example.com", "bar.example.com"])),
            template: Some(Template::new("").with_dns_names(&["foo.example.com"])),
            satisfies: true,
        },
        SatisfiesCase {
            go_name: "Missing IP addresses in certificate",
            cert: Some(cert().with_ip_addresses(&[ip("192.168.1.1")])),
            template: Some(
                Template::new("").with_ip_addresses(&[ip("192.168.1.1"), ip("192.168.1.2")]),
            ),
            satisfies: false,
        },
        SatisfiesCase {
            go_name: "Extra IP addresses in certificate",
            cert: Some(cert().with_ip_addresses(&[ip("192.168.1.1"), ip("192.168.1.2")])),
            template: Some(Template::new("").with_ip_addresses(&[ip("192.168.1.1")])),
            satisfies: true,
        },
        SatisfiesCase {
            go_name: "Matching certificate",
            cert: Some(
                cert()
                    .with_subject("system:node:fake-node-name", &["system:nodes"])
                    .with_dns_names(&["foo.example.com"])
                    .with_ip_addresses(&[ip("192.168.1.1")]),
            ),
            template: Some(
                Template::new("system:node:fake-node-name")
                    .with_organizations(&["system:nodes"])
                    .with_dns_names(&["foo.example.com"])
                    .with_ip_addresses(&[ip("192.168.1.1")]),
            ),
            satisfies: true,
        },
    ]
}

#[test]
fn cert_satisfies_template_cases() {
    for case in satisfies_cases() {
        let got = satisfies_template(case.cert.as_ref(), case.template.as_ref());
        assert_eq!(got.is_ok(), case.satisfies, "{}: {got:?}", case.go_name);
    }
}

#[test]
fn unsatisfied_says_what_is_missing_in_client_go_order() {
    let c = cert()
        .with_subject("system:node:a", &["system:nodes"])
        .with_dns_names(&["a"]);
    let t = Template::new("system:node:a")
        .with_organizations(&["x", "system:nodes"])
        .with_dns_names(&["c", "a", "b"])
        .with_ip_addresses(&[ip("10.0.0.1")]);
    // DNS names are checked before IPs and organizations; the missing ones come sorted.
    assert_eq!(
        satisfies_template(Some(&c), Some(&t)),
        Err(Unsatisfied::MissingDnsNames(vec!["b".into(), "c".into()]))
    );
    let c = c.with_dns_names(&["a", "b", "c"]);
    assert_eq!(
        satisfies_template(Some(&c), Some(&t)),
        Err(Unsatisfied::MissingIpAddresses(vec![ip("10.0.0.1")]))
    );
    // Go compares `net.IP.String()`: an IPv4-mapped IPv6 address is its IPv4 address.
    let c = c.with_ip_addresses(&[ip("::ffff:10.0.0.1")]);
    assert_eq!(
        satisfies_template(Some(&c), Some(&t)),
        Err(Unsatisfied::MissingOrganizations(vec!["x".into()]))
    );
    let t = Template::new("system:node:b");
    assert_eq!(
        satisfies_template(Some(&c), Some(&t)),
        Err(Unsatisfied::CommonName {
            current: "system:node:a".into(),
            wanted: "system:node:b".into()
        })
    );
}

/// `TestGetCurrentCertificateOrBootstrap`, `TestNewManagerBootstrap`,
/// `TestNewManagerNoBootstrap` and `TestInitializeCertificateSigningRequestClient`: whether
/// the manager requests at once, and with which credential. (Go case name, certificate
/// validity relative to now in hours or none, bootstrap, expected step).
#[test]
fn bootstrap_and_should_rotate_cases() {
    let template =
        Template::new("system:node:fake-node-name").with_organizations(&["system:nodes"]);
    let stored = |nb: i64, na: i64| {
        CurrentCertificate::new(at(nb * 3600), at(na * 3600))
            .with_subject("system:node:fake-node-name", &["system:nodes"])
    };
    let valid = stored(-24, 24);
    let expired = stored(-48, -24);
    let rotate = |reason, credential| Step::Rotate { reason, credential };
    let wait = Step::WaitUntil {
        at: valid.rotation_deadline(0.5),
    };
    let cases: Vec<(&str, Option<&CurrentCertificate>, Bootstrap, Step)> = vec![
        (
            "return cert from store",
            Some(&valid),
            Bootstrap::Absent,
            wait.clone(),
        ),
        (
            "no cert in store and no bootstrap cert",
            None,
            Bootstrap::Absent,
            rotate(Reason::NoCertificate, Credential::Unavailable),
        ),
        (
            "TestNewManagerBootstrap",
            None,
            Bootstrap::Present,
            rotate(Reason::NoCertificate, Credential::Bootstrap),
        ),
        (
            "TestNewManagerNoBootstrap",
            Some(&valid),
            Bootstrap::Present,
            wait.clone(),
        ),
        (
            "No current certificate, bootstrap certificate",
            None,
            Bootstrap::ValidUntil(now() + HOUR),
            rotate(Reason::NoCertificate, Credential::Bootstrap),
        ),
        (
            "Current certificate, no bootstrap certificate",
            Some(&valid),
            Bootstrap::Absent,
            wait.clone(),
        ),
        (
            "Current certificate, bootstrap certificate",
            Some(&valid),
            Bootstrap::Present,
            wait,
        ),
        (
            "Current certificate expired, no bootstrap certificate",
            Some(&expired),
            Bootstrap::Absent,
            rotate(Reason::Expired, Credential::Unavailable),
        ),
        (
            "current certificate expired while the node was down, bootstrap still valid",
            Some(&expired),
            Bootstrap::ValidUntil(now()),
            rotate(Reason::Expired, Credential::Bootstrap),
        ),
        (
            "current certificate expired, bootstrap expired too",
            Some(&expired),
            Bootstrap::ValidUntil(now() - Duration::from_secs(1)),
            rotate(Reason::Expired, Credential::Unavailable),
        ),
    ];
    for (name, current, bootstrap, expected) in cases {
        assert_eq!(
            next_step(current, Some(&template), bootstrap, now(), 0.5),
            expected,
            "{name}"
        );
    }
}

#[test]
fn a_changed_template_rotates_now_with_the_current_certificate() {
    let c = cert()
        .with_subject("system:node:n", &["system:nodes"])
        .with_ip_addresses(&[ip("10.0.0.1")]);
    let t = Template::new("system:node:n")
        .with_organizations(&["system:nodes"])
        .with_ip_addresses(&[ip("10.0.0.2")]);
    assert_eq!(
        next_step(Some(&c), Some(&t), Bootstrap::Absent, now(), 0.0),
        Step::Rotate {
            reason: Reason::TemplateNotSatisfied(Unsatisfied::MissingIpAddresses(vec![ip(
                "10.0.0.2"
            )])),
            credential: Credential::Current,
        }
    );
    // A pending request for the old template is abandoned; one for the new template is not.
    let old = Template::new("system:node:n")
        .with_organizations(&["system:nodes"])
        .with_ip_addresses(&[ip("10.0.0.1")]);
    assert!(abandon_pending_request(Some(&c), Some(&old), Some(&t)));
    assert!(!abandon_pending_request(Some(&c), Some(&t), Some(&t)));
    // A certificate that satisfies the template: nothing to abandon.
    assert!(!abandon_pending_request(Some(&c), Some(&t), Some(&old)));
}

#[test]
fn without_a_template_nothing_is_requested() {
    let c = cert();
    assert_eq!(
        next_step(Some(&c), None, Bootstrap::Present, now(), 0.0),
        Step::WaitUntil {
            at: c.rotation_deadline(0.0)
        }
    );
    assert_eq!(
        next_step(Some(&c), None, Bootstrap::Present, now() + 98 * HOUR, 0.0),
        Step::NoTemplate
    );
    assert_eq!(
        next_step(None, None, Bootstrap::Present, now(), 0.0),
        Step::NoTemplate
    );
}

#[test]
fn the_credential_is_the_current_certificate_until_its_not_after() {
    let c = CurrentCertificate::new(now() - HOUR, now());
    assert_eq!(
        request_credential(Some(&c), Bootstrap::Present, now()),
        Credential::Current
    );
    assert_eq!(
        request_credential(
            Some(&c),
            Bootstrap::Present,
            now() + Duration::from_nanos(1)
        ),
        Credential::Bootstrap
    );
}

/// client-go's backoff (`wait.Backoff{Duration: 2s, Factor: 2, Jitter: 0.1, Steps: 5}`,
/// then `wait.PollInfinite(32s)`): (failures so far, jitter, delay).
const BACKOFF_CASES: &[(u32, f64, Duration)] = &[
    (0, 0.5, Duration::ZERO),
    (1, 0.0, Duration::from_secs(2)),
    (1, 0.5, Duration::from_millis(2100)),
    (1, 1.0, Duration::from_millis(2200)),
    (2, 0.0, Duration::from_secs(4)),
    (3, 0.0, Duration::from_secs(8)),
    (4, 0.0, Duration::from_secs(16)),
    (4, 0.25, Duration::from_millis(16_400)),
    (4, f64::NAN, Duration::from_secs(16)),
    (4, -1.0, Duration::from_secs(16)),
    (5, 0.9, Duration::from_secs(32)),
    (6, 0.0, Duration::from_secs(32)),
    (u32::MAX, 0.5, Duration::from_secs(32)),
];

#[test]
fn backoff_cases() {
    for &(failures, jitter, expected) in BACKOFF_CASES {
        assert_eq!(
            retry_delay(failures, jitter),
            expected,
            "{failures} failures, jitter {jitter}"
        );
    }
    assert_eq!(RETRY_POLL_INTERVAL, Duration::from_secs(32));
}

fn nanos(n: u128) -> Duration {
    Duration::new(
        u64::try_from(n / 1_000_000_000).unwrap(),
        u32::try_from(n % 1_000_000_000).unwrap(),
    )
}

fn any_time() -> impl Strategy<Value = SystemTime> {
    (0u64..=u64::from(u32::MAX) * 64, 0u32..1_000_000_000)
        .prop_map(|(s, n)| UNIX_EPOCH + Duration::new(s, n))
}

proptest! {
    #[test]
    fn deadline_is_70_to_90_percent_of_the_lifetime(
        nb in any_time(), na in any_time(), jitter in any::<f64>(),
    ) {
        let deadline = rotation_deadline(nb, na, jitter);
        match na.duration_since(nb) {
            Ok(lifetime) => {
                let ns = lifetime.as_nanos();
                let lo = nb + nanos(ns * 7 / 10);
                let hi = nb + nanos(ns * 9 / 10);
                prop_assert!(lo <= deadline && deadline <= hi);
            }
            Err(_) => prop_assert_eq!(deadline, na),
        }
    }

    #[test]
    fn the_decision_never_panics(
        nb in any_time(), na in any_time(), now in any_time(), jitter in any::<f64>(),
        bootstrap_until in any_time(), failures in any::<u32>(),
    ) {
        let c = CurrentCertificate::new(nb, na);
        let t = Template::default();
        let step = next_step(Some(&c), Some(&t), Bootstrap::ValidUntil(bootstrap_until), now, jitter);
        if let Step::WaitUntil { at } = step {
            prop_assert!(now < at && at <= na);
        }
        let delay = retry_delay(failures, jitter);
        prop_assert!(delay <= Duration::from_secs(32));
    }
}

#[test]
fn the_current_certificate_is_read_from_der_as_go_reads_it() {
    let mut params = rcgen::CertificateParams::new(vec!["worker-1".to_owned()]).unwrap();
    params
        .subject_alt_names
        .push(rcgen::SanType::IpAddress(ip("10.0.0.5")));
    params.subject_alt_names.push(rcgen::SanType::Rfc822Name(
        "a@example.com".try_into().unwrap(),
    ));
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:nodes");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "system:node:worker-1");
    params.not_before = rcgen::date_time_ymd(2030, 1, 2);
    params.not_after = rcgen::date_time_ymd(2031, 1, 2);
    let key = rcgen::KeyPair::generate().unwrap();
    let der = params.self_signed(&key).unwrap().der().to_vec();
    let c = CurrentCertificate::from_der(&der).unwrap();
    assert_eq!(c.common_name(), "system:node:worker-1");
    assert_eq!(c.organizations(), ["system:nodes"]);
    assert_eq!(c.dns_names(), ["worker-1"]);
    assert_eq!(c.ip_addresses(), [ip("10.0.0.5")]);
    assert_eq!(
        tls_bootstrap::rfc3339(c.not_before()),
        "2030-01-02T00:00:00Z"
    );
    assert_eq!(
        tls_bootstrap::rfc3339(c.not_after()),
        "2031-01-02T00:00:00Z"
    );
    let t = Template::new("system:node:worker-1")
        .with_organizations(&["system:nodes"])
        .with_dns_names(&["worker-1"])
        .with_ip_addresses(&[ip("10.0.0.5")]);
    assert_eq!(satisfies_template(Some(&c), Some(&t)), Ok(()));
    assert!(CurrentCertificate::from_der(b"not a certificate").is_err());
    assert!(CurrentCertificate::from_der(&der[..der.len() - 1]).is_err());
}
