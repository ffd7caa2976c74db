//! The service-account token issuer, as kube-apiserver's (`pkg/serviceaccount`): TokenRequest
//! (`serviceaccounts/<name>/token`) signs a JWT for a stored ServiceAccount, the token
//! authenticator verifies the tokens it issued (on requests and in TokenReviews), and the OIDC
//! discovery documents publish the key.
//!
//! A TokenRequest may bind the token to a Secret of the ServiceAccount's namespace
//! (`spec.boundObjectRef`, `kubectl create token --bound-object-kind Secret`): the token then
//! carries the Secret's name and UID in its `kubernetes.io` claim and stops authenticating once
//! that Secret is deleted. A Pod or Node is refused as kube-apiserver refuses one that does not
//! exist (the double stores neither).
//!
//! The key is an ECDSA P-256 key the double generates at start (`ES256`), or the one it is
//! given, as kube-apiserver signs with whatever key it is given (`RS256` for the RSA keys
//! kubeadm makes). The issuer is the
//! server's URL, which is also the API server's one audience (kube-apiserver's default for
//! `--api-audiences`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use addon_jwt::{Algorithm, Audience, Issuer, KeySet, ServiceAccountVerifier, SigningKey};
use base64::Engine as _;
use serde_json::{Value, json};
use zeroize::Zeroizing;

use super::Error;
use super::auth::User;
use super::ids;
use super::rbac::go_quoted_list;
use super::status::{ApiError, FieldError};
use super::store::{Resource, Store};

/// The shortest token a TokenRequest may ask for (kube's validation: 10 minutes).
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest (2^32 seconds).
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;
/// The lifetime when the request names none (the API's default: one hour).
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The `apiVersion` of TokenRequest.
const API_VERSION: &str = "authentication.k8s.io/v1";

/// The issuer: its key, its URL, and the longest lifetime it grants.
pub(crate) struct TokenIssuer {
    key: SigningKey,
    keys: KeySet,
    issuer: String,
    jwk: Value,
    max_expiration: Option<Duration>,
}

impl std::fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenIssuer")
            .field("issuer", &self.issuer)
            .field("key", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// Why a token did not authenticate: no opinion (not one of this issuer's), or refused with
/// kube-apiserver's error text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    NotOurs,
    Refused(String),
}

impl TokenIssuer {
    /// A new P-256 key, issuing as `issuer`; `max_expiration` caps the lifetime granted
    /// (`--service-account-max-token-expiration`).
    pub(crate) fn generate(issuer: &str, max_expiration: Option<Duration>) -> Result<Self, Error> {
        let pair = super::ca::new_key()?;
        let pem = Zeroizing::new(pair.serialize_pem());
        let key = SigningKey::from_pkcs8_pem(&pem).map_err(|_| Error::Random)?;
        TokenIssuer::with_key(key, issuer, max_expiration)
    }

    /// The key of `pem` (kube-apiserver's `--service-account-signing-key-file`: an RSA key
    /// signs `RS256`, a P-256 key `ES256`, a P-384 key `ES384`), issuing as `issuer`.
    pub(crate) fn from_pem(
        pem: &str,
        issuer: &str,
        max_expiration: Option<Duration>,
    ) -> Result<Self, Error> {
        let key = SigningKey::from_pem(pem).map_err(Error::ServiceAccountKey)?;
        TokenIssuer::with_key(key, issuer, max_expiration)
    }

    fn with_key(
        key: SigningKey,
        issuer: &str,
        max_expiration: Option<Duration>,
    ) -> Result<Self, Error> {
        let keys = key.public_key_set().map_err(Error::ServiceAccountKey)?;
        let jwk = public_jwk(&key)?;
        Ok(TokenIssuer {
            key,
            keys,
            issuer: issuer.to_owned(),
            jwk,
            max_expiration,
        })
    }

    /// The issuer URL (`iss`), also the API server's audience.
    pub(crate) fn issuer(&self) -> &str {
        &self.issuer
    }

    /// `/.well-known/openid-configuration`.
    pub(crate) fn openid_configuration(&self) -> Value {
        json!({
            "issuer": self.issuer,
            "jwks_uri": format!("{}/openid/v1/jwks", self.issuer),
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": [self.key.algorithm().as_str()],
        })
    }

    /// `/openid/v1/jwks`.
    pub(crate) fn jwks(&self) -> Value {
        json!({"keys": [self.jwk]})
    }

