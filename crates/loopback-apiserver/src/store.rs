//! The double's object store: JSON objects, one global resourceVersion counter (as etcd's
//! revision), a bounded event history for watches, and the bootstrap signer's pass.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::SystemTime;

use base64::Engine as _;
use bootstrap_token::SecretObject;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use super::csr;
use super::ids;
use super::rbac;
use super::status::{ApiError, FieldError};

/// Most objects the store holds by default (all resources together).
pub(crate) const MAX_OBJECTS: usize = 10_000;
/// The highest object limit [`super::Builder::max_objects`] accepts.
pub(crate) const MAX_OBJECTS_LIMIT: usize = 100_000;
/// Most fields whose owner server-side apply tracks per object.
const MAX_OWNED_FIELDS: usize = 1_000;
/// Events retained for watches that resume from a resourceVersion.
pub(crate) const EVENT_HISTORY: usize = 1_000;
/// The ServiceAccount kube-controller-manager creates in every namespace.
pub(crate) const DEFAULT_SERVICE_ACCOUNT: &str = "default";
/// Capacity of the live event channel; a watcher that falls this far behind is ended.
const CHANNEL_CAPACITY: usize = 1_024;

/// The resources the double stores (core/v1 including Nodes, `coordination.k8s.io/v1` Leases,
/// `certificates.k8s.io/v1` CertificateSigningRequests, `discovery.k8s.io/v1` EndpointSlices and
/// the `rbac.authorization.k8s.io/v1` policy objects).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Resource {
    Namespaces,
    Nodes,
    Secrets,
    ConfigMaps,
    Services,
    Leases,
    CertificateSigningRequests,
    EndpointSlices,
    ServiceAccounts,
    Roles,
    ClusterRoles,
    RoleBindings,
    ClusterRoleBindings,
}

impl Resource {
    pub(crate) fn from_plural(s: &str) -> Option<Resource> {
        match s {
            "namespaces" => Some(Resource::Namespaces),
            "nodes" => Some(Resource::Nodes),
            "secrets" => Some(Resource::Secrets),
            "configmaps" => Some(Resource::ConfigMaps),
            "services" => Some(Resource::Services),
            "leases" => Some(Resource::Leases),
            "certificatesigningrequests" => Some(Resource::CertificateSigningRequests),
            "endpointslices" => Some(Resource::EndpointSlices),
            "serviceaccounts" => Some(Resource::ServiceAccounts),
            "roles" => Some(Resource::Roles),
            "clusterroles" => Some(Resource::ClusterRoles),
            "rolebindings" => Some(Resource::RoleBindings),
            "clusterrolebindings" => Some(Resource::ClusterRoleBindings),
            _ => None,
        }
    }

    /// The resource named `plural` in `group_version` (`v1` for the core group).
    pub(crate) fn in_group(group_version: &str, plural: &str) -> Option<Resource> {
        Resource::from_plural(plural).filter(|r| r.group_version() == group_version)
    }

    /// The `apiVersion` of its objects.
    pub(crate) fn group_version(self) -> &'static str {
        match self {
            Resource::Leases => "coordination.k8s.io/v1",
            Resource::CertificateSigningRequests => "certificates.k8s.io/v1",
            Resource::EndpointSlices => "discovery.k8s.io/v1",
            Resource::Roles
            | Resource::ClusterRoles
            | Resource::RoleBindings
            | Resource::ClusterRoleBindings => "rbac.authorization.k8s.io/v1",
            Resource::Namespaces
            | Resource::Nodes
            | Resource::Secrets
            | Resource::ConfigMaps
            | Resource::Services
            | Resource::ServiceAccounts => "v1",
        }
    }

    /// The API group (empty for the core group).
    pub(crate) fn group(self) -> &'static str {
        self.group_version()
            .split_once('/')
            .map_or("", |(group, _)| group)
    }

    /// The qualified resource kube-apiserver names in messages: `secrets`,
    /// `certificatesigningrequests.certificates.k8s.io`.
    pub(crate) fn qualified(self) -> &'static str {
        match self {
            Resource::Leases => "leases.coordination.k8s.io",
            Resource::CertificateSigningRequests => {
                "certificatesigningrequests.certificates.k8s.io"
            }
            Resource::EndpointSlices => "endpointslices.discovery.k8s.io",
            Resource::Roles => "roles.rbac.authorization.k8s.io",
            Resource::ClusterRoles => "clusterroles.rbac.authorization.k8s.io",
            Resource::RoleBindings => "rolebindings.rbac.authorization.k8s.io",
            Resource::ClusterRoleBindings => "clusterrolebindings.rbac.authorization.k8s.io",
            Resource::Namespaces
            | Resource::Nodes
            | Resource::Secrets
            | Resource::ConfigMaps
            | Resource::Services
            | Resource::ServiceAccounts => self.plural(),
        }
    }

    /// Whether it is an `rbac.authorization.k8s.io` object (whose writes are checked for
    /// escalation).
    pub(crate) fn is_rbac(self) -> bool {
        matches!(
            self,
            Resource::Roles
                | Resource::ClusterRoles
                | Resource::RoleBindings
                | Resource::ClusterRoleBindings
        )
    }

    /// The subresources the double serves for the resource.
    pub(crate) fn subresource(self, name: &str) -> Option<Subresource> {
        match (self, name) {
            (Resource::CertificateSigningRequests, "approval") => Some(Subresource::Approval),
            (Resource::CertificateSigningRequests | Resource::Nodes, "status") => {
                Some(Subresource::Status)
            }
            _ => None,
        }
    }

    pub(crate) fn plural(self) -> &'static str {
        match self {
            Resource::Namespaces => "namespaces",
            Resource::Nodes => "nodes",
            Resource::Secrets => "secrets",
            Resource::ConfigMaps => "configmaps",
            Resource::Services => "services",
            Resource::Leases => "leases",
            Resource::CertificateSigningRequests => "certificatesigningrequests",
            Resource::EndpointSlices => "endpointslices",
            Resource::ServiceAccounts => "serviceaccounts",
            Resource::Roles => "roles",
            Resource::ClusterRoles => "clusterroles",
            Resource::RoleBindings => "rolebindings",
            Resource::ClusterRoleBindings => "clusterrolebindings",
        }
    }

    pub(crate) fn kind(self) -> &'static str {
        match self {
            Resource::Namespaces => "Namespace",
            Resource::Nodes => "Node",
            Resource::Secrets => "Secret",
            Resource::ConfigMaps => "ConfigMap",
            Resource::Services => "Service",
            Resource::Leases => "Lease",
            Resource::CertificateSigningRequests => "CertificateSigningRequest",
            Resource::EndpointSlices => "EndpointSlice",
            Resource::ServiceAccounts => "ServiceAccount",
            Resource::Roles => "Role",
            Resource::ClusterRoles => "ClusterRole",
            Resource::RoleBindings => "RoleBinding",
            Resource::ClusterRoleBindings => "ClusterRoleBinding",
        }
    }

    pub(crate) fn namespaced(self) -> bool {
        !matches!(
            self,
            Resource::Namespaces
                | Resource::Nodes
                | Resource::CertificateSigningRequests
                | Resource::ClusterRoles
                | Resource::ClusterRoleBindings
        )
    }

    /// The field selectors the resource supports.
    pub(crate) fn fields(self) -> &'static [&'static str] {
        match self {
            Resource::Namespaces => &["metadata.name", "status.phase"],
            Resource::Secrets => &["metadata.name", "metadata.namespace", "type"],
            Resource::ConfigMaps
            | Resource::Services
            | Resource::Leases
            | Resource::EndpointSlices
            | Resource::ServiceAccounts
            | Resource::Roles
            | Resource::RoleBindings => &["metadata.name", "metadata.namespace"],
            Resource::CertificateSigningRequests => &["metadata.name", "spec.signerName"],
            Resource::Nodes | Resource::ClusterRoles | Resource::ClusterRoleBindings => {
                &["metadata.name"]
            }
        }
    }
}

