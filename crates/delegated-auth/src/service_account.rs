//! Offline verification of projected service-account tokens against the cluster's OIDC
//! discovery (`/.well-known/openid-configuration`, then its `jwks_uri`, usually
//! `/openid/v1/jwks`): the fast path for pod-to-add-on calls, audience-bound, with no API call
//! per new token. The signature, claims and service-account rules are addon-jwt's
//! ([`addon_jwt::ServiceAccountVerifier`]).
//!
//! What offline verification cannot see: that the ServiceAccount, Pod, Secret or Node the
//! token is bound to was deleted. kube-apiserver checks that on each TokenReview; a token
//! verified here stays valid until its `exp` (projected tokens live one hour by default, and
//! the kubelet renews them). Where revocation on deletion matters, use a TokenReview.

use std::time::SystemTime;

use serde::Deserialize;

use crate::bounded_json;
use crate::error::Error;
use crate::token::BearerTokenRef;
use crate::user::UserInfo;

/// The largest OIDC discovery document read, in bytes.
pub const MAX_DISCOVERY_BYTES: usize = 64 * 1024;

const WHAT: &str = "OIDC discovery document";

/// The parts of an OIDC discovery document (`/.well-known/openid-configuration`) that offline
/// verification needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcDiscovery {
    issuer: String,
    jwks_uri: String,
}

impl OidcDiscovery {
    /// Reads the document (at most [`MAX_DISCOVERY_BYTES`]).
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`]; [`Error::Json`] when it is not the JSON of an object with string
    /// members; [`Error::Invalid`] when `issuer` or `jwks_uri` is missing or empty, or
    /// `jwks_uri` is not an `https://` URL.
    pub fn from_json(json: &[u8]) -> Result<OidcDiscovery, Error> {
        #[derive(Deserialize)]
        struct Doc {
            issuer: Option<String>,
            jwks_uri: Option<String>,
        }
        let doc: Doc = bounded_json::from_slice(WHAT, MAX_DISCOVERY_BYTES, json)?;
        let issuer = doc.issuer.filter(|i| !i.is_empty()).ok_or(Error::Invalid {
            what: WHAT,
            reason: "no issuer",
        })?;
        let jwks_uri = doc
            .jwks_uri
            .filter(|u| !u.is_empty())
            .ok_or(Error::Invalid {
                what: WHAT,
                reason: "no jwks_uri",
            })?;
        if !jwks_uri.starts_with("https://") {
            return Err(Error::Invalid {
                what: WHAT,
                reason: "jwks_uri is not an https URL",
            });
        }
        Ok(OidcDiscovery { issuer, jwks_uri })
    }

    /// `issuer`: the `iss` of the tokens (`--service-account-issuer`).
    #[must_use]
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// `jwks_uri`: where the public keys are. A client may fetch the keys from the API
    /// server's `/openid/v1/jwks` instead, with its own credentials.
    #[must_use]
    pub fn jwks_uri(&self) -> &str {
        &self.jwks_uri
    }
}

/// Verifies projected service-account tokens offline for a set of audiences.
///
/// ```
/// use delegated_auth::{OidcDiscovery, ServiceAccountAuthenticator};
/// let discovery = OidcDiscovery::from_json(br#"{"issuer":"https://kubernetes.default.svc.cluster.local",
///   "jwks_uri":"https://10.0.0.1:6443/openid/v1/jwks"}"#)?;
/// let jwks = br#"{"keys":[{"use":"sig","kty":"EC","kid":"k1","crv":"P-256","alg":"ES256",
///   "x":"FYupetsFdFliEXRPAuyupgpsFTzo80ZQGh9a7XJ_enI","y":"QCfN8N7dcS6ZFqMDpLxZUXdkwkVHOfXQY71Fm0hmpj8"}]}"#;
/// let authenticator = ServiceAccountAuthenticator::new(&discovery, jwks, &["https://metrics.example".to_owned()])?;
/// # let _ = authenticator;
/// # Ok::<(), delegated_auth::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ServiceAccountAuthenticator {
    verifier: addon_jwt::ServiceAccountVerifier,
}

impl ServiceAccountAuthenticator {
    /// An authenticator for tokens of `discovery`'s issuer, signed by a key of `jwks` (the
    /// JSON Web Key Set at its `jwks_uri`), for any of `audiences` (never empty: a token for
    /// the API server is no token for an add-on).
    ///
    /// # Errors
    ///
    /// [`Error::Jwt`] when the key set is not one addon-jwt accepts (size, count, key types);
    /// [`Error::Invalid`] when `audiences` is empty or holds an empty string.
    pub fn new(
        discovery: &OidcDiscovery,
        jwks: &[u8],
        audiences: &[String],
    ) -> Result<ServiceAccountAuthenticator, Error> {
        if audiences.is_empty() || audiences.iter().any(String::is_empty) {
            return Err(Error::Invalid {
                what: "service-account audiences",
                reason: "at least one, none empty",
            });
        }
        if jwks.len() > addon_jwt::MAX_JWKS_BYTES {
            return Err(Error::TooLarge {
                what: "JSON Web Key Set",
                limit: addon_jwt::MAX_JWKS_BYTES,
            });
        }
        let text = core::str::from_utf8(jwks).map_err(|_| Error::Invalid {
            what: "JSON Web Key Set",
            reason: "not UTF-8",
        })?;
        let keys = addon_jwt::KeySet::from_jwks(text).map_err(Error::Jwt)?;
        let audiences: Vec<addon_jwt::Audience> = audiences
            .iter()
            .map(|a| addon_jwt::Audience::new(a.as_str()))
            .collect();
        let verifier = addon_jwt::ServiceAccountVerifier::new(
            keys,
            &[addon_jwt::Issuer::new(discovery.issuer())],
            &audiences,
        );
        Ok(ServiceAccountAuthenticator { verifier })
    }

    /// The user of `token` at `now`, as kube-apiserver makes it: `system:serviceaccount:
    /// <namespace>:<name>`, the service account's UID, the groups `system:serviceaccounts`,
    /// `system:serviceaccounts:<namespace>` and `system:authenticated`, and the extra
    /// `authentication.kubernetes.io/pod-name`, `pod-uid`, `node-name`, `node-uid` and
    /// `credential-id` (`JTI=<jti>`) where the token carries them.
    ///
    /// # Errors
    ///
    /// [`Error::Jwt`] when the token does not verify: signature, issuer, audience, expiry
    /// (with kube-apiserver's 60-second leeway), or the `kubernetes.io` claim.
    pub fn authenticate<'a>(
        &self,
        token: impl Into<BearerTokenRef<'a>>,
        now: SystemTime,
    ) -> Result<UserInfo, Error> {
        let sa = self
            .verifier
            .verify(token.into().expose_secret(), now)
            .map_err(Error::Jwt)?;
        let mut user = UserInfo::new(sa.user_name()).with_groups(sa.groups());
        user.uid = sa.uid().map(str::to_owned);
        for (k, v) in sa.extra() {
            user = user.with_extra(k, [v]);
        }
        Ok(user)
    }
}
