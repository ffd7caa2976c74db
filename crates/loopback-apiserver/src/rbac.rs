//! RBAC over the stored Roles, ClusterRoles, RoleBindings and ClusterRoleBindings, as
//! kube-apiserver's RBAC authorizer decides (`plugin/pkg/auth/authorizer/rbac`): rule
//! matching, subjects, the rules a user holds (`RulesFor`), and the escalation check of the RBAC
//! registry (`ConfirmNoEscalation`, `Covers`).
//!
//! The double reads the policy from its store on each decision ([`Policy::from_store`]) and
//! decides on `delegated_auth`'s [`Attributes`]: this module is the one place RBAC is
//! evaluated in the double (its own authorization, SubjectAccessReviews, rules reviews,
//! escalation checks and the CSR approver all come here).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use delegated_auth::{Attributes, Target, UserInfo};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::status::{ApiError, FieldError};
use super::store::{Resource, Store};

/// `*`: every verb, group, resource or non-resource URL.
const ALL: &str = "*";
/// The API group of the policy objects.
pub(crate) const GROUP: &str = "rbac.authorization.k8s.io";

/// One rule of a Role or ClusterRole (`rbac.authorization.k8s.io/v1` `PolicyRule`).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PolicyRule {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) verbs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) api_groups: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) resources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) resource_names: Vec<String>,
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub(crate) non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// Whether the rule allows the request (kube's `RuleAllows`).
    pub(crate) fn allows(&self, attrs: &Attributes) -> bool {
        if !has_or_all(&self.verbs, &attrs.verb) {
            return false;
        }
        match &attrs.target {
            Target::Resource(r) => {
                let combined = if r.subresource.is_empty() {
                    r.resource.clone()
                } else {
                    format!("{}/{}", r.resource, r.subresource)
                };
                has_or_all(&self.api_groups, &r.api_group)
                    && self.resources.iter().any(|res| {
                        res == ALL
                            || *res == combined
                            || (!r.subresource.is_empty()
                                && res.strip_prefix("*/") == Some(r.subresource.as_str()))
                    })
                    && (self.resource_names.is_empty() || self.resource_names.contains(&r.name))
            }
            Target::NonResource { path } => {
                self.non_resource_urls.iter().any(|u| url_covers(u, path))
            }
            _ => false,
        }
    }

    /// kube's `CompactString`: `{APIGroups:["g"], Resources:["r"], Verbs:["get"]}`, the
    /// non-empty fields only.
    pub(crate) fn compact_string(&self) -> String {
        let mut parts = Vec::new();
        for (name, list) in [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("ResourceNames", &self.resource_names),
            ("NonResourceURLs", &self.non_resource_urls),
            ("Verbs", &self.verbs),
        ] {
            if !list.is_empty() {
                parts.push(format!("{name}:{}", go_quoted_list(list)));
            }
        }
        format!("{{{}}}", parts.join(", "))
    }
}

/// A binding's subject.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Subject {
    #[serde(default)]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) namespace: String,
}

impl Subject {
    /// Whether the subject is `user` (kube's `appliesToUser`); `namespace` is the binding's,
    /// the default for a service account without one.
    fn applies_to(&self, user: &UserInfo, namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.name == self.name,
            "Group" => user.groups.contains(&self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    namespace
                } else {
                    &self.namespace
                };
                !ns.is_empty()
                    && user
                        .name
                        .strip_prefix("system:serviceaccount:")
                        .and_then(|rest| rest.split_once(':'))
                        == Some((ns, self.name.as_str()))
            }
            _ => false,
        }
    }

    /// kube's `describeSubject`.
    fn describe(&self, namespace: &str) -> String {
        if self.kind == "ServiceAccount" {
            let ns = if self.namespace.is_empty() {
                namespace
            } else {
                &self.namespace
            };
            return format!("{} {:?}", self.kind, format!("{}/{ns}", self.name));
        }
        format!("{} {:?}", self.kind, self.name)
    }
}

/// A binding's `roleRef`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RoleRef {
    #[serde(default)]
    pub(crate) api_group: String,
    #[serde(default)]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) name: String,
}

/// A RoleBinding (namespace non-empty) or a ClusterRoleBinding.
#[derive(Debug, Clone)]
struct Binding {
    name: String,
    namespace: String,
    role_ref: RoleRef,
    subjects: Vec<Subject>,
}