/// The subresource an update came through; it decides which fields the update may change (the
/// registry strategy of the resource).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subresource {
    /// `.../approval`.
    Approval,
    /// `.../status`.
    Status,
}

impl Subresource {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Subresource::Approval => "approval",
            Subresource::Status => "status",
        }
    }
}

/// The kind of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
    /// Not a change: the history was compacted, every open watch ends with 410 Gone.
    Expired,
}

impl EventType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
            EventType::Expired => "ERROR",
        }
    }
}

/// One change, as a watch reports it.
#[derive(Debug)]
pub(crate) struct Event {
    pub(crate) rv: u64,
    pub(crate) resource: Resource,
    pub(crate) namespace: String,
    pub(crate) kind: EventType,
    pub(crate) object: Value,
}

type Key = (Resource, String, String);

/// Delete preconditions (`DeleteOptions.preconditions`).
#[derive(Debug, Default)]
pub(crate) struct Preconditions {
    pub(crate) uid: Option<String>,
    pub(crate) resource_version: Option<String>,
}

/// Where a watch starts.
pub(crate) enum WatchStart {
    /// Events after this revision, then live ones.
    Replay(Vec<Arc<Event>>),
    /// The revision is older than the retained history: `too old resource version`.
    TooOld { requested: u64, oldest: u64 },
}

/// The in-memory store.
pub(crate) struct Store {
    objects: BTreeMap<Key, Value>,
    rv: u64,
    history: VecDeque<Arc<Event>>,
    /// Every event with a revision above this is in `history`.
    floor: u64,
    tx: broadcast::Sender<Arc<Event>>,
    signer: bool,
    /// Most objects held (all resources together).
    pub(crate) max_objects: usize,
    /// Events retained for watches that resume.
    history_limit: usize,
    /// Whether EndpointSlices may name loopback addresses
    /// ([`crate::Builder::dangerous_allow_loopback_endpoints`]).
    pub(crate) loopback_endpoints: bool,
    /// Server-side apply's field ownership: per object, each leaf field's JSON pointer and the
    /// field managers that own it (several when they applied the same value).
    owners: BTreeMap<Key, BTreeMap<String, BTreeSet<String>>>,
    /// The RBAC policy built from the objects, forgotten when an RBAC object changes.
    pub(crate) policy: rbac::PolicyCache,
}

impl Store {
    #[cfg(test)]
    pub(crate) fn new(signer: bool) -> Store {
        Store::with_history(signer, EVENT_HISTORY)
    }

    /// A store retaining `history` events for resuming watches, whose live watchers may fall
    /// as far behind before they are ended.
    pub(crate) fn with_history(signer: bool, history: usize) -> Store {
        let (tx, _) = broadcast::channel(history.max(CHANNEL_CAPACITY));
        Store {
            objects: BTreeMap::new(),
            rv: 0,
            history: VecDeque::new(),
            floor: 0,
            owners: BTreeMap::new(),
            max_objects: MAX_OBJECTS,
            history_limit: history,
            loopback_endpoints: false,
            tx,
            signer,
            policy: rbac::PolicyCache::default(),
        }
    }

    /// The current revision.
    pub(crate) fn revision(&self) -> u64 {
        self.rv
    }

