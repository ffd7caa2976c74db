//! The bootstrap signer's reconcile step.

use std::collections::BTreeMap;
use std::time::SystemTime;

use bootstrap_token::{SecretObject, TOKEN_ID_LEN, TokenId};
use jws_detached::PreparedPayload;
use subtle::ConstantTimeEq as _;

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
/// Other keys are kept untouched. The kubeconfig is base64url-encoded once for all tokens; old
/// signatures are looked up in place and compared in constant time; per token the work is one
/// HMAC and the two strings the new map holds (key and signature), and the new map is
/// bulk-built in key order.
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
    let payload = PreparedPayload::new(kubeconfig.as_bytes()).ok();
    // Qualifying tokens with their lister position; sorted by (ID, position), the first Secret
    // seen for an ID comes first and the duplicates after it are dropped.
    let secrets = secrets.into_iter();
    let mut tokens: Vec<(TokenId, usize, &[u8])> = Vec::with_capacity(secrets.size_hint().0);
    for (position, secret) in secrets.enumerate() {
        if let Some((id, key)) = secret.signing_key(now) {
            tokens.push((id, position, key));
        }
    }
    tokens.sort_unstable_by_key(|t| (t.0, t.1));
    tokens.dedup_by(|later, first| later.0 == first.0);

    let mut update_needed = false;
    let mut old_matched: usize = 0;
    // In ID order, which is key order: the IDs are distinct and share the key prefix.
    let mut sigs: Vec<(TokenId, String)> = Vec::with_capacity(tokens.len());
    for &(id, _, key) in &tokens {
        let sig = payload
            .as_ref()
            .and_then(|p| p.sign(id.as_str(), key).ok())
            .unwrap_or_default();
        // The old signature is looked up in place (the `jws-kubeconfig-*` keys are not copied
        // into a map of their own) and compared in constant time: the signature is a MAC.
        match data.get(SignatureKey::new(id).as_str()) {
            Some(old) => {
                old_matched = old_matched.saturating_add(1);
                if !bool::from(old.as_bytes().ct_eq(sig.as_bytes())) {
                    update_needed = true;
                }
            }
            None => update_needed = true,
        }
        sigs.push((id, sig));
    }
    // The signing IDs in lister order, for the caller.
    tokens.sort_unstable_by_key(|t| t.1);
    let signed: Vec<TokenId> = tokens.iter().map(|t| t.0).collect();
    drop(tokens);

    // The new map is assembled in key order and bulk-built: keys before the prefix, the new
    // signatures, then the keys after it; every old `jws-kubeconfig-*` key is dropped.
    let mut entries: Vec<(String, String)> =
        Vec::with_capacity(data.len().saturating_add(sigs.len()));
    let mut old_total: usize = 0;
    let mut rest = data.iter().peekable();
    while let Some((k, v)) = rest.next_if(|(k, _)| k.as_str() < JWS_KEY_PREFIX) {
        entries.push((k.clone(), v.clone()));
    }
    entries.extend(sigs.into_iter().map(|(id, sig)| (signature_key(id), sig)));
    for (k, v) in rest {
        if k.starts_with(JWS_KEY_PREFIX) {
            old_total = old_total.saturating_add(1);
        } else {
            entries.push((k.clone(), v.clone()));
        }
    }
    // An old signature that no current token re-signed was removed.
    if old_total != old_matched {
        update_needed = true;
    }
    Reconciled {
        data: entries.into_iter().collect(),
        update_needed,
        signed,
    }
}

/// `jws-kubeconfig-<id>` on the stack, for looking up the old signature without allocating.
struct SignatureKey {
    buf: [u8; KEY_LEN],
}

const KEY_LEN: usize = JWS_KEY_PREFIX.len() + TOKEN_ID_LEN;

impl SignatureKey {
    fn new(id: TokenId) -> SignatureKey {
        let mut buf = [0u8; KEY_LEN];
        let (prefix, rest) = buf.split_at_mut(JWS_KEY_PREFIX.len());
        prefix.copy_from_slice(JWS_KEY_PREFIX.as_bytes());
        rest.copy_from_slice(id.as_bytes());
        SignatureKey { buf }
    }

    fn as_str(&self) -> &str {
        // Prefix and ID are ASCII.
        std::str::from_utf8(&self.buf).unwrap_or_default()
    }
}
