//! Whether one set of rules covers another, as Kubernetes checks before it lets a user create
//! or update a role or binding (`ConfirmNoEscalation`, `validation.Covers` in
//! `k8s.io/component-helpers/auth/rbac/validation`).

use crate::error::Error;
use crate::rbac::PolicyRule;

/// The most single rules `uncovered_rules` expands the requested rules into.
pub const MAX_RULE_BREAKDOWN: usize = 1 << 20;

/// The parts of `requested` that `owner` does not cover, each as a single rule (one verb, one
/// group, one resource, at most one name; or one non-resource URL and one verb). Empty means
/// `owner` covers `requested`: granting `requested` is no escalation for a user holding
/// `owner`.
///
/// As Kubernetes: an owner `*` covers everything of its field; an owner `*/scale` covers
/// `deployments/scale`; an owner rule without `resourceNames` covers any names, one with names
/// only those names (never a request for all names); non-resource URLs are covered exactly or
/// by a prefix ending in `*`. A requested `*` is covered only by an owner `*`.
///
/// # Errors
///
/// [`Error::TooManyRules`] when `requested` expands to more than [`MAX_RULE_BREAKDOWN`]
/// single rules.
pub fn uncovered_rules(
    owner: &[PolicyRule],
    requested: &[PolicyRule],
) -> Result<Vec<PolicyRule>, Error> {
    let mut count: usize = 0;
    for rule in requested {
        let names = rule.resource_names.len().max(1);
        let resource_tuples = rule
            .api_groups
            .len()
            .saturating_mul(rule.resources.len())
            .saturating_mul(rule.verbs.len())
            .saturating_mul(names);
        let url_tuples = rule
            .non_resource_urls
            .len()
            .saturating_mul(rule.verbs.len());
        count = count
            .saturating_add(resource_tuples)
            .saturating_add(url_tuples);
        if count > MAX_RULE_BREAKDOWN {
            return Err(Error::TooManyRules {
                limit: MAX_RULE_BREAKDOWN,
            });
        }
    }
    let mut uncovered = Vec::new();
    for rule in requested {
        for sub in breakdown(rule) {
            if !owner.iter().any(|o| rule_covers(o, &sub)) {
                uncovered.push(sub);
            }
        }
    }
    Ok(uncovered)
}

/// Whether `owner` covers all of `requested` (no escalation).
///
/// # Errors
///
/// As [`uncovered_rules`].
pub fn covers(owner: &[PolicyRule], requested: &[PolicyRule]) -> Result<bool, Error> {
    Ok(uncovered_rules(owner, requested)?.is_empty())
}

/// A rule as single rules (Kubernetes' `BreakdownRule`).
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let single = PolicyRule::new([verb.as_str()])
                    .groups([group.as_str()])
                    .resources([resource.as_str()]);
                if rule.resource_names.is_empty() {
                    out.push(single);
                } else {
                    for name in &rule.resource_names {
                        out.push(single.clone().names([name.as_str()]));
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule::new([verb.as_str()]).urls([url.as_str()]));
        }
    }
    out
}

fn has(set: &[String], s: &str) -> bool {
    set.iter().any(|x| x == s)
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

fn resources_cover(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, "*") || has_all(owner, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| owner.iter().any(|o| o.strip_prefix("*/") == Some(sub)))
    })
}

/// An owner URL covers a requested one when equal, or when it ends in `*` and the part before
/// the `*`s prefixes it.
pub(crate) fn non_resource_url_covers(owner: &str, requested: &str) -> bool {
    owner == requested
        || (owner.ends_with('*') && requested.starts_with(owner.trim_end_matches('*')))
}

fn urls_cover(owner: &[String], wanted: &[String]) -> bool {
    wanted
        .iter()
        .all(|w| owner.iter().any(|o| non_resource_url_covers(o, w)))
}

fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, "*") || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resources_cover(&owner.resources, &sub.resources);
    let urls = urls_cover(&owner.non_resource_urls, &sub.non_resource_urls);
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && names && urls
}