    pub(crate) fn get(&self, resource: Resource, namespace: &str, name: &str) -> Option<&Value> {
        self.objects
            .get(&(resource, namespace.to_owned(), name.to_owned()))
    }

    /// Objects of `resource`, in one namespace or all, in key order.
    pub(crate) fn list(&self, resource: Resource, namespace: Option<&str>) -> Vec<Value> {
        self.objects
            .iter()
            .filter(|((r, ns, _), _)| *r == resource && namespace.is_none_or(|n| n == ns))
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// The start of a watch at `from` (None: now), with a subscription taken under the same lock
    /// so no event falls between replay and live stream.
    pub(crate) fn watch(&self, from: Option<u64>) -> (WatchStart, broadcast::Receiver<Arc<Event>>) {
        let rx = self.tx.subscribe();
        let start = match from {
            None => WatchStart::Replay(Vec::new()),
            Some(rv) if rv < self.floor => WatchStart::TooOld {
                requested: rv,
                oldest: self.floor.saturating_add(1),
            },
            Some(rv) => {
                WatchStart::Replay(self.history.iter().filter(|e| e.rv > rv).cloned().collect())
            }
        };
        (start, rx)
    }

    /// POST: create.
    pub(crate) fn create(
        &mut self,
        resource: Resource,
        namespace: &str,
        object: Value,
        dry_run: bool,
        now: SystemTime,
    ) -> Result<Value, ApiError> {
        let mut object = normalise(resource, namespace, object)?;
        let meta = meta_mut(&mut object)?;
        let mut name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if name.is_empty() {
            let prefix = meta
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if prefix.is_empty() {
                return Err(ApiError::invalid(
                    resource.kind(),
                    "",
                    "metadata.name",
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                ));
            }
            let suffix = ids::name_suffix().map_err(|_| ApiError::internal("no randomness"))?;
            name = format!("{prefix}{suffix}");
        }
        validate_name(resource, &name)?;
        if resource == Resource::CertificateSigningRequests {
            csr::prepare_create(&mut object);
            csr::validate_create(&object, &name)?;
        }
        if resource == Resource::EndpointSlices {
            validate_endpoint_slice(&object, &name, self.loopback_endpoints)?;
        }
        if resource.is_rbac() {
            rbac::validate(resource, &object, &name, None)?;
        }
        let meta = meta_mut(&mut object)?;
        if resource.namespaced() && self.get(Resource::Namespaces, "", namespace).is_none() {
            return Err(ApiError::not_found("namespaces", namespace));
        }
        let key = (resource, namespace.to_owned(), name.clone());
        if self.objects.contains_key(&key) {
            return Err(ApiError::already_exists(resource.qualified(), &name));
        }
        if self.objects.len() >= self.max_objects {
            return Err(ApiError::too_many(
                "loopback API server (test double): object limit reached",
            ));
        }
        let uid = ids::uuid().map_err(|_| ApiError::internal("no randomness"))?;
        meta.insert("name".to_owned(), Value::String(name));
        meta.insert("uid".to_owned(), Value::String(uid));
        meta.insert(
            "creationTimestamp".to_owned(),
            Value::String(ids::timestamp(now)),
        );
        meta.remove("resourceVersion");
        meta.remove("deletionTimestamp");
        if dry_run {
            return Ok(object);
        }
        Ok(self.commit(key, object, EventType::Added, now))
    }

    /// PUT: update, with optimistic concurrency when the body carries a resourceVersion, of the
    /// object (`part` None) or of one of its subresources: the resource's strategy decides which
    /// fields the update may change, then its validation runs.
    #[allow(clippy::too_many_arguments, reason = "one per request parameter")]
    pub(crate) fn update_part(
        &mut self,
        resource: Resource,
        namespace: &str,
        name: &str,
        part: Option<Subresource>,
        object: Value,
        dry_run: bool,
        now: SystemTime,
    ) -> Result<Value, ApiError> {
        let mut object = normalise(resource, namespace, object)?;
        let meta = meta_mut(&mut object)?;
        let body_name = meta.get("name").and_then(Value::as_str).unwrap_or("");
        if body_name != name {
            let shown: String = body_name.chars().take(253).collect();
            return Err(ApiError::bad_request(format!(
                "the name of the object ({shown}) does not match the name on the URL ({name})"
            )));
        }
        let key = (resource, namespace.to_owned(), name.to_owned());
        let Some(old) = self.objects.get(&key) else {
            return Err(ApiError::not_found(resource.qualified(), name));
        };
        let old_rv = old
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str);
        match meta.get("resourceVersion").and_then(Value::as_str) {
            Some(rv) if !rv.is_empty() && Some(rv) != old_rv => {
                return Err(ApiError::stale(resource.qualified(), name));
            }
            _ => {}
        }
        // Server-owned fields are kept from the stored object.
        for field in ["uid", "creationTimestamp", "resourceVersion"] {
            match old.pointer(&format!("/metadata/{field}")) {
                Some(v) => meta.insert(field.to_owned(), v.clone()),
                None => meta.remove(field),
            };
        }
        if resource == Resource::CertificateSigningRequests {
            csr::prepare_update(&mut object, old, part, now);
            csr::validate_update(&object, old, part, name)?;
        }
        if resource == Resource::EndpointSlices {
            validate_endpoint_slice(&object, name, self.loopback_endpoints)?;
        }
        if resource == Resource::Nodes {
            node_prepare_update(&mut object, old, part);
        }
        if resource.is_rbac() {
            rbac::validate(resource, &object, name, Some(old))?;
        }
        if &object == old || dry_run {
            return Ok(object);
        }
        Ok(self.commit(key, object, EventType::Modified, now))
    }

