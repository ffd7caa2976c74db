//! Inputs the fuzzers found that once failed a check, with the outcome each must now have.
//! Each is also a seed in its target's corpus; here the outcome itself is pinned.

use k8s_bootstrap_fuzz_checks::{self as checks, Outcome};

/// `"crit"` as a string value nested in another member is not a `crit` header parameter: the
/// header is accepted. (The check once looked for the text `"crit"` anywhere.)
#[test]
fn crit_as_a_nested_string_value_is_not_a_crit_member() {
    let header = b"{\"alg\":\"HS256\",\"kid\":\"abcdef\",\"x\":[[[[[[[[[\"crit\"]]]\r\r\r]]]]]]}";
    assert_eq!(
        checks::jws_detached_verify_header_json(header),
        Outcome::Accepted
    );
}

/// A `crit` member is refused whatever its value, `null` and an escaped name included.
#[test]
fn crit_member_is_refused_whatever_its_value() {
    for header in [
        &b"{\"alg\":\"HS256\",\"kid\":\"abcdef\",\"crit\":null}"[..],
        b"{\"alg\":\"HS256\",\"kid\":\"abcdef\",\"crit\":[]}",
        b"{\"alg\":\"HS256\",\"kid\":\"abcdef\",\"\\u0063rit\":[\"exp\"]}",
    ] {
        assert_eq!(
            checks::jws_detached_verify_header_json(header),
            Outcome::Rejected,
            "{}",
            String::from_utf8_lossy(header)
        );
    }
}

/// A kubeconfig whose cluster extension holds a long key with C0 control characters: the
/// parser once accepted it, and its own `to_kubeconfig_yaml()` output did not parse back (the
/// writer produced an implicit key over YAML's 1024-character limit). The same class of input
/// in valid YAML is covered in `crates/clusterinfo/tests/kubeconfig.rs`.
#[test]
fn kubeconfig_extension_key_with_control_characters() {
    let input =
        include_bytes!("../../corpus/clusterinfo_kubeconfig/regression-extension-control-chars");
    // Raw C0 controls are not allowed in a YAML plain scalar: rejected on input.
    assert_eq!(checks::clusterinfo_kubeconfig(input), Outcome::Rejected);
}

/// Plugin output whose `spec.cluster.config` holds an integer beyond 64 bits: it decodes as a
/// float, and the float written back once parsed to a neighbouring float, so the re-encoding
/// was not a fixed point. Floats are now parsed correctly rounded (as Go's `strconv` does).
#[test]
fn exec_credential_config_number_beyond_64_bits() {
    let input = include_bytes!(
        "../../corpus/exec_credential_plugin_output/regression-config-number-float-roundtrip"
    );
    assert_eq!(
        checks::exec_credential_plugin_output(input),
        Outcome::Accepted
    );
}
