//! The tokencleaner controller's decision.

use std::time::{Duration, SystemTime};

use crate::constants::{NAMESPACE, SECRET_TYPE};
use crate::{ExpirationStatus, SecretObject};

/// What the token cleaner does with one Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CleanerAction<'a> {
    /// Not a bootstrap-token Secret in `kube-system`: the controller never sees it.
    Ignore,
    /// Expired, or the expiration is unparseable: DELETE the Secret now. When the Secret has a
    /// non-empty UID the delete carries the precondition `{uid}`; Conflict and NotFound answers
    /// are ignored; other failures are not retried (as in Kubernetes).
    Delete {
        /// The UID precondition, when known.
        uid_precondition: Option<&'a str>,
    },
    /// Not expired: look again after this long (exactly the time remaining).
    RecheckAfter(Duration),
    /// No expiration: nothing to do, ever (until the Secret changes).
    Keep,
}

/// The tokencleaner's decision for one Secret at `now` (`GetExpiration` on a bootstrap-token
/// Secret in `kube-system`; name, `token-id`, usages and groups are not looked at).
///
/// ```
/// use bootstrap_token::{CleanerAction, SecretObject, cleaner_action};
/// use std::collections::BTreeMap;
/// use std::time::{Duration, UNIX_EPOCH};
/// let secret = |exp: &str| {
///     let data = BTreeMap::from([("expiration".to_owned(), exp.as_bytes().to_vec())]);
///     SecretObject::new("bootstrap-token-abcdef", "kube-system", "bootstrap.kubernetes.io/token", Some(data))
///         .with_uid("d2c6a1f0")
/// };
/// let now = UNIX_EPOCH + Duration::from_secs(1_704_164_645); // 2024-01-02T03:04:05Z
/// assert_eq!(
///     cleaner_action(&secret("2024-01-02T03:04:06Z"), now),
///     CleanerAction::RecheckAfter(Duration::from_secs(1)),
/// );
/// let expired = secret("2024-01-02T03:04:05Z");
/// assert_eq!(cleaner_action(&expired, now), CleanerAction::Delete { uid_precondition: Some("d2c6a1f0") });
/// let garbage = secret("tomorrow");
/// assert!(matches!(cleaner_action(&garbage, now), CleanerAction::Delete { .. }));
/// assert_eq!(cleaner_action(&secret(""), now), CleanerAction::Keep);
/// ```
#[must_use]
pub fn cleaner_action(secret: &SecretObject, now: SystemTime) -> CleanerAction<'_> {
    if secret.secret_type() != SECRET_TYPE || secret.namespace() != NAMESPACE {
        return CleanerAction::Ignore;
    }
    match secret.expiration(now) {
        ExpirationStatus::Never => CleanerAction::Keep,
        ExpirationStatus::Valid { remaining, .. } => CleanerAction::RecheckAfter(remaining),
        _ => CleanerAction::Delete {
            uid_precondition: secret.uid().filter(|u| !u.is_empty()),
        },
    }
}

/// The cleaner's plan over many Secrets: what to delete now and when to wake up next.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct CleanupPlan<'a> {
    /// Secrets to delete now: `(name, uid precondition)`.
    pub delete: Vec<(&'a str, Option<&'a str>)>,
    /// The shortest time until another Secret expires, if any.
    pub wake_after: Option<Duration>,
}

/// Applies [`cleaner_action`] to every Secret: a sans-IO "plan" with the deletions to make and
/// the next wake-up.
///
/// ```
/// use bootstrap_token::{SecretObject, cleanup_plan};
/// use std::time::UNIX_EPOCH;
/// let plan = cleanup_plan(std::iter::empty::<&SecretObject>(), UNIX_EPOCH);
/// assert!(plan.delete.is_empty() && plan.wake_after.is_none());
/// ```
#[must_use]
pub fn cleanup_plan<'a, I>(secrets: I, now: SystemTime) -> CleanupPlan<'a>
where
    I: IntoIterator<Item = &'a SecretObject>,
{
    let mut plan = CleanupPlan::default();
    for s in secrets {
        match cleaner_action(s, now) {
            CleanerAction::Delete { uid_precondition } => {
                plan.delete.push((s.name(), uid_precondition));
            }
            CleanerAction::RecheckAfter(d) => {
                plan.wake_after = Some(plan.wake_after.map_or(d, |w| w.min(d)));
            }
            _ => {}
        }
    }
    plan
}
