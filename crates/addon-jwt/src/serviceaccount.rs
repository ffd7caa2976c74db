//! Kubernetes service-account tokens: the `kubernetes.io` private claim and an offline verifier
//! configured like kube-apiserver.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

use crate::claims::unix_seconds;
use crate::{Algorithm, Audience, Claims, Error, Issuer, KeySet, Validation, verify};

const CLAIM: &str = "kubernetes.io";

/// kube-apiserver's leeway for `exp`, `nbf` and `iat` (go-jose `DefaultLeeway`).
pub const SERVICE_ACCOUNT_LEEWAY: Duration = Duration::from_secs(60);

/// A reference to a Kubernetes object inside the `kubernetes.io` claim: `{name, uid}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    name: String,
    uid: Option<String>,
}

impl ObjectRef {
    /// The object's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The object's UID, when the claim carries one.
    #[must_use]
    pub fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }
}

/// The typed `kubernetes.io` private claim of a bound service-account token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubernetesClaims {
    namespace: String,
    service_account: ObjectRef,
    pod: Option<ObjectRef>,
    node: Option<ObjectRef>,
    secret: Option<ObjectRef>,
    warn_after: Option<i64>,
}

impl KubernetesClaims {
    /// `namespace`.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// `serviceaccount` (`name`, `uid`).
    #[must_use]
    pub fn service_account(&self) -> &ObjectRef {
        &self.service_account
    }

    /// `pod`, when the token is bound to a Pod.
    #[must_use]
    pub fn pod(&self) -> Option<&ObjectRef> {
        self.pod.as_ref()
    }

    /// `node`, when the token is bound to a Node or to a Pod on a Node.
    #[must_use]
    pub fn node(&self) -> Option<&ObjectRef> {
        self.node.as_ref()
    }

    /// `secret`, when the token is bound to a Secret.
    #[must_use]
    pub fn secret(&self) -> Option<&ObjectRef> {
        self.secret.as_ref()
    }

    /// `warnafter` in Unix seconds (extended-expiry tokens only).
    #[must_use]
    pub fn warn_after_unix(&self) -> Option<i64> {
        self.warn_after
    }

    pub(crate) fn from_value(value: &Value) -> Result<KubernetesClaims, Error> {
        let bad = Error::InvalidClaim(CLAIM);
        let Value::Object(map) = value else {
            return Err(bad);
        };
        let namespace = match map.get("namespace") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => return Err(bad),
        };
        let service_account =
            object_ref(map, "serviceaccount")?.ok_or(Error::InvalidClaim(CLAIM))?;
        let warn_after = match map.get("warnafter") {
            None => None,
            Some(Value::Number(n)) => Some(n.as_i64().ok_or(Error::InvalidClaim(CLAIM))?),
            Some(_) => return Err(bad),
        };
        Ok(KubernetesClaims {
            namespace,
            service_account,
            pod: object_ref(map, "pod")?,
            node: object_ref(map, "node")?,
            secret: object_ref(map, "secret")?,
            warn_after,
        })
    }
}

fn object_ref(map: &Map<String, Value>, name: &str) -> Result<Option<ObjectRef>, Error> {
    let bad = Error::InvalidClaim(CLAIM);
    let Some(value) = map.get(name) else {
        return Ok(None);
    };
    let Value::Object(obj) = value else {
        return Err(bad);
    };
    let name = match obj.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(bad),
    };
    let uid = match obj.get("uid") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad),
    };
    Ok(Some(ObjectRef { name, uid }))
}

