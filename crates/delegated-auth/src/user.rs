//! The authenticated user, as Kubernetes' `user.Info` describes it.

use std::collections::BTreeMap;

/// Who made a request: what an authenticator decided and an authorizer reads
/// (`authentication.k8s.io/v1` `UserInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct UserInfo {
    /// The user's name (`system:serviceaccount:<namespace>:<name>`, `system:node:<name>`, ...).
    pub name: String,
    /// A unique, stable identifier, when the authenticator knows one.
    pub uid: Option<String>,
    /// The groups the user belongs to, in the order the authenticator gave them.
    pub groups: Vec<String>,
    /// Further information the authenticator provided, by key.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with a name and no UID, groups or extra.
    #[must_use]
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// The same user, with `groups`.
    #[must_use]
    pub fn with_groups<I, S>(mut self, groups: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.groups = groups.into_iter().map(Into::into).collect();
        self
    }

    /// The same user, with `uid`.
    #[must_use]
    pub fn with_uid(mut self, uid: impl Into<String>) -> Self {
        self.uid = Some(uid.into());
        self
    }

    /// The same user, with the `extra` values under `key` (added to any already there).
    #[must_use]
    pub fn with_extra<I, S>(mut self, key: impl Into<String>, values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.extra
            .entry(key.into())
            .or_default()
            .extend(values.into_iter().map(Into::into));
        self
    }
}
