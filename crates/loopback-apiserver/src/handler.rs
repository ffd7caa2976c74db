//! Request handling: authentication, routing, authorization and the verbs.

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::extract::{Query, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use zeroize::Zeroizing;

use super::RecordedRequest;
use delegated_auth::{Attributes, ResourceAttributes};

use super::access_review;
use super::auth::{self, StaticToken, User};
use super::ca::Ca;
use super::csr;
use super::discovery;
use super::escalation;
use super::impersonation;
use super::protobuf;
use super::rbac::Decision;
use super::review;
use super::sa_token::TokenIssuer;
use super::selector::Selector;
use super::server::Peer;
use super::service_proxy::{self, ProxyService};
use super::status::{ApiError, json_response};
use super::store::{Preconditions, Resource, Store, Subresource};
use super::table;
use super::watch::{self, WatchParams};
use super::x509::CertIdentity;

/// Largest request body accepted (kube-apiserver's limit).
pub(crate) const MAX_BODY: usize = 3 * 1024 * 1024;
/// Requests remembered for [`super::LoopbackApiServer::requests`].
const MAX_RECORDED: usize = 10_000;
/// Most path segments a served path has.
const MAX_SEGMENTS: usize = 8;

/// State shared by the handlers and the public handle.
pub(crate) struct Shared {
    pub(crate) store: Mutex<Store>,
    pub(crate) admin_token: Zeroizing<String>,
    pub(crate) statics: Mutex<Vec<StaticToken>>,
    pub(crate) requests: Mutex<VecDeque<RecordedRequest>>,
    pub(crate) watchers: Arc<AtomicUsize>,
    /// `127.0.0.1:<port>`.
    pub(crate) address: String,
    /// The CA: it verifies client certificates and signs the certificates the double issues.
    pub(crate) ca: Ca,
    /// Whether the CSR approver runs after each CSR write.
    pub(crate) csr_approver: bool,
    /// Whether the CSR signer runs after each CSR write.
    pub(crate) csr_signer: bool,
    /// The lifetime of every certificate the CSR signer issues, when a test sets one
    /// (`Builder::test_certificate_lifetime`); `None`: the core's.
    pub(crate) certificate_lifetime: Option<Duration>,
    /// The SHA-256 fingerprints (lowercase hex) of the revoked client certificates.
    pub(crate) revoked: Mutex<BTreeSet<String>>,
    /// The Service proxy's forwarder, inside the user's layer if one was given (replaced by
    /// `LoopbackApiServer::set_service_proxy_layer`).
    pub(crate) proxy: Mutex<ProxyService>,
    /// The longest a proxied request may take.
    pub(crate) proxy_max_duration: Duration,
    /// The service-account token issuer.
    pub(crate) issuer: TokenIssuer,
    /// How far the double's clock for credentials runs ahead of the wall clock
    /// (`LoopbackApiServer::advance_clock`).
    pub(crate) clock_offset: Mutex<Duration>,
}

impl Shared {
    /// The double's time for credentials: the wall clock plus the offset tests set.
    pub(crate) fn now(&self) -> std::time::SystemTime {
        let now = crate::clock::now();
        now.checked_add(*lock(&self.clock_offset)).unwrap_or(now)
    }

    /// The bearer-token authenticators over `store` and `statics` (both locked by the caller).
    pub(crate) fn token_authenticators<'a>(
        &'a self,
        store: &'a Store,
        statics: &'a [StaticToken],
    ) -> auth::TokenAuthenticators<'a> {
        auth::TokenAuthenticators {
            admin: &self.admin_token,
            statics,
            store,
            issuer: &self.issuer,
        }
    }
}

/// Lock, ignoring poisoning (every critical section leaves the data consistent).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The axum fallback handler: every request comes here.
pub(crate) async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or_default().to_owned();
    let (user, response) = process(&shared, req).await;
    let status = response.status().as_u16();
    tracing::debug!(%method, %path, user = user.as_deref().unwrap_or("-"), status,
        "loopback API server (test double)");
    let mut requests = lock(&shared.requests);
    if requests.len() >= MAX_RECORDED {
        requests.pop_front();
    }
    requests.push_back(RecordedRequest {
        method,
        path,
        query,
        user,
        status,
    });
    drop(requests);
    response
}

