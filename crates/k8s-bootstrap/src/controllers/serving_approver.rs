//! The kubelet-serving approver on kube-runtime's `Controller`: approves, or denies with a
//! reason, `kubernetes.io/kubelet-serving` requests by [`tls_bootstrap::decide_serving`].

use std::collections::BTreeMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{FutureExt as _, StreamExt as _};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest as CsrObject;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, PostParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::watcher;
use tls_bootstrap::{
    CertificateSigningRequest, DnsCheck, KUBELET_SERVING_SIGNER, NODE_USER_PREFIX, ServingDecision,
    ServingPolicy, State,
};

use super::metrics::APPROVER;
use super::retries::Retries;
use super::{Error, Metrics, Options};

/// The field selector of the requests the approver watches.
pub const KUBELET_SERVING_SELECTOR: &str = "spec.signerName=kubernetes.io/kubelet-serving";
/// The `reason` of the `Approved` condition the approver writes.
pub const APPROVED_REASON: &str = "AutoApproved";
/// The `reason` of the `Denied` condition the approver writes; its `message` names the check
/// that failed.
pub const DENIED_REASON: &str = "AutoDenied";

/// Reconciles (approval writes) in flight at most.
const CONCURRENCY: u16 = 4;
/// How long one DNS name may take to resolve (kubelet-csr-approver's timeout).
const DNS_TIMEOUT: Duration = Duration::from_secs(1);

/// What the reconcile function needs.
struct Context {
    csrs: Api<CsrObject>,
    nodes: Api<Node>,
    policy: ServingPolicy,
    metrics: Arc<Metrics>,
    options: Options,
    /// Failed attempts in a row, by object name.
    retries: Retries,
}

/// Why a reconcile of the approver failed (it is retried).
#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    /// Reading the requester's Node failed (other than NotFound).
    #[error("reading the Node failed: {0}")]
    Node(#[source] kube::Error),
    /// The requester's Node does not exist (yet).
    #[error("the Node {0:?} does not exist")]
    NoNode(String),
    /// Writing the condition failed (other than Conflict or NotFound).
    #[error("writing the approval failed: {0}")]
    Write(#[source] kube::Error),
}

/// Runs the kubelet-serving approver until `shutdown` completes.
///
/// A kube-runtime `Controller` over CertificateSigningRequests of signer
/// `kubernetes.io/kubelet-serving` (field selector [`KUBELET_SERVING_SELECTOR`]). For each
/// request that is neither approved, denied nor failed, and whose requester is a node
/// (`system:node:<name>`; others are left alone, as [`tls_bootstrap::decide_serving`] has no
/// opinion on them), it:
///
/// 1. reads the requester's Node and takes its `status.addresses`;
/// 2. when `policy.dns_check` is not [`DnsCheck::DangerousSkip`], resolves each DNS name the
///    request asks for that matches the provider regex with the system resolver (tokio's, 1 s
///    per name; a name that fails to resolve has no answers);
/// 3. runs [`tls_bootstrap::decide_serving`] and writes through the `approval` subresource an
///    `Approved` condition (reason [`APPROVED_REASON`]) or a `Denied` one (reason
///    [`DENIED_REASON`], the message naming the check that failed), an update (PUT)
///    conditional on the `resourceVersion` it read.
///
/// Like kubelet-csr-approver, each decision is logged at info (request, node, decision,
/// reason; never the request's key material), and a write that meets a Conflict (the request
/// changed meanwhile) or NotFound is not an error: the change comes back through the watch and
/// is reconciled again.
///
/// A Node that does not exist is not a denial: the request stays pending and is looked at
/// again after `options.retry_delay`, doubled per attempt up to `options.max_retry_delay`
/// (kubelet-csr-approver does not read Nodes at all; it retries what it cannot decide,
/// such as a failed DNS lookup). A kubelet files its serving request once its Node is
/// registered, so a missing Node is a race or a deleted node; a request nobody decides is
/// removed by kube-controller-manager's CSR cleaner after a day.
///
/// Needs `get`, `list`, `watch` on `certificatesigningrequests`, `update` on
/// `certificatesigningrequests/approval`, `approve` on `signers` named
/// `kubernetes.io/kubelet-serving`, and `get` on `nodes` (see `deploy/controllers/rbac.yaml`).
///
/// # Errors
///
/// None today: the controller runs until `shutdown`; the `Result` leaves room for startup
/// failures.
pub async fn kubelet_serving_approver(
    client: kube::Client,
    policy: ServingPolicy,
    metrics: Arc<Metrics>,
    options: Options,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) -> Result<(), Error> {
    let csrs: Api<CsrObject> = Api::all(client.clone());
    let context = Arc::new(Context {
        csrs: csrs.clone(),
        nodes: Api::all(client),
        policy,
        metrics,
        retries: Retries::new(options.retry_delay, options.max_retry_delay),
        options,
    });
    let controller = Controller::new(
        csrs,
        watcher::Config::default().fields(KUBELET_SERVING_SELECTOR),
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
                            .approver_synced
                            .store(true, std::sync::atomic::Ordering::Release);
                        tracing::info!(
                            "kubeletservingapprover: watch cache synced, deciding kubelet-serving \
                             requests"
                        );
                    }
                }
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
                Err(
                    e @ (controller::Error::ReconcilerFailed(..)
                    | controller::Error::ObjectNotFound(..)),
                ) => {
                    tracing::debug!(error = %e, "kubeletservingapprover: reconcile error");
                }
                Err(e) => {
                    tracing::warn!(error = %e, "kubeletservingapprover: watch failed, retrying");
                }
                Ok(_) => {}
            }
        });
    tokio::select! {
        () = run => {}
        () = synced => {}
    }
    Ok(())
}