/// A ClusterRole: its rules and, for an aggregated one, the label selectors (`matchLabels`) of
/// the ClusterRoles whose rules it gathers.
#[derive(Debug, Clone, Default)]
struct ClusterRole {
    rules: Vec<PolicyRule>,
    labels: BTreeMap<String, String>,
    selectors: Option<Vec<BTreeMap<String, String>>>,
}

/// The authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Allowed, with the reason (`RBAC: allowed by ClusterRoleBinding ...`).
    Allow(String),
    /// No binding grants it; the reason is empty unless some role could not be resolved.
    NoOpinion(String),
}

/// The rules a user holds in a namespace, and whether some could not be resolved.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rules {
    pub(crate) rules: Vec<PolicyRule>,
    /// The resolution errors (a binding to a missing role), as kube phrases them.
    pub(crate) errors: Vec<String>,
}

/// The policy objects, read from the store.
#[derive(Debug, Default)]
pub(crate) struct Policy {
    roles: BTreeMap<(String, String), Vec<PolicyRule>>,
    cluster_roles: BTreeMap<String, ClusterRole>,
    role_bindings: Vec<Binding>,
    cluster_role_bindings: Vec<Binding>,
}

impl Policy {
    /// The Roles, ClusterRoles, RoleBindings and ClusterRoleBindings the store holds (objects
    /// that do not parse are skipped: validation keeps them out).
    pub(crate) fn from_store(store: &Store) -> Policy {
        let mut policy = Policy::default();
        for role in store.list(Resource::Roles, None) {
            let (ns, name) = (
                str_at(&role, "/metadata/namespace"),
                str_at(&role, "/metadata/name"),
            );
            policy.roles.insert((ns, name), rules_of(&role));
        }
        for role in store.list(Resource::ClusterRoles, None) {
            let labels = role
                .pointer("/metadata/labels")
                .and_then(|l| serde_json::from_value(l.clone()).ok())
                .unwrap_or_default();
            let selectors = role
                .pointer("/aggregationRule/clusterRoleSelectors")
                .map(|s| {
                    s.as_array()
                        .map(Vec::as_slice)
                        .unwrap_or_default()
                        .iter()
                        .map(|sel| {
                            sel.get("matchLabels")
                                .and_then(|l| serde_json::from_value(l.clone()).ok())
                                .unwrap_or_default()
                        })
                        .collect()
                });
            policy.cluster_roles.insert(
                str_at(&role, "/metadata/name"),
                ClusterRole {
                    rules: rules_of(&role),
                    labels,
                    selectors,
                },
            );
        }
        for (resource, out) in [
            (Resource::RoleBindings, &mut policy.role_bindings),
            (
                Resource::ClusterRoleBindings,
                &mut policy.cluster_role_bindings,
            ),
        ] {
            for b in store.list(resource, None) {
                out.push(Binding {
                    name: str_at(&b, "/metadata/name"),
                    namespace: str_at(&b, "/metadata/namespace"),
                    role_ref: b
                        .get("roleRef")
                        .and_then(|r| serde_json::from_value(r.clone()).ok())
                        .unwrap_or_default(),
                    subjects: b
                        .get("subjects")
                        .and_then(|s| serde_json::from_value(s.clone()).ok())
                        .unwrap_or_default(),
                });
            }
        }
        policy
    }

