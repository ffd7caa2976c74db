//! The TokenReview (`authentication.k8s.io/v1`): the request that asks the API server who a
//! bearer token belongs to, and the reading of its answer, decided as `k8s.io/apiserver`'s
//! webhook token authenticator decides it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::bounded_json;
use crate::cache::TokenCacheKey;
use crate::error::Error;
use crate::token::BearerToken;
use crate::user::UserInfo;

/// The largest TokenReview answer read, in bytes. The API server echoes the request, token
/// included, and adds the user: 256 KiB leaves room for a user with thousands of groups.
pub const MAX_TOKEN_REVIEW_BYTES: usize = 256 * 1024;

/// The most audiences a TokenReview asks for.
pub const MAX_REVIEW_AUDIENCES: usize = 32;

/// The longest `status.error` kept from an answer, in bytes; the rest is cut.
pub const MAX_REVIEW_ERROR_BYTES: usize = 1024;

const API_VERSION: &str = "authentication.k8s.io/v1";
const KIND: &str = "TokenReview";
const WHAT: &str = "TokenReview answer";

/// One TokenReview: a bearer token, the audiences it must be valid for, and the audiences the
/// API server stands for when its answer names none.
///
/// ```
/// use delegated_auth::{BearerToken, TokenReview, TokenReviewOutcome};
/// let review = TokenReview::new(BearerToken::new("a-token".to_owned())?)
///     .with_audiences(["https://metrics.example"]);
/// let body = review.to_json();
/// assert!(body.starts_with(br#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview""#));
/// let answer = br#"{"status":{"authenticated":true,"audiences":["https://metrics.example"],
///   "user":{"username":"system:serviceaccount:monitoring:prometheus",
///           "groups":["system:serviceaccounts","system:authenticated"]}}}"#;
/// match review.read_answer(201, answer)? {
///     TokenReviewOutcome::Authenticated { user, .. } => {
///         assert_eq!(user.name, "system:serviceaccount:monitoring:prometheus");
///     }
///     other => panic!("{other:?}"),
/// }
/// # Ok::<(), delegated_auth::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct TokenReview {
    token: BearerToken,
    audiences: Vec<String>,
    implicit_audiences: Vec<String>,
}

/// What a TokenReview answer decides.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenReviewOutcome {
    /// The token is valid for (at least one of) the audiences asked for.
    Authenticated {
        /// Who the token belongs to.
        user: UserInfo,
        /// The audiences asked for that the token is valid for, in the order asked (empty when
        /// none were asked for).
        audiences: Vec<String>,
    },
    /// The token is not valid, or not for the audiences asked for.
    Unauthenticated {
        /// The API server's `status.error`, cut to [`MAX_REVIEW_ERROR_BYTES`], with the token
        /// replaced by `<redacted>` should it appear in it.
        error: Option<String>,
    },
}

impl TokenReviewOutcome {
    /// Whether a decision cache may keep this outcome: an authentication, or a refusal that
    /// came without an error. `k8s.io/apiserver` turns a `status.error` into an error, and its
    /// token cache never keeps errors; so does [`TokenCache`](crate::TokenCache).
    #[must_use]
    pub fn is_cacheable(&self) -> bool {
        match self {
            TokenReviewOutcome::Authenticated { .. } => true,
            TokenReviewOutcome::Unauthenticated { error } => error.is_none(),
        }
    }

    /// Whether the token was authenticated.
    #[must_use]
    pub fn is_authenticated(&self) -> bool {
        matches!(self, TokenReviewOutcome::Authenticated { .. })
    }
}

impl TokenReview {
    /// A review of `token` with no audiences: the answer is not checked for audiences (as
    /// `k8s.io/apiserver` when the request is not audience-limited).
    #[must_use]
    pub fn new(token: BearerToken) -> TokenReview {
        TokenReview {
            token,
            audiences: Vec::new(),
            implicit_audiences: Vec::new(),
        }
    }

