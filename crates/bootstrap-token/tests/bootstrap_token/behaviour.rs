//! The authenticator, the cleaner, the signer's key selection and the Secret model against the
//! rules of `kubernetes-reference.md` §1–§4.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::{CANARY, TOKEN, data, now, secret_with, without};
use bootstrap_token::{
    AuthOutcome, BootstrapToken, BootstrapTokenSecret, CleanerAction, Error, ExpirationStatus,
    ExtraGroup, RejectReason, SecretObject, TokenId, Usage, authenticate, cleaner_action,
    cleanup_plan,
};

fn auth_at(secret: &SecretObject, token: &str, at: std::time::SystemTime) -> AuthOutcome {
    authenticate(token, at, |_| Ok::<_, ()>(Some(secret))).unwrap()
}

fn reason(out: &AuthOutcome) -> Option<RejectReason> {
    match out {
        AuthOutcome::Rejected { reason, .. } => Some(*reason),
        _ => None,
    }
}

#[test]
fn authenticated_user_and_groups() {
    let s = secret_with(&[(
        "auth-extra-groups",
        "system:bootstrappers:z,system:bootstrappers:a,system:bootstrappers:z",
    )]);
    let out = auth_at(&s, TOKEN, now());
    let user = out.authenticated().unwrap();
    assert_eq!(user.user_name(), "system:bootstrap:abcdef");
    assert_eq!(user.token_id().as_str(), "abcdef");
    assert_eq!(
        user.groups(),
        [
            "system:bootstrappers",
            "system:bootstrappers:a",
            "system:bootstrappers:z"
        ]
    );
}

#[test]
fn lookup_receives_the_parsed_id_and_errors_propagate() {
    let mut asked = None;
    let out = authenticate(TOKEN, now(), |id: &TokenId| {
        asked = Some(id.secret_name());
        Ok::<Option<&SecretObject>, ()>(None)
    })
    .unwrap();
    assert_eq!(asked.as_deref(), Some("bootstrap-token-abcdef"));
    assert_eq!(reason(&out), Some(RejectReason::NotFound));
    // A lister error that is not NotFound is returned as an error.
    let err = authenticate(TOKEN, now(), |_| {
        Err::<Option<&SecretObject>, _>("lister down")
    });
    assert_eq!(err.unwrap_err(), "lister down");
    // Owned values work as well as references.
    let out = authenticate(TOKEN, now(), |_| Ok::<_, ()>(Some(secret_with(&[])))).unwrap();
    assert!(out.authenticated().is_some());
}

#[test]
fn order_of_checks_matches_the_api_server() {
    // Every check failing at once: the first in the API server's order wins.
    let mut s = secret_with(&[
        ("token-id", "zzzzzz"),
        ("expiration", "garbage"),
        ("usage-bootstrap-authentication", "false"),
        ("auth-extra-groups", "system:masters"),
    ]);
    let wrong_secret = "abcdef.zzzzzzzzzzzzzzzz";
    let deleting = s.clone().with_deletion_timestamp("2024-01-01T00:00:00Z");
    assert_eq!(
        reason(&auth_at(&deleting, wrong_secret, now())),
        Some(RejectReason::DeletionPending)
    );
    let opaque = SecretObject::new(s.name(), s.namespace(), "Opaque", s.data_map().cloned());
    assert_eq!(
        reason(&auth_at(&opaque, wrong_secret, now())),
        Some(RejectReason::InvalidType)
    );
    assert_eq!(
        reason(&auth_at(&s, wrong_secret, now())),
        Some(RejectReason::SecretMismatch)
    );
    // Secret compared before the ID (edge case 2.3).
    assert_eq!(
        reason(&auth_at(&s, TOKEN, now())),
        Some(RejectReason::TokenIdMismatch)
    );
    s = secret_with(&[
        ("expiration", "garbage"),
        ("usage-bootstrap-authentication", "false"),
        ("auth-extra-groups", "system:masters"),
    ]);
    assert_eq!(
        reason(&auth_at(&s, TOKEN, now())),
        Some(RejectReason::UnparseableExpiration)
    );
    s = secret_with(&[
        ("usage-bootstrap-authentication", "false"),
        ("auth-extra-groups", "system:masters"),
    ]);
    assert_eq!(
        reason(&auth_at(&s, TOKEN, now())),
        Some(RejectReason::NotForAuthentication)
    );
    s = secret_with(&[("auth-extra-groups", "system:masters")]);
    assert_eq!(
        reason(&auth_at(&s, TOKEN, now())),
        Some(RejectReason::InvalidExtraGroups)
    );
}

