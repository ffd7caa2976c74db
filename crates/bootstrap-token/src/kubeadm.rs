//! kubeadm's `BootstrapToken` API object, its defaults and validation, its Secret conversion,
//! and the `kubeadm token` CLI rules.

use std::fmt;
use std::time::{Duration, SystemTime};

use crate::constants::{KUBEADM_DEFAULT_GROUP, NAMESPACE, SECRET_TYPE};
use crate::duration::{short_human_duration, signed_seconds};
use crate::error::shown;
use crate::rfc3339::GoTime;
use crate::usage::shown_plain;
use crate::{
    BootstrapToken, BootstrapTokenSecret, Error, ExtraGroup, SecretObject, TokenId, Usage,
};

/// The header line of `kubeadm token list`, before tab expansion.
pub const LIST_HEADER: &str = "TOKEN\tTTL\tEXPIRES\tUSAGES\tDESCRIPTION\tEXTRA GROUPS\n";

/// kubeadm's `BootstrapToken` object (`InitConfiguration.bootstrapTokens[*]`, `kubeadm token
/// create` flags): token, description, TTL, absolute expiry, usages and groups.
///
/// ```
/// use bootstrap_token::{KubeadmToken, BootstrapToken};
/// use std::time::{Duration, UNIX_EPOCH};
/// let token: BootstrapToken = "abcdef.0123456789abcdef".parse()?;
/// let kt = KubeadmToken::new(Some(token)).with_defaults();
/// assert_eq!(kt.ttl, Some(Duration::from_secs(24 * 3600)));
/// assert_eq!(kt.usages, ["signing", "authentication"]);
/// kt.validate("bootstrapTokens.0")?;
/// let now = UNIX_EPOCH + Duration::from_secs(1_704_164_645);
/// let secret = kt.to_secret_object(now)?;
/// assert_eq!(secret.data("expiration"), Some(&b"2024-01-03T03:04:05Z"[..]));
/// assert_eq!(secret.data("auth-extra-groups"), Some(&b"system:bootstrappers:kubeadm:default-node-token"[..]));
/// # Ok::<(), bootstrap_token::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KubeadmToken {
    /// The token; kubeadm generates one when absent.
    pub token: Option<BootstrapToken>,
    /// Free text (empty when none).
    pub description: String,
    /// Time to live from creation; `Some(Duration::ZERO)` (or a negative Go duration) means the
    /// token never expires.
    pub ttl: Option<Duration>,
    /// Absolute expiry; wins over `ttl` when building the Secret (and is mutually exclusive with
    /// it under validation).
    pub expires: Option<SystemTime>,
    /// Usage names (validated by [`validate`](Self::validate)).
    pub usages: Vec<String>,
    /// Extra group names (validated by [`validate`](Self::validate)).
    pub groups: Vec<String>,
    /// The offset `expires` was written in, in seconds east of UTC (for `token list`).
    expires_offset: i32,
}

impl KubeadmToken {
    /// An object with only a token set.
    #[must_use]
    pub fn new(token: Option<BootstrapToken>) -> Self {
        Self {
            token,
            description: String::new(),
            ttl: None,
            expires: None,
            usages: Vec::new(),
            groups: Vec::new(),
            expires_offset: 0,
        }
    }

    /// kubeadm's `SetDefaults_BootstrapToken`: `ttl` 24h when unset, usages
    /// `signing,authentication` when empty, groups
    /// `system:bootstrappers:kubeadm:default-node-token` when empty and the usages include
    /// `authentication` (groups are refused without it: a default the caller never set must
    /// not fail the validation of usages they did set).
    #[must_use]
    pub fn with_defaults(mut self) -> Self {
        if self.ttl.is_none() {
            self.ttl = Some(Duration::from_secs(24 * 3600));
        }
        if self.usages.is_empty() {
            self.usages = Usage::ALL.iter().map(|u| u.as_str().to_owned()).collect();
        }
        let authenticates = self
            .usages
            .iter()
            .any(|u| u == Usage::Authentication.as_str());
        if self.groups.is_empty() && authenticates {
            self.groups = vec![KUBEADM_DEFAULT_GROUP.to_owned()];
        }
        self
    }

