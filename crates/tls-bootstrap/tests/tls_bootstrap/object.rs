//! The `CertificateSigningRequest` object: k8s-openapi round trips, an API server response,
//! states, and hostile JSON.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    reason = "tests"
)]

use k8s_openapi::api::certificates::v1 as api;
use tls_bootstrap::{
    CertificateRequest, CertificateSigningRequest, Error, KeyUsage, NodeKey, State,
};

fn ours() -> CertificateSigningRequest {
    let key = NodeKey::generate().unwrap();
    let req = CertificateRequest::for_node(&"worker-1".parse().unwrap(), &key).unwrap();
    CertificateSigningRequest::for_node(&req, Some(std::time::Duration::from_secs(3600))).unwrap()
}

/// An object as kube-apiserver returns it after create, approval and signing (metadata
/// fields this crate does not type included).
fn server_json(request_b64: &str) -> String {
    format!(
        r#"{{"kind":"CertificateSigningRequest","apiVersion":"certificates.k8s.io/v1",
"metadata":{{"name":"node-csr-abc","uid":"4c2e0c0e-4c55-4b6e-9d8a-6f0f8a1b2c3d",
"resourceVersion":"1234","creationTimestamp":"2026-11-25T10:00:00Z",
"labels":{{"a":"b"}},"annotations":{{"c":"d"}},
"managedFields":[{{"manager":"kubelet","operation":"Update","apiVersion":"certificates.k8s.io/v1","time":"2026-11-25T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:spec":{{"f:request":{{}}}}}}}}]}},
"spec":{{"request":"{request_b64}","signerName":"kubernetes.io/kube-apiserver-client-kubelet",
"expirationSeconds":3600,"usages":["digital signature","client auth"],
"username":"system:bootstrap:abcdef","groups":["system:bootstrappers","system:bootstrappers:kubeadm:default-node-token","system:authenticated"],
"extra":{{"authentication.kubernetes.io/credential-id":["JTI=x"]}}}},
"status":{{"conditions":[{{"type":"Approved","status":"True","reason":"AutoApproved",
"message":"Auto approving kubelet client certificate after SubjectAccessReview.",
"lastUpdateTime":"2026-11-25T10:00:01Z","lastTransitionTime":"2026-11-25T10:00:01Z"}}],
"certificate":"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="}}}}"#
    )
}

#[test]
fn ours_is_a_valid_k8s_openapi_object_and_back() {
    let csr = ours();
    let typed: api::CertificateSigningRequest = (&csr).try_into().unwrap();
    assert_eq!(
        typed.spec.signer_name,
        "kubernetes.io/kube-apiserver-client-kubelet"
    );
    assert_eq!(typed.spec.expiration_seconds, Some(3600));
    assert_eq!(
        typed.spec.usages.as_deref(),
        Some(&["digital signature".to_owned(), "client auth".to_owned()][..])
    );
    assert_eq!(typed.spec.request.0, csr.spec.request);
    let back: CertificateSigningRequest = (&typed).try_into().unwrap();
    assert_eq!(back, csr);
    // Byte-for-byte JSON equality through k8s-openapi.
    assert_eq!(
        serde_json::to_value(&typed).unwrap(),
        serde_json::from_slice::<serde_json::Value>(&csr.to_json().unwrap()).unwrap()
    );
}

#[test]
fn a_server_response_loses_nothing() {
    use base64::Engine as _;
    let csr = ours();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&csr.spec.request);
    let json = server_json(&b64);
    let parsed = CertificateSigningRequest::from_json(json.as_bytes()).unwrap();
    assert_eq!(parsed.name(), Some("node-csr-abc"));
    assert_eq!(
        parsed.spec.username.as_deref(),
        Some("system:bootstrap:abcdef")
    );
    assert_eq!(
        parsed.spec.usages,
        [KeyUsage::DigitalSignature, KeyUsage::ClientAuth]
    );
    assert_eq!(
        parsed.state(),
        State::Issued(b"-----BEGIN CERTIFICATE-----\n")
    );
    parsed.certificate_request().unwrap();

    // Through us and through k8s-openapi, the same JSON value as the server's.
    let original: serde_json::Value = serde_json::from_str(&json).unwrap();
    let again: serde_json::Value = serde_json::from_slice(&parsed.to_json().unwrap()).unwrap();
    assert_eq!(again, original);
    let typed: api::CertificateSigningRequest = serde_json::from_str(&json).unwrap();
    let ours_from_typed: CertificateSigningRequest = (&typed).try_into().unwrap();
    assert_eq!(ours_from_typed, parsed);
}

#[test]
fn states() {
    let mut csr = ours();
    assert_eq!(csr.state(), State::Pending);
    csr.status.conditions.push(tls_bootstrap::Condition::new(
        "Approved",
        "AutoApproved",
        "ok",
    ));
    assert_eq!(csr.state(), State::Approved);
    csr.status.certificate = Some(Vec::new());
    assert_eq!(csr.state(), State::Approved);
    csr.status.certificate = Some(b"pem".to_vec());
    assert_eq!(csr.state(), State::Issued(b"pem"));
    csr.status.conditions.push(tls_bootstrap::Condition::new(
        "Failed",
        "SignerValidationFailure",
        "bad",
    ));
    assert_eq!(
        csr.state(),
        State::Failed {
            reason: Some("SignerValidationFailure"),
            message: Some("bad")
        }
    );
    // client-go reads the conditions in order: the Failed one, first, decides.
    csr.status
        .conditions
        .push(tls_bootstrap::Condition::new("Denied", "Nope", "no"));
    assert!(matches!(csr.state(), State::Failed { .. }));
    csr.status.conditions.retain(|c| c.type_ != "Failed");
    assert!(matches!(csr.state(), State::Denied { .. }));
}

