//! Plugin output rules (client-go's exec authenticator) and the hostile-input catalogue for
//! plugin stdout.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use exec_credential::{ApiVersion, Error, ExecCredential};

const CERT1: &str = include_str!("../data/client1.crt");
const KEY1: &str = include_str!("../data/client1.key");
const KEY1_ENCRYPTED: &str = include_str!("../data/client1.encrypted.key");
const CANARY: &str = "CANARY-s3cr3t-t0ken-value";

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

fn validate(stdout: &str, configured: ApiVersion) -> Result<exec_credential::Credential, Error> {
    ExecCredential::from_plugin_output(stdout.as_bytes())?.into_credential(configured, now())
}

fn v1(status: &str) -> String {
    format!(
        r#"{{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{status}}}"#
    )
}

fn assert_no_canary(e: &Error) {
    assert!(!e.to_string().contains("CANARY"), "Display leaks: {e}");
    assert!(!format!("{e:?}").contains("CANARY"), "Debug leaks: {e:?}");
}

#[test]
fn row49_valid_v1_token_and_debug_redacts() {
    let c = validate(&v1(&format!(r#"{{"token":"{CANARY}"}}"#)), ApiVersion::V1).unwrap();
    assert_eq!(c.token().unwrap().expose_secret(), CANARY);
    assert!(c.client_identity().is_none());
    assert_eq!(c.expiration(), None);
    assert!(!format!("{c:?}").contains("CANARY"));
    let raw =
        ExecCredential::from_plugin_output(v1(&format!(r#"{{"token":"{CANARY}"}}"#)).as_bytes())
            .unwrap();
    assert!(!format!("{raw:?}").contains("CANARY"));
}

#[test]
fn row49_v1beta1_output_for_v1beta1_config() {
    let out = r#"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"abc"}}"#;
    assert!(validate(out, ApiVersion::V1Beta1).is_ok());
}

#[test]
fn row50_bad_or_mismatched_api_version() {
    for (version, want) in [
        ("client.authentication.k8s.io/v1alpha1", "mismatch"),
        ("client.authentication.k8s.io/v2", "invalid"),
        ("v1", "invalid"),
    ] {
        let out = format!(
            r#"{{"apiVersion":"{version}","kind":"ExecCredential","status":{{"token":"x"}}}}"#
        );
        let e = validate(&out, ApiVersion::V1).unwrap_err();
        match want {
            "mismatch" => assert!(matches!(e, Error::ApiVersionMismatch { .. }), "{e:?}"),
            _ => assert!(matches!(e, Error::UnsupportedApiVersion), "{e:?}"),
        }
    }
    let missing = r#"{"kind":"ExecCredential","status":{"token":"x"}}"#;
    assert_eq!(
        validate(missing, ApiVersion::V1).unwrap_err(),
        Error::MissingApiVersion
    );
    // A v1 answer to a v1beta1 configuration is rejected, with client-go's message.
    let e = validate(&v1(r#"{"token":"x"}"#), ApiVersion::V1Beta1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "exec plugin is configured to use API version client.authentication.k8s.io/v1beta1, plugin returned version client.authentication.k8s.io/v1"
    );
}

#[test]
fn row50_v1alpha1_output_is_readable_and_flagged() {
    let out = r#"{"apiVersion":"client.authentication.k8s.io/v1alpha1","kind":"ExecCredential","spec":{"response":{"code":401}},"status":{"token":"x"}}"#;
    let c = ExecCredential::from_plugin_output(out.as_bytes()).unwrap();
    assert_eq!(c.api_version(), ApiVersion::V1Alpha1);
    assert!(c.api_version().is_deprecated());
}

#[test]
fn row51_wrong_or_missing_kind() {
    for out in [
        r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredentials","status":{"token":"x"}}"#,
        r#"{"apiVersion":"client.authentication.k8s.io/v1","status":{"token":"x"}}"#,
        r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"execcredential","status":{"token":"x"}}"#,
    ] {
        assert_eq!(
            validate(out, ApiVersion::V1).unwrap_err(),
            Error::WrongKind,
            "{out}"
        );
    }
}

#[test]
fn row52_status_missing_null_or_string() {
    let missing = r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"}"#;
    assert_eq!(
        validate(missing, ApiVersion::V1).unwrap_err(),
        Error::MissingStatus
    );
    assert_eq!(
        validate(&v1("null"), ApiVersion::V1).unwrap_err(),
        Error::MissingStatus
    );
    assert_eq!(
        validate(missing, ApiVersion::V1).unwrap_err().to_string(),
        "exec plugin didn't return a status field"
    );
    let e = validate(&v1(&format!(r#""{CANARY}""#)), ApiVersion::V1).unwrap_err();
    assert!(matches!(e, Error::Decode(_)), "{e:?}");
    assert_no_canary(&e);
    // Through the plain serde entry point too.
    let e = serde_json::from_str::<ExecCredential>(&v1(&format!(r#""{CANARY}""#))).unwrap_err();
    assert!(!e.to_string().contains("CANARY"), "{e}");
}

#[test]
fn row53_no_credential_or_half_a_pair() {
    assert_eq!(
        validate(&v1("{}"), ApiVersion::V1).unwrap_err(),
        Error::NoCredential
    );
    assert_eq!(
        validate(
            &v1(r#"{"token":"","clientCertificateData":"","clientKeyData":""}"#),
            ApiVersion::V1
        )
        .unwrap_err(),
        Error::NoCredential
    );
    assert_eq!(
        validate(
            &v1(r#"{"token":"","clientCertificateData":"","clientKeyData":""}"#),
            ApiVersion::V1
        )
        .unwrap_err()
        .to_string(),
        "exec plugin didn't return a token or cert/key pair"
    );
    let only_cert = serde_json::json!({"clientCertificateData": CERT1}).to_string();
    let only_key = serde_json::json!({"clientKeyData": KEY1}).to_string();
    let token_and_only_key = serde_json::json!({"token": "t", "clientKeyData": KEY1}).to_string();
    for status in [only_cert, only_key, token_and_only_key] {
        let e = validate(&v1(&status), ApiVersion::V1).unwrap_err();
        assert_eq!(e, Error::PartialKeyPair);
        assert_eq!(
            e.to_string(),
            "exec plugin returned only certificate or key, not both"
        );
        assert!(!e.to_string().contains("PRIVATE"));
    }
}

#[test]
fn row54_token_and_certificate_together_are_both_used() {
    let status =
        serde_json::json!({"token": CANARY, "clientCertificateData": CERT1, "clientKeyData": KEY1});
    let c = validate(&v1(&status.to_string()), ApiVersion::V1).unwrap();
    assert_eq!(c.token().unwrap().expose_secret(), CANARY);
    let id = c.client_identity().unwrap();
    assert_eq!(id.certificate_pem(), CERT1);
    assert_eq!(id.key().expose_secret(), KEY1);
    assert!(id.not_after().unwrap() > id.not_before().unwrap());
    let dbg = format!("{c:?}");
    assert!(
        !dbg.contains("CANARY") && !dbg.contains(KEY1.lines().nth(1).unwrap()),
        "{dbg}"
    );
}

#[test]
fn row55_unusable_certificate_or_key() {
    let key_body = KEY1.lines().nth(1).unwrap();
    let cases = [
        (CERT1.to_owned(), "not a pem key CANARY".to_owned()),
        ("not a certificate".to_owned(), KEY1.to_owned()),
        (CERT1.to_owned(), KEY1_ENCRYPTED.to_owned()),
        (CERT1.to_owned(), KEY1.replace(key_body, "!!!!")),
        (CERT1.replace("CERTIFICATE", "PUBLIC KEY"), KEY1.to_owned()),
        (
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_owned(),
            KEY1.to_owned(),
        ),
        (
            CERT1.to_owned(),
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n".to_owned(),
        ),
    ];
    for (cert, key) in cases {
        let status = serde_json::json!({"clientCertificateData": cert, "clientKeyData": key});
        let e = validate(&v1(&status.to_string()), ApiVersion::V1).unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidKeyPair { .. } | Error::InvalidLeafCertificate { .. }
            ),
            "{e:?}"
        );
        assert_no_canary(&e);
        assert!(!e.to_string().contains(key_body));
    }
}

#[test]
fn row56_expiration_in_the_past_number_lowercase_or_garbage() {
    // client-go keeps a credential that expired before it arrived (the clocks may disagree);
    // the caller sees it is expired.
    let past = v1(r#"{"token":"t","expirationTimestamp":"2023-01-01T00:00:00Z"}"#);
    let credential = validate(&past, ApiVersion::V1).unwrap();
    assert!(credential.is_expired(UNIX_EPOCH + Duration::from_secs(1_700_000_000)));
    let number = v1(r#"{"token":"t","expirationTimestamp":1700000000}"#);
    assert!(matches!(
        validate(&number, ApiVersion::V1).unwrap_err(),
        Error::Decode(_)
    ));
    for bad in [
        "2030-01-01t00:00:00Z",
        "2030-01-01T00:00:00z",
        "garbage CANARY",
        "2030-01-01 00:00:00Z",
    ] {
        let out = v1(&format!(r#"{{"token":"t","expirationTimestamp":"{bad}"}}"#));
        let e = validate(&out, ApiVersion::V1).unwrap_err();
        assert!(matches!(e, Error::InvalidExpiration { .. }), "{bad}: {e:?}");
        assert_no_canary(&e);
    }
    // Null means no expiry.
    let null = v1(r#"{"token":"t","expirationTimestamp":null}"#);
    assert_eq!(validate(&null, ApiVersion::V1).unwrap().expiration(), None);
}

#[test]
fn row57_duplicate_token_members_are_rejected() {
    let out = v1(&format!(r#"{{"token":"a","token":"{CANARY}"}}"#));
    let e = validate(&out, ApiVersion::V1).unwrap_err();
    assert!(matches!(e, Error::Decode(_)), "{e:?}");
    assert!(e.to_string().contains("duplicate field"), "{e}");
    assert_no_canary(&e);
    let dup_api = r#"{"apiVersion":"client.authentication.k8s.io/v1","apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"a"}}"#;
    assert!(validate(dup_api, ApiVersion::V1).is_err());
}

#[test]
fn row58_unknown_fields_are_ignored() {
    let out = r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","metadata":{"x":1},"extra":[1,2],"spec":{"future":true},"status":{"token":"t","futureField":{"a":"b"}}}"#;
    assert!(validate(out, ApiVersion::V1).is_ok());
}

#[test]
fn row59_oversized_stdout_is_rejected_before_parsing() {
    let mut big = v1(r#"{"token":"t"}"#).into_bytes();
    big.resize(exec_credential::MAX_PLUGIN_OUTPUT_BYTES + 1, b' ');
    assert_eq!(
        ExecCredential::from_plugin_output(&big).unwrap_err(),
        Error::OutputTooLarge {
            limit: exec_credential::MAX_PLUGIN_OUTPUT_BYTES
        }
    );
    assert!(ExecCredential::from_plugin_output_with_limit(b"{}", 1).is_err());
}

#[test]
fn row60_non_utf8_bom_two_documents_trailing_garbage() {
    let good = v1(r#"{"token":"t"}"#);
    let mut non_utf8 = good.clone().into_bytes();
    non_utf8.insert(non_utf8.len() - 3, 0xff);
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend_from_slice(good.as_bytes());
    let two = format!("{good}\n{good}");
    let trailing = format!("{good} x");
    let yaml_two = "apiVersion: client.authentication.k8s.io/v1\nkind: ExecCredential\nstatus: {token: t}\n---\napiVersion: x\n";
    for input in [
        non_utf8,
        bom,
        two.into_bytes(),
        trailing.into_bytes(),
        yaml_two.as_bytes().to_vec(),
    ] {
        let e = ExecCredential::from_plugin_output(&input);
        assert!(
            matches!(e, Err(Error::Decode(_))),
            "{:?}: {e:?}",
            String::from_utf8_lossy(&input)
        );
    }
    // One document with explicit markers is fine; content after an end marker is not.
    let marked = "---\napiVersion: client.authentication.k8s.io/v1\nkind: ExecCredential\nstatus: {token: t}\n...\n";
    assert!(ExecCredential::from_plugin_output(marked.as_bytes()).is_ok());
    let after_end = format!("{marked}kind: x\n");
    assert!(ExecCredential::from_plugin_output(after_end.as_bytes()).is_err());
    // Whitespace around a single document is fine (plugins print a newline).
    assert!(ExecCredential::from_plugin_output(format!("\n {good}\n\n").as_bytes()).is_ok());
}

#[test]
fn yaml_output_is_accepted_like_the_universal_decoder() {
    let out = "apiVersion: client.authentication.k8s.io/v1\nkind: ExecCredential\nstatus:\n  token: yaml-token\n  expirationTimestamp: \"2030-01-01T00:00:00Z\"\n";
    let c = validate(out, ApiVersion::V1).unwrap();
    assert_eq!(c.token().unwrap().expose_secret(), "yaml-token");
    assert!(c.expiration().is_some());
    // Anchors and aliases (YAML bombs) are refused.
    let bomb = "a: &a [x, x]\nb: &b [*a, *a]\napiVersion: client.authentication.k8s.io/v1\nkind: ExecCredential\nstatus: {token: t}\n";
    assert!(ExecCredential::from_plugin_output(bomb.as_bytes()).is_err());
    // YAML errors never echo the input.
    let e =
        ExecCredential::from_plugin_output(format!("status: [{CANARY}\n").as_bytes()).unwrap_err();
    assert_no_canary(&e);
}

#[test]
fn json_arrays_are_not_objects() {
    let e = ExecCredential::from_plugin_output(
        br#"["client.authentication.k8s.io/v1","ExecCredential"]"#,
    );
    assert!(e.is_err());
    let e = validate(&v1(r#"["t"]"#), ApiVersion::V1).unwrap_err();
    assert!(matches!(e, Error::Decode(_)));
}

#[test]
fn decode_errors_report_position_not_content() {
    let out = format!(
        r#"{{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{{"token":["{CANARY}"]}}}}"#
    );
    let Error::Decode(d) = validate(&out, ApiVersion::V1).unwrap_err() else {
        panic!()
    };
    assert_eq!(d.format(), "JSON");
    assert_eq!(d.line(), 1);
    assert!(d.column() > 0);
    assert!(!d.to_string().contains("CANARY"));
}

#[test]
fn field_names_are_case_sensitive() {
    let out = r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"Token":"t"}}"#;
    assert_eq!(
        validate(out, ApiVersion::V1).unwrap_err(),
        Error::NoCredential
    );
}

#[test]
fn decode_errors_keep_only_position_and_category() {
    // serde quotes numbers with backticks (`invalid type: integer `123456789123`, ...`).
    let out = r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":123456789123}}"#;
    let e = validate(out, ApiVersion::V1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "decoding stdout: invalid JSON: wrong type or value at line 1 column 102"
    );
    assert!(!format!("{e:?}").contains("123456789"));
    assert!(std::error::Error::source(&e).is_none());
    // Syntax and end-of-input errors name the category only.
    let e = validate(r#"{"kind":"ExecCredential" 123456789123}"#, ApiVersion::V1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "decoding stdout: invalid JSON: syntax error at line 1 column 26"
    );
    let e = validate(r#"{"kind":"#, ApiVersion::V1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "decoding stdout: invalid JSON: unexpected end of input at line 1 column 8"
    );
    // Output that is no object at all says so, without echoing it.
    for text in [
        "please run `login` first, token s3cr3t",
        "- a\n- list",
        "42",
    ] {
        let e = validate(text, ApiVersion::V1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "decoding stdout: invalid JSON or YAML: the plugin printed text that is not an \
             ExecCredential object (a JSON object, `{\"apiVersion\": ..., \"kind\": \
             \"ExecCredential\", ...}`)"
        );
        assert!(!format!("{e:?}").contains("s3cr3t"));
    }
    for text in ["", " \n\t"] {
        let e = validate(text, ApiVersion::V1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "decoding stdout: invalid JSON or YAML: the plugin printed nothing on standard \
             output (expected an ExecCredential object)"
        );
    }
    // This crate's own messages and duplicate known fields stay specific.
    let e = validate(
        r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":"x"}"#,
        ApiVersion::V1,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("invalid type: string, expected an object"),
        "{e}"
    );
    // The apiVersion of the output is not echoed.
    let e = validate(
        r#"{"apiVersion":"client.authentication.k8s.io/v1-secret","kind":"ExecCredential"}"#,
        ApiVersion::V1,
    )
    .unwrap_err();
    assert_eq!(e, Error::UnsupportedApiVersion);
    assert!(!e.to_string().contains("secret"));
}

/// Numbers in `spec.cluster.config` are parsed correctly rounded, so what `to_json` writes
/// parses back to the same value: an integer beyond 64 bits (decoded as the nearest float) and
/// decimals whose shortest form differs from the input's.
#[test]
fn config_numbers_re_encode_to_a_fixed_point() {
    for number in [
        "111111111111111111111111",
        "1.1111111111111111e23",
        "0.30000000000000004",
        "9007199254740993",
        "123456789012345678901234567890e-10",
    ] {
        let output = format!(
            "{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\
             \"spec\":{{\"interactive\":false,\"cluster\":{{\"server\":\"https://x\",\
             \"config\":{{\"a\":{number}}}}}}},\"status\":{{\"token\":\"t\"}}}}"
        );
        let first = ExecCredential::from_plugin_output(output.as_bytes()).unwrap();
        let json = first.to_json();
        let again = ExecCredential::from_plugin_output(json.as_bytes()).unwrap();
        assert_eq!(again.to_json(), json, "{number}");
        // The value is the correctly rounded one, as Go's strconv.ParseFloat gives.
        let expected: f64 = number.parse().unwrap();
        let written = json
            .split("\"a\":")
            .nth(1)
            .and_then(|rest| rest.split('}').next())
            .unwrap();
        assert_eq!(
            written.parse::<f64>().unwrap(),
            expected,
            "{number}: {json}"
        );
    }
}
