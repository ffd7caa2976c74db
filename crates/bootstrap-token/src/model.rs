//! The validated bootstrap-token Secret.

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::constants::{
    AUTH_EXTRA_GROUPS_KEY, DESCRIPTION_KEY, EXPIRATION_KEY, NAMESPACE, SECRET_TYPE, TOKEN_ID_KEY,
    TOKEN_SECRET_KEY, USAGE_KEY_PREFIX,
};
use crate::rfc3339::{self, GoTime};
use crate::{
    BootstrapToken, Error, ExpirationStatus, SecretObject, TokenId, TokenSecret, Usage,
    parse_groups, parse_secret_name,
};

/// A bootstrap-token Secret that passed kubeadm's `BootstrapTokenFromSecret` rules: the token
/// itself, its description, expiration, usages and extra groups.
///
/// Build it with `TryFrom<&SecretObject>`; turn it back into a Secret with
/// [`to_secret_object`](Self::to_secret_object) (kubeadm's `BootstrapTokenToSecret`).
///
/// ```
/// use bootstrap_token::{BootstrapTokenSecret, SecretObject, Usage};
/// use std::time::{Duration, UNIX_EPOCH};
/// let json = br#"{"metadata":{"name":"bootstrap-token-abcdef","namespace":"kube-system"},
///   "type":"bootstrap.kubernetes.io/token",
///   "data":{"token-id":"YWJjZGVm","token-secret":"MDEyMzQ1Njc4OWFiY2RlZg==",
///           "expiration":"MjAyNC0wMS0wMlQwMzowNDowNVo=",
///           "usage-bootstrap-authentication":"dHJ1ZQ=="}}"#;
/// let secret = SecretObject::from_json(json)?;
/// let model = BootstrapTokenSecret::try_from(&secret)?;
/// assert_eq!(model.token().id().as_str(), "abcdef");
/// assert!(model.has_usage(Usage::Authentication));
/// assert!(!model.has_usage(Usage::Signing));
/// assert_eq!(model.groups()?, ["system:bootstrappers"]);
/// let now = UNIX_EPOCH + Duration::from_secs(1_704_164_645 - 60);
/// assert_eq!(model.time_remaining(now), Duration::from_secs(60));
/// assert_eq!(model.to_secret_object()?, secret);
/// # Ok::<(), bootstrap_token::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapTokenSecret {
    token: BootstrapToken,
    description: String,
    expiration: Option<GoTime>,
    usages: Vec<String>,
    extra_groups: Vec<String>,
}

impl BootstrapTokenSecret {
    /// A model from parts. `usages` and `extra_groups` are written to the Secret as given.
    #[must_use]
    pub fn new(token: BootstrapToken) -> Self {
        Self {
            token,
            description: String::new(),
            expiration: None,
            usages: Vec::new(),
            extra_groups: Vec::new(),
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the expiration instant (written in UTC, fractions truncated).
    ///
    /// # Errors
    ///
    /// [`Error::TimeOutOfRange`] if the instant is outside the years 0000–9999.
    pub fn with_expiration(mut self, at: SystemTime) -> Result<Self, Error> {
        let t = GoTime::from_system_time(at)?;
        t.format()?;
        self.expiration = Some(t);
        Ok(self)
    }

    /// Adds a usage.
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        let u = usage.as_str().to_owned();
        if !self.usages.contains(&u) {
            self.usages.push(u);
            self.usages.sort();
        }
        self
    }

    /// Adds an extra group.
    #[must_use]
    pub fn with_extra_group(mut self, group: crate::ExtraGroup) -> Self {
        self.extra_groups.push(group.as_str().to_owned());
        self
    }

    /// The token.
    #[must_use]
    pub fn token(&self) -> &BootstrapToken {
        &self.token
    }

    /// The token ID.
    #[must_use]
    pub fn id(&self) -> &TokenId {
        self.token.id()
    }

    /// The token secret.
    #[must_use]
    pub fn secret(&self) -> &TokenSecret {
        self.token.secret()
    }

    /// The description (empty when none).
    #[must_use]
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The expiration instant, if any.
    #[must_use]
    pub fn expiration(&self) -> Option<SystemTime> {
        self.expiration.and_then(|t| t.to_system_time().ok())
    }

    /// The expiration as written, in its original offset (RFC 3339, no fractions), if any.
    #[must_use]
    pub fn expiration_rfc3339(&self) -> Option<String> {
        self.expiration.and_then(|t| t.format().ok())
    }

    /// The expiry state at `now` (`GetExpiration`).
    #[must_use]
    pub fn expiration_status(&self, now: SystemTime) -> ExpirationStatus {
        match self.expiration.map(GoTime::to_system_time) {
            None => ExpirationStatus::Never,
            Some(Ok(at)) => ExpirationStatus::from_instant(at, now),
            Some(Err(_)) => ExpirationStatus::Unparseable,
        }
    }

    /// Time left before expiry at `now`; zero when expired or never expiring.
    #[must_use]
    pub fn time_remaining(&self, now: SystemTime) -> std::time::Duration {
        self.expiration_status(now).time_remaining()
    }

    /// Whether the token has expired at `now`.
    #[must_use]
    pub fn is_expired(&self, now: SystemTime) -> bool {
        self.expiration_status(now).is_expired()
    }

    /// The enabled usages as written (every `usage-bootstrap-<u>` = `true`, unknown ones
    /// included, sorted), as kubeadm reads them.
    #[must_use]
    pub fn usages(&self) -> &[String] {
        &self.usages
    }

    /// Whether a known usage is enabled.
    #[must_use]
    pub fn has_usage(&self, usage: Usage) -> bool {
        self.usages.iter().any(|u| u == usage.as_str())
    }

    /// The raw `auth-extra-groups` entries (split on `,`, not validated or deduplicated).
    #[must_use]
    pub fn extra_groups(&self) -> &[String] {
        &self.extra_groups
    }

    /// The groups an authenticated request gets (`GetGroups`): `system:bootstrappers` plus the
    /// extra groups, validated, sorted, deduplicated.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidGroup`] for the first entry not matching the group pattern.
    pub fn groups(&self) -> Result<Vec<String>, Error> {
        parse_groups(self.extra_groups.join(",").as_bytes())
    }

    /// kubeadm's `BootstrapTokenToSecret`: `bootstrap-token-<id>` in `kube-system`, type
    /// `bootstrap.kubernetes.io/token`, `token-id`, `token-secret`, `description` when
    /// non-empty, `expiration` in UTC RFC 3339 when set, `usage-bootstrap-<u>` = `true` for each
    /// usage, `auth-extra-groups` joined with `,` when non-empty.
    ///
    /// # Errors
    ///
    /// [`Error::TimeOutOfRange`] if the expiration cannot be written.
    pub fn to_secret_object(&self) -> Result<SecretObject, Error> {
        let mut data = BTreeMap::new();
        let mut put = |k: &str, v: &[u8]| {
            data.insert(k.to_owned(), v.to_vec());
        };
        put(TOKEN_ID_KEY, self.id().as_bytes());
        put(TOKEN_SECRET_KEY, self.secret().expose_secret().as_bytes());
        if !self.description.is_empty() {
            put(DESCRIPTION_KEY, self.description.as_bytes());
        }
        if let Some(t) = self.expiration {
            let utc = GoTime { offset: 0, ..t };
            put(EXPIRATION_KEY, utc.format()?.as_bytes());
        }
        for u in &self.usages {
            put(&format!("{USAGE_KEY_PREFIX}{u}"), b"true");
        }
        if !self.extra_groups.is_empty() {
            put(
                AUTH_EXTRA_GROUPS_KEY,
                self.extra_groups.join(",").as_bytes(),
            );
        }
        Ok(SecretObject::new(
            self.id().secret_name(),
            NAMESPACE,
            SECRET_TYPE,
            Some(data),
        ))
    }

    pub(crate) fn expiration_go_time(&self) -> Option<GoTime> {
        self.expiration
    }
}

impl TryFrom<&SecretObject> for BootstrapTokenSecret {
    type Error = Error;

