//! Install-hint sanitising, as client-go's `cleanANSIEscapeCodes` does it.

/// The help text client-go appends when a plugin is not found (before the install hint).
pub const NOT_FOUND_HELP: &str = "\n\nIt looks like you are trying to use a client-go credential plugin that is not installed.\n\nTo learn more about this feature, consult the documentation available at:\n      https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins";

/// Replaces every character that is not a letter, mark, number, punctuation, symbol or
/// separator (nor tab, LF, VT, FF, CR) by its `U+XXXX` form, so a kubeconfig cannot put
/// terminal escape sequences into an error message. `ESC` becomes `U+001B`.
///
/// Control characters, format characters (such as bidirectional overrides and zero-width
/// spaces), private-use characters and noncharacters are replaced; other unassigned code points
/// are kept (this crate carries no Unicode tables).
#[must_use]
pub fn sanitize_install_hint(hint: &str) -> String {
    let mut out = String::with_capacity(hint.len());
    for c in hint.chars() {
        if is_replaced(c) {
            out.push_str(&format!("U+{:04X}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

fn is_replaced(c: char) -> bool {
    let u = u32::from(c);
    if (0x09..=0x0d).contains(&u) {
        return false;
    }
    c.is_control() || is_format(u) || is_private_use(u) || is_noncharacter(u)
}

fn is_format(u: u32) -> bool {
    matches!(
        u,
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    )
}

fn is_private_use(u: u32) -> bool {
    matches!(u, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD)
}

fn is_noncharacter(u: u32) -> bool {
    (0xFDD0..=0xFDEF).contains(&u) || (u & 0xFFFE) == 0xFFFE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_made_visible() {
        assert_eq!(sanitize_install_hint("a\u{1b}[31mred"), "aU+001B[31mred");
        assert_eq!(sanitize_install_hint("tab\tnl\ncr\r"), "tab\tnl\ncr\r");
        assert_eq!(sanitize_install_hint("x\u{202e}y"), "xU+202Ey");
        assert_eq!(sanitize_install_hint("\u{7f}\u{0}"), "U+007FU+0000");
        assert_eq!(
            sanitize_install_hint("brew install kubelogin — ünïcode ✓"),
            "brew install kubelogin — ünïcode ✓"
        );
        assert_eq!(sanitize_install_hint("\u{10ffff}"), "U+10FFFF");
    }
}