/// Verifies projected service-account tokens offline, configured like kube-apiserver: a set of
/// accepted issuers (`--service-account-issuer`), audiences (`--api-audiences`), a 60-second
/// leeway, and the issuer's keys (its `/openid/v1/jwks`).
///
/// Differences from kube-apiserver, by design: `exp`, `iat`, `nbf`, `aud`, `iss` and `sub` are
/// required (bound tokens always carry them; legacy Secret-based tokens are refused), `sub` must
/// equal `system:serviceaccount:<namespace>:<name>` of the `kubernetes.io` claim, and the
/// liveness checks (service account, pod, secret or node still existing with the same UID) need
/// the API server and are left to the caller, for example through a TokenReview.
///
/// ```
/// use addon_jwt::{Audience, Issuer, KeySet, ServiceAccountVerifier};
/// let jwks = r#"{"keys":[{"use":"sig","kty":"EC","kid":"k1","crv":"P-256","alg":"ES256",
///   "x":"FYupetsFdFliEXRPAuyupgpsFTzo80ZQGh9a7XJ_enI","y":"QCfN8N7dcS6ZFqMDpLxZUXdkwkVHOfXQY71Fm0hmpj8"}]}"#;
/// let verifier = ServiceAccountVerifier::new(
///     KeySet::from_jwks(jwks)?,
///     &[Issuer::new("https://kubernetes.default.svc.cluster.local")],
///     &[Audience::new("https://kubernetes.default.svc.cluster.local")],
/// );
/// assert_eq!(verifier.validation().leeway_duration().as_secs(), 60);
/// # Ok::<(), addon_jwt::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ServiceAccountVerifier {
    keys: KeySet,
    validation: Validation,
}

impl ServiceAccountVerifier {
    /// A verifier for tokens from any of `issuers` for any of `audiences`. With no audiences,
    /// the issuers are the audiences (kube-apiserver's default for `--api-audiences`).
    /// Allowed algorithms: `RS256`, `ES256`, `ES384` (what kube-apiserver signs with).
    #[must_use]
    pub fn new(keys: KeySet, issuers: &[Issuer], audiences: &[Audience]) -> ServiceAccountVerifier {
        let defaulted: Vec<Audience>;
        let audiences = if audiences.is_empty() {
            defaulted = issuers.iter().map(|i| Audience::new(i.as_str())).collect();
            &defaulted
        } else {
            audiences
        };
        let mut validation = Validation::new(
            issuers.first().cloned().unwrap_or_else(|| Issuer::new("")),
            audiences
                .first()
                .cloned()
                .unwrap_or_else(|| Audience::new("")),
        );
        for aud in audiences.iter().skip(1) {
            validation = validation.audience(aud.clone());
        }
        for iss in issuers.iter().skip(1) {
            validation = validation.issuer(iss.clone());
        }
        let validation = validation
            .algorithms(&[Algorithm::Rs256, Algorithm::Es256, Algorithm::Es384])
            .leeway(SERVICE_ACCOUNT_LEEWAY);
        ServiceAccountVerifier { keys, validation }
    }

    /// The claim policy in use.
    #[must_use]
    pub fn validation(&self) -> &Validation {
        &self.validation
    }

    /// Verifies a service-account token at `now`.
    ///
    /// # Errors
    ///
    /// Every error of [`verify`](crate::verify); [`Error::MissingClaim`] when the token has no
    /// `kubernetes.io` claim; [`Error::InvalidClaim`] when that claim is malformed, its namespace
    /// is not a DNS-1123 label or its service-account name not a DNS-1123 subdomain (the names
    /// kube-apiserver accepts, so `system:serviceaccount:<namespace>:<name>` splits back into
    /// exactly those two), or `sub` does not name its service account.
    pub fn verify(&self, token: &str, now: SystemTime) -> Result<ServiceAccountToken, Error> {
        let claims = verify(token, &self.keys, &self.validation, now)?;
        let k8s = claims.kubernetes().ok_or(Error::MissingClaim(CLAIM))?;
        // kube-apiserver only ever builds user names it can split again: a namespace that is a
        // DNS-1123 label and a service-account name that is a DNS-1123 subdomain.
        if !is_dns1123_label(k8s.namespace()) || !is_dns1123_subdomain(k8s.service_account().name())
        {
            return Err(Error::InvalidClaim(CLAIM));
        }
        let expected = format!(
            "system:serviceaccount:{}:{}",
            k8s.namespace(),
            k8s.service_account().name()
        );
        if claims.subject() != expected {
            return Err(Error::InvalidClaim("sub"));
        }
        Ok(ServiceAccountToken { claims })
    }
}

/// A DNS-1123 label (a namespace name): 1 to 63 of `a-z`, `0-9` and `-`, starting and ending
/// with a letter or digit.
fn is_dns1123_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (1..=63).contains(&bytes.len())
        && bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
        && bytes.iter().all(|b| alnum(b) || *b == b'-')
}