#[test]
fn expired_at_exactly_the_instant() {
    let s = secret_with(&[("expiration", "2024-01-02T03:04:05Z")]);
    let one = Duration::from_secs(1);
    assert!(auth_at(&s, TOKEN, now() - one).authenticated().is_some());
    assert!(
        auth_at(&s, TOKEN, now() - Duration::from_nanos(1))
            .authenticated()
            .is_some()
    );
    assert_eq!(
        reason(&auth_at(&s, TOKEN, now())),
        Some(RejectReason::Expired)
    );
    assert_eq!(
        reason(&auth_at(&s, TOKEN, now() + one)),
        Some(RejectReason::Expired)
    );
    // Offsets and fractions are honoured.
    let s = secret_with(&[("expiration", "2024-01-02T04:04:05.5+01:00")]);
    assert!(auth_at(&s, TOKEN, now()).authenticated().is_some());
    assert_eq!(
        s.expiration(now()).time_remaining(),
        Duration::from_millis(500)
    );
}

#[test]
fn data_nil_fails_the_type_check() {
    let s = SecretObject::new(
        "bootstrap-token-abcdef",
        "kube-system",
        "bootstrap.kubernetes.io/token",
        None,
    );
    assert_eq!(
        reason(&auth_at(&s, TOKEN, now())),
        Some(RejectReason::InvalidType)
    );
    // An empty (non-nil) map passes the type check and fails on the secret.
    let s = SecretObject::new(
        "bootstrap-token-abcdef",
        "kube-system",
        "bootstrap.kubernetes.io/token",
        Some(BTreeMap::new()),
    );
    assert_eq!(
        reason(&auth_at(&s, TOKEN, now())),
        Some(RejectReason::SecretMismatch)
    );
}

#[test]
fn the_default_group_alone_as_extra_group_fails() {
    let s = secret_with(&[("auth-extra-groups", "system:bootstrappers")]);
    assert_eq!(
        reason(&auth_at(&s, TOKEN, now())),
        Some(RejectReason::InvalidExtraGroups)
    );
}

#[test]
fn signing_key_rules() {
    let s = secret_with(&[]);
    let (id, key) = s.signing_key(now()).unwrap();
    assert_eq!((id.as_str(), key), ("abcdef", CANARY.as_bytes()));
    // Not checked: authentication usage, deletion timestamp.
    let s2 =
        secret_with(&[("usage-bootstrap-authentication", "false")]).with_deletion_timestamp("x");
    assert!(s2.signing_key(now()).is_some());
    // Checked: token-id present and equal, secret non-empty, expiry, signing usage.
    assert!(without(&s, "token-id").signing_key(now()).is_none());
    assert!(
        secret_with(&[("token-id", "")])
            .signing_key(now())
            .is_none()
    );
    assert!(without(&s, "token-secret").signing_key(now()).is_none());
    assert!(
        without(&s, "usage-bootstrap-signing")
            .signing_key(now())
            .is_none()
    );
    assert!(
        secret_with(&[("expiration", "2024-01-02T03:04:05Z")])
            .signing_key(now())
            .is_none()
    );
    assert!(
        secret_with(&[("expiration", "2024-01-02T03:04:06Z")])
            .signing_key(now())
            .is_some()
    );
    // Any non-empty secret format signs (edge case 4.4).
    let odd = secret_with(&[("token-secret", "x")]);
    assert_eq!(odd.signing_key(now()).unwrap().1, b"x");
}

