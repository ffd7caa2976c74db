//! kube-controller-manager's token cleaner on kube-runtime's `Controller`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bootstrap_token::{CleanerAction, SecretObject};
use futures_util::{FutureExt as _, StreamExt as _};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Preconditions};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::watcher;

use super::metrics::CLEANER;
use super::retries::Retries;
use super::{Error, Metrics, Options, TOKEN_SECRET_SELECTOR};
use crate::clock;

/// Reconciles (deletions) in flight at most.
const CONCURRENCY: u16 = 4;

/// What the reconcile function needs.
struct Context {
    secrets: Api<Secret>,
    metrics: Arc<Metrics>,
    /// Failed attempts in a row, by object name.
    retries: Retries,
}

/// A delete that failed for a reason other than NotFound or Conflict.
#[derive(Debug, thiserror::Error)]
#[error("deleting an expired bootstrap token failed: {0}")]
struct DeleteFailed(#[source] kube::Error);

/// Runs the token cleaner until `shutdown` completes.
///
/// A kube-runtime `Controller` over bootstrap-token Secrets in `kube-system` (field selector
/// `type=bootstrap.kubernetes.io/token`). For each Secret it applies
/// [`bootstrap_token::cleaner_action`] at the wall clock's time:
///
/// * expired, or an `expiration` that does not parse (Kubernetes deletes those too): DELETE
///   with the Secret's UID as precondition, so a Secret recreated under the same name in the
///   meantime is left alone (the API server answers 409); NotFound and Conflict count as done;
/// * not expired: look again exactly when it expires;
/// * no expiration: nothing until the Secret changes.
///
/// Where it differs from Kubernetes: a delete that fails otherwise is retried after
/// `options.retry_delay`, doubled per failure in a row of that Secret up to
/// `options.max_retry_delay`, instead of waiting for the informer's next resync.
///
/// Needs `get`, `list`, `watch`, `delete` on Secrets in `kube-system`.
///
/// # Errors
///
/// None today: the controller runs until `shutdown`; the `Result` leaves room for startup
/// failures.
pub async fn token_cleaner(
    client: kube::Client,
    metrics: Arc<Metrics>,
    options: Options,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> Result<(), Error> {
    let secrets: Api<Secret> = Api::namespaced(client, bootstrap_token::NAMESPACE);
    let context = Arc::new(Context {
        secrets: secrets.clone(),
        metrics,
        retries: Retries::new(options.retry_delay, options.max_retry_delay),
    });
    // At most a few deletions in flight, as Kubernetes' token cleaner (one worker) is gentle
    // with the API server when many tokens expire together.
    let controller = Controller::new(
        secrets,
        watcher::Config::default().fields(TOKEN_SECRET_SELECTOR),
    )
    .with_config(kube::runtime::controller::Config::default().concurrency(CONCURRENCY));
    let store = controller.store();
    let shutdown = shutdown.shared();
    let synced = {
        let metrics = context.metrics.clone();
        let shutdown = shutdown.clone();
        async move {
            tokio::select! {
                biased;
                ready = store.wait_until_ready() => {
                    if ready.is_ok() {
                        metrics
                            .cleaner_synced
                            .store(true, std::sync::atomic::Ordering::Release);
                        tracing::info!(
                            namespace = bootstrap_token::NAMESPACE,
                            "tokencleaner: watch cache synced, deleting expired bootstrap tokens"
                        );
                    }
                }
                // Stopped before the first list: no reconcile can have started. kube-runtime's
                // graceful shutdown would wait for a store that is never filled.
                () = shutdown => return,
            }
            std::future::pending::<()>().await;
        }
    };
    let run = controller
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            match result {
                // error_policy has logged it.
                Err(e @ controller::Error::ReconcilerFailed(..)) => {
                    tracing::debug!(error = %e, "tokencleaner: reconcile error");
                }
                // A requeued Secret deleted meanwhile: expected.
                Err(e @ controller::Error::ObjectNotFound(..)) => {
                    tracing::debug!(error = %e, "tokencleaner: reconcile error");
                }
                // The watch failed (kube-runtime retries it with a back-off).
                Err(e) => tracing::warn!(error = %e, "tokencleaner: watch failed, retrying"),
                Ok(_) => {}
            }
        });
    tokio::select! {
        () = run => {}
        () = synced => {}
    }
    Ok(())
}

async fn reconcile(secret: Arc<Secret>, context: Arc<Context>) -> Result<Action, DeleteFailed> {
    context.metrics.reconciles.get_or_create(&CLEANER).inc();
    let Ok(object) = SecretObject::try_from(&*secret) else {
        // Over the core's size limits: not a token the authenticator would accept either.
        return Ok(Action::await_change());
    };
    let action = bootstrap_token::cleaner_action(&object, clock::now());
    if !matches!(action, CleanerAction::Delete { .. }) {
        context.retries.succeeded(object.name());
    }
    match action {
        CleanerAction::Delete { uid_precondition } => {
            let params = DeleteParams {
                preconditions: uid_precondition.map(|uid| Preconditions {
                    uid: Some(uid.to_owned()),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match context.secrets.delete(object.name(), &params).await {
                Ok(_) => {
                    context.retries.succeeded(object.name());
                    context.metrics.deleted_tokens.inc();
                    tracing::info!(
                        secret = %format_args!("{}/{}", bootstrap_token::NAMESPACE, object.name()),
                        "tokencleaner: deleted the expired bootstrap token's Secret"
                    );
                    Ok(Action::await_change())
                }
                Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {
                    context.retries.succeeded(object.name());
                    tracing::debug!(
                        secret = object.name(),
                        code = status.code,
                        "tokencleaner: already deleted, or recreated under the same name"
                    );
                    Ok(Action::await_change())
                }
                Err(e) => Err(DeleteFailed(e)),
            }
        }
        // A moment after the expiry itself, so the check sees it expired.
        CleanerAction::RecheckAfter(remaining) => Ok(Action::requeue(
            remaining.saturating_add(Duration::from_millis(1)),
        )),
        _ => Ok(Action::await_change()),
    }
}

fn error_policy(secret: Arc<Secret>, error: &DeleteFailed, context: Arc<Context>) -> Action {
    context.metrics.errors.get_or_create(&CLEANER).inc();
    let name = secret.metadata.name.as_deref().unwrap_or_default();
    let retry_in = context.retries.next_retry(name);
    tracing::warn!(
        secret = %format_args!("{}/{name}", bootstrap_token::NAMESPACE),
        error = %error,
        ?retry_in,
        "tokencleaner: deleting the expired bootstrap token's Secret failed; will retry"
    );
    Action::requeue(retry_in)
}
