//! Secrets never show in printed values.

/// Asserts that `shown` (a value's `Debug` or `Display` output) does not contain `secret`,
/// unless `public` (what the value's public fields print) already carries the same characters,
/// in which case finding them proves nothing.
pub(crate) fn assert_hidden(shown: &str, secret: &str, public: &str) {
    if secret.is_empty() || public.contains(secret) {
        return;
    }
    assert!(!shown.contains(secret), "secret printed: {shown}");
}