#[test]
fn cleaner_decisions() {
    let s = secret_with(&[("expiration", "2024-01-02T04:04:05Z")]).with_uid("uid-1");
    assert_eq!(
        cleaner_action(&s, now()),
        CleanerAction::RecheckAfter(Duration::from_secs(3600))
    );
    let later = now() + Duration::from_secs(3600);
    assert_eq!(
        cleaner_action(&s, later),
        CleanerAction::Delete {
            uid_precondition: Some("uid-1")
        }
    );
    // No UID (or an empty one): no precondition.
    let s = secret_with(&[("expiration", "bad")]);
    assert_eq!(
        cleaner_action(&s, now()),
        CleanerAction::Delete {
            uid_precondition: None
        }
    );
    let s = secret_with(&[("expiration", "bad")]).with_uid("");
    assert_eq!(
        cleaner_action(&s, now()),
        CleanerAction::Delete {
            uid_precondition: None
        }
    );
    // The cleaner does not look at name, token-id, usages or groups.
    let odd = SecretObject::new(
        "not-a-token-name",
        "kube-system",
        "bootstrap.kubernetes.io/token",
        Some(data(&[("expiration", "2000-01-01T00:00:00Z")])),
    );
    assert!(matches!(
        cleaner_action(&odd, now()),
        CleanerAction::Delete { .. }
    ));
    assert_eq!(
        cleaner_action(&secret_with(&[]), now()),
        CleanerAction::Keep
    );

    let a = secret_with(&[("expiration", "2024-01-02T03:05:05Z")]);
    let b = secret_with(&[("expiration", "2024-01-02T03:04:15Z")]);
    let never = secret_with(&[]);
    let plan = cleanup_plan([&a, &b, &s, &odd, &never], now());
    assert_eq!(
        plan.delete,
        [("bootstrap-token-abcdef", None), ("not-a-token-name", None)]
    );
    assert_eq!(plan.wake_after, Some(Duration::from_secs(10)));
}

#[test]
fn model_reads_kubeadm_style() {
    let s = secret_with(&[
        ("description", "for node-1"),
        ("expiration", "2024-01-02T04:04:05+01:00"),
        ("usage-bootstrap-foo", "true"),
        ("usage-bootstrap-bar", "false"),
        (
            "auth-extra-groups",
            "system:bootstrappers:b,system:bootstrappers:a,system:bootstrappers:b",
        ),
    ]);
    let m = BootstrapTokenSecret::try_from(&s).unwrap();
    assert_eq!(m.token().to_string(), TOKEN);
    assert_eq!(m.description(), "for node-1");
    assert_eq!(m.usages(), ["authentication", "foo", "signing"]);
    assert!(m.has_usage(Usage::Signing) && m.has_usage(Usage::Authentication));
    assert_eq!(
        m.extra_groups(),
        [
            "system:bootstrappers:b",
            "system:bootstrappers:a",
            "system:bootstrappers:b"
        ]
    );
    assert_eq!(
        m.groups().unwrap(),
        [
            "system:bootstrappers",
            "system:bootstrappers:a",
            "system:bootstrappers:b"
        ]
    );
    assert_eq!(
        m.expiration_rfc3339().as_deref(),
        Some("2024-01-02T04:04:05+01:00")
    );
    assert_eq!(
        m.expiration_status(now()),
        ExpirationStatus::Expired { at: now() }
    );
    assert!(m.is_expired(now()));
    assert_eq!(
        m.time_remaining(now() - Duration::from_secs(5)),
        Duration::from_secs(5)
    );
    // Back to a Secret: kubeadm writes UTC.
    let back = m.to_secret_object().unwrap();
    assert_eq!(back.data("expiration"), Some(&b"2024-01-02T03:04:05Z"[..]));
    assert_eq!(back.data("usage-bootstrap-foo"), Some(&b"true"[..]));
    assert_eq!(back.data("usage-bootstrap-bar"), None);
    assert_eq!(back.data("auth-extra-groups"), s.data("auth-extra-groups"));
}

