//! A static RBAC authorizer: Roles, ClusterRoles and their bindings, indexed once, deciding as
//! Kubernetes' RBAC authorizer (`plugin/pkg/auth/authorizer/rbac`) and its rule resolver
//! (`pkg/registry/rbac/validation/rule.go`) decide.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::attributes::{Attributes, Target};
use crate::rbac::{PolicyRule, RbacObjects, Subject};
use crate::user::UserInfo;

/// What RBAC decided about a request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RbacDecision {
    /// A rule allows the request. The reason names the binding, the role and the subject, as
    /// Kubernetes words it: `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to
    /// User "z"`.
    Allow {
        /// Which binding allowed it.
        reason: String,
    },
    /// No rule allows the request; RBAC never denies, another authorizer may still allow.
    /// The reason is empty, or lists the roles that could not be resolved (`RBAC:
    /// clusterrole.rbac.authorization.k8s.io "x" not found`), as Kubernetes gives it.
    NoOpinion {
        /// Why, if anything went wrong resolving roles.
        reason: String,
    },
}

impl RbacDecision {
    /// Whether the request is allowed.
    #[must_use]
    pub fn is_allowed(&self) -> bool {
        matches!(self, Self::Allow { .. })
    }

    /// The reason.
    #[must_use]
    pub fn reason(&self) -> &str {
        match self {
            Self::Allow { reason } | Self::NoOpinion { reason } => reason,
        }
    }
}

/// The rules that apply to a user in a namespace (what a `SelfSubjectRulesReview` reports).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct UserRules {
    /// The rules, from ClusterRoleBindings first, then the namespace's RoleBindings.
    pub rules: Vec<PolicyRule>,
    /// The roles that could not be resolved, as Kubernetes words it; `None` when the rules
    /// are complete.
    pub evaluation_error: Option<String>,
}

/// A static RBAC authorizer, built once from Roles, ClusterRoles and their bindings, with the
/// bindings indexed by subject so a decision visits only the bindings of the user's name and
/// groups.
///
/// Decides as Kubernetes' RBAC authorizer: ClusterRoleBindings apply everywhere; a
/// RoleBinding applies only in its namespace, to a Role of that namespace or to a ClusterRole's
/// rules in that namespace; subjects are users (by name, `*` is no wildcard), groups, and
/// service accounts (`system:serviceaccount:<namespace>:<name>`; in a RoleBinding an empty
/// namespace is the binding's). ClusterRoles are used with the rules they hold: for
/// aggregated ones, run [`aggregate_cluster_roles`](crate::aggregate_cluster_roles) first, as
/// the controller manager does.
///
/// ```
/// use delegated_auth::{
///     Attributes, ClusterRole, ClusterRoleBinding, Policy, PolicyRule, RbacObjects, Subject,
///     UserInfo,
/// };
///
/// let mut objects = RbacObjects::new();
/// objects.cluster_roles.push(ClusterRole::new(
///     "metrics-reader",
///     vec![PolicyRule::new(["get"]).urls(["/metrics"])],
/// ));
/// objects.cluster_role_bindings.push(ClusterRoleBinding::new(
///     "prometheus-metrics",
///     "metrics-reader",
///     vec![Subject::service_account("monitoring", "prometheus")],
/// ));
/// let policy = Policy::new(&objects);
///
/// let user = UserInfo::new("system:serviceaccount:monitoring:prometheus");
/// let decision = policy.authorize(&Attributes::non_resource(user, "get", "/metrics"));
/// assert!(decision.is_allowed());
/// assert_eq!(
///     decision.reason(),
///     r#"RBAC: allowed by ClusterRoleBinding "prometheus-metrics" of ClusterRole "metrics-reader" to ServiceAccount "prometheus/monitoring""#
/// );
/// ```
#[derive(Debug, Clone, Default)]
pub struct Policy {
    rule_sets: Vec<Vec<PolicyRule>>,
    cluster: Scope,
    namespaces: HashMap<String, Scope>,
}

/// The bindings of one scope (the cluster, or one namespace) and their index.
#[derive(Debug, Clone, Default)]
struct Scope {
    bindings: Vec<Binding>,
    /// Users and service-account usernames to the bindings naming them, in binding order.
    by_user: HashMap<String, Vec<u32>>,
    /// Groups to the bindings naming them, in binding order.
    by_group: HashMap<String, Vec<u32>>,
}

#[derive(Debug, Clone)]
struct Binding {
    name: String,
    namespace: String,
    role_kind: String,
    role_name: String,
    subjects: Vec<Subject>,
    /// The index of the role's rules, or why they could not be resolved.
    rules: Result<usize, String>,
}