    /// The decision on `attrs`: allowed by the first binding (ClusterRoleBindings first, then
    /// the RoleBindings of the request's namespace) whose subject is the user and whose role
    /// has a rule that allows it.
    pub(crate) fn authorize(&self, attrs: &Attributes) -> Decision {
        let namespace = match &attrs.target {
            Target::Resource(r) => r.namespace.as_str(),
            _ => "",
        };
        let mut errors = Vec::new();
        for (binding, subject) in self.bindings_of(&attrs.user, namespace) {
            match self.role_rules(&binding.role_ref, &binding.namespace) {
                Ok(rules) => {
                    if rules.iter().any(|r| r.allows(attrs)) {
                        let what = if binding.namespace.is_empty() {
                            format!("ClusterRoleBinding {:?}", binding.name)
                        } else {
                            format!(
                                "RoleBinding {:?}",
                                format!("{}/{}", binding.name, binding.namespace)
                            )
                        };
                        return Decision::Allow(format!(
                            "RBAC: allowed by {what} of {} {:?} to {}",
                            binding.role_ref.kind,
                            binding.role_ref.name,
                            subject.describe(&binding.namespace)
                        ));
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Decision::NoOpinion(String::new())
        } else {
            Decision::NoOpinion(format!("RBAC: {}", errors.join(", ")))
        }
    }

    /// Every rule `user` holds in `namespace` (the cluster scope when empty): the rules of the
    /// ClusterRoleBindings, then of the namespace's RoleBindings (kube's `RulesFor`).
    pub(crate) fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let mut out = Rules::default();
        for (binding, _) in self.bindings_of(user, namespace) {
            match self.role_rules(&binding.role_ref, &binding.namespace) {
                Ok(rules) => out.rules.extend(rules),
                Err(e) => out.errors.push(e),
            }
        }
        out
    }

    /// The rules of the role a binding in `namespace` refers to.
    pub(crate) fn role_rules(
        &self,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<Vec<PolicyRule>, String> {
        match role_ref.kind.as_str() {
            "Role" => self
                .roles
                .get(&(namespace.to_owned(), role_ref.name.clone()))
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "role.rbac.authorization.k8s.io {:?} not found",
                        role_ref.name
                    )
                }),
            "ClusterRole" => {
                let role = self.cluster_roles.get(&role_ref.name).ok_or_else(|| {
                    format!(
                        "clusterrole.rbac.authorization.k8s.io {:?} not found",
                        role_ref.name
                    )
                })?;
                let mut rules = role.rules.clone();
                // An aggregated ClusterRole holds the rules of the ClusterRoles its selectors
                // match (kube-controller-manager's aggregation controller writes them in).
                if let Some(selectors) = &role.selectors {
                    for (name, other) in &self.cluster_roles {
                        let matched = selectors.iter().any(|sel| {
                            !sel.is_empty()
                                && sel.iter().all(|(k, v)| other.labels.get(k) == Some(v))
                        });
                        if matched && *name != role_ref.name {
                            rules.extend(other.rules.iter().cloned());
                        }
                    }
                }
                Ok(rules)
            }
            other => Err(format!("unsupported role reference kind: {other:?}")),
        }
    }

    /// The bindings whose subjects include `user`, with the matching subject: every
    /// ClusterRoleBinding, then the RoleBindings of `namespace`.
    fn bindings_of<'a>(
        &'a self,
        user: &'a UserInfo,
        namespace: &'a str,
    ) -> impl Iterator<Item = (&'a Binding, &'a Subject)> + 'a {
        let namespaced = self
            .role_bindings
            .iter()
            .filter(move |b| !namespace.is_empty() && b.namespace == namespace);
        self.cluster_role_bindings
            .iter()
            .chain(namespaced)
            .filter_map(move |b| {
                b.subjects
                    .iter()
                    .find(|s| s.applies_to(user, &b.namespace))
                    .map(|s| (b, s))
            })
    }
}

/// The rules of `requested` that `owner` does not cover, broken down, compacted and sorted as
/// kube-apiserver lists them in an escalation error (empty: covered).
pub(crate) fn missing_rules(owner: &[PolicyRule], requested: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut missing: Vec<PolicyRule> = Vec::new();
    for rule in requested {
        for sub in breakdown(rule) {
            if !owner.iter().any(|o| covers(o, &sub)) {
                missing.push(sub);
            }
        }
    }
    // Compaction: simple resource rules (one group, one resource, no names) merge their verbs.
    let mut compacted: Vec<PolicyRule> = Vec::new();
    for rule in missing {
        let simple = rule.resource_names.is_empty() && !rule.resources.is_empty();
        let same = compacted.iter_mut().find(|c| {
            simple
                && c.resource_names.is_empty()
                && c.api_groups == rule.api_groups
                && c.resources == rule.resources
        });
        match same {
            Some(c) => {
                for v in rule.verbs {
                    if !c.verbs.contains(&v) {
                        c.verbs.push(v);
                    }
                }
            }
            None => compacted.push(rule),
        }
    }
    compacted.sort_by_key(PolicyRule::compact_string);
    compacted
}