    /// PATCH as a JSON merge patch (RFC 7386).
    pub(crate) fn patch(
        &mut self,
        resource: Resource,
        namespace: &str,
        name: &str,
        patch: &Value,
        dry_run: bool,
        now: SystemTime,
    ) -> Result<Value, ApiError> {
        self.patch_part(resource, namespace, name, None, patch, dry_run, now)
    }

    /// PATCH (JSON merge patch) of the object (`part` None) or of one of its subresources, which
    /// then updates as [`Store::update_part`] does.
    #[allow(clippy::too_many_arguments, reason = "one per request parameter")]
    pub(crate) fn patch_part(
        &mut self,
        resource: Resource,
        namespace: &str,
        name: &str,
        part: Option<Subresource>,
        patch: &Value,
        dry_run: bool,
        now: SystemTime,
    ) -> Result<Value, ApiError> {
        let key = (resource, namespace.to_owned(), name.to_owned());
        let Some(old) = self.objects.get(&key) else {
            return Err(ApiError::not_found(resource.qualified(), name));
        };
        if !patch.is_object() {
            return Err(ApiError::bad_request(
                "the merge patch must be a JSON object",
            ));
        }
        let mut merged = old.clone();
        merge_patch(&mut merged, patch, 0);
        // A patch that names no resourceVersion is unconditional.
        let wanted = patch
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(meta) = merged.get_mut("metadata").and_then(Value::as_object_mut) {
            match old.pointer("/metadata/resourceVersion") {
                Some(v) if wanted.is_none() => {
                    meta.insert("resourceVersion".to_owned(), v.clone());
                }
                _ => {}
            }
            meta.insert("name".to_owned(), Value::String(name.to_owned()));
            if resource.namespaced() {
                meta.insert("namespace".to_owned(), Value::String(namespace.to_owned()));
            }
        }
        self.update_part(resource, namespace, name, part, merged, dry_run, now)
    }

    /// PATCH as server-side apply (`application/apply-patch+yaml`, JSON body), the subset the
    /// double serves: the applied configuration is merged into the object (created when
    /// missing), and a field that another manager set to a different value is a conflict (409,
    /// as kube-apiserver words it) unless `force`. Omitted fields a manager applied before are
    /// not removed.
    #[allow(clippy::too_many_arguments, reason = "one per request parameter")]
    pub(crate) fn apply(
        &mut self,
        resource: Resource,
        namespace: &str,
        name: &str,
        applied: &Value,
        manager: &str,
        force: bool,
        dry_run: bool,
        now: SystemTime,
    ) -> Result<Value, ApiError> {
        if !applied.is_object() {
            return Err(ApiError::bad_request(
                "the applied configuration must be an object",
            ));
        }
        let key = (resource, namespace.to_owned(), name.to_owned());
        let Some(old) = self.objects.get(&key) else {
            let mut object = applied.clone();
            if let Some(meta) = object
                .as_object_mut()
                .map(|o| o.entry("metadata").or_insert_with(|| json!({})))
                .and_then(Value::as_object_mut)
            {
                meta.insert("name".to_owned(), Value::String(name.to_owned()));
            }
            let created = self.create(resource, namespace, object, dry_run, now)?;
            if !dry_run {
                self.take_ownership(&key, applied, manager);
            }
            return Ok(created);
        };
        let mut current = BTreeMap::new();
        leaves(old, String::new(), &mut current);
        let mut wanted = BTreeMap::new();
        leaves(applied, String::new(), &mut wanted);
        let owners = self.owners.get(&key);
        let conflicts: Vec<(String, String)> = wanted
            .iter()
            .filter(|(path, value)| !value.is_null() && current.get(*path) != Some(*value))
            .flat_map(|(path, _)| {
                owners
                    .and_then(|o| o.get(path))
                    .into_iter()
                    .flatten()
                    .filter(|owner| owner.as_str() != manager)
                    .map(|owner| (owner.clone(), path.replace('/', ".")))
            })
            .collect();
        if !conflicts.is_empty() && !force {
            return Err(ApiError::apply_conflicts(resource, name, &conflicts));
        }
        let result = self.patch(resource, namespace, name, applied, dry_run, now)?;
        if !dry_run {
            // The same value applied again is shared ownership; a new value is the applier's
            // alone.
            let owners = self.owners.entry(key).or_default();
            for (path, value) in wanted {
                if value.is_null() {
                    owners.retain(|p, _| !(p == &path || p.starts_with(&format!("{path}/"))));
                } else if current.get(&path) == Some(&value) {
                    owners.entry(path).or_default().insert(manager.to_owned());
                } else {
                    owners.insert(path, BTreeSet::from([manager.to_owned()]));
                }
            }
        }
        Ok(result)
    }

    /// Records `manager` as the only owner of every leaf `patch` sets (and drops the owners of
    /// the fields it removes with `null`), after a create by apply or a patch made with a
    /// `fieldManager`.
    pub(crate) fn take_ownership(
        &mut self,
        key: &(Resource, String, String),
        patch: &Value,
        manager: &str,
    ) {
        let mut set = BTreeMap::new();
        leaves(patch, String::new(), &mut set);
        let owners = self.owners.entry(key.clone()).or_default();
        for (path, value) in set {
            if value.is_null() {
                // Removed, and everything below it.
                owners.retain(|p, _| !(p == &path || p.starts_with(&format!("{path}/"))));
            } else {
                owners.insert(path, BTreeSet::from([manager.to_owned()]));
            }
        }
    }

