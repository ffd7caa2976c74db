//! Aggregated ClusterRoles, as the controller manager's `clusterrole-aggregation` controller
//! computes their rules.

use std::collections::BTreeMap;

use crate::error::Error;
use crate::label_selector::{is_label_value, is_qualified_name};
use crate::rbac::{ClusterRole, LabelSelector, PolicyRule};

/// Sets the rules of every ClusterRole with an `aggregationRule` to the union of the rules of
/// the ClusterRoles its selectors match, as Kubernetes' aggregation controller does: per
/// selector, the matching ClusterRoles by name (not the role itself), their rules in order,
/// a rule already present not added again. Aggregated roles that aggregate others (`admin`
/// over `edit` over `view`) are recomputed until nothing changes, as the controller's repeated
/// syncs converge. A selector with no labels and no expressions matches every ClusterRole,
/// as in Kubernetes.
///
/// # Errors
///
/// [`Error::InvalidLabelSelector`] for a selector Kubernetes cannot convert (an unknown
/// operator, `In`/`NotIn` without values, `Exists`/`DoesNotExist` with values, an invalid key
/// or value); no role is changed then.
pub fn aggregate_cluster_roles(roles: &mut [ClusterRole]) -> Result<(), Error> {
    for role in roles.iter() {
        for selector in role
            .aggregation_rule
            .iter()
            .flat_map(|a| &a.cluster_role_selectors)
        {
            validate(selector)?;
        }
    }
    let mut order: Vec<usize> = (0..roles.len()).collect();
    order.sort_by(|&a, &b| {
        let name = |i: usize| roles.get(i).map_or("", |r| r.metadata.name.as_str());
        name(a).cmp(name(b))
    });
    // Each round can only add what a role one level down gained in the round before, so the
    // number of roles bounds the rounds.
    for _ in 0..=roles.len() {
        let mut changed = false;
        for i in 0..roles.len() {
            let Some(role) = roles.get(i) else { continue };
            let Some(rule) = &role.aggregation_rule else {
                continue;
            };
            let mut rules: Vec<PolicyRule> = Vec::new();
            for selector in &rule.cluster_role_selectors {
                for &j in &order {
                    let Some(other) = roles.get(j) else { continue };
                    if other.metadata.name == role.metadata.name
                        || !matches(selector, &other.metadata.labels)
                    {
                        continue;
                    }
                    for r in &other.rules {
                        if !rules.contains(r) {
                            rules.push(r.clone());
                        }
                    }
                }
            }
            if let Some(role) = roles.get_mut(i)
                && role.rules != rules
            {
                role.rules = rules;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    Ok(())
}

/// Whether `labels` satisfy `selector` (`LabelSelectorAsSelector(...).Matches`).
pub(crate) fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    selector
        .match_labels
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
        && selector.match_expressions.iter().all(|e| {
            let value = labels.get(&e.key);
            match e.operator.as_str() {
                "In" => value.is_some_and(|v| e.values.contains(v)),
                "NotIn" => value.is_none_or(|v| !e.values.contains(v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        })
}

fn validate(selector: &LabelSelector) -> Result<(), Error> {
    let invalid = |reason| Err(Error::InvalidLabelSelector { reason });
    for (k, v) in &selector.match_labels {
        if !is_qualified_name(k) {
            return invalid("a matchLabels key is not a qualified name");
        }
        if !is_label_value(v) {
            return invalid("a matchLabels value is not a valid label value");
        }
    }
    for e in &selector.match_expressions {
        if !is_qualified_name(&e.key) {
            return invalid("a matchExpressions key is not a qualified name");
        }
        match e.operator.as_str() {
            "In" | "NotIn" if e.values.is_empty() => {
                return invalid("In and NotIn need at least one value");
            }
            "Exists" | "DoesNotExist" if !e.values.is_empty() => {
                return invalid("Exists and DoesNotExist take no values");
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => return invalid("the operator is not In, NotIn, Exists or DoesNotExist"),
        }
        if !e.values.iter().all(|v| is_label_value(v)) {
            return invalid("a matchExpressions value is not a valid label value");
        }
    }
    Ok(())
}