/// A one-line description of `policy` for the start-up log.
#[must_use]
pub fn describe_policy(policy: &ServingPolicy) -> String {
    let prefixes: Vec<String> = policy
        .allowed_prefixes
        .iter()
        .map(ToString::to_string)
        .collect();
    let dns = match policy.dns_check {
        DnsCheck::Resolve => "resolve",
        DnsCheck::AllowUnresolved => "allow-unresolved",
        _ => "bypass",
    };
    format!(
        "provider regex {:?}, IP prefixes [{}], max expiration {} s, DNS resolution {dns}, \
         at most {} names",
        policy.provider_regex.as_str(),
        prefixes.join(","),
        policy.max_expiration_seconds,
        policy.max_sans
    )
}

async fn reconcile(
    object: Arc<CsrObject>,
    context: Arc<Context>,
) -> Result<Action, ReconcileError> {
    context.metrics.reconciles.get_or_create(&APPROVER).inc();
    let name = object.metadata.name.clone().unwrap_or_default();
    let Ok(csr) = CertificateSigningRequest::try_from(&*object) else {
        // Over the core's size limits: the API server would not have stored it.
        tracing::warn!(
            csr = name,
            "kubeletservingapprover: request not readable, ignored"
        );
        return Ok(Action::await_change());
    };
    if csr.spec.signer_name != KUBELET_SERVING_SIGNER || !matches!(csr.state(), State::Pending) {
        context.retries.succeeded(&name);
        return Ok(Action::await_change());
    }
    let Ok(request) = csr.certificate_request() else {
        // kubelet-csr-approver leaves a request it cannot parse alone.
        tracing::warn!(
            csr = name,
            "kubeletservingapprover: spec.request does not parse, ignored"
        );
        return Ok(Action::await_change());
    };
    let requester = csr.spec.username.as_deref().unwrap_or_default();
    let Some(node_name) = requester.strip_prefix(NODE_USER_PREFIX) else {
        tracing::debug!(
            csr = name,
            requester,
            "kubeletservingapprover: not a node's request, no opinion"
        );
        return Ok(Action::await_change());
    };
    // The Node is the requester's (the core denies any request whose common name differs);
    // its addresses are needed only when the request names the requester.
    let mut addresses: Vec<(String, String)> = Vec::new();
    if !node_name.is_empty() && request.common_name() == Some(requester) {
        let node = match context.nodes.get_opt(node_name).await {
            Ok(Some(node)) => node,
            Ok(None) => return Err(ReconcileError::NoNode(node_name.to_owned())),
            Err(e) => return Err(ReconcileError::Node(e)),
        };
        addresses = node
            .status
            .and_then(|s| s.addresses)
            .unwrap_or_default()
            .into_iter()
            .map(|a| (a.type_, a.address))
            .collect();
    }
    let pairs: Vec<(&str, &str)> = addresses
        .iter()
        .map(|(t, a)| (t.as_str(), a.as_str()))
        .collect();
    let answers = resolve(&request, &context.policy).await;
    let decision = tls_bootstrap::decide_serving(&csr, &request, &pairs, &answers, &context.policy);
    let (type_, reason, message) = match &decision {
        ServingDecision::Approve => (
            "Approved",
            APPROVED_REASON,
            "kubelet-serving request validated: the node owns every name and address it asks for"
                .to_owned(),
        ),
        ServingDecision::Deny { reason } => (
            "Denied",
            DENIED_REASON,
            format!("kubelet-serving request denied: {reason}"),
        ),
        _ => {
            tracing::debug!(csr = name, "kubeletservingapprover: no opinion");
            return Ok(Action::await_change());
        }
    };
    // The object as read, with its resourceVersion: the update is conditional on it.
    let mut updated = (*object).clone();
    updated
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new)
        .push(
            k8s_openapi::api::certificates::v1::CertificateSigningRequestCondition {
                type_: type_.to_owned(),
                status: "True".to_owned(),
                reason: Some(reason.to_owned()),
                message: Some(message.clone()),
                ..Default::default()
            },
        );
    match context
        .csrs
        .replace_subresource("approval", &name, &PostParams::default(), &updated)
        .await
    {
        Ok(_) => {
            context.retries.succeeded(&name);
            if matches!(decision, ServingDecision::Approve) {
                context.metrics.serving_approved.inc();
            } else {
                context.metrics.serving_denied.inc();
            }
            tracing::info!(
                csr = name,
                node = node_name,
                decision = type_,
                reason,
                detail = message,
                "kubeletservingapprover: decided"
            );
            Ok(Action::await_change())
        }
        // Changed or deleted since it was read: the watch brings the new state.
        Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => {
            tracing::debug!(
                csr = name,
                code = status.code,
                "kubeletservingapprover: the request changed meanwhile, reconciling again"
            );
            Ok(Action::requeue(context.options.retry_delay))
        }
        Err(e) => Err(ReconcileError::Write(e)),
    }
}