    /// DELETE with preconditions.
    pub(crate) fn delete(
        &mut self,
        resource: Resource,
        namespace: &str,
        name: &str,
        pre: &Preconditions,
        dry_run: bool,
        now: SystemTime,
    ) -> Result<Value, ApiError> {
        let key = (resource, namespace.to_owned(), name.to_owned());
        let Some(old) = self.objects.get(&key) else {
            return Err(ApiError::not_found(resource.qualified(), name));
        };
        let field = |f: &str| {
            old.pointer(&format!("/metadata/{f}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        if let Some(uid) = &pre.uid {
            let have = field("uid");
            if *uid != have {
                return Err(ApiError::conflict(
                    resource.qualified(),
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {have}"
                    ),
                ));
            }
        }
        if let Some(rv) = &pre.resource_version {
            let have = field("resourceVersion");
            if *rv != have {
                return Err(ApiError::conflict(
                    resource.qualified(),
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {have}"
                    ),
                ));
            }
        }
        let uid = field("uid");
        if dry_run {
            return Ok(success(resource, name, &uid));
        }
        let Some(mut object) = self.objects.remove(&key) else {
            return Err(ApiError::not_found(resource.qualified(), name));
        };
        self.owners.remove(&key);
        self.rv = self.rv.saturating_add(1);
        set_rv(&mut object, self.rv);
        self.record(resource, namespace, EventType::Deleted, object);
        self.after_change(resource, namespace, name, now);
        Ok(success(resource, name, &uid))
    }

    /// Store `object` at a new revision and announce it.
    fn commit(&mut self, key: Key, mut object: Value, kind: EventType, now: SystemTime) -> Value {
        self.rv = self.rv.saturating_add(1);
        set_rv(&mut object, self.rv);
        let (resource, namespace, name) = key.clone();
        self.objects.insert(key, object.clone());
        self.record(resource, &namespace, kind, object.clone());
        self.after_change(resource, &namespace, &name, now);
        object
    }

    /// Compacts the history, as etcd compaction does: watches from an earlier revision are
    /// refused with 410, and every open watch is ended with a 410 ERROR event.
    pub(crate) fn compact(&mut self) {
        self.history.clear();
        self.floor = self.rv;
        let _ = self.tx.send(Arc::new(Event {
            rv: self.rv,
            resource: Resource::Namespaces,
            namespace: String::new(),
            kind: EventType::Expired,
            object: Value::Null,
        }));
    }

