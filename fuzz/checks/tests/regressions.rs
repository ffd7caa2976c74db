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