    /// kubeadm's `ValidateBootstrapTokens` for one element at field path `path` (for example
    /// `bootstrapTokens.0`): a token is present; usages are known; groups are valid and only
    /// given together with the `authentication` usage; `ttl` and `expires` are not both set.
    /// Unlike kubeadm, the token error does not print the token.
    ///
    /// # Errors
    ///
    /// [`Error::Validation`] with every field error found.
    pub fn validate(&self, path: &str) -> Result<(), Error> {
        let mut errors = Vec::new();
        if self.token.is_none() {
            errors.push(FieldError::new(
                format!("{path}.token"),
                "<redacted>",
                "the bootstrap token is invalid",
            ));
        }
        let refs: Vec<&str> = self.usages.iter().map(String::as_str).collect();
        if let Err(e) = validate_usages(&refs) {
            errors.push(FieldError::new(
                format!("{path}.usages"),
                &shown(&self.usages.join(",")),
                &e.to_string(),
            ));
        }
        if !self.groups.is_empty() && !self.usages.iter().any(|u| u == "authentication") {
            errors.push(FieldError::new(
                format!("{path}.groups"),
                &shown(&self.groups.join(",")),
                "token groups cannot be specified unless --usages includes \"authentication\"",
            ));
        }
        for g in &self.groups {
            if let Err(e) = g.parse::<ExtraGroup>() {
                errors.push(FieldError::new(
                    format!("{path}.groups"),
                    &shown(g),
                    &e.to_string(),
                ));
            }
        }
        if self.ttl.is_some() && self.expires.is_some() {
            errors.push(FieldError::new(
                path.to_owned(),
                "",
                "the BootstrapToken .TTL and .Expires fields are mutually exclusive",
            ));
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::Validation(errors))
        }
    }

    /// kubeadm's `BootstrapTokenToSecret` at `now`: `expires` (in UTC) wins; else `ttl > 0`
    /// gives `now + ttl`; else no `expiration` (never expires). Usages become
    /// `usage-bootstrap-<u>` = `true`; groups are joined with `,` as given.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidToken`] without a token, [`Error::TimeOutOfRange`] when the expiry cannot
    /// be represented.
    pub fn to_secret_object(&self, now: SystemTime) -> Result<SecretObject, Error> {
        let token = self.token.clone().ok_or(Error::InvalidToken)?;
        let expiration = match (self.expires, self.ttl) {
            (Some(at), _) => Some(at),
            (None, Some(ttl)) if !ttl.is_zero() => {
                Some(now.checked_add(ttl).ok_or(Error::TimeOutOfRange)?)
            }
            _ => None,
        };
        let mut model = BootstrapTokenSecret::new(token).with_description(self.description.clone());
        if let Some(at) = expiration {
            model = model.with_expiration(at)?;
        }
        let mut secret = model.to_secret_object()?;
        let mut data = secret.data_map().cloned().unwrap_or_default();
        for u in &self.usages {
            data.insert(format!("{}{u}", crate::USAGE_KEY_PREFIX), b"true".to_vec());
        }
        if !self.groups.is_empty() {
            data.insert(
                crate::AUTH_EXTRA_GROUPS_KEY.to_owned(),
                self.groups.join(",").into_bytes(),
            );
        }
        secret = SecretObject::new(secret.name(), NAMESPACE, SECRET_TYPE, Some(data));
        Ok(secret)
    }

    /// kubeadm's `BootstrapTokenFromSecret` (see [`BootstrapTokenSecret`]'s `TryFrom`): usages
    /// are every `usage-bootstrap-<u>` = `true` (unknown ones included), sorted; groups are the
    /// raw `auth-extra-groups` split on `,`; `ttl` is left unset; `expires` keeps its offset.
    ///
    /// # Errors
    ///
    /// As `BootstrapTokenSecret::try_from`.
    pub fn from_secret(secret: &SecretObject) -> Result<Self, Error> {
        let m = BootstrapTokenSecret::try_from(secret)?;
        Ok(Self::from_model(&m))
    }

    /// The object for a validated Secret model.
    #[must_use]
    pub fn from_model(m: &BootstrapTokenSecret) -> Self {
        Self {
            token: Some(m.token().clone()),
            description: m.description().to_owned(),
            ttl: None,
            expires: m.expiration(),
            usages: m.usages().to_vec(),
            groups: m.extra_groups().to_vec(),
            expires_offset: m.expiration_go_time().map_or(0, |t| t.offset),
        }
    }

    /// Reads one element of kubeadm's `bootstrapTokens` (JSON): `token`, `description`, `ttl`
    /// (a Go duration string such as `24h0m0s`), `expires` (RFC 3339, parsed as Go does),
    /// `usages`, `groups`; unknown fields are ignored, duplicate fields rejected. As in kubeadm,
    /// `"token": ""` (or any other non-token) is an error, not "absent"; a missing or `null`
    /// `token` is `None` (Go decodes `null` into a nil pointer; kubeadm would generate one). A negative `ttl` reads as zero (never expires).
    /// No defaults are applied (see [`with_defaults`](Self::with_defaults)).
    ///
    /// ```
    /// use bootstrap_token::KubeadmToken;
    /// use std::time::Duration;
    /// let kt = KubeadmToken::from_json(br#"{"token":"abcdef.0123456789abcdef","ttl":"1h30m","usages":["signing"]}"#)?;
    /// assert_eq!(kt.ttl, Some(Duration::from_secs(5400)));
    /// assert_eq!(kt.to_json()?, r#"{"token":"abcdef.0123456789abcdef","ttl":"1h30m0s","usages":["signing"]}"#);
    /// assert!(KubeadmToken::from_json(br#"{"token":""}"#).is_err());
    /// # Ok::<(), bootstrap_token::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::DocumentTooLarge`] beyond [`MAX_DOCUMENT_LEN`](crate::MAX_DOCUMENT_LEN),
    /// [`Error::Json`] (position only), [`Error::InvalidToken`], [`Error::InvalidDuration`],
    /// [`Error::InvalidExpiration`].
    pub fn from_json(json: &[u8]) -> Result<Self, Error> {
        if json.len() > crate::MAX_DOCUMENT_LEN {
            return Err(Error::DocumentTooLarge {
                len: json.len(),
                max: crate::MAX_DOCUMENT_LEN,
            });
        }
        let raw: RawKubeadmToken = serde_json::from_slice(json).map_err(|e| Error::Json {
            line: e.line(),
            column: e.column(),
        })?;
        let token = match raw.token {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(s)) => Some(
                s.parse::<BootstrapToken>()
                    .map_err(|_| Error::InvalidToken)?,
            ),
            Some(_) => return Err(Error::InvalidToken),
        };
        let ttl = match raw.ttl {
            None => None,
            Some(s) => Some(crate::duration::parse_go_duration(&s)?.unwrap_or_default()),
        };
        let (expires, expires_offset) = match raw.expires {
            None => (None, 0),
            Some(s) => {
                let t = crate::rfc3339::parse(s.as_bytes())?;
                (Some(t.to_system_time()?), t.offset)
            }
        };
        Ok(Self {
            token,
            description: raw.description.unwrap_or_default(),
            ttl,
            expires,
            usages: raw.usages.unwrap_or_default(),
            groups: raw.groups.unwrap_or_default(),
            expires_offset,
        })
    }

    /// kubeadm's JSON for this object, fields in Go's order with empty ones omitted: `token`
    /// (the **full token**, as kubeadm writes it; `null` when absent), `description`, `ttl` (Go duration string),
    /// `expires` (RFC 3339 in UTC), `usages`, `groups`.
    ///
    /// # Errors
    ///
    /// [`Error::TimeOutOfRange`] if `expires` is outside the years 0000–9999,
    /// [`Error::Serialize`] if `serde_json` fails (it does not for these types).
    pub fn to_json(&self) -> Result<String, Error> {
        let token = self
            .token
            .as_ref()
            .map(|t| zeroize::Zeroizing::new(t.to_string()));
        let expires = match self.expires {
            Some(at) => Some(GoTime::from_system_time(at)?.format()?),
            None => None,
        };
        let out = OutKubeadmToken {
            token: token.as_ref().map(|t| t.as_str()),
            description: &self.description,
            ttl: self.ttl.map(crate::duration::format_go_duration),
            expires,
            usages: &self.usages,
            groups: &self.groups,
        };
        serde_json::to_string(&out).map_err(|_| Error::Serialize)
    }

    /// One `kubeadm token list` row at `now`, before tab expansion:
    /// `<token>\t<ttl %-9s>\t<expires>\t<usages %-22s>\t<description %-56s>\t<groups>\n`.
    /// TTL is `<forever>` or the [`short_human_duration`] of `expires − now`; EXPIRES is
    /// `<never>` or RFC 3339 in the offset it was written in; empty usages, description and groups
    /// print `<none>`. The row contains the **full token**, as kubeadm prints it.
    #[must_use]
    pub fn list_row(&self, now: SystemTime) -> String {
        let token = self
            .token
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let (ttl, expires) = match self.expires {
            None => ("<forever>".to_owned(), "<never>".to_owned()),
            Some(at) => {
                let formatted = GoTime::from_system_time(at)
                    .ok()
                    .map(|t| GoTime {
                        offset: self.expires_offset,
                        ..t
                    })
                    .and_then(|t| t.format().ok())
                    .unwrap_or_default();
                (short_human_duration(signed_seconds(at, now)), formatted)
            }
        };
        let none = |s: String| if s.is_empty() { "<none>".to_owned() } else { s };
        let mut usages = self.usages.clone();
        usages.sort();
        format!(
            "{token}\t{ttl:<9}\t{expires}\t{:<22}\t{:<56}\t{}\n",
            none(usages.join(",")),
            none(self.description.clone()),
            none(self.groups.join(",")),
        )
    }

    /// The whole `kubeadm token list` text output at `now`, tab-expanded as kubeadm's
    /// `text/tabwriter` (min width 10, padding 3) expands it, but over the whole table, so
    /// every row lines up with the header and with each other (kubeadm flushes a writer per
    /// token, so a `<forever>`/`<never>` row is shifted against a row with an expiry).
    #[must_use]
    pub fn format_list(tokens: &[KubeadmToken], now: SystemTime) -> String {
        let mut block = String::from(LIST_HEADER);
        for t in tokens {
            block.push_str(&t.list_row(now));
        }
        tabwriter(&block)
    }
}

