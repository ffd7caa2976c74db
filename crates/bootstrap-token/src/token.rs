//! The full bootstrap token `<id>.<secret>` and its generation.

use std::fmt;
use std::str::FromStr;

use crate::constants::{TOKEN_ID_LEN, TOKEN_SECRET_LEN};
use crate::{Error, TokenId, TokenSecret};

/// A bootstrap token `<id>.<secret>`, accepted exactly when Kubernetes accepts it
/// (`\A([a-z0-9]{6})\.([a-z0-9]{16})\z`: ASCII only, no trimming, no trailing newline).
///
/// `Display` deliberately prints the **whole token**, secret included: a token is shown once to
/// the person who created it, as `kubeadm token create` does. `Debug` redacts the secret.
/// Parsing never allocates; the secret is zeroed on drop.
///
/// ```
/// use bootstrap_token::BootstrapToken;
/// let token: BootstrapToken = "abcdef.0123456789abcdef".parse()?;
/// assert_eq!(token.id().as_str(), "abcdef");
/// assert_eq!(token.secret().expose_secret(), "0123456789abcdef");
/// assert_eq!(token.to_string(), "abcdef.0123456789abcdef");
/// assert!(!format!("{token:?}").contains("0123456789abcdef"));
/// assert!("abcdef.0123456789abcdef\n".parse::<BootstrapToken>().is_err());
/// # Ok::<(), bootstrap_token::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct BootstrapToken {
    id: TokenId,
    secret: TokenSecret,
}

impl BootstrapToken {
    /// A token from its halves.
    #[must_use]
    pub fn new(id: TokenId, secret: TokenSecret) -> Self {
        Self { id, secret }
    }

    /// Parses a token from bytes. The length is checked first, so huge input is rejected in
    /// constant time.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidToken`] unless the input matches `\A([a-z0-9]{6})\.([a-z0-9]{16})\z`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let (id, secret) = split_token(bytes).ok_or(Error::InvalidToken)?;
        let id = TokenId::from_bytes(id).map_err(|_| Error::InvalidToken)?;
        let secret = TokenSecret::from_bytes(secret).map_err(|_| Error::InvalidToken)?;
        Ok(Self { id, secret })
    }

    /// The public ID half.
    #[must_use]
    pub fn id(&self) -> &TokenId {
        &self.id
    }

    /// The secret half.
    #[must_use]
    pub fn secret(&self) -> &TokenSecret {
        &self.secret
    }

    /// Generates a token from the operating system's cryptographically secure random number
    /// generator (`getrandom`), as kubeadm does. Each of the 22 characters is drawn uniformly
    /// from the 36-character alphabet (bytes ≥ 252 are rejected and redrawn, so there is no
    /// modulo bias).
    ///
    /// ```
    /// let token = bootstrap_token::BootstrapToken::generate()?;
    /// assert_eq!(token.to_string().len(), 23);
    /// # Ok::<(), bootstrap_token::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Rng`] if the operating system's random number generator fails.
    pub fn generate() -> Result<Self, Error> {
        let mut chars = zeroize::Zeroizing::new([0u8; TOKEN_ID_LEN + TOKEN_SECRET_LEN]);
        fill_token_chars(&mut chars[..], |buf| {
            getrandom::fill(buf).map_err(|_| Error::Rng)
        })?;
        Ok(Self::from_chars(&chars))
    }

    /// Generates a token from random bytes the caller supplies: `fill` is called with a buffer
    /// to fill completely, as often as characters are still missing. Use it for deterministic
    /// tests (a seeded generator of any `rand` release: `|buf| rng.fill_bytes(buf)`) or a
    /// hardware source. The bytes must be uniformly random for the token to be secret.
    ///
    /// ```
    /// // A fixed byte stream gives a fixed token (for tests only!).
    /// let mut next = 0u8;
    /// let token = bootstrap_token::BootstrapToken::generate_with(|buf| {
    ///     for b in buf {
    ///         *b = next;
    ///         next = next.wrapping_add(7);
    ///     }
    /// })?;
    /// assert_eq!(token.id().as_str(), "07elsz");
    /// # Ok::<(), bootstrap_token::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Rng`] if `fill` keeps producing bytes that cannot be used (≥ 252) for
    /// [`MAX_FILL_CALLS`](Self::MAX_FILL_CALLS) calls: a stuck source, not a random one.
    pub fn generate_with(mut fill: impl FnMut(&mut [u8])) -> Result<Self, Error> {
        let mut chars = zeroize::Zeroizing::new([0u8; TOKEN_ID_LEN + TOKEN_SECRET_LEN]);
        fill_token_chars(&mut chars[..], |buf| {
            fill(buf);
            Ok(())
        })?;
        Ok(Self::from_chars(&chars))
    }

    /// The most times generation asks its source for bytes before it gives up on a source that
    /// never yields a usable byte. A uniform source needs more than 4 calls with probability
    /// below 10⁻¹⁰.
    pub const MAX_FILL_CALLS: usize = 64;

    fn from_chars(chars: &[u8; TOKEN_ID_LEN + TOKEN_SECRET_LEN]) -> Self {
        let mut id = [0u8; TOKEN_ID_LEN];
        let mut secret = [0u8; TOKEN_SECRET_LEN];
        for (i, &c) in chars.iter().enumerate() {
            if let Some(slot) = id.get_mut(i) {
                *slot = c;
            } else if let Some(slot) = secret.get_mut(i.saturating_sub(TOKEN_ID_LEN)) {
                *slot = c;
            }
        }
        let token = Self {
            id: TokenId::from_array(id),
            secret: TokenSecret::from_array(secret),
        };
        zeroize::Zeroize::zeroize(&mut secret);
        token
    }
}

