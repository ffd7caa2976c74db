//! JOSE signature algorithms.

use core::fmt;
use core::str::FromStr;

use crate::Error;

/// A JWS signature algorithm this crate implements (RFC 7518, RFC 8037).
///
/// `none` and every other name are not representable. `HS256` is only ever usable with a key built
/// by [`KeySet::from_hmac_secret`](crate::KeySet::from_hmac_secret).
///
/// ```
/// use addon_jwt::Algorithm;
/// assert_eq!("ES256".parse::<Algorithm>()?, Algorithm::Es256);
/// assert!("none".parse::<Algorithm>().is_err());
/// assert!("es256".parse::<Algorithm>().is_err()); // names are case-sensitive
/// # Ok::<(), addon_jwt::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Algorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// RSASSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt.
    Ps256,
    /// ECDSA on P-256 with SHA-256, 64-byte `r || s` signatures.
    Es256,
    /// ECDSA on P-384 with SHA-384, 96-byte `r || s` signatures.
    Es384,
    /// Ed25519 (RFC 8037 `EdDSA` with `crv` `Ed25519`), strict verification.
    EdDsa,
    /// HMAC with SHA-256; only with an explicit shared secret.
    Hs256,
}

impl Algorithm {
    /// Every supported algorithm.
    pub const ALL: [Algorithm; 6] = [
        Algorithm::Rs256,
        Algorithm::Ps256,
        Algorithm::Es256,
        Algorithm::Es384,
        Algorithm::EdDsa,
        Algorithm::Hs256,
    ];

    /// The asymmetric algorithms (the default allow-list of [`Validation`](crate::Validation)).
    pub const ASYMMETRIC: [Algorithm; 5] = [
        Algorithm::Rs256,
        Algorithm::Ps256,
        Algorithm::Es256,
        Algorithm::Es384,
        Algorithm::EdDsa,
    ];

    /// The JOSE name (`RS256`, `PS256`, `ES256`, `ES384`, `EdDSA`, `HS256`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Algorithm::Rs256 => "RS256",
            Algorithm::Ps256 => "PS256",
            Algorithm::Es256 => "ES256",
            Algorithm::Es384 => "ES384",
            Algorithm::EdDsa => "EdDSA",
            Algorithm::Hs256 => "HS256",
        }
    }

    pub(crate) const fn bit(self) -> u8 {
        match self {
            Algorithm::Rs256 => 1,
            Algorithm::Ps256 => 2,
            Algorithm::Es256 => 4,
            Algorithm::Es384 => 8,
            Algorithm::EdDsa => 16,
            Algorithm::Hs256 => 32,
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Algorithm {
    type Err = Error;

    /// Parses a JOSE algorithm name, case-sensitively.
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedAlgorithm`] for any other name, including `none`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "RS256" => Algorithm::Rs256,
            "PS256" => Algorithm::Ps256,
            "ES256" => Algorithm::Es256,
            "ES384" => Algorithm::Es384,
            "EdDSA" => Algorithm::EdDsa,
            "HS256" => Algorithm::Hs256,
            _ => return Err(Error::UnsupportedAlgorithm),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for alg in Algorithm::ALL {
            assert_eq!(alg.as_str().parse::<Algorithm>().unwrap(), alg);
            assert_eq!(alg.to_string(), alg.as_str());
        }
    }

    #[test]
    fn other_names_are_rejected() {
        for name in [
            "none", "NONE", "None", "nOnE", "hs256", "rs256", "HS384", "ES512", "Ed25519", "",
        ] {
            assert_eq!(
                name.parse::<Algorithm>(),
                Err(Error::UnsupportedAlgorithm),
                "{name}"
            );
        }
    }
}