    fn record(&mut self, resource: Resource, namespace: &str, kind: EventType, object: Value) {
        if resource.is_rbac() {
            self.policy.invalidate();
        }
        let event = Arc::new(Event {
            rv: self.rv,
            resource,
            namespace: namespace.to_owned(),
            kind,
            object,
        });
        self.history.push_back(Arc::clone(&event));
        while self.history.len() > self.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.floor = old.rv;
            }
        }
        // No receivers is fine.
        let _ = self.tx.send(event);
    }

    /// The controllers that follow a change: the bootstrap signer, the `serviceaccounts`
    /// controller (a Namespace created, or its `default` ServiceAccount deleted) and the
    /// `clusterrole-aggregation` controller.
    fn after_change(&mut self, resource: Resource, namespace: &str, name: &str, now: SystemTime) {
        let trigger = match resource {
            Resource::Secrets => namespace == bootstrap_token::NAMESPACE,
            Resource::ConfigMaps => {
                namespace == clusterinfo::CLUSTER_INFO_NAMESPACE
                    && name == clusterinfo::CLUSTER_INFO_NAME
            }
            Resource::Namespaces => {
                self.default_service_account(name, now);
                false
            }
            Resource::ServiceAccounts => {
                if name == DEFAULT_SERVICE_ACCOUNT {
                    self.default_service_account(namespace, now);
                }
                false
            }
            Resource::ClusterRoles => {
                self.aggregate_cluster_roles();
                false
            }
            Resource::Services
            | Resource::Nodes
            | Resource::Leases
            | Resource::CertificateSigningRequests
            | Resource::EndpointSlices
            | Resource::Roles
            | Resource::RoleBindings
            | Resource::ClusterRoleBindings => false,
        };
        if trigger && self.signer {
            self.sign(now);
        }
    }

    /// kube-controller-manager's `serviceaccounts` controller: the ServiceAccount `default` in
    /// `namespace`, created when the namespace exists without it. A store at its object limit
    /// goes without (as a cluster whose API refuses the write).
    fn default_service_account(&mut self, namespace: &str, now: SystemTime) {
        if self.get(Resource::Namespaces, "", namespace).is_none()
            || self
                .get(
                    Resource::ServiceAccounts,
                    namespace,
                    DEFAULT_SERVICE_ACCOUNT,
                )
                .is_some()
        {
            return;
        }
        let account = json!({"metadata": {"name": DEFAULT_SERVICE_ACCOUNT}});
        if let Err(e) = self.create(Resource::ServiceAccounts, namespace, account, false, now) {
            tracing::debug!(namespace, error = ?e, "no default service account");
        }
    }

    /// kube-controller-manager's `clusterrole-aggregation` controller: every ClusterRole with
    /// an `aggregationRule` gets the rules of the ClusterRoles its selectors match, computed by
    /// [`delegated_auth::aggregate_cluster_roles`], written (as the controller's own update,
    /// which no controller follows) when they changed.
    fn aggregate_cluster_roles(&mut self) {
        let mut objects = delegated_auth::RbacObjects::new();
        for object in self.list(Resource::ClusterRoles, None) {
            if let Ok(json) = serde_json::to_vec(&object) {
                let _ = objects.add_json(&json);
            }
        }
        let before = objects.cluster_roles.clone();
        if delegated_auth::aggregate_cluster_roles(&mut objects.cluster_roles).is_err() {
            tracing::debug!("an aggregationRule does not convert; no role aggregated");
            return;
        }
        for (role, old) in objects.cluster_roles.iter().zip(&before) {
            if role.aggregation_rule.is_none() || role.rules == old.rules {
                continue;
            }
            let key: Key = (
                Resource::ClusterRoles,
                String::new(),
                role.metadata.name.clone(),
            );
            let (Some(mut object), Ok(rules)) = (
                self.objects.get(&key).cloned(),
                serde_json::to_value(&role.rules),
            ) else {
                continue;
            };
            if let Some(map) = object.as_object_mut() {
                map.insert("rules".to_owned(), rules);
            }
            self.rv = self.rv.saturating_add(1);
            set_rv(&mut object, self.rv);
            self.objects.insert(key, object.clone());
            self.record(Resource::ClusterRoles, "", EventType::Modified, object);
        }
    }

    /// One pass of kube-controller-manager's bootstrapsigner: `clusterinfo::reconcile` decides,
    /// this writes.
    pub(crate) fn sign(&mut self, now: SystemTime) {
        let key: Key = (
            Resource::ConfigMaps,
            clusterinfo::CLUSTER_INFO_NAMESPACE.to_owned(),
            clusterinfo::CLUSTER_INFO_NAME.to_owned(),
        );
        let Some(cm) = self.objects.get(&key) else {
            return;
        };
        let data: BTreeMap<String, String> = cm
            .get("data")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        let secrets: Vec<SecretObject> = self
            .objects
            .iter()
            .filter(|((r, ns, _), _)| *r == Resource::Secrets && ns == bootstrap_token::NAMESPACE)
            .filter_map(|(_, v)| {
                serde_json::to_vec(v)
                    .ok()
                    .and_then(|b| SecretObject::from_json(&b).ok())
            })
            .collect();
        let reconciled = clusterinfo::reconcile(&data, secrets.iter(), now);
        if !reconciled.update_needed() {
            return;
        }
        let mut cm = cm.clone();
        let new_data: Map<String, Value> = reconciled
            .into_data()
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        if let Some(obj) = cm.as_object_mut() {
            obj.insert("data".to_owned(), Value::Object(new_data));
        }
        // Not through `commit`: a signer write does not trigger the signer again.
        self.rv = self.rv.saturating_add(1);
        set_rv(&mut cm, self.rv);
        self.objects.insert(key, cm.clone());
        self.record(
            Resource::ConfigMaps,
            clusterinfo::CLUSTER_INFO_NAMESPACE,
            EventType::Modified,
            cm,
        );
    }

    /// The Secret `kube-system/bootstrap-token-<id>` as the authenticator reads it.
    pub(crate) fn bootstrap_secret(&self, id: &str) -> Option<SecretObject> {
        let name = format!("{}{id}", bootstrap_token::SECRET_NAME_PREFIX);
        let v = self.get(Resource::Secrets, bootstrap_token::NAMESPACE, &name)?;
        let bytes = serde_json::to_vec(v).ok()?;
        SecretObject::from_json(&bytes).ok()
    }
}

/// `metav1.Status` Success, as a DELETE of a Secret or ConfigMap answers.
fn success(resource: Resource, name: &str, uid: &str) -> Value {
    let mut details = json!({"name": name, "kind": resource.plural(), "uid": uid});
    if let (false, Some(map)) = (resource.group().is_empty(), details.as_object_mut()) {
        map.insert(
            "group".to_owned(),
            Value::String(resource.group().to_owned()),
        );
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

fn set_rv(object: &mut Value, rv: u64) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".to_owned(), Value::String(rv.to_string()));
    }
}

fn meta_mut(object: &mut Value) -> Result<&mut Map<String, Value>, ApiError> {
    object
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

/// The leaves of `value` (scalars, arrays and empty objects, as JSON pointers), skipping the
/// identity and server-owned fields that are never owned: `apiVersion`, `kind`, and
/// `metadata.{name,namespace,uid,resourceVersion,creationTimestamp,managedFields}`.
fn leaves(value: &Value, prefix: String, out: &mut BTreeMap<String, Value>) {
    const SKIP: [&str; 8] = [
        "/apiVersion",
        "/kind",
        "/metadata/name",
        "/metadata/namespace",
        "/metadata/uid",
        "/metadata/resourceVersion",
        "/metadata/creationTimestamp",
        "/metadata/managedFields",
    ];
    match value {
        Value::Object(map) if !map.is_empty() && out.len() < MAX_OWNED_FIELDS => {
            for (k, v) in map {
                let path = format!("{prefix}/{}", k.replace('~', "~0").replace('/', "~1"));
                if !SKIP.contains(&path.as_str()) {
                    leaves(v, path, out);
                }
            }
        }
        _ if !prefix.is_empty() && out.len() < MAX_OWNED_FIELDS => {
            out.insert(prefix, value.clone());
        }
        _ => {}
    }
}

/// Checks `kind`/`apiVersion`, fills them, the namespace and per-resource defaults.
fn normalise(resource: Resource, namespace: &str, object: Value) -> Result<Value, ApiError> {
    let Value::Object(mut obj) = object else {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    };
    match obj.get("kind").and_then(Value::as_str) {
        None | Some("") => {}
        Some(k) if k == resource.kind() => {}
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "the object provided is not a {}",
                resource.kind()
            )));
        }
    }
    match obj.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {}
        Some(v) if v == resource.group_version() => {}
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data does not match the expected API version ({})",
                resource.group_version()
            )));
        }
    }
    obj.insert("kind".to_owned(), Value::String(resource.kind().to_owned()));
    obj.insert(
        "apiVersion".to_owned(),
        Value::String(resource.group_version().to_owned()),
    );
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else {
        return Err(ApiError::bad_request("metadata must be an object"));
    };
    if resource.namespaced() {
        match meta.get("namespace").and_then(Value::as_str) {
            None | Some("") => {}
            Some(ns) if ns == namespace => {}
            Some(_) => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
        meta.insert("namespace".to_owned(), Value::String(namespace.to_owned()));
    } else {
        meta.remove("namespace");
    }
    match resource {
        Resource::Secrets => normalise_secret(&mut obj)?,
        Resource::ConfigMaps
        | Resource::Nodes
        | Resource::Services
        | Resource::Leases
        | Resource::CertificateSigningRequests
        | Resource::EndpointSlices
        | Resource::ServiceAccounts
        | Resource::Roles
        | Resource::ClusterRoles
        | Resource::RoleBindings
        | Resource::ClusterRoleBindings => {}
        Resource::Namespaces => {
            obj.insert("spec".to_owned(), json!({"finalizers": ["kubernetes"]}));
            obj.insert("status".to_owned(), json!({"phase": "Active"}));
        }
    }
    Ok(Value::Object(obj))
}