/// kube's escalation sentence: `user "u" (groups=["a" "b"]) is attempting to grant RBAC
/// permissions not currently held:\n{...}\n{...}`, with the resolution errors after.
pub(crate) fn escalation_message(
    user: &UserInfo,
    missing: &[PolicyRule],
    errors: &[String],
) -> String {
    let mut message = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        go_quoted_list(&user.groups),
        missing
            .iter()
            .map(PolicyRule::compact_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
    if !errors.is_empty() {
        let _ = write!(message, "; resolution errors: [{}]", errors.join(" "));
    }
    message
}

/// Validation of a Role, ClusterRole, RoleBinding or ClusterRoleBinding as kube-apiserver's RBAC
/// validation words it; `old` is the stored object on update (`roleRef` cannot change).
pub(crate) fn validate(
    resource: Resource,
    object: &Value,
    name: &str,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    match resource {
        Resource::Roles | Resource::ClusterRoles => {
            let rules = object.get("rules");
            let list = match rules {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(list)) => list.clone(),
                Some(_) => {
                    return Err(ApiError::bad_request("rules must be a list"));
                }
            };
            for (i, rule) in list.iter().enumerate() {
                let Ok(rule) = serde_json::from_value::<PolicyRule>(rule.clone()) else {
                    return Err(ApiError::bad_request(format!(
                        "rules[{i}] is not a PolicyRule"
                    )));
                };
                validate_rule(&rule, i, resource == Resource::Roles, &mut errors);
            }
        }
        Resource::RoleBindings | Resource::ClusterRoleBindings => {
            let role_ref: RoleRef = object
                .get("roleRef")
                .and_then(|r| serde_json::from_value(r.clone()).ok())
                .unwrap_or_default();
            let kinds: &[&str] = if resource == Resource::RoleBindings {
                &["Role", "ClusterRole"]
            } else {
                &["ClusterRole"]
            };
            if role_ref.api_group != GROUP {
                errors.push(FieldError::not_supported(
                    "roleRef.apiGroup",
                    &shown(&role_ref.api_group),
                    &[GROUP],
                ));
            }
            if !kinds.contains(&role_ref.kind.as_str()) {
                errors.push(FieldError::not_supported(
                    "roleRef.kind",
                    &shown(&role_ref.kind),
                    kinds,
                ));
            }
            if role_ref.name.is_empty() {
                errors.push(FieldError::required("roleRef.name"));
            }
            if let Some(old) = old {
                let before: RoleRef = old
                    .get("roleRef")
                    .and_then(|r| serde_json::from_value(r.clone()).ok())
                    .unwrap_or_default();
                if before != role_ref {
                    errors.push(FieldError::invalid(
                        "roleRef",
                        &format!(
                            "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
                            shown(&role_ref.api_group),
                            shown(&role_ref.kind),
                            shown(&role_ref.name)
                        ),
                        "cannot change roleRef",
                    ));
                }
            }
            let subjects = match object.get("subjects") {
                None | Some(Value::Null) => Vec::new(),
                Some(s) => serde_json::from_value::<Vec<Subject>>(s.clone())
                    .map_err(|_| ApiError::bad_request("subjects must be a list of Subjects"))?,
            };
            for (i, s) in subjects.iter().enumerate() {
                if s.name.is_empty() {
                    errors.push(FieldError::required(format!("subjects[{i}].name")));
                }
                if !["User", "Group", "ServiceAccount"].contains(&s.kind.as_str()) {
                    errors.push(FieldError::not_supported(
                        format!("subjects[{i}].kind"),
                        &shown(&s.kind),
                        &["ServiceAccount", "User", "Group"],
                    ));
                }
                if s.kind == "ServiceAccount"
                    && s.namespace.is_empty()
                    && resource == Resource::ClusterRoleBindings
                {
                    errors.push(FieldError::required(format!("subjects[{i}].namespace")));
                }
            }
        }
        _ => {}
    }
    if errors.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_fields(
        resource.kind(),
        GROUP,
        &shown(name),
        &errors,
    ))
}

