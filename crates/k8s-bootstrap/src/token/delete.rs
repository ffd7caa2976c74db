//! `kubeadm token delete`.

use bootstrap_token::{TokenId, parse_delete_argument};
use k8s_openapi::api::core::v1::Secret;
use kube::api::DeleteParams;
use tracing::Instrument as _;

use super::{Error, Operation};

/// `kubeadm token delete <arg>`: `arg` is a token ID or a whole token
/// ([`parse_delete_argument`]); deletes `kube-system/bootstrap-token-<id>` with no
/// precondition and returns the ID.
///
/// # Errors
///
/// [`Error::DeleteArgument`] when `arg` is neither an ID nor a token (the argument is not
/// echoed), [`Error::NotFound`] naming the token when there is no such Secret,
/// [`Error::Forbidden`], [`Error::Conflict`], [`Error::Api`] or [`Error::Request`] when the API
/// call fails.
pub async fn delete(api: &kube::Api<Secret>, arg: &str) -> Result<TokenId, Error> {
    let id = parse_delete_argument(arg).map_err(|_| Error::DeleteArgument)?;
    let span = tracing::info_span!("token_delete", token_id = id.as_str());
    async {
        api.delete(&id.secret_name(), &DeleteParams::default())
            .await
            .map_err(|e| Error::from_kube(Operation::Delete { id }, e))?;
        tracing::info!("deleted bootstrap token");
        Ok(id)
    }
    .instrument(span)
    .await
}
