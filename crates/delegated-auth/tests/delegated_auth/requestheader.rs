//! Front-proxy (requestheader) authentication: Kubernetes' table
//! (pkg/authentication/request/headerrequest/requestheader_test.go `TestRequestHeader`) as
//! data, the UID headers, the removal of the headers, and the client certificate checks.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::type_complexity,
    reason = "tests"
)]

use std::collections::BTreeMap;

use crate::support::{Ca, now};
use delegated_auth::{ClientCa, Error, FrontProxyAuthenticator, RequestHeaderConfig, UserInfo};

struct Case {
    name: &'static str,
    name_headers: &'static [&'static str],
    group_headers: &'static [&'static str],
    extra_prefixes: &'static [&'static str],
    /// Go's http.Header: each name with its values, in order.
    request: &'static [(&'static str, &'static [&'static str])],
    /// None: not authenticated; else name, groups, extra.
    want: Option<(
        &'static str,
        &'static [&'static str],
        &'static [(&'static str, &'static [&'static str])],
    )>,
}

const CASES: &[Case] = &[
    Case {
        name: "empty",
        name_headers: &[],
        group_headers: &[],
        extra_prefixes: &[],
        request: &[],
        want: None,
    },
    Case {
        name: "user no match",
        name_headers: &["X-Remote-User"],
        group_headers: &[],
        extra_prefixes: &[],
        request: &[],
        want: None,
    },
    Case {
        name: "user match",
        name_headers: &["X-Remote-User"],
        group_headers: &[],
        extra_prefixes: &[],
        request: &[("X-Remote-User", &["Bob"])],
        want: Some(("Bob", &[], &[])),
    },
    Case {
        name: "user exact match",
        name_headers: &["X-Remote-User"],
        group_headers: &[],
        extra_prefixes: &[],
        request: &[
            ("Prefixed-X-Remote-User-With-Suffix", &["Bob"]),
            ("X-Remote-User-With-Suffix", &["Bob"]),
        ],
        want: None,
    },
    Case {
        name: "user first match",
        name_headers: &[
            "X-Remote-User",
            "A-Second-X-Remote-User",
            "Another-X-Remote-User",
        ],
        group_headers: &[],
        extra_prefixes: &[],
        request: &[
            ("X-Remote-User", &["", "First header, second value"]),
            (
                "A-Second-X-Remote-User",
                &["Second header, first value", "Second header, second value"],
            ),
            ("Another-X-Remote-User", &["Third header, first value"]),
        ],
        want: Some(("Second header, first value", &[], &[])),
    },
    Case {
        name: "user case-insensitive",
        name_headers: &["x-REMOTE-user"],
        group_headers: &[],
        extra_prefixes: &[],
        request: &[("X-Remote-User", &["Bob"])],
        want: Some(("Bob", &[], &[])),
    },
    Case {
        name: "groups none",
        name_headers: &["X-Remote-User"],
        group_headers: &["X-Remote-Group"],
        extra_prefixes: &[],
        request: &[("X-Remote-User", &["Bob"])],
        want: Some(("Bob", &[], &[])),
    },
    Case {
        name: "groups all matches",
        name_headers: &["X-Remote-User"],
        group_headers: &["X-Remote-Group-1", "X-Remote-Group-2"],
        extra_prefixes: &[],
        request: &[
            ("X-Remote-User", &["Bob"]),
            ("X-Remote-Group-1", &["one-a", "one-b"]),
            ("X-Remote-Group-2", &["two-a", "two-b"]),
        ],
        want: Some(("Bob", &["one-a", "one-b", "two-a", "two-b"], &[])),
    },
    Case {
        name: "groups case-insensitive",
        name_headers: &["X-REMOTE-User"],
        group_headers: &["X-REMOTE-Group"],
        extra_prefixes: &[],
        request: &[("X-Remote-User", &["Bob"]), ("X-Remote-Group", &["Users"])],
        want: Some(("Bob", &["Users"], &[])),
    },
    Case {
        name: "extra prefix matches case-insensitive",
        name_headers: &["X-Remote-User"],
        group_headers: &["X-Remote-Group-1", "X-Remote-Group-2"],
        extra_prefixes: &["X-Remote-Extra-1-", "X-Remote-Extra-2-"],
        request: &[
            ("X-Remote-User", &["Bob"]),
            ("X-Remote-Group-1", &["one-a", "one-b"]),
            ("X-Remote-Group-2", &["two-a", "two-b"]),
            ("X-Remote-extra-1-key1", &["alfa", "bravo"]),
            ("X-Remote-Extra-1-Key2", &["charlie", "delta"]),
            ("X-Remote-Extra-1-", &["india", "juliet"]),
            ("X-Remote-extra-2-", &["kilo", "lima"]),
            ("X-Remote-extra-2-Key1", &["echo", "foxtrot"]),
            ("X-Remote-Extra-2-key2", &["golf", "hotel"]),
        ],
        want: Some((
            "Bob",
            &["one-a", "one-b", "two-a", "two-b"],
            &[
                ("key1", &["alfa", "bravo", "echo", "foxtrot"]),
                ("key2", &["charlie", "delta", "golf", "hotel"]),
                ("", &["india", "juliet", "kilo", "lima"]),
            ],
        )),
    },
    Case {
        name: "escaped extra keys",
        name_headers: &["X-Remote-User"],
        group_headers: &["X-Remote-Group"],
        extra_prefixes: &["X-Remote-Extra-"],
        request: &[
            ("X-Remote-User", &["Bob"]),
            ("X-Remote-Group", &["one-a", "one-b"]),
            ("X-Remote-Extra-Alpha", &["alphabetical"]),
            ("X-Remote-Extra-Alph4num3r1c", &["alphanumeric"]),
            ("X-Remote-Extra-Percent%20encoded", &["percent encoded"]),
            (
                "X-Remote-Extra-Almost%zzpercent%xxencoded",
                &["not quite percent encoded"],
            ),
            (
                "X-Remote-Extra-Example.com%2fpercent%2520encoded",
                &["url with double percent encoding"],
            ),
            (
                "X-Remote-Extra-Example.com%2F%E4%BB%8A%E6%97%A5%E3%81%AF",
                &["url with unicode"],
            ),
            (
                "X-Remote-Extra-Abc123!#$+.-_*\\^`~|'",
                &["header key legal characters"],
            ),
        ],
        want: Some((
            "Bob",
            &["one-a", "one-b"],
            &[
                ("alpha", &["alphabetical"]),
                ("alph4num3r1c", &["alphanumeric"]),
                ("percent encoded", &["percent encoded"]),
                ("almost%zzpercent%xxencoded", &["not quite percent encoded"]),
                (
                    "example.com/percent%20encoded",
                    &["url with double percent encoding"],
                ),
                (
                    "example.com/\u{4eca}\u{65e5}\u{306f}",
                    &["url with unicode"],
                ),
                ("abc123!#$+.-_*\\^`~|'", &["header key legal characters"]),
            ],
        )),
    },
];

