//! Whether one rule allows a request, as Kubernetes' `RuleAllows` and the helpers of
//! `pkg/apis/rbac/v1/evaluation_helpers.go` decide.

use crate::attributes::{Attributes, Target};
use crate::rbac::PolicyRule;

impl PolicyRule {
    /// Whether this rule allows the request: for a resource request, the verb, API group,
    /// resource (with `*`, `resource/subresource` and `*/subresource`) and name; for a
    /// non-resource request, the verb and the path (exact, `*`, or a prefix ending in `*`).
    /// Comparisons are exact and case-sensitive.
    #[must_use]
    pub fn allows(&self, attributes: &Attributes) -> bool {
        if !verb_matches(self, &attributes.verb) {
            return false;
        }
        match &attributes.target {
            Target::Resource(r) => {
                api_group_matches(self, &r.api_group)
                    && resource_matches(self, &r.resource, &r.subresource)
                    && resource_name_matches(self, &r.name)
            }
            Target::NonResource { path } => non_resource_url_matches(self, path),
        }
    }
}

fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == "*" || v == verb)
}

fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == "*" || g == group)
}

/// `resource` or `resource/subresource` exactly, `*`, or `*/subresource`.
fn resource_matches(rule: &PolicyRule, resource: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        if r == "*" {
            return true;
        }
        if subresource.is_empty() {
            return r == resource;
        }
        let combined = r
            .strip_prefix(resource)
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|sub| sub == subresource);
        combined || r.strip_prefix("*/") == Some(subresource)
    })
}

/// Every name when the rule names none; otherwise only a listed name (so a rule with
/// `resourceNames` never allows a request without a name: `list`, `watch`, `create`).
fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name)
}

/// `*`, the exact path, or a rule ending in `*` whose part before the `*`s prefixes the path.
pub(crate) fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().any(|u| {
        u == "*" || u == path || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*')))
    })
}