impl FromStr for BootstrapToken {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Self::from_bytes(s.as_bytes())
    }
}

/// Prints the whole token, secret included. This is deliberate: use it only to show a new token
/// to its owner once.
impl fmt::Display for BootstrapToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id.as_str())?;
        f.write_str(".")?;
        f.write_str(self.secret.expose_secret())
    }
}

impl fmt::Debug for BootstrapToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BootstrapToken")
            .field("id", &self.id.as_str())
            .field("secret", &self.secret)
            .finish()
    }
}

/// Splits `<6 bytes>.<16 bytes>` after checking the total length; no character checks.
pub(crate) fn split_token(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    if bytes.len() != TOKEN_ID_LEN + 1 + TOKEN_SECRET_LEN {
        return None;
    }
    let (id, rest) = bytes.split_at_checked(TOKEN_ID_LEN)?;
    let (dot, secret) = rest.split_first()?;
    (*dot == b'.').then_some((id, secret))
}

/// Fills `out` with uniformly drawn token characters, rejecting random bytes ≥ 252 (= 7 × 36).
/// Each draw asks for exactly as many bytes as characters are still missing, so the random
/// stream is consumed without gaps.
fn fill_token_chars(
    out: &mut [u8],
    mut fill: impl FnMut(&mut [u8]) -> Result<(), Error>,
) -> Result<(), Error> {
    const CHARSET: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut pool = zeroize::Zeroizing::new([0u8; TOKEN_ID_LEN + TOKEN_SECRET_LEN]);
    let mut filled = 0usize;
    let mut calls = 0usize;
    while filled < out.len() {
        if calls == BootstrapToken::MAX_FILL_CALLS {
            return Err(Error::Rng);
        }
        calls = calls.saturating_add(1);
        let missing = out.len().saturating_sub(filled);
        let Some(buf) = pool.get_mut(..missing) else {
            return Ok(());
        };
        fill(buf)?;
        for &b in buf.iter() {
            if b < 252
                && let (Some(slot), Some(&c)) =
                    (out.get_mut(filled), CHARSET.get(usize::from(b % 36)))
            {
                *slot = c;
                filled = filled.saturating_add(1);
            }
        }
    }
    Ok(())
}
