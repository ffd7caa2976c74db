//! `kubeadm token list`.

use std::time::SystemTime;

use bootstrap_token::{KubeadmToken, SecretObject};
use k8s_openapi::api::core::v1::Secret;
use kube::api::ListParams;
use tracing::Instrument as _;

use super::{Error, Operation};

/// The most Secrets [`list`] reads; later pages are not requested.
pub const MAX_LISTED_SECRETS: usize = 10_000;

/// The page size [`list`] asks the server for.
const PAGE_SIZE: u32 = 500;

/// The field selector kubeadm lists bootstrap-token Secrets with.
fn field_selector() -> String {
    format!("type={}", bootstrap_token::SECRET_TYPE)
}

/// A bootstrap-token Secret [`list`] could not read, skipped as kubeadm skips it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkippedSecret {
    /// The Secret's name.
    pub name: String,
    /// Why the core rejected it (never contains the token secret).
    pub error: bootstrap_token::Error,
}

/// The result of [`list`]: the readable tokens in the server's order and the skipped Secrets.
/// `Debug` redacts the token secrets.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TokenList {
    /// The `now` the list was taken at; [`to_table`](Self::to_table) computes TTLs against it.
    pub listed_at: SystemTime,
    /// The tokens, as the core read them ([`KubeadmToken::from_secret`]).
    pub tokens: Vec<KubeadmToken>,
    /// Secrets of the bootstrap-token type that did not parse.
    pub skipped: Vec<SkippedSecret>,
    /// Whether more Secrets than [`MAX_LISTED_SECRETS`] exist and were not read.
    pub truncated: bool,
}

impl TokenList {
    /// An empty list taken at `listed_at`.
    #[must_use]
    pub fn new(listed_at: SystemTime) -> Self {
        Self {
            listed_at,
            tokens: Vec::new(),
            skipped: Vec::new(),
            truncated: false,
        }
    }

    /// kubeadm's text table ([`KubeadmToken::format_list`]) with TTLs at
    /// [`listed_at`](Self::listed_at), full tokens included, as kubeadm prints them.
    #[must_use]
    pub fn to_table(&self) -> String {
        KubeadmToken::format_list(&self.tokens, self.listed_at)
    }
}

/// `kubeadm token list` at `now`: lists `kube-system` Secrets with the field selector
/// `type=bootstrap.kubernetes.io/token` (paged, at most [`MAX_LISTED_SECRETS`]), reads each with
/// [`KubeadmToken::from_secret`], and skips (with a `tracing` warning naming the Secret) those
/// the core rejects. `now` is kept as [`TokenList::listed_at`] for the TTL column.
///
/// # Errors
///
/// [`Error::Forbidden`], [`Error::Api`] or [`Error::Request`] when a list call fails.
pub async fn list(api: &kube::Api<Secret>, now: SystemTime) -> Result<TokenList, Error> {
    let span = tracing::info_span!("token_list");
    async {
        let mut out = TokenList::new(now);
        let mut seen = 0usize;
        let mut continue_token: Option<String> = None;
        loop {
            let mut params = ListParams::default()
                .fields(&field_selector())
                .limit(PAGE_SIZE);
            if let Some(token) = &continue_token {
                params = params.continue_token(token);
            }
            let page = api
                .list(&params)
                .await
                .map_err(|e| Error::from_kube(Operation::List, e))?;
            for secret in &page.items {
                if seen >= MAX_LISTED_SECRETS {
                    out.truncated = true;
                    break;
                }
                seen = seen.saturating_add(1);
                read_one(secret, &mut out);
            }
            continue_token = page.metadata.continue_.filter(|c| !c.is_empty());
            if out.truncated || continue_token.is_none() {
                break;
            }
            if seen >= MAX_LISTED_SECRETS {
                out.truncated = true;
                break;
            }
        }
        if out.truncated {
            tracing::warn!(
                max = MAX_LISTED_SECRETS,
                "more bootstrap tokens than listed"
            );
        }
        Ok(out)
    }
    .instrument(span)
    .await
}

/// Reads one listed Secret into `out`, as a token or a skipped entry.
fn read_one(secret: &Secret, out: &mut TokenList) {
    let name = secret.metadata.name.clone().unwrap_or_default();
    let parsed = SecretObject::try_from(secret).and_then(|s| KubeadmToken::from_secret(&s));
    match parsed {
        Ok(token) => out.tokens.push(token),
        Err(error) => {
            tracing::warn!(secret = name.as_str(), %error, "skipping malformed bootstrap token secret");
            out.skipped.push(SkippedSecret { name, error });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn reads_and_skips() {
        let now = UNIX_EPOCH + Duration::from_secs(1_704_164_645);
        let mut kt = KubeadmToken::new(Some("abcdef.0123456789abcdef".parse().unwrap()));
        kt.description = "d".to_owned();
        let good = Secret::from(&kt.with_defaults().to_secret_object(now).unwrap());
        let mut bad = good.clone();
        bad.metadata.name = Some("bootstrap-token-zzzzzz".to_owned());
        let mut out = TokenList::new(now);
        read_one(&good, &mut out);
        read_one(&bad, &mut out);
        assert_eq!(out.tokens.len(), 1);
        assert_eq!(out.skipped.len(), 1);
        assert_eq!(out.skipped[0].name, "bootstrap-token-zzzzzz");
        let table = out.to_table();
        assert!(table.starts_with("TOKEN"));
        assert!(table.contains("abcdef.0123456789abcdef   1d "), "{table}");
        assert!(!format!("{out:?}").contains("0123456789abcdef"));
    }
}
