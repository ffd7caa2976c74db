//! `kubeadm token create`.

use std::time::SystemTime;

use bootstrap_token::{BootstrapToken, KubeadmToken, SecretObject, TokenId};
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use tracing::Instrument as _;

use super::{Error, Operation};

/// The field path [`KubeadmToken::validate`] reports errors under.
const FIELD_PATH: &str = "bootstrapTokens.0";

/// A token that [`create`] stored: the options after kubeadm's defaults (the token always set)
/// and the Secret that was sent. `Debug` redacts the token secret.
#[derive(Debug, Clone)]
pub struct Created {
    token: BootstrapToken,
    options: KubeadmToken,
    secret: SecretObject,
}

impl Created {
    /// The token (`<id>.<secret>`; print it only where kubeadm does).
    #[must_use]
    pub fn token(&self) -> &BootstrapToken {
        &self.token
    }

    /// The token's ID.
    #[must_use]
    pub fn id(&self) -> &TokenId {
        self.token.id()
    }

    /// The options as stored: kubeadm's defaults applied, the token set.
    #[must_use]
    pub fn options(&self) -> &KubeadmToken {
        &self.options
    }

    /// The Secret that was created, as the core built it ([`KubeadmToken::to_secret_object`]).
    #[must_use]
    pub fn secret(&self) -> &SecretObject {
        &self.secret
    }
}

/// `kubeadm token create` at `now`: applies kubeadm's defaults ([`KubeadmToken::with_defaults`]:
/// TTL 24h, usages `signing,authentication`, group
/// `system:bootstrappers:kubeadm:default-node-token`), generates a token when `options.token`
/// is `None`, validates, builds the Secret with the core (the TTL becomes an absolute
/// `expiration`) and creates `kube-system/bootstrap-token-<id>`.
///
/// As in kubeadm, the defaults give a TTL whenever `ttl` is `None`, so an absolute `expires`
/// fails validation unless `ttl` is cleared after defaulting; build the Secret yourself for that.
///
/// # Errors
///
/// [`Error::Generate`] if the random source fails, [`Error::Invalid`] with kubeadm's field
/// errors, [`Error::BuildSecret`] for an unrepresentable expiry, [`Error::AlreadyExists`] when a
/// token with this ID exists, [`Error::Forbidden`], [`Error::Conflict`], [`Error::Api`] or
/// [`Error::Request`] when the API call fails.
pub async fn create(
    api: &kube::Api<Secret>,
    options: KubeadmToken,
    now: SystemTime,
) -> Result<Created, Error> {
    let mut options = options.with_defaults();
    let token = match options.token.clone() {
        Some(token) => token,
        None => super::generate()?,
    };
    options.token = Some(token.clone());
    options.validate(FIELD_PATH).map_err(Error::Invalid)?;
    let secret = options.to_secret_object(now).map_err(Error::BuildSecret)?;
    let id = *token.id();
    let span = tracing::info_span!("token_create", token_id = id.as_str());
    async {
        api.create(&PostParams::default(), &Secret::from(&secret))
            .await
            .map_err(|e| Error::from_kube(Operation::Create { id }, e))?;
        tracing::info!(secret = secret.name(), "created bootstrap token");
        Ok(Created {
            token,
            options,
            secret,
        })
    }
    .instrument(span)
    .await
}