/// Where a path leads.
enum Route<'a> {
    NonResource,
    /// `/api/v1/namespaces/<ns>/services/<id>/proxy[/...]`.
    ServiceProxy(service_proxy::ProxyPath),
    /// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews` (nothing is stored).
    SelfSubjectReview,
    /// `POST` of a TokenReview or an access review (nothing is stored).
    Review {
        kind: access_review::Kind,
        namespace: &'a str,
    },
    /// `POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token` (TokenRequest).
    TokenRequest {
        namespace: &'a str,
        name: &'a str,
    },
    Resource {
        resource: Resource,
        namespace: &'a str,
        name: Option<&'a str>,
        subresource: Option<Subresource>,
    },
}

fn route(path: &str) -> Route<'_> {
    if let Some(proxy) = service_proxy::parse_path(path) {
        return Route::ServiceProxy(proxy);
    }
    let segments: Vec<&str> = path
        .trim_start_matches('/')
        .split('/')
        .take(MAX_SEGMENTS.saturating_add(1))
        .collect();
    // `/api/v1/...` (core) or `/apis/<group>/<version>/...`.
    let (group_version, rest) = match segments.as_slice() {
        ["api", "v1", rest @ ..] => ("v1".to_owned(), rest),
        ["apis", group, version, rest @ ..] if !group.is_empty() && !version.is_empty() => {
            (format!("{group}/{version}"), rest)
        }
        _ => return Route::NonResource,
    };
    if group_version == "authentication.k8s.io/v1" && rest == ["selfsubjectreviews"] {
        return Route::SelfSubjectReview;
    }
    match rest {
        [r] => {
            if let Some(kind) =
                access_review::Kind::from_plural(&group_version, r).filter(|k| !k.namespaced())
            {
                return Route::Review {
                    kind,
                    namespace: "",
                };
            }
        }
        ["namespaces", ns, r] if !ns.is_empty() => {
            if let Some(kind) =
                access_review::Kind::from_plural(&group_version, r).filter(|k| k.namespaced())
            {
                return Route::Review {
                    kind,
                    namespace: ns,
                };
            }
        }
        ["namespaces", ns, "serviceaccounts", name, "token"]
            if group_version == "v1" && !ns.is_empty() && !name.is_empty() =>
        {
            return Route::TokenRequest {
                namespace: ns,
                name,
            };
        }
        _ => {}
    }
    let res = |s: &str| Resource::in_group(&group_version, s);
    let cluster = |s: &str| res(s).filter(|r| !r.namespaced());
    match rest {
        [r] => match res(r) {
            Some(resource) => Route::Resource {
                resource,
                namespace: "",
                name: None,
                subresource: None,
            },
            None => Route::NonResource,
        },
        ["namespaces", ns] if !ns.is_empty() && group_version == "v1" => Route::Resource {
            resource: Resource::Namespaces,
            namespace: "",
            name: Some(ns),
            subresource: None,
        },
        ["namespaces", ns, r] if !ns.is_empty() => match res(r) {
            Some(resource) if resource.namespaced() => Route::Resource {
                resource,
                namespace: ns,
                name: None,
                subresource: None,
            },
            _ => Route::NonResource,
        },
        ["namespaces", ns, r, name] if !ns.is_empty() && !name.is_empty() => match res(r) {
            Some(resource) if resource.namespaced() => Route::Resource {
                resource,
                namespace: ns,
                name: Some(name),
                subresource: None,
            },
            _ => Route::NonResource,
        },
        [r, name] if !name.is_empty() => match cluster(r) {
            Some(resource) => Route::Resource {
                resource,
                namespace: "",
                name: Some(name),
                subresource: None,
            },
            None => Route::NonResource,
        },
        [r, name, sub] if !name.is_empty() => {
            match cluster(r).and_then(|resource| Some((resource, resource.subresource(sub)?))) {
                Some((resource, sub)) => Route::Resource {
                    resource,
                    namespace: "",
                    name: Some(name),
                    subresource: Some(sub),
                },
                None => Route::NonResource,
            }
        }
        _ => Route::NonResource,
    }
}

