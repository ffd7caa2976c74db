//! The bootstrap signer's reconcile step.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use bootstrap_token::{SecretObject, TokenId};
use jws_detached::PreparedPayload;

use crate::configmap::{JWS_KEY_PREFIX, KUBECONFIG_KEY, signature_key};

/// The result of [`reconcile`]: the new ConfigMap data and whether it must be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reconciled {
    data: BTreeMap<String, String>,
    update_needed: bool,
    signed: Vec<TokenId>,
}

impl Reconciled {
    /// The new data map (equal to the input when no update is needed).
    pub fn data(&self) -> &BTreeMap<String, String> {
        &self.data
    }

    /// Take the new data map.
    pub fn into_data(self) -> BTreeMap<String, String> {
        self.data
    }

    /// Whether the ConfigMap must be updated (a signature was added, changed or removed).
    pub fn update_needed(&self) -> bool {
        self.update_needed
    }

    /// The token IDs that signed, in the order their Secrets were given.
    pub fn signed_token_ids(&self) -> &[TokenId] {
        &self.signed
    }
}

/// One sync of Kubernetes' bootstrap signer (`bootstrapsigner.go`), as a pure function.
///
/// Given the cluster-info ConfigMap's data, the bootstrap-token Secrets (in lister order) and
/// `now`:
///
/// 1. without a `kubeconfig` key nothing changes (existing signatures are kept);
/// 2. every `jws-kubeconfig-*` key is removed, remembering the old values;
/// 3. each Secret that qualifies for signing ([`SecretObject::signing_key`]: type, name,
///    `token-id`, non-empty `token-secret` of any format, not expired at `now`,
///    `usage-bootstrap-signing: "true"`) signs the exact kubeconfig bytes; the first Secret
///    seen for an ID wins; a signing failure writes an empty signature, as Kubernetes does;
/// 4. an update is needed when any signature differs from the old one or an old one is gone.
///
/// Other keys are kept untouched. The kubeconfig is base64url-encoded once for all tokens.
///
/// ```
/// use std::collections::{BTreeMap, BTreeSet};
/// use std::time::UNIX_EPOCH;
/// use bootstrap_token::SecretObject;
/// let secret = SecretObject::new("bootstrap-token-abcdef", "kube-system", "bootstrap.kubernetes.io/token",
///     Some([("token-id", "abcdef"), ("token-secret", "0123456789abcdef"), ("usage-bootstrap-signing", "true")]
///         .into_iter().map(|(k, v)| (k.to_owned(), v.as_bytes().to_vec())).collect()));
/// let data: BTreeMap<String, String> = [("kubeconfig".to_owned(), "hello".to_owned())].into();
/// let out = clusterinfo::reconcile(&data, [&secret], UNIX_EPOCH);
/// assert!(out.update_needed());
/// assert_eq!(out.data()["jws-kubeconfig-abcdef"],
///     "eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9..MxsnbCjBaYzcbNIFa06F-wuF9LX26rhMlrL4zA1511s");
/// // A second pass over its own output changes nothing.
/// assert!(!clusterinfo::reconcile(out.data(), [&secret], UNIX_EPOCH).update_needed());
/// ```
pub fn reconcile<'a, I>(data: &BTreeMap<String, String>, secrets: I, now: SystemTime) -> Reconciled
where
    I: IntoIterator<Item = &'a SecretObject>,
{
    let Some(kubeconfig) = data.get(KUBECONFIG_KEY) else {
        return Reconciled {
            data: data.clone(),
            update_needed: false,
            signed: Vec::new(),
        };
    };
    let mut new_data = BTreeMap::new();
    let mut old_sigs: BTreeMap<&str, &str> = BTreeMap::new();
    for (k, v) in data {
        match k.strip_prefix(JWS_KEY_PREFIX) {
            Some(id) => {
                old_sigs.insert(id, v.as_str());
            }
            None => {
                new_data.insert(k.clone(), v.clone());
            }
        }
    }
    let payload = PreparedPayload::new(kubeconfig.as_bytes()).ok();
    let mut update_needed = false;
    let mut signed: Vec<TokenId> = Vec::new();
    let mut seen: BTreeSet<TokenId> = BTreeSet::new();
    for secret in secrets {
        let Some((id, key)) = secret.signing_key(now) else {
            continue;
        };
        if !seen.insert(id) {
            continue;
        }
        let sig = payload
            .as_ref()
            .and_then(|p| p.sign(id.as_str(), key).ok())
            .unwrap_or_default();
        if old_sigs.remove(id.as_str()) != Some(sig.as_str()) {
            update_needed = true;
        }
        new_data.insert(signature_key(id), sig);
        signed.push(id);
    }
    if !old_sigs.is_empty() {
        update_needed = true;
    }
    Reconciled {
        data: new_data,
        update_needed,
        signed,
    }
}