#[test]
fn hostile_json_is_refused_with_typed_errors() {
    let big = vec![b' '; tls_bootstrap::MAX_OBJECT_BYTES + 1];
    assert!(matches!(
        CertificateSigningRequest::from_json(&big),
        Err(Error::TooLarge { .. })
    ));
    let good = String::from_utf8(ours().to_json().unwrap()).unwrap();
    for (bad, what) in [
        (
            good.replace("certificates.k8s.io/v1", "certificates.k8s.io/v1beta1"),
            "apiVersion",
        ),
        (
            good.replace("CertificateSigningRequest", "ConfigMap"),
            "kind",
        ),
        (good.replace("client auth", "Client Auth"), "usage"),
        (good.replace("\"request\":\"", "\"request\":\"!"), "base64"),
        (
            good.replace(
                "\"expirationSeconds\":3600",
                "\"expirationSeconds\":\"3600\"",
            ),
            "type",
        ),
        (good.replace("{", "["), "syntax"),
        (String::new(), "empty"),
    ] {
        assert!(
            CertificateSigningRequest::from_json(bad.as_bytes()).is_err(),
            "{what}"
        );
    }
    let conditions = (0..33)
        .map(|i| format!(r#"{{"type":"T{i}","status":"True"}}"#))
        .collect::<Vec<_>>()
        .join(",");
    let many = good.replacen(
        "\"spec\":",
        &format!("\"status\":{{\"conditions\":[{conditions}]}},\"spec\":"),
        1,
    );
    assert_eq!(
        CertificateSigningRequest::from_json(many.as_bytes()).unwrap_err(),
        Error::InvalidObject {
            field: "status.conditions",
            reason: "too many conditions"
        }
    );
    // Errors never echo input.
    let secretish = good.replace("\"signerName\":\"", "\"signerName\":[\"hunter2");
    let err = CertificateSigningRequest::from_json(secretish.as_bytes()).unwrap_err();
    assert!(!err.to_string().contains("hunter2"));
}

#[test]
fn expiration_below_ten_minutes_is_refused() {
    let key = NodeKey::generate().unwrap();
    let req = CertificateRequest::for_node(&"w".parse().unwrap(), &key).unwrap();
    assert!(
        CertificateSigningRequest::for_node(&req, Some(std::time::Duration::from_secs(599)))
            .is_err()
    );
    let csr = CertificateSigningRequest::for_node(&req, Some(std::time::Duration::from_secs(600)))
        .unwrap();
    assert_eq!(csr.spec.expiration_seconds, Some(600));
}

#[test]
fn yaml_as_kubectl_prints_it() {
    let csr = ours();
    let json: serde_json::Value = serde_json::from_slice(&csr.to_json().unwrap()).unwrap();
    let request = json["spec"]["request"].as_str().unwrap();
    let yaml = format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  \
         creationTimestamp: \"2026-11-25T10:00:00Z\"\n  name: {name}\n  resourceVersion: \"12\"\n  \
         uid: 4c2e0c0e-4c55-4b6e-9d8a-6f0f8a1b2c3d\nspec:\n  expirationSeconds: 3600\n  groups:\n  \
         - system:bootstrappers\n  - system:authenticated\n  request: {request}\n  signerName: \
         kubernetes.io/kube-apiserver-client-kubelet\n  usages:\n  - digital signature\n  - client auth\n  \
         username: system:bootstrap:abcdef\nstatus:\n  conditions:\n  - lastTransitionTime: \
         \"2026-11-25T10:00:01Z\"\n    lastUpdateTime: \"2026-11-25T10:00:01Z\"\n    message: approved\n    \
         reason: AutoApproved\n    status: \"True\"\n    type: Approved\n",
        name = csr.name().unwrap()
    );
    let parsed = CertificateSigningRequest::from_yaml(yaml.as_bytes()).unwrap();
    assert_eq!(parsed.spec.request, csr.spec.request);
    assert_eq!(parsed.spec.expiration_seconds, Some(3600));
    assert_eq!(parsed.state(), State::Approved);
    assert_eq!(parsed.metadata.resource_version.as_deref(), Some("12"));

    // Hostile YAML: duplicate keys, several documents, an alias bomb, oversized, wrong types.
    for bad in [
        yaml.replace("kind: CertificateSigningRequest", "kind: CertificateSigningRequest\nkind: CertificateSigningRequest"),
        format!("{yaml}---\n{yaml}"),
        "a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: &c [*b, *b, *b, *b]\nd: &d [*c, *c, *c, *c]\ne: &e [*d, *d, *d, *d]\nf: [*e, *e, *e, *e]\n".to_owned(),
        yaml.replace("status: \"True\"", "status: [True]"),
        yaml.replace("certificates.k8s.io/v1", "v1"),
        "[".repeat(100),
    ] {
        assert!(CertificateSigningRequest::from_yaml(bad.as_bytes()).is_err(), "{bad}");
    }
    let big = vec![b'#'; tls_bootstrap::MAX_OBJECT_BYTES + 1];
    assert!(matches!(
        CertificateSigningRequest::from_yaml(&big),
        Err(Error::TooLarge { .. })
    ));
}