impl Policy {
    /// Builds the authorizer from `objects`, resolving every binding's role once (a missing
    /// role is reported, as Kubernetes reports it, when the binding applies to a request that
    /// no other rule allows).
    #[must_use]
    pub fn new(objects: &RbacObjects) -> Self {
        let mut rule_sets = Vec::new();
        let mut cluster_roles = HashMap::new();
        for role in &objects.cluster_roles {
            cluster_roles
                .entry(role.metadata.name.as_str())
                .or_insert_with(|| {
                    rule_sets.push(role.rules.clone());
                    rule_sets.len().saturating_sub(1)
                });
        }
        let mut roles = HashMap::new();
        for role in &objects.roles {
            roles
                .entry((
                    role.metadata.namespace.as_str(),
                    role.metadata.name.as_str(),
                ))
                .or_insert_with(|| {
                    rule_sets.push(role.rules.clone());
                    rule_sets.len().saturating_sub(1)
                });
        }
        let resolve = |kind: &str, name: &str, namespace: &str| match kind {
            "ClusterRole" => cluster_roles.get(name).copied().ok_or_else(|| {
                format!(
                    "clusterrole.rbac.authorization.k8s.io {} not found",
                    go_quote(name)
                )
            }),
            "Role" => roles
                .get(&(namespace, name))
                .copied()
                .filter(|_| !namespace.is_empty())
                .ok_or_else(|| {
                    format!(
                        "role.rbac.authorization.k8s.io {} not found",
                        go_quote(name)
                    )
                }),
            other => Err(format!(
                "unsupported role reference kind: {}",
                go_quote(other)
            )),
        };

        let mut cluster = Scope::default();
        for b in &objects.cluster_role_bindings {
            cluster.push(Binding {
                name: b.metadata.name.clone(),
                namespace: String::new(),
                role_kind: b.role_ref.kind.clone(),
                role_name: b.role_ref.name.clone(),
                subjects: b.subjects.clone(),
                rules: resolve(&b.role_ref.kind, &b.role_ref.name, ""),
            });
        }
        let mut namespaces: HashMap<String, Scope> = HashMap::new();
        for b in &objects.role_bindings {
            let ns = b.metadata.namespace.as_str();
            if ns.is_empty() {
                // Kubernetes lists RoleBindings only for a namespace; one without is never
                // visited.
                continue;
            }
            namespaces.entry(ns.to_owned()).or_default().push(Binding {
                name: b.metadata.name.clone(),
                namespace: ns.to_owned(),
                role_kind: b.role_ref.kind.clone(),
                role_name: b.role_ref.name.clone(),
                subjects: b.subjects.clone(),
                rules: resolve(&b.role_ref.kind, &b.role_ref.name, ns),
            });
        }
        Self {
            rule_sets,
            cluster,
            namespaces,
        }
    }

    /// Decides on a request: [`RbacDecision::Allow`] with the first binding whose role has a
    /// rule allowing it (ClusterRoleBindings first, then the RoleBindings of the request's
    /// namespace), or [`RbacDecision::NoOpinion`].
    #[must_use]
    pub fn authorize(&self, attributes: &Attributes) -> RbacDecision {
        let namespace = match &attributes.target {
            Target::Resource(r) => r.namespace.as_str(),
            Target::NonResource { .. } => "",
        };
        let mut errors: Vec<&str> = Vec::new();
        for scope in self.scopes(namespace) {
            for index in scope.candidates(&attributes.user) {
                let Some(binding) = scope.bindings.get(index) else {
                    continue;
                };
                match &binding.rules {
                    Ok(set) => {
                        let rules = self.rule_sets.get(*set).map_or(&[][..], Vec::as_slice);
                        if rules.iter().any(|rule| rule.allows(attributes)) {
                            return RbacDecision::Allow {
                                reason: format!(
                                    "RBAC: allowed by {}",
                                    binding.describe(&attributes.user)
                                ),
                            };
                        }
                    }
                    Err(e) => errors.push(e),
                }
            }
        }
        RbacDecision::NoOpinion {
            reason: aggregate(&errors).map_or_else(String::new, |e| format!("RBAC: {e}")),
        }
    }