    /// The same review, asking for `audiences` (`spec.audiences`): the answer authenticates
    /// only if the audiences it names (or the implicit ones, when it names none) include one
    /// of them. At most [`MAX_REVIEW_AUDIENCES`] are kept; empty strings are dropped.
    #[must_use]
    pub fn with_audiences<I, S>(mut self, audiences: I) -> TokenReview
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.audiences = bounded_audiences(audiences);
        self
    }

    /// The same review, with the API server's own audiences (`--api-audiences`, the
    /// delegating authenticator's `APIAudiences`): what an answer without `status.audiences`
    /// stands for. Empty by default: such an answer then authenticates no audience-limited
    /// review.
    #[must_use]
    pub fn with_implicit_audiences<I, S>(mut self, audiences: I) -> TokenReview
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.implicit_audiences = bounded_audiences(audiences);
        self
    }

    /// The token under review.
    #[must_use]
    pub fn token(&self) -> &BearerToken {
        &self.token
    }

    /// The audiences asked for.
    #[must_use]
    pub fn audiences(&self) -> &[String] {
        &self.audiences
    }

    /// The key a decision cache and a single-flight map keep this review under: a SHA-256 of
    /// the token and the audiences, never the token itself.
    #[must_use]
    pub fn cache_key(&self) -> TokenCacheKey {
        TokenCacheKey::new(&self.token, &self.audiences)
    }

    /// The request body to `POST` to `/apis/authentication.k8s.io/v1/tokenreviews`. It holds
    /// the token, so it is zeroised on drop; it is written in one allocation.
    #[must_use]
    pub fn to_json(&self) -> Zeroizing<Vec<u8>> {
        #[derive(Serialize)]
        struct Body<'a> {
            #[serde(rename = "apiVersion")]
            api_version: &'static str,
            kind: &'static str,
            spec: Spec<'a>,
        }
        #[derive(Serialize)]
        struct Spec<'a> {
            token: &'a str,
            #[serde(skip_serializing_if = "<[String]>::is_empty")]
            audiences: &'a [String],
        }
        let token = self.token.expose_secret();
        // The token is visible ASCII (at most `"` and `\` double); an audience may be escaped
        // to six bytes per byte. Room for all of it, so the buffer never moves (and leaves no
        // copy of the token behind).
        let room = self.audiences.iter().fold(
            token.len().saturating_mul(2).saturating_add(256),
            |n, a| {
                n.saturating_add(a.len().saturating_mul(6))
                    .saturating_add(3)
            },
        );
        let mut out = Zeroizing::new(Vec::with_capacity(room));
        let body = Body {
            api_version: API_VERSION,
            kind: KIND,
            spec: Spec {
                token,
                audiences: &self.audiences,
            },
        };
        // Serialising borrowed strings into a Vec cannot fail.
        if serde_json::to_writer(&mut *out, &body).is_err() {
            out.clear();
        }
        out
    }

    /// Reads the API server's answer to this review: `http_status` and the body.
    ///
    /// Decided as `k8s.io/apiserver`'s webhook token authenticator decides:
    /// 1. a status other than 200 or 201 is a backend failure (an error, never a decision);
    /// 2. when audiences were asked for, the answer's `status.audiences` (or, when it names
    ///    none, the implicit audiences) must include one of them, else the token is not
    ///    authenticated (whatever `status.authenticated` says);
    /// 3. `status.authenticated` false is a refusal, with `status.error` when given;
    /// 4. otherwise the user is `status.user`.
    ///
    /// # Errors
    ///
    /// [`Error::ReviewFailed`] for another HTTP status; [`Error::TooLarge`] beyond
    /// [`MAX_TOKEN_REVIEW_BYTES`]; [`Error::Json`] when the body is not a TokenReview's JSON;
    /// [`Error::Invalid`] for another `apiVersion` or `kind`, or an authenticated answer
    /// without a user name.
    pub fn read_answer(&self, http_status: u16, body: &[u8]) -> Result<TokenReviewOutcome, Error> {
        if !matches!(http_status, 200 | 201) {
            return Err(Error::ReviewFailed {
                what: "TokenReview",
                status: http_status,
            });
        }
        let answer: Answer = bounded_json::from_slice(WHAT, MAX_TOKEN_REVIEW_BYTES, body)?;
        bounded_json::check_type(
            WHAT,
            answer.api_version.as_deref(),
            answer.kind.as_deref(),
            API_VERSION,
            KIND,
        )?;
        let status = answer.status.unwrap_or_default();
        let mut audiences = Vec::new();
        if !self.audiences.is_empty() {
            let got = match status.audiences.as_deref() {
                Some(auds) if !auds.is_empty() => auds,
                _ => self.implicit_audiences.as_slice(),
            };
            audiences = self
                .audiences
                .iter()
                .filter(|a| got.contains(a))
                .cloned()
                .collect();
            if audiences.is_empty() {
                return Ok(TokenReviewOutcome::Unauthenticated { error: None });
            }
        }
        if status.authenticated != Some(true) {
            let error = status
                .error
                .filter(|e| !e.is_empty())
                .map(|e| self.scrub(e));
            return Ok(TokenReviewOutcome::Unauthenticated { error });
        }
        let wire = status.user.unwrap_or_default();
        let username = wire.username.unwrap_or_default();
        if username.is_empty() {
            return Err(Error::Invalid {
                what: WHAT,
                reason: "authenticated without a user name",
            });
        }
        let user = UserInfo {
            name: username,
            uid: wire.uid.filter(|u| !u.is_empty()),
            groups: wire.groups.unwrap_or_default(),
            extra: wire
                .extra
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.unwrap_or_default()))
                .collect(),
        };
        Ok(TokenReviewOutcome::Authenticated { user, audiences })
    }

    /// `status.error`, bounded, with the token taken out should the server have quoted it.
    fn scrub(&self, error: String) -> String {
        let token = self.token.expose_secret();
        let error = if error.contains(token) {
            error.replace(token, "<redacted>")
        } else {
            error
        };
        truncate(error, MAX_REVIEW_ERROR_BYTES)
    }
}