/// kubeadm's field error: `<path>: Invalid value: <value>: <detail>`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FieldError {
    /// Field path, for example `bootstrapTokens.0.usages`.
    pub path: String,
    /// The offending value as printed (quoted; never a token secret).
    pub value: String,
    /// What is wrong.
    pub detail: String,
}

impl FieldError {
    fn new(path: String, value: &str, detail: &str) -> Self {
        Self {
            path,
            value: value.to_owned(),
            detail: detail.to_owned(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}: Invalid value: {}", self.path, self.detail)
        } else {
            write!(
                f,
                "{}: Invalid value: {}: {}",
                self.path, self.value, self.detail
            )
        }
    }
}

/// cluster-bootstrap's `ValidateUsages`: every element must be `signing` or `authentication`.
///
/// ```
/// use bootstrap_token::{validate_usages, Usage};
/// assert_eq!(validate_usages(&["signing"])?, [Usage::Signing]);
/// let err = validate_usages(&["foo", "bar", "foo", "signing"]).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "invalid bootstrap token usage string: bar,foo, valid usage options: signing,authentication",
/// );
/// # Ok::<(), bootstrap_token::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::InvalidUsage`] listing the bad values deduplicated, sorted and comma-joined.
pub fn validate_usages(usages: &[&str]) -> Result<Vec<Usage>, Error> {
    let mut good = Vec::new();
    let mut bad: Vec<&str> = Vec::new();
    for u in usages {
        match u.parse::<Usage>() {
            Ok(u) => good.push(u),
            Err(_) => bad.push(u),
        }
    }
    if bad.is_empty() {
        return Ok(good);
    }
    bad.sort_unstable();
    bad.dedup();
    Err(Error::InvalidUsage {
        usages: shown_plain(&bad.join(",")),
    })
}

