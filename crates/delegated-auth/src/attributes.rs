//! What an authorizer decides on: the attributes of a request, as Kubernetes'
//! `authorizer.Attributes` carries them.

use std::sync::Arc;

use crate::user::UserInfo;

/// The attributes of one request: who, which verb, and on what.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Attributes {
    /// Who asks; shared, so that the attributes of many requests by one user (and the entries
    /// of a decision cache) hold one copy of it.
    pub user: Arc<UserInfo>,
    /// The verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection` for resources; the lowercase HTTP method (`get`, `post`, `put`,
    /// `patch`, `delete`, `head`, `options`) for non-resource paths; or any verb a caller
    /// authorizes explicitly (`impersonate`, `approve`, `bind`, `escalate`...).
    pub verb: String,
    /// What the request is about.
    pub target: Target,
}

/// A resource request or a non-resource one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// A request for an API resource.
    Resource(ResourceAttributes),
    /// A request for a path that is no API resource (`/healthz`, `/metrics`, `/version`).
    NonResource {
        /// The request's path.
        path: String,
    },
}

/// The resource a request is about (`authorization.k8s.io/v1` `ResourceAttributes`).
/// Empty strings stand for "none" (the cluster scope, the core group, no subresource, no name),
/// as in Kubernetes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ResourceAttributes {
    /// The namespace, empty for cluster-scoped requests and requests across namespaces.
    pub namespace: String,
    /// The API group, empty for the core group.
    pub api_group: String,
    /// The API version (`v1`); `*` for any.
    pub api_version: String,
    /// The resource (`pods`).
    pub resource: String,
    /// The subresource (`log`, `status`, `scale`), empty for none.
    pub subresource: String,
    /// The object's name, empty for collections and for `create` without a name.
    pub name: String,
    /// The raw field selector of a `list`, `watch` or `deletecollection`, empty for none
    /// (`SubjectAccessReview`'s `fieldSelector.rawSelector`); RBAC does not read it.
    pub field_selector: String,
    /// The raw label selector of a `list`, `watch` or `deletecollection`, empty for none
    /// (`SubjectAccessReview`'s `labelSelector.rawSelector`); RBAC does not read it.
    pub label_selector: String,
}

impl ResourceAttributes {
    /// A resource in `api_group`, version `api_version`, with no namespace, subresource or name.
    #[must_use]
    pub fn new(
        api_group: impl Into<String>,
        api_version: impl Into<String>,
        resource: impl Into<String>,
    ) -> Self {
        Self {
            api_group: api_group.into(),
            api_version: api_version.into(),
            resource: resource.into(),
            ..Self::default()
        }
    }

    /// The same, in `namespace`.
    #[must_use]
    pub fn in_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The same, for `subresource`.
    #[must_use]
    pub fn with_subresource(mut self, subresource: impl Into<String>) -> Self {
        self.subresource = subresource.into();
        self
    }

    /// The same, for the object named `name`.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

impl Attributes {
    /// The attributes of a resource request, by `user` (a `UserInfo`, or an `Arc` of one to
    /// share it).
    #[must_use]
    pub fn resource(
        user: impl Into<Arc<UserInfo>>,
        verb: impl Into<String>,
        resource: ResourceAttributes,
    ) -> Self {
        Self {
            user: user.into(),
            verb: verb.into(),
            target: Target::Resource(resource),
        }
    }

    /// The attributes of a non-resource request, by `user` (a `UserInfo`, or an `Arc` of one
    /// to share it).
    #[must_use]
    pub fn non_resource(
        user: impl Into<Arc<UserInfo>>,
        verb: impl Into<String>,
        path: impl Into<String>,
    ) -> Self {
        Self {
            user: user.into(),
            verb: verb.into(),
            target: Target::NonResource { path: path.into() },
        }
    }

    /// Whether the verb only reads (`get`, `list`, `watch`), as Kubernetes' `IsReadOnly`.
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        matches!(self.verb.as_str(), "get" | "list" | "watch")
    }
}