/// The DNS answers the policy needs: none under [`DnsCheck::DangerousSkip`]; otherwise each
/// DNS name that matches the provider regex (the others are denied without a lookup), at most
/// `policy.max_sans` of them, resolved with a timeout. A failed lookup has no answers.
async fn resolve(
    request: &tls_bootstrap::CertificateRequest,
    policy: &ServingPolicy,
) -> BTreeMap<String, Vec<IpAddr>> {
    let mut answers = BTreeMap::new();
    if matches!(policy.dns_check, DnsCheck::DangerousSkip) {
        return answers;
    }
    for name in request
        .dns_names()
        .iter()
        .filter(|n| !n.is_empty() && policy.provider_regex.is_match(n))
        .take(policy.max_sans)
    {
        if answers.contains_key(name) {
            continue;
        }
        let found = tokio::time::timeout(DNS_TIMEOUT, tokio::net::lookup_host((name.as_str(), 0)))
            .await
            .ok()
            .and_then(Result::ok)
            .map(|addrs| addrs.map(|a| a.ip()).collect())
            .unwrap_or_default();
        answers.insert(name.clone(), found);
    }
    answers
}

fn error_policy(object: Arc<CsrObject>, error: &ReconcileError, context: Arc<Context>) -> Action {
    let name = object.metadata.name.as_deref().unwrap_or_default();
    let retry_in = context.retries.next_retry(name);
    match error {
        ReconcileError::NoNode(node) => tracing::info!(
            csr = name,
            node,
            ?retry_in,
            "kubeletservingapprover: the requester's Node does not exist; will look again"
        ),
        _ => {
            context.metrics.errors.get_or_create(&APPROVER).inc();
            tracing::warn!(
                csr = name,
                error = %error,
                ?retry_in,
                "kubeletservingapprover: reconcile failed; will retry"
            );
        }
    }
    Action::requeue(retry_in)
}