fn validate_rule(rule: &PolicyRule, i: usize, namespaced: bool, errors: &mut Vec<FieldError>) {
    if rule.verbs.is_empty() {
        errors.push(FieldError::required_detail(
            format!("rules[{i}].verbs"),
            "verbs must contain at least one value",
        ));
    }
    if !rule.non_resource_urls.is_empty() {
        if namespaced {
            errors.push(FieldError::invalid(
                format!("rules[{i}].nonResourceURLs"),
                &format!("{:?}", rule.non_resource_urls),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !rule.api_groups.is_empty() || !rule.resources.is_empty() {
            errors.push(FieldError::invalid(
                format!("rules[{i}].nonResourceURLs"),
                &format!("{:?}", rule.non_resource_urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if rule.api_groups.is_empty() {
        errors.push(FieldError::required_detail(
            format!("rules[{i}].apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if rule.resources.is_empty() {
        errors.push(FieldError::required_detail(
            format!("rules[{i}].resources"),
            "resource rules must supply at least one resource",
        ));
    }
}

/// Whether the user-facing text of a value fits in a message (at most 253 characters).
fn shown(s: &str) -> String {
    s.chars().take(253).collect()
}

/// kube's `BreakdownRule`: one rule per group × resource × verb (× name), and per non-resource
/// URL × verb.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    verbs: vec![verb.clone()],
                    api_groups: vec![group.clone()],
                    resources: vec![resource.clone()],
                    ..PolicyRule::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    for name in &rule.resource_names {
                        out.push(PolicyRule {
                            resource_names: vec![name.clone()],
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                verbs: vec![verb.clone()],
                non_resource_urls: vec![url.clone()],
                ..PolicyRule::default()
            });
        }
    }
    out
}

/// kube's `ruleCovers`: whether `owner` grants everything `sub` does.
fn covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let all_in = |have: &[String], want: &[String]| want.iter().all(|w| have.contains(w));
    let verbs = owner.verbs.iter().any(|v| v == ALL) || all_in(&owner.verbs, &sub.verbs);
    let groups =
        owner.api_groups.iter().any(|g| g == ALL) || all_in(&owner.api_groups, &sub.api_groups);
    let resources = owner.resources.iter().any(|r| r == ALL)
        || sub.resources.iter().all(|want| {
            owner.resources.contains(want)
                || want.split_once('/').is_some_and(|(_, subresource)| {
                    owner.resources.contains(&format!("*/{subresource}"))
                })
        });
    let urls = sub.non_resource_urls.iter().all(|want| {
        owner
            .non_resource_urls
            .iter()
            .any(|have| url_covers(have, want))
    });
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || all_in(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && urls && names
}

/// A non-resource URL rule against a path: `*`, equal, or a prefix ending in `*`.
fn url_covers(rule: &str, path: &str) -> bool {
    rule == ALL
        || rule == path
        || rule
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix))
}

fn has_or_all(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == ALL || v == value)
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub(crate) fn go_quoted_list(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(" "))
}

fn str_at(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn rules_of(role: &Value) -> Vec<PolicyRule> {
    role.get("rules")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        let v = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect();
        PolicyRule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            ..PolicyRule::default()
        }
    }

    #[test]
    fn subresource_wildcards_and_names_match_as_kube_does() {
        let user = UserInfo::new("u");
        let attrs = |res: &str, sub: &str, name: &str| {
            Attributes::resource(
                user.clone(),
                "get",
                delegated_auth::ResourceAttributes::new("", "v1", res)
                    .with_subresource(sub)
                    .with_name(name),
            )
        };
        assert!(rule(&["get"], &[""], &["*/status"]).allows(&attrs("pods", "status", "")));
        assert!(!rule(&["get"], &[""], &["*/status"]).allows(&attrs("pods", "", "")));
        assert!(!rule(&["get"], &[""], &["pods"]).allows(&attrs("pods", "status", "")));
        assert!(rule(&["get"], &[""], &["pods/status"]).allows(&attrs("pods", "status", "")));
        let mut named = rule(&["get"], &[""], &["pods"]);
        named.resource_names = vec!["a".to_owned()];
        assert!(named.allows(&attrs("pods", "", "a")));
        assert!(!named.allows(&attrs("pods", "", "b")));
        assert!(!named.allows(&attrs("pods", "", "")));
        assert!(!PolicyRule::default().allows(&attrs("pods", "", "")));
    }

    #[test]
    fn non_resource_urls_match_a_trailing_star_only() {
        let r = PolicyRule {
            verbs: vec!["get".to_owned()],
            non_resource_urls: vec!["/api/*".to_owned(), "/version".to_owned()],
            ..PolicyRule::default()
        };
        let at = |p: &str| Attributes::non_resource(UserInfo::new("u"), "get", p);
        assert!(r.allows(&at("/api/v1")));
        assert!(r.allows(&at("/version")));
        assert!(!r.allows(&at("/version/")));
        assert!(!r.allows(&at("/api")));
        assert!(!r.allows(&at("/apis/x")));
    }

    #[test]
    fn missing_rules_are_broken_down_compacted_and_sorted() {
        let owner = vec![rule(&["get"], &[""], &["secrets"])];
        let requested = vec![rule(
            &["get", "list", "delete"],
            &[""],
            &["secrets", "configmaps"],
        )];
        let missing: Vec<String> = missing_rules(&owner, &requested)
            .iter()
            .map(PolicyRule::compact_string)
            .collect();
        assert_eq!(
            missing,
            [
                r#"{APIGroups:[""], Resources:["configmaps"], Verbs:["get" "list" "delete"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["list" "delete"]}"#,
            ]
        );
        assert!(missing_rules(&[rule(&["*"], &["*"], &["*"])], &requested).is_empty());
        assert!(missing_rules(&owner, &[]).is_empty());
    }
}
