//! Verified claims.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use crate::{Algorithm, Error, KubernetesClaims, Validation};

/// Maximum length in bytes of `sub`.
pub const MAX_SUBJECT_BYTES: usize = 1024;
/// Maximum number of `aud` values.
pub const MAX_AUDIENCES: usize = 32;

/// The claims of a token that passed [`verify`](crate::verify): signature, algorithm, issuer,
/// audience and time checks. There is no other way to build one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    subject: String,
    issuer: String,
    audiences: Vec<String>,
    expires_at: i64,
    not_before: i64,
    issued_at: i64,
    jwt_id: Option<String>,
    kubernetes: Option<KubernetesClaims>,
    algorithm: Algorithm,
    key_id: Option<String>,
}

impl Claims {
    /// `sub`: the authenticated user name (non-empty, at most [`MAX_SUBJECT_BYTES`], no control
    /// characters).
    #[must_use]
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// `iss`, one of the accepted issuers.
    #[must_use]
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Every `aud` value (a string `aud` gives one value).
    #[must_use]
    pub fn audiences(&self) -> &[String] {
        &self.audiences
    }

    /// `exp` in Unix seconds (fractions rounded down, out-of-range values saturated).
    #[must_use]
    pub fn expires_at_unix(&self) -> i64 {
        self.expires_at
    }

    /// `nbf` in Unix seconds (fractions rounded up).
    #[must_use]
    pub fn not_before_unix(&self) -> i64 {
        self.not_before
    }

    /// `iat` in Unix seconds (fractions rounded up).
    #[must_use]
    pub fn issued_at_unix(&self) -> i64 {
        self.issued_at
    }

    /// `exp` as a time, or `None` when it is not representable (far future or before 1970).
    #[must_use]
    pub fn expires_at(&self) -> Option<SystemTime> {
        u64::try_from(self.expires_at)
            .ok()
            .and_then(|s| UNIX_EPOCH.checked_add(Duration::from_secs(s)))
    }

    /// `jti`, when present.
    #[must_use]
    pub fn jwt_id(&self) -> Option<&str> {
        self.jwt_id.as_deref()
    }

    /// The typed `kubernetes.io` private claim of a service-account token, when present.
    #[must_use]
    pub fn kubernetes(&self) -> Option<&KubernetesClaims> {
        self.kubernetes.as_ref()
    }

    /// The algorithm the token was verified with.
    #[must_use]
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The header `kid`, when present.
    #[must_use]
    pub fn key_id(&self) -> Option<&str> {
        self.key_id.as_deref()
    }

    /// Whether the token has expired at `now` with `leeway` (`now >= exp + leeway`).
    #[must_use]
    pub fn is_expired(&self, now: SystemTime, leeway: Duration) -> bool {
        unix_seconds(now)
            >= i128::from(self.expires_at).saturating_add(i128::from(leeway.as_secs()))
    }

    /// Parses and checks the claim set of a token whose signature has been verified.
    pub(crate) fn from_verified(
        payload: &Map<String, Value>,
        validation: &Validation,
        now: SystemTime,
        algorithm: Algorithm,
        key_id: Option<&str>,
    ) -> Result<Claims, Error> {
        // Types first: a wrong type is an error even when a later check would also fail.
        let exp = numeric_date(payload, "exp", Round::Down)?;
        let nbf = numeric_date(payload, "nbf", Round::Up)?;
        let iat = numeric_date(payload, "iat", Round::Up)?;
        let issuer = string_claim(payload, "iss")?;
        let subject = string_claim(payload, "sub")?;
        let audiences = audiences(payload)?;
        let jwt_id = match payload.get("jti") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(Error::InvalidClaim("jti")),
        };
        let kubernetes = payload
            .get("kubernetes.io")
            .map(KubernetesClaims::from_value)
            .transpose()?;

        if subject.is_empty()
            || subject.len() > MAX_SUBJECT_BYTES
            || subject.chars().any(is_forbidden_char)
        {
            return Err(Error::InvalidClaim("sub"));
        }

        let now_s = unix_seconds(now);
        let leeway = i128::from(validation.leeway_duration().as_secs());
        if now_s >= i128::from(exp).saturating_add(leeway) {
            return Err(Error::Expired);
        }
        if now_s < i128::from(nbf).saturating_sub(leeway) {
            return Err(Error::NotYetValid);
        }
        if i128::from(iat) > now_s.saturating_add(leeway) {
            return Err(Error::IssuedInFuture);
        }
        if !validation.issuers().iter().any(|i| i.as_str() == issuer) {
            return Err(Error::WrongIssuer);
        }
        if !audiences
            .iter()
            .any(|a| validation.audiences().iter().any(|v| v.as_str() == a))
        {
            return Err(Error::WrongAudience);
        }
        Ok(Claims {
            subject,
            issuer,
            audiences,
            expires_at: exp,
            not_before: nbf,
            issued_at: iat,
            jwt_id,
            kubernetes,
            algorithm,
            key_id: key_id.map(str::to_owned),
        })
    }
}

/// Seconds since the Unix epoch, rounded down (negative before 1970).
pub(crate) fn unix_seconds(now: SystemTime) -> i128 {
    match now.duration_since(UNIX_EPOCH) {
        Ok(d) => i128::from(d.as_secs()),
        Err(e) => {
            let d = e.duration();
            let up = if d.subsec_nanos() > 0 { 1 } else { 0 };
            i128::from(d.as_secs()).saturating_add(up).saturating_neg()
        }
    }
}

fn is_forbidden_char(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}'
}

#[derive(Clone, Copy)]
enum Round {
    Down,
    Up,
}

/// A NumericDate: a JSON number. Anything else (string, bool, null, array, object) is an error.
fn numeric_date(
    payload: &Map<String, Value>,
    name: &'static str,
    round: Round,
) -> Result<i64, Error> {
    let Some(value) = payload.get(name) else {
        return Err(Error::MissingClaim(name));
    };
    let Value::Number(n) = value else {
        return Err(Error::InvalidClaim(name));
    };
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    if n.as_u64().is_some() {
        return Ok(i64::MAX);
    }
    match n.as_f64() {
        Some(f) if f.is_finite() => {
            let r = match round {
                Round::Down => f.floor(),
                Round::Up => f.ceil(),
            };
            // `as` saturates at the i64 bounds.
            #[allow(clippy::cast_possible_truncation)]
            Ok(r as i64)
        }
        _ => Err(Error::InvalidClaim(name)),
    }
}

fn string_claim(payload: &Map<String, Value>, name: &'static str) -> Result<String, Error> {
    match payload.get(name) {
        None => Err(Error::MissingClaim(name)),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(Error::InvalidClaim(name)),
    }
}

fn audiences(payload: &Map<String, Value>) -> Result<Vec<String>, Error> {
    const AUD: &str = "aud";
    let bad = Error::InvalidClaim(AUD);
    let list = match payload.get(AUD) {
        None => return Err(Error::MissingClaim(AUD)),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => {
            if items.is_empty() || items.len() > MAX_AUDIENCES {
                return Err(bad);
            }
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                let Value::String(s) = item else {
                    return Err(bad);
                };
                out.push(s.clone());
            }
            out
        }
        Some(_) => return Err(bad),
    };
    if list.iter().any(String::is_empty) {
        return Err(Error::InvalidClaim(AUD));
    }
    Ok(list)
}