    /// A TokenRequest (`body`) for the ServiceAccount `namespace/name`: the created request,
    /// with the token and its expiry in its status.
    pub(crate) fn token_request(
        &self,
        store: &Store,
        namespace: &str,
        name: &str,
        body: &Value,
        now: SystemTime,
    ) -> Result<Value, ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "the request body must be a JSON object",
            ));
        }
        match body.get("kind").and_then(Value::as_str) {
            None | Some("" | "TokenRequest") => {}
            Some(_) => {
                return Err(ApiError::bad_request(
                    "the object provided is not a TokenRequest",
                ));
            }
        }
        let spec = body.get("spec").cloned().unwrap_or(Value::Null);
        let audiences: Vec<String> = match spec.get("audiences") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(list)) => list
                .iter()
                .map(|a| a.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| ApiError::bad_request("spec.audiences must be strings"))?,
            Some(_) => return Err(ApiError::bad_request("spec.audiences must be a list")),
        };
        let audiences = if audiences.is_empty() {
            vec![self.issuer.clone()]
        } else {
            audiences
        };
        if audiences.len() > addon_jwt::MAX_AUDIENCES
            || audiences
                .iter()
                .any(|a| a.is_empty() || a.len() > addon_jwt::MAX_SUBJECT_BYTES)
        {
            return Err(ApiError::bad_request(format!(
                "spec.audiences: at most {} non-empty audiences of at most {} bytes",
                addon_jwt::MAX_AUDIENCES,
                addon_jwt::MAX_SUBJECT_BYTES
            )));
        }
        let mut seconds = match spec.get("expirationSeconds") {
            None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
            Some(v) => v.as_i64().ok_or_else(|| {
                ApiError::bad_request("spec.expirationSeconds must be an integer")
            })?,
        };
        let mut errors = Vec::new();
        if seconds < MIN_EXPIRATION_SECONDS {
            errors.push(FieldError::invalid(
                "spec.expirationSeconds",
                &seconds.to_string(),
                "may not specify a duration less than 10 minutes",
            ));
        }
        if seconds > MAX_EXPIRATION_SECONDS {
            errors.push(FieldError::invalid(
                "spec.expirationSeconds",
                &seconds.to_string(),
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
        let bound_ref = BoundObjectRef::read(spec.get("boundObjectRef"))?;
        if !errors.is_empty() {
            return Err(ApiError::invalid_fields(
                "TokenRequest",
                "authentication.k8s.io",
                name,
                &errors,
            ));
        }
        let Some(account) = store.get(Resource::ServiceAccounts, namespace, name) else {
            return Err(ApiError::not_found(
                Resource::ServiceAccounts.qualified(),
                name,
            ));
        };
        let uid = account
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let bound = match &bound_ref {
            Some(r) => Some(r.resolve(store, namespace)?),
            None => None,
        };
        if let Some(max) = self.max_expiration {
            let max = i64::try_from(max.as_secs()).unwrap_or(i64::MAX);
            if max > 0 && seconds > max {
                seconds = max;
            }
        }
        let iat = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let exp = iat.saturating_add(seconds);
        let jti = ids::uuid().map_err(|_| ApiError::internal("no randomness"))?;
        let mut kubernetes = json!({
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": uid},
        });
        if let (Some((claim, object)), Some(map)) = (&bound, kubernetes.as_object_mut()) {
            map.insert((*claim).to_owned(), object.clone());
        }
        let claims = json!({
            "aud": audiences,
            "exp": exp,
            "iat": iat,
            "iss": self.issuer,
            "jti": jti,
            "kubernetes.io": kubernetes,
            "nbf": iat,
            "sub": format!("system:serviceaccount:{namespace}:{name}"),
        });
        let token = self
            .key
            .sign_claims(&claims.to_string())
            .map_err(|_| ApiError::internal("signing the token failed"))?;
        let expires = UNIX_EPOCH
            .checked_add(Duration::from_secs(u64::try_from(exp).unwrap_or(0)))
            .unwrap_or(now);
        Ok(json!({
            "kind": "TokenRequest",
            "apiVersion": API_VERSION,
            "metadata": {
                "name": name,
                "namespace": namespace,
                "creationTimestamp": ids::timestamp(now),
            },
            "spec": {
                "audiences": audiences,
                "expirationSeconds": seconds,
                "boundObjectRef": bound_ref.as_ref().map(BoundObjectRef::to_json),
            },
            "status": {
                "token": token.expose_secret(),
                "expirationTimestamp": ids::timestamp(expires),
            },
        }))
    }

    /// The user of `token` if this issuer signed it for one of `audiences`, as kube-apiserver's
    /// service-account token authenticator decides (audiences, then expiry, then the
    /// ServiceAccount: it must still exist with the UID the token names); with the audiences it
    /// is accepted for.
    pub(crate) fn authenticate(
        &self,
        token: &str,
        audiences: &[String],
        store: &Store,
        now: SystemTime,
    ) -> Result<(User, Vec<String>), Refusal> {
        // Only tokens this key signed, from this issuer, are this authenticator's.
        let payload = addon_jwt::verify_jws(token, &self.keys, &[self.key.algorithm()])
            .map_err(|_| Refusal::NotOurs)?;
        let claims: Value = serde_json::from_slice(&payload).map_err(|_| Refusal::NotOurs)?;
        if claims.get("iss").and_then(Value::as_str) != Some(self.issuer.as_str()) {
            return Err(Refusal::NotOurs);
        }
        let token_audiences: Vec<String> = match claims.get("aud") {
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        let accepted: Vec<String> = token_audiences
            .iter()
            .filter(|a| audiences.contains(a))
            .cloned()
            .collect();
        if accepted.is_empty() {
            return Err(Refusal::Refused(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_quoted_list(&token_audiences),
                go_quoted_list(audiences)
            )));
        }
        let accepted_names: Vec<Audience> = accepted.iter().map(Audience::new).collect();
        let verifier = ServiceAccountVerifier::new(
            self.keys.clone(),
            &[Issuer::new(self.issuer.as_str())],
            &accepted_names,
        );
        let verified = verifier.verify(token, now).map_err(|e| match e {
            addon_jwt::Error::Expired => {
                Refusal::Refused("service account token has expired".to_owned())
            }
            other => Refusal::Refused(format!("invalid bearer token, {other}")),
        })?;
        let (namespace, name) = (verified.namespace(), verified.service_account_name());
        let Some(account) = store.get(Resource::ServiceAccounts, namespace, name) else {
            return Err(Refusal::Refused(format!(
                "serviceaccounts {name:?} not found"
            )));
        };
        let uid = account
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let claimed = verified.uid().unwrap_or_default();
        if uid != claimed {
            return Err(Refusal::Refused(format!(
                "service account UID ({uid}) does not match claim ({claimed})"
            )));
        }
        if let Some(k8s) = verified.claims().kubernetes() {
            check_bound_objects(k8s, namespace, store)?;
        }
        let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
        for (k, v) in verified.extra() {
            extra.entry(k).or_default().push(v);
        }
        let user = User::authenticated_with(
            verified.user_name().to_owned(),
            Some(uid.to_owned()),
            verified.groups(),
            extra,
        );
        Ok((user, accepted))
    }
}

/// A TokenRequest's `spec.boundObjectRef`, as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
struct BoundObjectRef {
    kind: String,
    api_version: String,
    name: String,
    uid: String,
}

impl BoundObjectRef {
    /// The reference in `value` (absent or `null`: none); a field that is not a string is a 400.
    fn read(value: Option<&Value>) -> Result<Option<BoundObjectRef>, ApiError> {
        let map = match value {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(map)) => map,
            Some(_) => {
                return Err(ApiError::bad_request(
                    "spec.boundObjectRef must be an object",
                ));
            }
        };
        let field = |key: &str| match map.get(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(ApiError::bad_request(format!(
                "spec.boundObjectRef.{key} must be a string"
            ))),
        };
        Ok(Some(BoundObjectRef {
            kind: field("kind")?,
            api_version: field("apiVersion")?,
            name: field("name")?,
            uid: field("uid")?,
        }))
    }

    /// The reference as the created TokenRequest shows it (empty fields omitted).
    fn to_json(&self) -> Value {
        let mut map = serde_json::Map::new();
        for (key, value) in [
            ("kind", &self.kind),
            ("apiVersion", &self.api_version),
            ("name", &self.name),
            ("uid", &self.uid),
        ] {
            if !value.is_empty() {
                map.insert(key.to_owned(), Value::String(value.clone()));
            }
        }
        Value::Object(map)
    }

    /// The private claim (`pod`, `secret` or `node`) and its `{name, uid}` for the object the
    /// reference names in `namespace`, as kube-apiserver's TokenRequest finds it: a Pod, Secret
    /// or Node of the core group (the `apiVersion`'s version is not looked at); else a 400. The
    /// object must exist (404) and have the reference's UID when it names one (409). The double
    /// stores no Pods and binds no token to a Node: those are never found.
    fn resolve(&self, store: &Store, namespace: &str) -> Result<(&'static str, Value), ApiError> {
        // apimachinery's FromAPIVersionAndKind: a version that does not parse leaves no group.
        let parts: Vec<&str> = self.api_version.split('/').collect();
        let (group, version) = match parts.as_slice() {
            [version] => ("", *version),
            [group, version] => (*group, *version),
            _ => ("", ""),
        };
        let (claim, plural) = match (group, self.kind.as_str()) {
            ("", "Pod") => ("pod", "pods"),
            ("", "Secret") => ("secret", "secrets"),
            ("", "Node") => ("node", "nodes"),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token to object of type {group}/{version}, Kind={}",
                    self.kind
                )));
            }
        };
        if self.name.is_empty() {
            return Err(ApiError::bad_request("Name parameter required."));
        }
        let found = match claim {
            "secret" => store.get(Resource::Secrets, namespace, &self.name),
            _ => None,
        };
        let Some(object) = found else {
            return Err(ApiError::not_found(plural, &self.name));
        };
        let uid = object
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !self.uid.is_empty() && self.uid != uid {
            return Err(ApiError::conflict(
                &self.kind,
                &self.name,
                &format!(
                    "the UID in the bound object reference ({}) does not match the UID in record. The object might have been deleted and then recreated",
                    self.uid
                ),
            ));
        }
        Ok((claim, json!({"name": self.name, "uid": uid})))
    }
}