fn pairs(request: &[(&'static str, &'static [&'static str])]) -> Vec<(&'static str, &'static str)> {
    request
        .iter()
        .flat_map(|(n, vs)| vs.iter().map(move |v| (*n, *v)))
        .collect()
}

#[test]
fn kubernetes_request_header_table() {
    for case in CASES {
        let config =
            RequestHeaderConfig::new(case.name_headers, case.group_headers, case.extra_prefixes)
                .unwrap();
        let got = config.user_from_headers(&pairs(case.request)).unwrap();
        let want = case.want.map(|(name, groups, extra)| {
            let mut u = UserInfo::new(name).with_groups(groups.iter().copied());
            u.extra = extra
                .iter()
                .map(|(k, vs)| {
                    (
                        (*k).to_owned(),
                        vs.iter().map(|v| (*v).to_owned()).collect(),
                    )
                })
                .collect::<BTreeMap<_, _>>();
            u
        });
        assert_eq!(got, want, "{}", case.name);
    }
}

#[test]
fn uid_headers() {
    let config = RequestHeaderConfig::kube_apiserver_defaults();
    let user = config
        .user_from_headers(&[
            ("x-remote-uid", ""),
            ("X-Remote-User", "bob"),
            ("X-Remote-Uid", "later"),
        ])
        .unwrap()
        .unwrap();
    // The first value of the header is empty: no UID (Go's Header.Get).
    assert_eq!(user.uid, None);
    let user = config
        .user_from_headers(&[("X-Remote-Uid", "u-1"), ("X-Remote-User", "bob")])
        .unwrap()
        .unwrap();
    assert_eq!(user.uid.as_deref(), Some("u-1"));
    // A UID without a user is no user.
    assert_eq!(
        config
            .user_from_headers(&[("X-Remote-Uid", "u-1")])
            .unwrap(),
        None
    );
}

#[test]
fn configuration_is_checked() {
    assert!(RequestHeaderConfig::new(&[" X-Remote-User "], &[], &[]).is_ok());
    for bad in ["", "  ", "X Remote", "X-Remote:", "X-Rémote"] {
        assert!(
            RequestHeaderConfig::new(&[bad], &[], &[]).is_err(),
            "{bad:?}"
        );
    }
    let many = vec!["X-A"; 33];
    assert!(RequestHeaderConfig::new(&many, &[], &[]).is_err());
}

#[test]
fn identity_headers_are_removed_from_any_request() {
    let config = RequestHeaderConfig::kube_apiserver_defaults();
    let mut headers = vec![
        ("Host", "addon"),
        ("x-remote-user", "admin"),
        ("X-REMOTE-GROUP", "system:masters"),
        ("X-Remote-Extra-Scopes", "all"),
        ("x-remote-extra-", "x"),
        ("X-Remote-Uid", "0"),
        ("X-Remote-User-Agent", "kept: not an identity header"),
        ("Authorization", "Bearer t"),
    ];
    config.remove_identity_headers(&mut headers);
    assert_eq!(
        headers,
        [
            ("Host", "addon"),
            ("X-Remote-User-Agent", "kept: not an identity header"),
            ("Authorization", "Bearer t")
        ]
    );
}

#[test]
fn values_that_are_not_utf8_are_refused() {
    let config = RequestHeaderConfig::kube_apiserver_defaults();
    let headers: Vec<(&[u8], &[u8])> = vec![(b"X-Remote-User", b"b\xffb")];
    assert!(matches!(
        config.user_from_headers(&headers),
        Err(Error::Invalid { .. })
    ));
}

fn front_proxy(ca: &Ca, allowed: &[&str]) -> FrontProxyAuthenticator {
    FrontProxyAuthenticator::new(
        ClientCa::from_pem(ca.pem().as_bytes()).unwrap(),
        allowed.iter().map(|a| (*a).to_owned()).collect(),
        RequestHeaderConfig::kube_apiserver_defaults(),
    )
}

const HEADERS: &[(&str, &str)] = &[("X-Remote-User", "alice"), ("X-Remote-Group", "devs")];

#[test]
fn front_proxy_certificate_from_the_requestheader_ca_and_an_allowed_name() {
    let ca = Ca::new("front-proxy-ca");
    let auth = front_proxy(&ca, &["front-proxy-client"]);
    let cert = ca.issue("front-proxy-client", &[]);
    let user = auth
        .authenticate(&[&cert], HEADERS, now())
        .unwrap()
        .unwrap();
    assert_eq!(
        (user.name.as_str(), user.groups.as_slice()),
        ("alice", &["devs".to_owned()][..])
    );
    // The certificate, without headers naming a user: no user.
    assert_eq!(
        auth.authenticate(&[&cert], &[("Host", "x")], now())
            .unwrap(),
        None
    );
}

#[test]
fn x_remote_headers_without_the_front_proxy_certificate_are_not_believed() {
    let ca = Ca::new("front-proxy-ca");
    let other = Ca::new("cluster-ca");
    let auth = front_proxy(&ca, &["front-proxy-client"]);
    // No client certificate at all.
    assert_eq!(
        auth.authenticate::<&[u8], _, _>(&[], HEADERS, now())
            .unwrap(),
        None
    );
    // A certificate from another CA (the cluster's client CA), even with the allowed name.
    let err = auth
        .authenticate(&[other.issue("front-proxy-client", &[])], HEADERS, now())
        .unwrap_err();
    assert!(matches!(err, Error::Certificate(_)), "{err}");
    // The requestheader CA, but a name not allowed.
    let err = auth
        .authenticate(&[ca.issue("someone-else", &[])], HEADERS, now())
        .unwrap_err();
    assert!(matches!(err, Error::NotAllowedName), "{err}");
    let err = auth
        .authenticate(&[ca.issue("", &[])], HEADERS, now())
        .unwrap_err();
    assert!(matches!(err, Error::NotAllowedName), "{err}");
}

#[test]
fn no_allowed_names_means_any_name_the_requestheader_ca_signed() {
    let ca = Ca::new("front-proxy-ca");
    let auth = front_proxy(&ca, &[]);
    for cn in ["anything", ""] {
        let user = auth
            .authenticate(&[ca.issue(cn, &[])], HEADERS, now())
            .unwrap();
        assert_eq!(user.unwrap().name, "alice", "{cn:?}");
    }
    let other = Ca::new("other");
    assert!(
        auth.authenticate(&[other.issue("anything", &[])], HEADERS, now())
            .is_err()
    );
}

proptest::proptest! {
    #[test]
    fn reading_never_panics_and_removal_leaves_no_user(
        headers in proptest::collection::vec(
            ("(?i)(x-remote-(user|uid|group|extra-[a-z%0-9]{0,6})|host|x-other)", proptest::collection::vec(proptest::num::u8::ANY, 0..12)),
            0..12,
        )
    ) {
        let config = RequestHeaderConfig::kube_apiserver_defaults();
        let _ = config.user_from_headers(&headers);
        let mut kept = headers.clone();
        config.remove_identity_headers(&mut kept);
        proptest::prop_assert_eq!(config.user_from_headers(&kept).unwrap(), None);
        proptest::prop_assert!(kept.iter().all(|(n, _)| !config.is_identity_header(n.as_bytes())));
    }
}