    /// kubeadm's `BootstrapTokenFromSecret`, plus the type and deletion checks the authenticator
    /// makes. Unlike kubeadm, no error message contains the token secret.
    ///
    /// Order: deletion pending; type; `token-id` non-empty; name equals `bootstrap-token-<token-id>`;
    /// `token-secret` non-empty; `<id>.<secret>` matches the token pattern; `expiration` (when
    /// non-empty) parses as Go's RFC 3339.
    fn try_from(s: &SecretObject) -> Result<Self, Error> {
        if s.is_deletion_pending() {
            return Err(Error::DeletionPending);
        }
        if s.secret_type() != SECRET_TYPE {
            return Err(Error::WrongSecretType);
        }
        let id_bytes = s.data_or_empty(TOKEN_ID_KEY);
        if id_bytes.is_empty() {
            return Err(Error::MissingData { key: TOKEN_ID_KEY });
        }
        let name_ok = s
            .name()
            .strip_prefix(crate::SECRET_NAME_PREFIX)
            .is_some_and(|rest| rest.as_bytes() == id_bytes);
        if !name_ok {
            return Err(if parse_secret_name(s.name()).is_some() {
                Error::TokenIdMismatch
            } else {
                Error::InvalidSecretName
            });
        }
        let secret_bytes = s.data_or_empty(TOKEN_SECRET_KEY);
        if secret_bytes.is_empty() {
            return Err(Error::MissingData {
                key: TOKEN_SECRET_KEY,
            });
        }
        let id = TokenId::from_bytes(id_bytes).map_err(|_| Error::InvalidToken)?;
        let secret = TokenSecret::from_bytes(secret_bytes).map_err(|_| Error::InvalidToken)?;
        let description = String::from_utf8_lossy(s.data_or_empty(DESCRIPTION_KEY)).into_owned();
        let exp = s.data_or_empty(EXPIRATION_KEY);
        let expiration = if exp.is_empty() {
            None
        } else {
            let t = rfc3339::parse(exp)?;
            t.to_system_time()?;
            Some(t)
        };
        let mut usages: Vec<String> = s
            .data_map()
            .into_iter()
            .flatten()
            .filter(|(_, v)| v.as_slice() == b"true")
            .filter_map(|(k, _)| k.strip_prefix(USAGE_KEY_PREFIX))
            .map(str::to_owned)
            .collect();
        usages.sort();
        let groups = s.data_or_empty(AUTH_EXTRA_GROUPS_KEY);
        let extra_groups = if groups.is_empty() {
            Vec::new()
        } else {
            groups
                .split(|&b| b == b',')
                .map(|g| String::from_utf8_lossy(g).into_owned())
                .collect()
        };
        Ok(Self {
            token: BootstrapToken::new(id, secret),
            description,
            expiration,
            usages,
            extra_groups,
        })
    }
}