fn bounded_audiences<I, S>(audiences: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    audiences
        .into_iter()
        .map(Into::into)
        .filter(|a| !a.is_empty())
        .take(MAX_REVIEW_AUDIENCES)
        .collect()
}

/// `s` cut to at most `max` bytes, on a character boundary.
pub(crate) fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end = end.saturating_sub(1);
        }
        s.truncate(end);
    }
    s
}

// The answer as Go decodes it: `null` and absent read as the zero value.
#[derive(Deserialize)]
struct Answer {
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
    kind: Option<String>,
    status: Option<Status>,
}

#[derive(Deserialize, Default)]
struct Status {
    authenticated: Option<bool>,
    user: Option<WireUser>,
    audiences: Option<Vec<String>>,
    error: Option<String>,
}

#[derive(Deserialize, Default)]
pub(crate) struct WireUser {
    pub(crate) username: Option<String>,
    pub(crate) uid: Option<String>,
    pub(crate) groups: Option<Vec<String>>,
    pub(crate) extra: Option<BTreeMap<String, Option<Vec<String>>>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(auds: &[&str]) -> TokenReview {
        TokenReview::new(BearerToken::new("tok-CANARY".to_owned()).unwrap())
            .with_audiences(auds.iter().copied())
    }

    #[test]
    fn body_is_a_token_review() {
        let body = review(&["a", "b"]).to_json();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview",
                "spec":{"token":"tok-CANARY","audiences":["a","b"]}})
        );
        let body = review(&[]).to_json();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["spec"], serde_json::json!({"token":"tok-CANARY"}));
    }

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate("\u{e9}\u{e9}".to_owned(), 3), "\u{e9}");
        assert_eq!(truncate("abc".to_owned(), 3), "abc");
    }
}