/// The Node registry's update strategies: an update of the Node keeps the stored `status`; an
/// update through `nodes/status` keeps everything but `status` (and the metadata the API server
/// owns, already kept).
fn node_prepare_update(object: &mut Value, old: &Value, part: Option<Subresource>) {
    let Some(obj) = object.as_object_mut() else {
        return;
    };
    match part {
        Some(Subresource::Status) => {
            let status = obj.remove("status");
            let Some(mut kept) = old.as_object().cloned() else {
                return;
            };
            match status {
                Some(status) => kept.insert("status".to_owned(), status),
                None => kept.remove("status"),
            };
            *obj = kept;
        }
        Some(Subresource::Approval) | None => match old.get("status") {
            Some(status) => {
                obj.insert("status".to_owned(), status.clone());
            }
            None => {
                obj.remove("status");
            }
        },
    }
}

/// `stringData` is merged into `data` (it is write-only); `data` must be base64; `type`
/// defaults to `Opaque`.
fn normalise_secret(obj: &mut Map<String, Value>) -> Result<(), ApiError> {
    let string_data = obj.remove("stringData");
    let data = obj
        .entry("data")
        .or_insert_with(|| Value::Object(Map::new()));
    if data.is_null() {
        *data = Value::Object(Map::new());
    }
    let Value::Object(data) = data else {
        return Err(ApiError::bad_request("data must be an object"));
    };
    for (k, v) in data.iter() {
        let ok = v
            .as_str()
            .is_some_and(|s| base64::engine::general_purpose::STANDARD.decode(s).is_ok());
        if !ok {
            let shown: String = k.chars().take(253).collect();
            return Err(ApiError::bad_request(format!(
                "illegal base64 data in Secret data key {shown:?}"
            )));
        }
    }
    match string_data {
        None | Some(Value::Null) => {}
        Some(Value::Object(sd)) => {
            for (k, v) in sd {
                let Value::String(s) = v else {
                    return Err(ApiError::bad_request("stringData values must be strings"));
                };
                data.insert(
                    k,
                    Value::String(base64::engine::general_purpose::STANDARD.encode(s)),
                );
            }
        }
        Some(_) => return Err(ApiError::bad_request("stringData must be an object")),
    }
    match obj.get("type").and_then(Value::as_str) {
        Some(t) if !t.is_empty() => {}
        _ => {
            obj.insert("type".to_owned(), Value::String("Opaque".to_owned()));
        }
    }
    Ok(())
}

/// RFC 1123 subdomain (RFC 1123 label for namespaces), as the API server validates names;
/// CertificateSigningRequests may have any name that is a path segment.
fn validate_name(resource: Resource, name: &str) -> Result<(), ApiError> {
    // CertificateSigningRequests and the RBAC objects (`system:node-bootstrapper`) may have any
    // name that is a path segment.
    if resource == Resource::CertificateSigningRequests || resource.is_rbac() {
        return csr::validate_name(name);
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    // Namespace names are labels; every other name checked here is a subdomain.
    let (ok, max, what) = if resource != Resource::Namespaces {
        (
            name.len() <= 253 && name.split('.').all(label_ok),
            253,
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        )
    } else {
        (
            name.len() <= 63 && label_ok(name),
            63,
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        )
    };
    if ok {
        return Ok(());
    }
    let shown: String = name.chars().take(max).collect();
    Err(ApiError::invalid(
        resource.kind(),
        &shown,
        "metadata.name",
        "FieldValueInvalid",
        &format!("Invalid value: {shown:?}: {what}"),
    ))
}

/// The part of kube-apiserver's EndpointSlice validation the double does: `addressType` is
/// required and one of `IPv4`, `IPv6`, `FQDN`; in an `IPv4` or `IPv6` slice every endpoint
/// address is an address of that family and none is unspecified, loopback (unless
/// `loopback_allowed`), link-local or link-local multicast (kube-apiserver's
/// `ValidateEndpointIP`, which keeps the Service proxy from reaching the API server's own host).
/// Ports, conditions and the rest are stored as given; the Service proxy skips what it cannot
/// use.
fn validate_endpoint_slice(
    object: &Value,
    name: &str,
    loopback_allowed: bool,
) -> Result<(), ApiError> {
    const SUPPORTED: [&str; 3] = ["FQDN", "IPv4", "IPv6"];
    let errors = match object.get("addressType") {
        None | Some(Value::Null) => vec![FieldError::required("addressType")],
        Some(Value::String(t)) if t == "IPv4" || t == "IPv6" => {
            endpoint_address_errors(object, t == "IPv6", loopback_allowed)
        }
        Some(Value::String(t)) if SUPPORTED.contains(&t.as_str()) => return Ok(()),
        Some(Value::String(t)) => vec![FieldError::not_supported(
            "addressType",
            &t.chars().take(64).collect::<String>(),
            &SUPPORTED,
        )],
        Some(_) => vec![FieldError::invalid(
            "addressType",
            "<non-string>",
            "must be a string",
        )],
    };
    if errors.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_fields(
        Resource::EndpointSlices.kind(),
        Resource::EndpointSlices.group(),
        name,
        &errors,
    ))
}