#[test]
fn model_rejections_in_kubeadm_order() {
    let s = without(&secret_with(&[]), "token-id");
    assert_eq!(
        BootstrapTokenSecret::try_from(&s).unwrap_err(),
        Error::MissingData { key: "token-id" }
    );
    let s = SecretObject::new(
        "bootstrap-token-abcdeg",
        "kube-system",
        "bootstrap.kubernetes.io/token",
        secret_with(&[]).data_map().cloned(),
    );
    assert_eq!(
        BootstrapTokenSecret::try_from(&s).unwrap_err(),
        Error::TokenIdMismatch
    );
    let s = secret_with(&[("token-id", "ABCDEF")]);
    let s = SecretObject::new(
        "bootstrap-token-ABCDEF",
        s.namespace(),
        s.secret_type(),
        s.data_map().cloned(),
    );
    // The name equals bootstrap-token-<token-id>; the token format check then fails (kubeadm).
    assert_eq!(
        BootstrapTokenSecret::try_from(&s).unwrap_err(),
        Error::InvalidToken
    );
    let s = secret_with(&[]);
    let s = SecretObject::new(
        "my-token",
        s.namespace(),
        s.secret_type(),
        s.data_map().cloned(),
    );
    assert_eq!(
        BootstrapTokenSecret::try_from(&s).unwrap_err(),
        Error::InvalidSecretName
    );
}

#[test]
fn model_builder_to_secret() {
    let token: BootstrapToken = TOKEN.parse().unwrap();
    let m = BootstrapTokenSecret::new(token)
        .with_description("d")
        .with_usage(Usage::Signing)
        .with_usage(Usage::Authentication)
        .with_usage(Usage::Signing)
        .with_extra_group("system:bootstrappers:x".parse::<ExtraGroup>().unwrap())
        .with_expiration(now() + Duration::from_millis(1500))
        .unwrap();
    let s = m.to_secret_object().unwrap();
    assert_eq!(s.name(), "bootstrap-token-abcdef");
    assert_eq!(s.namespace(), "kube-system");
    assert_eq!(s.secret_type(), "bootstrap.kubernetes.io/token");
    let expected = data(&[
        ("token-id", "abcdef"),
        ("token-secret", CANARY),
        ("description", "d"),
        ("expiration", "2024-01-02T03:04:06Z"),
        ("usage-bootstrap-signing", "true"),
        ("usage-bootstrap-authentication", "true"),
        ("auth-extra-groups", "system:bootstrappers:x"),
    ]);
    assert_eq!(s.data_map(), Some(&expected));
}

#[cfg(feature = "yaml")]
#[test]
fn secret_object_json_yaml_and_string_data() {
    let s = secret_with(&[("description", "ünïcode")]).with_uid("u-1");
    let json = s.to_json().unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["apiVersion"], "v1");
    assert_eq!(v["kind"], "Secret");
    assert_eq!(v["metadata"]["uid"], "u-1");
    assert_eq!(v["data"]["token-id"], "YWJjZGVm");
    assert_eq!(SecretObject::from_json(json.as_bytes()).unwrap(), s);

    // stringData (manifests) is merged over data, as the API server does.
    let manifest = br#"
apiVersion: v1
kind: Secret
metadata:
  name: bootstrap-token-abcdef
  namespace: kube-system
type: bootstrap.kubernetes.io/token
data:
  token-id: enp6enp6
stringData:
  token-id: abcdef
  token-secret: "0123456789abcdef"
  usage-bootstrap-authentication: "true"
