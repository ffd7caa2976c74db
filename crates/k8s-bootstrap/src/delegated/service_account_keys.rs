//! The cluster's service-account token issuer and keys, read through a `kube::Client`, for
//! offline verification of projected tokens.

use delegated_auth::{OidcDiscovery, ServiceAccountAuthenticator};
use http_body_util::BodyExt as _;

/// Where kube-apiserver serves its OIDC discovery document.
pub const OPENID_CONFIGURATION_PATH: &str = "/.well-known/openid-configuration";
/// Where kube-apiserver serves the service-account token keys (JSON Web Key Set).
pub const JWKS_PATH: &str = "/openid/v1/jwks";

/// The largest answer read from either path, in bytes (the readers apply their own, smaller,
/// limits).
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// Why the service-account keys could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceAccountKeysError {
    /// The request failed, or the answer could not be read.
    #[error("couldn't fetch {path} from the API server: {reason}")]
    Fetch {
        /// The path asked for.
        path: &'static str,
        /// What went wrong.
        reason: String,
    },
    /// The API server answered with an error status.
    #[error("the API server answered {path} with {status}")]
    Status {
        /// The path asked for.
        path: &'static str,
        /// The HTTP status.
        status: u16,
    },
    /// The document or the key set is not one offline verification accepts.
    #[error("couldn't read {path}")]
    Read {
        /// The path whose answer was refused.
        path: &'static str,
        /// The reader's error.
        #[source]
        source: delegated_auth::Error,
    },
}

/// An offline verifier of projected service-account tokens for `audiences`, with the issuer of
/// the API server's `/.well-known/openid-configuration` and the keys of its `/openid/v1/jwks`,
/// both read through `client` (with its credentials: kube-apiserver lets every authenticated
/// user read them through the `system:service-account-issuer-discovery` ClusterRole). Read
/// the keys again when the cluster rotates its signing key (a token signed by an unknown key
/// is refused offline, and goes to the TokenReview when that is enabled).
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use k8s_bootstrap::delegated::{DelegatedAuthLayer, fetch_service_account_authenticator};
///
/// let client = kube::Client::try_default().await?;
/// let audiences = ["https://metrics.example".to_owned()];
/// let offline = fetch_service_account_authenticator(&client, &audiences).await?;
/// let layer = DelegatedAuthLayer::new(client)
///     .token_audiences(audiences)
///     .service_account_tokens(offline);
/// # let _ = layer;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// [`ServiceAccountKeysError::Fetch`] or [`ServiceAccountKeysError::Status`] when either path
/// cannot be read; [`ServiceAccountKeysError::Read`] when the document or the key set is
/// refused, or `audiences` is empty.
pub async fn fetch_service_account_authenticator(
    client: &kube::Client,
    audiences: &[String],
) -> Result<ServiceAccountAuthenticator, ServiceAccountKeysError> {
    let document = get(client, OPENID_CONFIGURATION_PATH).await?;
    let discovery =
        OidcDiscovery::from_json(&document).map_err(|source| ServiceAccountKeysError::Read {
            path: OPENID_CONFIGURATION_PATH,
            source,
        })?;
    let jwks = get(client, JWKS_PATH).await?;
    ServiceAccountAuthenticator::new(&discovery, &jwks, audiences).map_err(|source| {
        ServiceAccountKeysError::Read {
            path: JWKS_PATH,
            source,
        }
    })
}

async fn get(
    client: &kube::Client,
    path: &'static str,
) -> Result<bytes::Bytes, ServiceAccountKeysError> {
    let fetch = |reason: String| ServiceAccountKeysError::Fetch { path, reason };
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, "application/json")
        .body(kube::client::Body::empty())
        .map_err(|e| fetch(e.to_string()))?;
    let response = client
        .send(request)
        .await
        .map_err(|e| fetch(e.to_string()))?;
    let status = response.status();
    if !status.is_success() {
        return Err(ServiceAccountKeysError::Status {
            path,
            status: status.as_u16(),
        });
    }
    http_body_util::Limited::new(response.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await
        .map(http_body_util::Collected::to_bytes)
        .map_err(|e| fetch(e.to_string()))
}