/// At most this many address errors are reported for one EndpointSlice.
const MAX_ADDRESS_ERRORS: usize = 16;

/// The errors of the addresses of an `IPv4` (`v6` false) or `IPv6` slice's endpoints.
fn endpoint_address_errors(object: &Value, v6: bool, loopback_allowed: bool) -> Vec<FieldError> {
    let endpoints = object
        .get("endpoints")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut errors = Vec::new();
    for (i, endpoint) in endpoints.iter().enumerate() {
        let addresses = endpoint
            .get("addresses")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (j, address) in addresses.iter().enumerate() {
            let field = || format!("endpoints[{i}].addresses[{j}]");
            let text = address.as_str().unwrap_or_default();
            if let Some(detail) = endpoint_address_problem(text, v6, loopback_allowed) {
                let shown: String = text.chars().take(64).collect();
                errors.push(FieldError::invalid(field(), &format!("{shown:?}"), &detail));
                if errors.len() >= MAX_ADDRESS_ERRORS {
                    return errors;
                }
            }
        }
    }
    errors
}

/// Why kube-apiserver refuses `text` as an address of an `IPv4` (`v6` false) or `IPv6`
/// EndpointSlice, in its words: not an address of that family (Go's `To4` reads an IPv4-mapped
/// IPv6 address as IPv4), or `ValidateEndpointIP`'s rules.
fn endpoint_address_problem(text: &str, v6: bool, loopback_allowed: bool) -> Option<String> {
    let parsed = text.parse::<IpAddr>().ok();
    let ip = match (parsed.map(|ip| ip.to_canonical()), v6) {
        (Some(ip @ IpAddr::V4(_)), false) | (Some(ip @ IpAddr::V6(_)), true) => ip,
        (_, false) => return Some("must be a valid IPv4 address".to_owned()),
        (_, true) => return Some("must be a valid IPv6 address".to_owned()),
    };
    let (link_local, link_local_multicast) = match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            (v4.is_link_local(), a == 224 && b == 0 && c == 0)
        }
        IpAddr::V6(v6) => {
            let [first, second, ..] = v6.octets();
            (
                v6.is_unicast_link_local(),
                first == 0xff && second & 0x0f == 0x02,
            )
        }
    };
    if ip.is_unspecified() {
        Some(format!("may not be unspecified ({text})"))
    } else if ip.is_loopback() && !loopback_allowed {
        Some("may not be in the loopback range (127.0.0.0/8, ::1/128)".to_owned())
    } else if link_local {
        Some("may not be in the link-local range (169.254.0.0/16, fe80::/10)".to_owned())
    } else if link_local_multicast {
        Some("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".to_owned())
    } else {
        None
    }
}

/// RFC 7386 merge patch, depth-bounded.
fn merge_patch(target: &mut Value, patch: &Value, depth: usize) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if depth > 64 {
        return;
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                let slot = t.entry(k.clone()).or_insert(Value::Null);
                merge_patch(slot, v, depth.saturating_add(1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use serde_json::json;

    use super::{DEFAULT_SERVICE_ACCOUNT, EVENT_HISTORY, Resource, Store, WatchStart, merge_patch};

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut v = json!({"a": {"b": 1, "c": 2}, "d": [1]});
        merge_patch(&mut v, &json!({"a": {"b": null, "e": 3}, "d": [2]}), 0);
        assert_eq!(v, json!({"a": {"c": 2, "e": 3}, "d": [2]}));
    }

    #[test]
    fn revisions_increase_and_history_is_bounded() {
        let mut s = Store::new(false);
        s.create(
            Resource::Namespaces,
            "",
            json!({"metadata": {"name": "ns"}}),
            false,
            UNIX_EPOCH,
        )
        .unwrap();
        // The namespace, and the ServiceAccount `default` created in it.
        let base = s.revision();
        assert_eq!(base, 2);
        assert!(
            s.get(Resource::ServiceAccounts, "ns", DEFAULT_SERVICE_ACCOUNT)
                .is_some()
        );
        let mut last = base;
        for i in 0..EVENT_HISTORY {
            let o = s
                .create(
                    Resource::ConfigMaps,
                    "ns",
                    json!({"metadata": {"name": format!("c{i}")}}),
                    false,
                    UNIX_EPOCH,
                )
                .unwrap();
            let rv: u64 = o["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!(rv > last);
            last = rv;
        }
        assert!(matches!(
            s.watch(Some(0)).0,
            WatchStart::TooOld {
                requested: 0,
                oldest: 3
            }
        ));
        assert!(matches!(s.watch(Some(base)).0, WatchStart::Replay(e) if e.len() == EVENT_HISTORY));
    }
}