/// The query parameters, last value wins.
struct Params(Vec<(String, String)>);

impl Params {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("1" | "true" | "True"))
    }
}

async fn process(shared: &Arc<Shared>, mut req: Request) -> (Option<String>, Response) {
    let user = {
        // The connection's client certificate, as the accept loop attached it.
        let cert = req
            .extensions()
            .get::<CertIdentity>()
            .cloned()
            .unwrap_or(CertIdentity::None);
        let now = shared.now();
        let store = lock(&shared.store);
        let statics = lock(&shared.statics);
        let revoked = lock(&shared.revoked);
        let tokens = shared.token_authenticators(&store, &statics);
        auth::authenticate(req.headers(), &cert, &revoked, &tokens, now)
    };
    let Some(mut user) = user else {
        return (None, ApiError::unauthorized().into_response());
    };
    let impersonated =
        impersonation::impersonate(&lock(&shared.store), &user, req.headers(), req.uri());
    match impersonated {
        Ok(None) => {}
        Ok(Some(as_user)) => {
            user = as_user;
            impersonation::remove_headers(req.headers_mut());
        }
        Err(e) => {
            let recorded = user.authenticated.then(|| user.name.clone());
            return (recorded, e.into_response());
        }
    }
    let recorded = user.authenticated.then(|| user.name.clone());
    let response = match dispatch(shared, &user, req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    (recorded, response)
}

async fn dispatch(shared: &Arc<Shared>, user: &User, req: Request) -> Result<Response, ApiError> {
    let path = req.uri().path().to_owned();
    // The Service proxy passes the query string on as it is: it is not the API's to parse.
    if let Route::ServiceProxy(target) = route(&path) {
        return service_proxy(shared, user, target, req).await;
    }
    let params = Params(
        Query::<Vec<(String, String)>>::try_from_uri(req.uri())
            .map_err(|_| ApiError::bad_request("invalid query string"))?
            .0,
    );
    let method = req.method().clone();
    match route(&path) {
        Route::ServiceProxy(target) => service_proxy(shared, user, target, req).await,
        Route::NonResource => {
            let verb = if matches!(method, Method::GET | Method::HEAD) {
                "get"
            } else {
                "post"
            };
            authorize(
                shared,
                &Attributes::non_resource(user.info(), verb, path.as_str()),
                "",
                None,
            )?;
            if verb != "get" {
                return Err(ApiError::path_not_found());
            }
            non_resource(shared, &path)
        }
        Route::Review { kind, namespace } => {
            if method != Method::POST {
                return Err(ApiError::method_not_allowed());
            }
            let qualified = format!("{}.{}", kind.plural(), kind.group());
            authorize(
                shared,
                &Attributes::resource(
                    user.info(),
                    "create",
                    ResourceAttributes::new(kind.group(), "v1", kind.plural())
                        .in_namespace(namespace),
                ),
                &qualified,
                None,
            )?;
            let content_type = header_str(&req, header::CONTENT_TYPE);
            let namespace = namespace.to_owned();
            let body = axum::body::to_bytes(req.into_body(), MAX_BODY)
                .await
                .map_err(|_| ApiError::too_large(MAX_BODY))?;
            let api_version = format!("{}/v1", kind.group());
            let body = parse_body(&content_type, &body, &api_version, kind.kind())?;
            let now = shared.now();
            let store = lock(&shared.store);
            let statics = lock(&shared.statics);
            let tokens = shared.token_authenticators(&store, &statics);
            let review = access_review::create(kind, &body, &namespace, user, &tokens, now)?;
            Ok(json_response(StatusCode::CREATED, &review))
        }
        Route::TokenRequest { namespace, name } => {
            if method != Method::POST {
                return Err(ApiError::method_not_allowed());
            }
            authorize(
                shared,
                &Attributes::resource(
                    user.info(),
                    "create",
                    ResourceAttributes::new("", "v1", "serviceaccounts")
                        .in_namespace(namespace)
                        .with_subresource("token")
                        .with_name(name),
                ),
                Resource::ServiceAccounts.qualified(),
                Some(name),
            )?;
            let (namespace, name) = (namespace.to_owned(), name.to_owned());
            let content_type = header_str(&req, header::CONTENT_TYPE);
            let body = axum::body::to_bytes(req.into_body(), MAX_BODY)
                .await
                .map_err(|_| ApiError::too_large(MAX_BODY))?;
            let body = parse_body(
                &content_type,
                &body,
                "authentication.k8s.io/v1",
                "TokenRequest",
            )?;
            let now = shared.now();
            let created =
                shared
                    .issuer
                    .token_request(&lock(&shared.store), &namespace, &name, &body, now)?;
            Ok(json_response(StatusCode::CREATED, &created))
        }
        Route::SelfSubjectReview => {
            if method != Method::POST {
                return Err(ApiError::method_not_allowed());
            }
            authorize(
                shared,
                &Attributes::resource(
                    user.info(),
                    "create",
                    ResourceAttributes::new("authentication.k8s.io", "v1", "selfsubjectreviews"),
                ),
                "selfsubjectreviews.authentication.k8s.io",
                None,
            )?;
            let content_type = header_str(&req, header::CONTENT_TYPE);
            let body = axum::body::to_bytes(req.into_body(), MAX_BODY)
                .await
                .map_err(|_| ApiError::too_large(MAX_BODY))?;
            let body = parse_body(
                &content_type,
                &body,
                "authentication.k8s.io/v1",
                "SelfSubjectReview",
            )?;
            let review = review::create(&body, user, crate::clock::now())?;
            Ok(json_response(StatusCode::CREATED, &review))
        }
        Route::Resource {
            resource,
            namespace,
            name,
            subresource,
        } => {
            let watching = params.flag("watch");
            let verb = match (&method, name, subresource) {
                (&Method::GET, Some(_), _) => "get",
                (&Method::GET, None, _) if watching => "watch",
                (&Method::GET, None, _) => "list",
                (&Method::POST, None, _) => "create",
                (&Method::PUT, Some(_), _) => "update",
                (&Method::PATCH, Some(_), _) => "patch",
                (&Method::DELETE, Some(_), None) => "delete",
                (&Method::DELETE, None, _) => "deletecollection",
                _ => return Err(ApiError::method_not_allowed()),
            };
            let mut target = ResourceAttributes::new(
                resource.group(),
                resource
                    .group_version()
                    .rsplit('/')
                    .next()
                    .unwrap_or_default(),
                resource.plural(),
            )
            .in_namespace(namespace)
            .with_name(name.unwrap_or_default());
            if let Some(sub) = subresource {
                target = target.with_subresource(sub.as_str());
            }
            authorize(
                shared,
                &Attributes::resource(user.info(), verb, target),
                resource.qualified(),
                name,
            )?;
            if let (Resource::CertificateSigningRequests, Some(Subresource::Approval), Some(name)) =
                (resource, subresource, name)
                && matches!(verb, "update" | "patch")
            {
                authorize_signer_approval(shared, user, name)?;
            }
            let namespace = namespace.to_owned();
            let name = name.map(str::to_owned);
            let accept = header_str(&req, header::ACCEPT);
            let content_type = header_str(&req, header::CONTENT_TYPE);
            let body = match method {
                Method::POST | Method::PUT | Method::PATCH | Method::DELETE => {
                    axum::body::to_bytes(req.into_body(), MAX_BODY)
                        .await
                        .map_err(|_| ApiError::too_large(MAX_BODY))?
                }
                _ => bytes::Bytes::new(),
            };
            let call = Call {
                shared,
                user,
                resource,
                namespace,
                name,
                subresource,
                params,
                accept,
            };
            call.run(verb, &content_type, &body)
        }
    }
}

/// The Service proxy: authorization (`services/proxy`), the endpoint, the request's credentials
/// removed and the hook's extensions added, then the layer and the forwarder, within the
/// maximum duration.
async fn service_proxy(
    shared: &Arc<Shared>,
    user: &User,
    target: service_proxy::ProxyPath,
    mut req: Request,
) -> Result<Response, ApiError> {
    let Some(verb) = service_proxy::verb(req.method()) else {
        return Err(ApiError::method_not_allowed());
    };
    let service_proxy::ProxyPath {
        namespace,
        id,
        rest,
    } = target;
    authorize(
        shared,
        &Attributes::resource(
            user.info(),
            verb,
            ResourceAttributes::new("", "v1", "services")
                .in_namespace(namespace.as_str())
                .with_subresource("proxy")
                .with_name(id.as_str()),
        ),
        "services",
        Some(&id),
    )?;
    let (scheme, addr, service_name) =
        service_proxy::resolve(&lock(&shared.store), &namespace, &id)?;
    let path = service_proxy::upstream_path(rest.as_deref());
    if path.is_empty() && matches!(*req.method(), Method::GET | Method::HEAD) {
        return Ok(service_proxy::redirect_to_slash(
            req.uri().path(),
            req.uri().query(),
        ));
    }
    let deadline = crate::clock::deadline(shared.proxy_max_duration);
    let proxied = addon_jwt::add_auth::ProxiedService::new(namespace.as_str(), service_name);
    let prefix = format!("/api/v1/namespaces/{namespace}/services/{id}/proxy");
    let client = req.extensions().get::<Peer>().map(|p| p.0.ip());
    service_proxy::remove_credentials(req.headers_mut());
    let extensions = req.extensions_mut();
    extensions.insert(addon_jwt::RequestUser::new(user.name.as_str()));
    extensions.insert(proxied);
    extensions.insert(service_proxy::Target {
        scheme,
        addr,
        path,
        prefix,
        client,
        deadline,
    });
    let proxy = lock(&shared.proxy).clone();
    Ok(service_proxy::call(proxy, req, deadline).await)
}

fn non_resource(shared: &Shared, path: &str) -> Result<Response, ApiError> {
    let value = match path {
        "/version" | "/version/" => discovery::version(),
        "/api" | "/api/" => discovery::api_versions(&shared.address),
        "/api/v1" | "/api/v1/" => discovery::core_v1(),
        "/apis" | "/apis/" => discovery::api_groups(),
        "/apis/coordination.k8s.io/v1" | "/apis/coordination.k8s.io/v1/" => {
            discovery::coordination_v1()
        }
        "/apis/authentication.k8s.io/v1" | "/apis/authentication.k8s.io/v1/" => {
            discovery::authentication_v1()
        }
        "/apis/authorization.k8s.io/v1" | "/apis/authorization.k8s.io/v1/" => {
            discovery::authorization_v1()
        }
        "/apis/rbac.authorization.k8s.io/v1" | "/apis/rbac.authorization.k8s.io/v1/" => {
            discovery::rbac_v1()
        }
        "/apis/certificates.k8s.io/v1" | "/apis/certificates.k8s.io/v1/" => {
            discovery::certificates_v1()
        }
        "/apis/discovery.k8s.io/v1" | "/apis/discovery.k8s.io/v1/" => discovery::discovery_v1(),
        "/openapi/v3" | "/openapi/v3/" => discovery::openapi_v3_root(),
        "/openapi/v3/api/v1" => discovery::openapi_v3_core(),
        "/openapi/v3/apis/certificates.k8s.io/v1" => discovery::openapi_v3_certificates(),
        "/openapi/v3/apis/discovery.k8s.io/v1" => discovery::openapi_v3_discovery(),
        "/openapi/v3/apis/rbac.authorization.k8s.io/v1" => discovery::openapi_v3_rbac(),
        "/.well-known/openid-configuration" | "/.well-known/openid-configuration/" => {
            shared.issuer.openid_configuration()
        }
        "/openid/v1/jwks" | "/openid/v1/jwks/" => {
            return Ok((
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/jwk-set+json")],
                shared.issuer.jwks().to_string(),
            )
                .into_response());
        }
        "/healthz" | "/livez" | "/readyz" => {
            return Ok((
                StatusCode::OK,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                "ok",
            )
                .into_response());
        }
        _ => return Err(ApiError::path_not_found()),
    };
    Ok(json_response(StatusCode::OK, &value))
}

/// kube-apiserver's `CertificateApproval` admission: a write to a request's `approval`
/// subresource (approving or denying) also needs the verb `approve` on the resource `signers`
/// of `certificates.k8s.io`, named after the request's signer or its domain (`<domain>/*`).
/// A request that does not exist is left to the store (404).
fn authorize_signer_approval(shared: &Shared, user: &User, name: &str) -> Result<(), ApiError> {
    let store = lock(&shared.store);
    let Some(signer) = store
        .get(Resource::CertificateSigningRequests, "", name)
        .and_then(|o| o.pointer("/spec/signerName"))
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return Ok(());
    };
    let domain = signer.split('/').next().unwrap_or_default();
    let allowed = [signer.clone(), format!("{domain}/*")]
        .into_iter()
        .any(|signer_name| {
            let target = ResourceAttributes::new("certificates.k8s.io", "*", "signers")
                .with_name(&signer_name);
            matches!(
                auth::authorize(
                    &store,
                    &Attributes::resource(user.info(), "approve", target)
                ),
                Decision::Allow(_)
            )
        });
    drop(store);
    if allowed {
        return Ok(());
    }
    let shown: String = signer.chars().take(253).collect();
    Err(ApiError::forbidden(
        Resource::CertificateSigningRequests.qualified(),
        Some(name),
        &format!("user not permitted to approve requests with signerName {shown:?}"),
    ))
}