/// A DNS-1123 subdomain (a service-account name): at most 253 characters, DNS-1123 labels
/// joined by `.`.
fn is_dns1123_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_dns1123_label)
}

/// A verified service-account token and the user kube-apiserver would derive from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccountToken {
    claims: Claims,
}

impl ServiceAccountToken {
    /// All verified claims.
    #[must_use]
    pub fn claims(&self) -> &Claims {
        &self.claims
    }

    fn k8s(&self) -> Option<&KubernetesClaims> {
        self.claims.kubernetes()
    }

    /// The user name, `system:serviceaccount:<namespace>:<name>`.
    #[must_use]
    pub fn user_name(&self) -> &str {
        self.claims.subject()
    }

    /// The service account's namespace.
    #[must_use]
    pub fn namespace(&self) -> &str {
        self.k8s().map_or("", KubernetesClaims::namespace)
    }

    /// The service account's name.
    #[must_use]
    pub fn service_account_name(&self) -> &str {
        self.k8s().map_or("", |k| k.service_account().name())
    }

    /// The user UID: the service account's UID.
    #[must_use]
    pub fn uid(&self) -> Option<&str> {
        self.k8s().and_then(|k| k.service_account().uid())
    }

    /// The groups: `system:serviceaccounts`, `system:serviceaccounts:<namespace>` and
    /// `system:authenticated`.
    #[must_use]
    pub fn groups(&self) -> Vec<String> {
        vec![
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{}", self.namespace()),
            "system:authenticated".to_owned(),
        ]
    }

    /// The user's extra values as kube-apiserver sets them: pod name and UID (both only when both
    /// are known), node name (and UID with it), and `credential-id` `JTI=<jti>`.
    #[must_use]
    pub fn extra(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let prefix = "authentication.kubernetes.io/";
        if let Some(k) = self.k8s() {
            if let Some((pod, uid)) = k.pod().and_then(|p| Some((p.name(), p.uid()?))) {
                out.push((format!("{prefix}pod-name"), pod.to_owned()));
                out.push((format!("{prefix}pod-uid"), uid.to_owned()));
            }
            if let Some(node) = k.node() {
                out.push((format!("{prefix}node-name"), node.name().to_owned()));
                if let Some(uid) = node.uid() {
                    out.push((format!("{prefix}node-uid"), uid.to_owned()));
                }
            }
        }
        if let Some(jti) = self.claims.jwt_id() {
            out.push((format!("{prefix}credential-id"), format!("JTI={jti}")));
        }
        out
    }

    /// Whether the token is past its `warnafter` (an extended-expiry token that kube-apiserver
    /// would count as stale; it is still valid).
    #[must_use]
    pub fn is_stale(&self, now: SystemTime) -> bool {
        self.k8s()
            .and_then(KubernetesClaims::warn_after_unix)
            .is_some_and(|w| unix_seconds(now) > i128::from(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_dns1123_labels() {
        for ok in ["default", "kube-system", "a", "0", "a-0", &"a".repeat(63)] {
            assert!(is_dns1123_label(ok), "{ok}");
        }
        for bad in [
            "",
            "bar:baz",
            "ns ",
            " ns",
            "Kube-System",
            "-a",
            "a-",
            "a.b",
            "a_b",
            "\u{e9}t\u{e9}",
            &"a".repeat(64),
        ] {
            assert!(!is_dns1123_label(bad), "{bad:?}");
        }
    }

    #[test]
    fn service_account_names_are_dns1123_subdomains() {
        let long = [
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(61),
        ]
        .join(".");
        assert_eq!(long.len(), 253);
        for ok in ["default", "my.sa", "a-b.c-d", long.as_str()] {
            assert!(is_dns1123_subdomain(ok), "{ok}");
        }
        let too_long = format!("{long}e");
        for bad in [
            "",
            "bar:baz",
            "dash ",
            "a..b",
            ".a",
            "a.",
            "A",
            "a_b",
            "a/b",
            too_long.as_str(),
        ] {
            assert!(!is_dns1123_subdomain(bad), "{bad:?}");
        }
    }
}