/// What `kubeadm token delete <arg>` deletes, or `None`-like error: an ID (`\A([a-z0-9]{6})\z`)
/// is used as is; otherwise the argument must be a full token and its ID is used.
///
/// ```
/// use bootstrap_token::parse_delete_argument;
/// assert_eq!(parse_delete_argument("abcdef")?.as_str(), "abcdef");
/// assert_eq!(parse_delete_argument("abcdef.0123456789abcdef")?.secret_name(), "bootstrap-token-abcdef");
/// assert!(parse_delete_argument("abcdef.short").is_err());
/// # Ok::<(), bootstrap_token::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::InvalidToken`] when the argument is neither an ID nor a token (the argument is not
/// echoed: it may be a mistyped secret).
pub fn parse_delete_argument(arg: &str) -> Result<TokenId, Error> {
    if let Ok(id) = arg.parse::<TokenId>() {
        return Ok(id);
    }
    arg.parse::<BootstrapToken>()
        .map(|t| *t.id())
        .map_err(|_| Error::InvalidToken)
}

/// Go's `text/tabwriter` with minwidth 10, tabwidth 4, padding 3, padchar ' ', no flags, for
/// lines that all have the same number of cells.
fn tabwriter(block: &str) -> String {
    let lines: Vec<Vec<&str>> = block
        .split_terminator('\n')
        .map(|l| l.split('\t').collect())
        .collect();
    let mut widths: Vec<usize> = Vec::new();
    for cells in &lines {
        // The text after the last tab is not a column cell.
        let n = cells.len().saturating_sub(1);
        for (j, c) in cells.iter().take(n).enumerate() {
            let w = c.chars().count().saturating_add(3).max(10);
            match widths.get_mut(j) {
                Some(slot) => *slot = (*slot).max(w),
                None => widths.push(w),
            }
        }
    }
    let mut out = String::new();
    for cells in &lines {
        let n = cells.len().saturating_sub(1);
        for (j, c) in cells.iter().enumerate() {
            out.push_str(c);
            if j < n {
                let w = widths.get(j).copied().unwrap_or(0);
                for _ in c.chars().count()..w {
                    out.push(' ');
                }
            }
        }
        out.push('\n');
    }
    out
}

#[derive(serde::Deserialize)]
struct RawKubeadmToken {
    #[serde(default)]
    token: Option<serde_json::Value>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    ttl: Option<String>,
    #[serde(default)]
    expires: Option<String>,
    #[serde(default)]
    usages: Option<Vec<String>>,
    #[serde(default)]
    groups: Option<Vec<String>>,
}

#[derive(serde::Serialize)]
struct OutKubeadmToken<'a> {
    token: Option<&'a str>,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires: Option<String>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    usages: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    groups: &'a [String],
}