/// The authorizer's decision on `attrs`, or the 403 kube-apiserver answers (naming `resource`
/// and `name` as it does).
pub(crate) fn authorize(
    shared: &Shared,
    attrs: &Attributes,
    resource: &str,
    name: Option<&str>,
) -> Result<(), ApiError> {
    match auth::authorize(&lock(&shared.store), attrs) {
        Decision::Allow(_) => Ok(()),
        Decision::NoOpinion(reason) => Err(ApiError::forbidden(
            resource,
            name,
            &auth::forbidden_sentence(attrs, &reason),
        )),
    }
}

/// One resource request.
struct Call<'a> {
    shared: &'a Arc<Shared>,
    user: &'a User,
    resource: Resource,
    namespace: String,
    name: Option<String>,
    subresource: Option<Subresource>,
    params: Params,
    accept: String,
}

impl Call<'_> {
    fn run(self, verb: &str, content_type: &str, body: &[u8]) -> Result<Response, ApiError> {
        let now = crate::clock::now();
        let dry_run = self.params.get("dryRun") == Some("All");
        let name = self.name.as_deref().unwrap_or_default();
        let (resource, namespace) = (self.resource, self.namespace.as_str());
        match verb {
            "get" => {
                let store = lock(&self.shared.store);
                let object = store
                    .get(resource, namespace, name)
                    .cloned()
                    .ok_or_else(|| ApiError::not_found(resource.qualified(), name))?;
                drop(store);
                if table::wants_table(&self.accept) {
                    return Ok(json_response(
                        StatusCode::OK,
                        &table::table(resource, &[object], None, now),
                    ));
                }
                Ok(json_response(StatusCode::OK, &object))
            }
            "list" => self.list(now),
            "watch" => {
                let selector = self.selector()?;
                let params = WatchParams {
                    resource_version: self.params.get("resourceVersion").map(str::to_owned),
                    bookmarks: self.params.flag("allowWatchBookmarks"),
                    timeout_seconds: self.params.get("timeoutSeconds").map(str::to_owned),
                };
                let ns = (!namespace.is_empty()).then(|| namespace.to_owned());
                watch::start(self.shared, resource, ns, selector, &params)
            }
            "create" => {
                let mut object = self.parse_body(content_type, body)?;
                if resource == Resource::CertificateSigningRequests {
                    csr::set_requester(&mut object, self.user)?;
                }
                let namespace = if resource.namespaced() { namespace } else { "" };
                let created =
                    self.guarded(&mut lock(&self.shared.store), dry_run, |store, dry_run| {
                        store.create(resource, namespace, object.clone(), dry_run, now)
                    })?;
                self.changed(&created, dry_run);
                Ok(json_response(StatusCode::CREATED, &created))
            }
            "update" => {
                let object = self.parse_body(content_type, body)?;
                let updated =
                    self.guarded(&mut lock(&self.shared.store), dry_run, |store, dry_run| {
                        store.update_part(
                            resource,
                            namespace,
                            name,
                            self.subresource,
                            object.clone(),
                            dry_run,
                            now,
                        )
                    })?;
                self.changed(&updated, dry_run);
                Ok(json_response(StatusCode::OK, &updated))
            }
            "patch" => {
                let media = media_type(content_type);
                let manager = self.params.get("fieldManager").filter(|m| !m.is_empty());
                if media == "application/apply-patch+yaml" {
                    if self.subresource.is_some() {
                        return Err(ApiError::unsupported_media_type(&media));
                    }
                    let Some(manager) = manager else {
                        return Err(ApiError::invalid(
                            "PatchOptions",
                            "",
                            "fieldManager",
                            "FieldValueRequired",
                            "Required value: is required for apply patch",
                        ));
                    };
                    // Clients send JSON, which YAML includes; YAML proper is not accepted.
                    let mut applied = parse_json(body)?;
                    let force = self.params.flag("force");
                    let mut store = lock(&self.shared.store);
                    // An apply that creates a CertificateSigningRequest names its requester,
                    // as a create does.
                    if resource == Resource::CertificateSigningRequests
                        && store.get(resource, namespace, name).is_none()
                    {
                        csr::set_requester(&mut applied, self.user)?;
                    }
                    let applied_object = self.guarded(&mut store, dry_run, |store, dry_run| {
                        store.apply(
                            resource, namespace, name, &applied, manager, force, dry_run, now,
                        )
                    })?;
                    drop(store);
                    self.changed(&applied_object, dry_run);
                    return Ok(json_response(StatusCode::OK, &applied_object));
                }
                if media != "application/merge-patch+json"
                    && media != "application/strategic-merge-patch+json"
                {
                    return Err(ApiError::unsupported_media_type(
                        &media.chars().take(100).collect::<String>(),
                    ));
                }
                let patch = parse_json(body)?;
                let mut store = lock(&self.shared.store);
                let patched = self.guarded(&mut store, dry_run, |store, dry_run| {
                    store.patch_part(
                        resource,
                        namespace,
                        name,
                        self.subresource,
                        &patch,
                        dry_run,
                        now,
                    )
                })?;
                if let (Some(manager), false) = (manager, dry_run) {
                    let key = (resource, namespace.to_owned(), name.to_owned());
                    store.take_ownership(&key, &patch, manager);
                }
                drop(store);
                self.changed(&patched, dry_run);
                Ok(json_response(StatusCode::OK, &patched))
            }
            "delete" => {
                if resource == Resource::Namespaces {
                    return Err(ApiError::method_not_allowed());
                }
                let pre = preconditions(body)?;
                let status = lock(&self.shared.store)
                    .delete(resource, namespace, name, &pre, dry_run, now)?;
                Ok(json_response(StatusCode::OK, &status))
            }
            _ => Err(ApiError::method_not_allowed()),
        }
    }

    /// A write through `op`; for a Role, ClusterRole or binding, first as a dry run whose result
    /// must not grant more than the requester holds (kube-apiserver's RBAC registry), then for
    /// real (`dry_run` as asked). The store stays locked throughout.
    fn guarded(
        &self,
        store: &mut Store,
        dry_run: bool,
        op: impl Fn(&mut Store, bool) -> Result<Value, ApiError>,
    ) -> Result<Value, ApiError> {
        if self.resource.is_rbac() {
            let old = self
                .name
                .as_deref()
                .and_then(|name| store.get(self.resource, &self.namespace, name))
                .cloned();
            let preview = op(store, true)?;
            escalation::confirm(
                store,
                self.resource,
                &self.user.info(),
                &preview,
                old.as_ref(),
            )?;
        }
        op(store, dry_run)
    }

    /// A create or update body: JSON, or protobuf for the kinds the double reads that way.
    fn parse_body(&self, content_type: &str, body: &[u8]) -> Result<Value, ApiError> {
        parse_body(
            content_type,
            body,
            self.resource.group_version(),
            self.resource.kind(),
        )
    }

    /// After a write: the CertificateSigningRequest hook (the approver and signer).
    fn changed(&self, object: &Value, dry_run: bool) {
        if self.resource != Resource::CertificateSigningRequests || dry_run {
            return;
        }
        if let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str) {
            self.shared.after_csr_change(name);
        }
    }

    fn selector(&self) -> Result<Selector, ApiError> {
        Selector::parse(
            self.params.get("labelSelector"),
            self.params.get("fieldSelector"),
            self.resource.fields(),
        )
    }

    fn list(&self, now: std::time::SystemTime) -> Result<Response, ApiError> {
        let selector = self.selector()?;
        let ns = (!self.namespace.is_empty()).then_some(self.namespace.as_str());
        let (items, rv) = {
            let store = lock(&self.shared.store);
            (store.list(self.resource, ns), store.revision())
        };
        let items: Vec<Value> = items.into_iter().filter(|o| selector.matches(o)).collect();
        if table::wants_table(&self.accept) {
            return Ok(json_response(
                StatusCode::OK,
                &table::table(self.resource, &items, Some(rv), now),
            ));
        }
        let items: Vec<Value> = items
            .into_iter()
            .map(|mut o| {
                if let Some(m) = o.as_object_mut() {
                    m.remove("kind");
                    m.remove("apiVersion");
                }
                o
            })
            .collect();
        Ok(json_response(
            StatusCode::OK,
            &json!({
                "kind": format!("{}List", self.resource.kind()),
                "apiVersion": self.resource.group_version(),
                "metadata": {"resourceVersion": rv.to_string()},
                "items": items,
            }),
        ))
    }
}

/// A request header as text (empty when absent or not text).
fn header_str(req: &Request, name: header::HeaderName) -> String {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// The media type of a `Content-Type`, lowercase, without parameters.
fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// A body of `kind` as JSON: JSON as sent, or Kubernetes protobuf (Go's typed clients) for the
/// kinds the double reads that way; protobuf for other kinds is 415.
fn parse_body(
    content_type: &str,
    body: &[u8],
    api_version: &str,
    kind: &str,
) -> Result<Value, ApiError> {
    let media = media_type(content_type);
    if media == protobuf::MEDIA_TYPE {
        if protobuf::decodes(kind) {
            return protobuf::decode(body, api_version, kind);
        }
        return Err(ApiError::unsupported_media_type(&media));
    }
    parse_json(body)
}

fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the request body is not valid JSON (line {}, column {})",
            e.line(),
            e.column()
        ))
    })
}

/// `DeleteOptions.preconditions` from an optional body.
fn preconditions(body: &[u8]) -> Result<Preconditions, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Preconditions::default());
    }
    let v = parse_json(body)?;
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
    Ok(Preconditions {
        uid: s("/preconditions/uid"),
        resource_version: s("/preconditions/resourceVersion"),
    })
}