    /// The rules that apply to `user` in `namespace` (empty: cluster-wide only), as Kubernetes'
    /// `RulesFor` gives them to a `SelfSubjectRulesReview` and to the escalation check.
    #[must_use]
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        let mut out = UserRules::default();
        let mut errors: Vec<&str> = Vec::new();
        for scope in self.scopes(namespace) {
            for index in scope.candidates(user) {
                match scope.bindings.get(index).map(|b| &b.rules) {
                    Some(Ok(set)) => {
                        out.rules
                            .extend(self.rule_sets.get(*set).into_iter().flatten().cloned());
                    }
                    Some(Err(e)) => errors.push(e),
                    None => {}
                }
            }
        }
        out.evaluation_error = aggregate(&errors);
        out
    }

    fn scopes<'a>(&'a self, namespace: &str) -> impl Iterator<Item = &'a Scope> {
        let ns = if namespace.is_empty() {
            None
        } else {
            self.namespaces.get(namespace)
        };
        std::iter::once(&self.cluster).chain(ns)
    }
}

impl Scope {
    fn push(&mut self, binding: Binding) {
        let Ok(index) = u32::try_from(self.bindings.len()) else {
            return;
        };
        for subject in &binding.subjects {
            let (map, key) = match subject.kind.as_str() {
                "User" => (&mut self.by_user, subject.name.clone()),
                "Group" => (&mut self.by_group, subject.name.clone()),
                "ServiceAccount" => {
                    let ns = if subject.namespace.is_empty() {
                        binding.namespace.as_str()
                    } else {
                        subject.namespace.as_str()
                    };
                    if ns.is_empty() {
                        continue;
                    }
                    (
                        &mut self.by_user,
                        format!("system:serviceaccount:{ns}:{}", subject.name),
                    )
                }
                _ => continue,
            };
            let list = map.entry(key).or_default();
            if list.last() != Some(&index) {
                list.push(index);
            }
        }
        self.bindings.push(binding);
    }

    /// The indexes of the bindings naming the user, one of its groups or its service account,
    /// in binding order.
    fn candidates(&self, user: &UserInfo) -> Vec<usize> {
        let mut out: Vec<u32> = Vec::new();
        if let Some(list) = self.by_user.get(&user.name) {
            out.extend_from_slice(list);
        }
        for group in &user.groups {
            if let Some(list) = self.by_group.get(group) {
                out.extend_from_slice(list);
            }
        }
        out.sort_unstable();
        out.dedup();
        out.into_iter()
            .filter_map(|i| usize::try_from(i).ok())
            .collect()
    }
}

impl Binding {
    /// `ClusterRoleBinding "x" of ClusterRole "y" to User "z"`, naming the first subject that
    /// applies to `user`.
    fn describe(&self, user: &UserInfo) -> String {
        let mut s = String::with_capacity(96);
        if self.namespace.is_empty() {
            let _ = write!(s, "ClusterRoleBinding {}", go_quote(&self.name));
        } else {
            let _ = write!(
                s,
                "RoleBinding {}",
                go_quote(&format!("{}/{}", self.name, self.namespace))
            );
        }
        let _ = write!(
            s,
            " of {} {} to ",
            self.role_kind,
            go_quote(&self.role_name)
        );
        if let Some(subject) = self
            .subjects
            .iter()
            .find(|subject| applies_to(user, subject, &self.namespace))
        {
            if subject.kind == "ServiceAccount" {
                let ns = if subject.namespace.is_empty() {
                    &self.namespace
                } else {
                    &subject.namespace
                };
                let _ = write!(
                    s,
                    "{} {}",
                    subject.kind,
                    go_quote(&format!("{}/{ns}", subject.name))
                );
            } else {
                let _ = write!(s, "{} {}", subject.kind, go_quote(&subject.name));
            }
        }
        s
    }
}

/// Whether a binding's subject applies to `user` (Kubernetes' `appliesToUser`), with
/// `namespace` the binding's (empty for a ClusterRoleBinding).
pub(crate) fn applies_to(user: &UserInfo, subject: &Subject, namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => user.name == subject.name,
        "Group" => user.groups.contains(&subject.name),
        "ServiceAccount" => {
            let ns = if subject.namespace.is_empty() {
                namespace
            } else {
                subject.namespace.as_str()
            };
            !ns.is_empty()
                && user
                    .name
                    .strip_prefix("system:serviceaccount:")
                    .and_then(|rest| rest.strip_prefix(ns))
                    .and_then(|rest| rest.strip_prefix(':'))
                    == Some(subject.name.as_str())
        }
        _ => false,
    }
}

/// Go's `utilerrors.NewAggregate(errs).Error()`: one message alone, several as `[a, b]`,
/// duplicates once.
fn aggregate(errors: &[&str]) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(e) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [] => None,
        [one] => Some((*one).to_owned()),
        many => Some(format!("[{}]", many.join(", "))),
    }
}

/// Go's `%q`: a double-quoted string with `"` and `\` escaped and control characters written
/// as escapes.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len().saturating_add(2));
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