"#;
    let s = SecretObject::from_yaml(manifest).unwrap();
    assert_eq!(s.data("token-id"), Some(&b"abcdef"[..]));
    assert!(auth_at(&s, TOKEN, now()).authenticated().is_some());

    assert_eq!(
        SecretObject::from_json(br#"{"kind":"ConfigMap"}"#).unwrap_err(),
        Error::NotASecret
    );
    assert_eq!(
        SecretObject::from_json(br#"{"apiVersion":"v2"}"#).unwrap_err(),
        Error::NotASecret
    );
    assert_eq!(
        SecretObject::from_json(br#"{"data":{"a/b":"AA=="}}"#).unwrap_err(),
        Error::InvalidDataKey
    );
    assert_eq!(
        SecretObject::from_json(br#"{"data":{"..":"AA=="}}"#).unwrap_err(),
        Error::InvalidDataKey
    );
    let e = SecretObject::from_json(b"{\n  \"data\": 5\n}").unwrap_err();
    assert!(matches!(e, Error::Json { line: 2, .. }), "{e:?}");
    // Unknown fields (labels, managedFields, ...) are ignored.
    let full = br#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"n","namespace":"kube-system","labels":{"a":"b"},"resourceVersion":"1","creationTimestamp":"2024-01-01T00:00:00Z","managedFields":[{"manager":"kubectl"}]},"immutable":false,"type":"Opaque"}"#;
    let s = SecretObject::from_json(full).unwrap();
    assert_eq!(
        (s.name(), s.secret_type(), s.data_map()),
        ("n", "Opaque", None)
    );
}

#[test]
fn serde_validates_public_values() {
    let id: TokenId = serde_json::from_str(r#""abcdef""#).unwrap();
    assert_eq!(serde_json::to_string(&id).unwrap(), r#""abcdef""#);
    assert!(serde_json::from_str::<TokenId>(r#""ABCDEF""#).is_err());
    let g: ExtraGroup = serde_json::from_str(r#""system:bootstrappers:x""#).unwrap();
    assert_eq!(
        serde_json::to_string(&g).unwrap(),
        r#""system:bootstrappers:x""#
    );
    assert!(serde_json::from_str::<ExtraGroup>(r#""system:masters""#).is_err());
    let u: Vec<Usage> = serde_json::from_str(r#"["signing","authentication"]"#).unwrap();
    assert_eq!(u, [Usage::Signing, Usage::Authentication]);
    assert_eq!(
        serde_json::to_string(&u).unwrap(),
        r#"["signing","authentication"]"#
    );
    assert!(serde_json::from_str::<Usage>(r#""Signing""#).is_err());
}

#[test]
fn large_data_maps_give_the_same_answers() {
    // The authenticator reads small maps in one pass and large ones by lookup: same outcome.
    let scenarios: [&[(&str, &str)]; 7] = [
        &[],
        &[("token-secret", "0123456789abcdeg")],
        &[("token-id", "abcdeg")],
        &[("expiration", "2000-01-01T00:00:00Z")],
        &[("expiration", "nope")],
        &[("usage-bootstrap-authentication", "yes")],
        &[(
            "auth-extra-groups",
            "system:bootstrappers:b,system:bootstrappers:a",
        )],
    ];
    for extra in scenarios {
        let small = secret_with(extra);
        let mut padded: Vec<(String, String)> = (0..20)
            .map(|i| (format!("zz-junk-{i:02}"), "x".to_owned()))
            .collect();
        padded.extend(
            extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        let pairs: Vec<(&str, &str)> = padded
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let large = secret_with(&pairs);
        assert!(large.data_map().unwrap().len() > 16);
        assert_eq!(
            auth_at(&small, TOKEN, now()),
            auth_at(&large, TOKEN, now()),
            "{extra:?}"
        );
    }
}

/// Go writes a nil map as `null`: a Secret with `"data": null` (or `"stringData": null`) is a
/// Secret without data, as the API server and client-go read it.
#[test]
fn null_data_and_string_data_are_no_data() {
    let json = br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bootstrap-token-abcdef","namespace":"kube-system"},"type":"bootstrap.kubernetes.io/token","data":null,"stringData":null}"#;
    let s = SecretObject::from_json(json).unwrap();
    assert_eq!(s.data("token-id"), None);
    assert!(s.data_map().is_none_or(|d| d.is_empty()));
}