/// The bound-object checks of kube-apiserver's service-account token validator: a token bound to
/// a Secret is invalidated once that Secret is gone, and refused when the Secret was recreated
/// (another UID); a token bound to a Pod or Node (which the double never binds) is invalidated.
/// The JSON Web Key kube-apiserver publishes for `key`'s public half (`/openid/v1/jwks`): `kty`
/// `RSA` with `n` and `e`, or `EC` with the curve and the point's coordinates.
fn public_jwk(key: &SigningKey) -> Result<Value, Error> {
    use x509_cert::der::{Decode as _, Reader as _};
    let bad = || Error::ServiceAccountKey(addon_jwt::Error::UnsupportedKey);
    let pem = key.public_key_pem().map_err(Error::ServiceAccountKey)?;
    let (_, der) = x509_cert::der::pem::decode_vec(pem.as_bytes()).map_err(|_| bad())?;
    let spki = x509_cert::spki::SubjectPublicKeyInfoRef::from_der(&der).map_err(|_| bad())?;
    let bits = spki.subject_public_key.as_bytes().ok_or_else(bad)?;
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let alg = key.algorithm();
    let mut jwk = match alg {
        Algorithm::Rs256 => {
            // RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }
            let mut reader = x509_cert::der::SliceReader::new(bits).map_err(|_| bad())?;
            let (n, e) = reader
                .sequence(|r| {
                    let n = x509_cert::der::asn1::UintRef::decode(r)?;
                    let e = x509_cert::der::asn1::UintRef::decode(r)?;
                    Ok((n.as_bytes().to_vec(), e.as_bytes().to_vec()))
                })
                .map_err(|_| bad())?;
            json!({"kty": "RSA", "n": b64(&n), "e": b64(&e)})
        }
        Algorithm::Es256 | Algorithm::Es384 => {
            let (crv, size, point_size) = if alg == Algorithm::Es256 {
                ("P-256", 32, 64)
            } else {
                ("P-384", 48, 96)
            };
            // The uncompressed point: 0x04, x, y.
            let (tag, point) = bits.split_first().ok_or_else(bad)?;
            if *tag != 4 || point.len() != point_size {
                return Err(bad());
            }
            let (x, y) = point.split_at(size);
            json!({"kty": "EC", "crv": crv, "x": b64(x), "y": b64(y)})
        }
        // kube-apiserver signs service-account tokens with RSA and ECDSA keys only.
        _ => return Err(bad()),
    };
    if let Some(map) = jwk.as_object_mut() {
        map.insert("use".to_owned(), json!("sig"));
        map.insert("kid".to_owned(), json!(key.key_id()));
        map.insert("alg".to_owned(), json!(alg.as_str()));
    }
    Ok(jwk)
}

fn check_bound_objects(
    claims: &addon_jwt::KubernetesClaims,
    namespace: &str,
    store: &Store,
) -> Result<(), Refusal> {
    let invalidated = || Refusal::Refused("service account token has been invalidated".to_owned());
    if let Some(secret) = claims.secret() {
        let Some(object) = store.get(Resource::Secrets, namespace, secret.name()) else {
            return Err(invalidated());
        };
        let uid = object
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let claimed = secret.uid().unwrap_or_default();
        if uid != claimed {
            return Err(Refusal::Refused(format!(
                "secret UID ({uid}) does not match service account secret ref claim ({claimed})"
            )));
        }
    }
    if claims.pod().is_some() || claims.node().is_some() {
        return Err(invalidated());
    }
    Ok(())
}
