//! kube-rbac-proxy's authorization configuration: its own file format (`--config-file`) and its
//! `--allow-paths`/`--ignore-paths` flags, and the attributes it authorizes a request with.

use std::sync::Arc;

use serde::Deserialize;

use crate::attributes::{Attributes, ResourceAttributes};
use crate::error::Error;
use crate::path_pattern::PathPattern;
use crate::request_path::RequestPath;
use crate::user::UserInfo;

/// The largest kube-rbac-proxy configuration file read, in bytes.
pub const MAX_PROXY_CONFIG_BYTES: usize = 1024 * 1024;

/// kube-rbac-proxy's authorization configuration, read from its file and flags, deciding as
/// kube-rbac-proxy (v0.16 and later) decides.
///
/// The file (`--config-file`) holds `authorization:` with
/// - `resourceAttributes: {namespace, apiGroup, apiVersion, resource, subresource, name}`:
///   every request is authorized as that resource request, with the request's verb;
/// - `rewrites: {byQueryParameter: {name}, byHttpHeader: {name}}` with `resourceAttributes`
///   fields that are templates over `{{ .Value }}`: one resource request per value of that
///   query parameter and header, **all** of which must be allowed; with no value the request is
///   refused as malformed (kube-rbac-proxy answers 500 `InternalError`: its authorizer's error
///   under `k8s.io/apiserver`'s filter);
/// - `static: [{user: {name, groups}, verb, namespace, apiGroup, resource, subresource, name,
///   resourceRequest, path}]`: authorizations allowed without asking the API server (an empty
///   field matches anything; `resourceRequest: true` entries take no `path`, others need one).
///
/// Without `resourceAttributes`, a request is authorized as a non-resource request for its
/// path. The verb is the lowercase HTTP method (`get`, `post`, `put`, `patch`, `delete`), in
/// both modes: kube-rbac-proxy resolves every request with an empty `RequestInfoFactory`.
///
/// The template language is Go's `text/template`; only the action `{{ .Value }}` (or
/// `{{.Value}}`) is read, any other is refused when the file is read. Keys are matched exactly
/// (`resourceAttributes`, `user`), where Go's JSON decoder also takes other cases.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RbacProxyConfig {
    resource: Option<TemplatedAttributes>,
    rewrite_query: Option<String>,
    rewrite_header: Option<String>,
    statics: Vec<StaticAuthorization>,
    paths: PathFilter,
}

/// What kube-rbac-proxy's path flags decide for a request, before anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathRule {
    /// Authenticate and authorize the request as configured.
    Authorize,
    /// The path matches `--ignore-paths`: pass it through without authentication or
    /// authorization.
    Ignore,
    /// `--allow-paths` is set and the path matches none of them: refuse it (403).
    Deny,
}

/// One static authorization (`authorization.static[]`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StaticAuthorization {
    /// Who: a name and/or groups (any of them); empty matches anyone.
    #[serde(default, alias = "User")]
    pub user: StaticUser,
    /// The verb, empty for any.
    #[serde(default)]
    pub verb: String,
    /// The namespace, empty for any.
    #[serde(default)]
    pub namespace: String,
    /// The API group, empty for any.
    #[serde(default)]
    pub api_group: String,
    /// The resource, empty for any.
    #[serde(default)]
    pub resource: String,
    /// The subresource, empty for any.
    #[serde(default)]
    pub subresource: String,
    /// The name, empty for any.
    #[serde(default)]
    pub name: String,
    /// Whether this entry is for resource requests (then without `path`) or non-resource
    /// requests (then with a `path`).
    #[serde(default)]
    pub resource_request: bool,
    /// The non-resource path, exact.
    #[serde(default)]
    pub path: String,
}

/// The user of a static authorization.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[non_exhaustive]
pub struct StaticUser {
    /// The user's name, empty for any.
    #[serde(default)]
    pub name: String,
    /// Groups, any one of which matches; empty for any.
    #[serde(default)]
    pub groups: Vec<String>,
}

impl RbacProxyConfig {
    /// No file: every request is authorized as a non-resource request for its path.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads kube-rbac-proxy's configuration file in YAML (feature `yaml`).
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] over [`MAX_PROXY_CONFIG_BYTES`]; [`Error::Yaml`] for malformed YAML
    /// or a field of the wrong type; [`Error::InvalidProxyConfig`] for a template other than
    /// `{{ .Value }}`, a static entry with `resourceRequest` and a `path` (or neither).
    #[cfg(feature = "yaml")]
    pub fn from_yaml(yaml: &[u8]) -> Result<Self, Error> {
        check_len(yaml.len())?;
        let text = std::str::from_utf8(yaml).map_err(|_| Error::Yaml {
            what: "kube-rbac-proxy configuration",
            line: 0,
            column: 0,
        })?;
        let docs: Vec<Option<File>> =
            serde_saphyr::from_multiple_with_options(text, crate::yaml::options(1)).map_err(
                |e| {
                    let (line, column) = crate::yaml::location(&e);
                    Error::Yaml {
                        what: "kube-rbac-proxy configuration",
                        line,
                        column,
                    }
                },
            )?;
        Self::from_file(docs.into_iter().flatten().next().unwrap_or_default())
    }

    /// Reads kube-rbac-proxy's configuration file in JSON.
    ///
    /// # Errors
    ///
    #[cfg_attr(
        feature = "yaml",
        doc = "As [`from_yaml`](Self::from_yaml), with [`Error::Json`] for malformed JSON."
    )]
    #[cfg_attr(
        not(feature = "yaml"),
        doc = "As `from_yaml` (feature `yaml`), with [`Error::Json`] for malformed JSON."
    )]
    pub fn from_json(json: &[u8]) -> Result<Self, Error> {
        check_len(json.len())?;
        let file: File = serde_json::from_slice(json).map_err(|e| Error::Json {
            what: "kube-rbac-proxy configuration",
            line: e.line(),
            column: e.column(),
        })?;
        Self::from_file(file)
    }

    /// The same configuration with `--allow-paths`: only paths matching one of `patterns`
    /// (Go `path.Match`, compared without their leading `/`) are served; others are denied.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidProxyConfig`] for a malformed pattern, or when `--ignore-paths` is set
    /// too (kube-rbac-proxy refuses both).
    pub fn with_allow_paths<I, S>(mut self, patterns: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        if matches!(self.paths, PathFilter::Ignore(_)) {
            return Err(both_path_flags());
        }
        let set = PathSet::new(patterns)?;
        self.paths = if set.is_empty() {
            PathFilter::None
        } else {
            PathFilter::Allow(set)
        };
        Ok(self)
    }

    /// The same configuration with `--ignore-paths`: paths matching one of `patterns` are
    /// passed through without authentication or authorization.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidProxyConfig`] for a malformed pattern, or when `--allow-paths` is set
    /// too.
    pub fn with_ignore_paths<I, S>(mut self, patterns: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        if matches!(self.paths, PathFilter::Allow(_)) {
            return Err(both_path_flags());
        }
        let set = PathSet::new(patterns)?;
        self.paths = if set.is_empty() {
            PathFilter::None
        } else {
            PathFilter::Ignore(set)
        };
        Ok(self)
    }

    /// What the path flags decide for `path`.
    #[must_use]
    pub fn path_rule(&self, path: &RequestPath<'_>) -> PathRule {
        match &self.paths {
            PathFilter::None => PathRule::Authorize,
            PathFilter::Allow(set) if set.matches(path.as_str()) => PathRule::Authorize,
            PathFilter::Allow(_) => PathRule::Deny,
            PathFilter::Ignore(set) if set.matches(path.as_str()) => PathRule::Ignore,
            PathFilter::Ignore(_) => PathRule::Authorize,
        }
    }

    /// The name of the header whose values rewrite the attributes (`byHttpHeader.name`), for
    /// the caller to collect the values of.
    #[must_use]
    pub fn rewrite_header(&self) -> Option<&str> {
        self.rewrite_header.as_deref()
    }

    /// The attributes to authorize a request with, all of which must be allowed (a static
    /// authorization or the API server's answer). Empty means kube-rbac-proxy refuses the
    /// request as malformed (it answers 500 `InternalError`): rewrites are configured and the
    /// request carries no value.
    ///
    /// `header_values` are the values of the [`rewrite_header`](Self::rewrite_header), every
    /// header line in order (ignored when no header rewrite is configured); `query` is the raw
    /// query string, whose values of the `byQueryParameter` name come first. Every attribute set
    /// shares `user`.
    #[must_use]
    pub fn attributes(
        &self,
        user: &Arc<UserInfo>,
        method: &str,
        path: &RequestPath<'_>,
        query: Option<&str>,
        header_values: &[&str],
    ) -> Vec<Attributes> {
        let verb = method.to_lowercase();
        let Some(resource) = &self.resource else {
            return vec![Attributes::non_resource(
                Arc::clone(user),
                verb,
                path.as_str(),
            )];
        };
        if !resource.rewrites {
            return vec![Attributes::resource(
                Arc::clone(user),
                verb,
                resource.render(""),
            )];
        }
        let mut values: Vec<String> = Vec::new();
        if let (Some(name), Some(query)) = (&self.rewrite_query, query) {
            values.extend(
                crate::query::values(query, name)
                    .into_iter()
                    .map(|v| v.value.into_owned()),
            );
        }
        if self.rewrite_header.is_some() {
            values.extend(header_values.iter().map(|v| (*v).to_owned()));
        }
        values
            .iter()
            .map(|value| {
                Attributes::resource(Arc::clone(user), verb.clone(), resource.render(value))
            })
            .collect()
    }

    /// Whether a static authorization allows `attributes` (kube-rbac-proxy asks the API
    /// server only when none does).
    #[must_use]
    pub fn static_allows(&self, attributes: &Attributes) -> bool {
        self.statics.iter().any(|s| s.matches(attributes))
    }

    fn from_file(file: File) -> Result<Self, Error> {
        let Some(authz) = file.authorization else {
            return Ok(Self::new());
        };
        for s in &authz.statics {
            if s.resource_request != s.path.is_empty() {
                return Err(Error::InvalidProxyConfig {
                    reason: "a static authorization with resourceRequest: true must have no path, and one without must have a path",
                });
            }
        }
        let templated = authz.rewrites.is_some();
        let rewrites = authz.rewrites.unwrap_or_default();
        let name = |c: Option<NameConfig>| c.map(|c| c.name).filter(|n| !n.is_empty());
        let resource = match authz.resource_attributes {
            Some(r) => Some(TemplatedAttributes::new(&r, templated)?),
            None => None,
        };
        Ok(Self {
            resource,
            rewrite_query: name(rewrites.by_query_parameter),
            rewrite_header: name(rewrites.by_http_header),
            statics: authz.statics,
            paths: PathFilter::None,
        })
    }
}

impl StaticAuthorization {
    /// kube-rbac-proxy's `Matches`: every non-empty field equal, any group, and the same kind
    /// of request.
    fn matches(&self, a: &Attributes) -> bool {
        let eq = |conf: &str, value: &str| conf.is_empty() || conf == value;
        let groups = self.user.groups.is_empty()
            || a.user.groups.iter().any(|g| self.user.groups.contains(g));
        let common = eq(&self.user.name, &a.user.name) && groups && eq(&self.verb, &a.verb);
        match &a.target {
            crate::attributes::Target::Resource(r) => {
                common
                    && self.resource_request
                    && eq(&self.namespace, &r.namespace)
                    && eq(&self.api_group, &r.api_group)
                    && eq(&self.resource, &r.resource)
                    && eq(&self.subresource, &r.subresource)
                    && eq(&self.name, &r.name)
                    && self.path.is_empty()
            }
            crate::attributes::Target::NonResource { path } => {
                common
                    && !self.resource_request
                    && self.namespace.is_empty()
                    && self.api_group.is_empty()
                    && self.resource.is_empty()
                    && self.subresource.is_empty()
                    && self.name.is_empty()
                    && eq(&self.path, path)
            }
        }
    }
}

/// `resourceAttributes` with each field a literal or a template over `{{ .Value }}`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TemplatedAttributes {
    namespace: Template,
    api_group: Template,
    api_version: Template,
    resource: Template,
    subresource: Template,
    name: Template,
    /// Whether rewrites are configured (then a request without values is malformed).
    rewrites: bool,
}

impl TemplatedAttributes {
    fn new(r: &FileResourceAttributes, rewrites: bool) -> Result<Self, Error> {
        Ok(Self {
            namespace: Template::parse(&r.namespace, rewrites)?,
            api_group: Template::parse(&r.api_group, rewrites)?,
            api_version: Template::parse(&r.api_version, rewrites)?,
            resource: Template::parse(&r.resource, rewrites)?,
            subresource: Template::parse(&r.subresource, rewrites)?,
            name: Template::parse(&r.name, rewrites)?,
            rewrites,
        })
    }

    fn render(&self, value: &str) -> ResourceAttributes {
        ResourceAttributes::new(
            self.api_group.render(value),
            self.api_version.render(value),
            self.resource.render(value),
        )
        .in_namespace(self.namespace.render(value))
        .with_subresource(self.subresource.render(value))
        .with_name(self.name.render(value))
    }
}

/// Literal text and `{{ .Value }}` actions.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Template(Vec<Piece>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Value,
}

impl Template {
    /// Parses `s`; without rewrites, kube-rbac-proxy uses the fields as they are.
    fn parse(s: &str, templated: bool) -> Result<Self, Error> {
        if !templated {
            return Ok(Self(vec![Piece::Text(s.to_owned())]));
        }
        let mut pieces = Vec::new();
        let mut rest = s;
        while let Some(start) = rest.find("{{") {
            let (text, action) = rest.split_at(start);
            if !text.is_empty() {
                pieces.push(Piece::Text(text.to_owned()));
            }
            let Some(end) = action.find("}}") else {
                return Err(bad_template());
            };
            let inner = action.get(2..end).ok_or_else(bad_template)?;
            if inner.trim_matches(' ') != ".Value" {
                return Err(bad_template());
            }
            pieces.push(Piece::Value);
            rest = action
                .get(end.saturating_add(2)..)
                .ok_or_else(bad_template)?;
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_owned()));
        }
        Ok(Self(pieces))
    }

    fn render(&self, value: &str) -> String {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Value => out.push_str(value),
            }
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum PathFilter {
    #[default]
    None,
    Allow(PathSet),
    Ignore(PathSet),
}

/// kube-rbac-proxy's path set: exact paths and `path.Match` patterns, compared without the
/// leading `/`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct PathSet {
    exact: Vec<String>,
    patterns: Vec<PathPattern>,
}

impl PathSet {
    fn new<I: IntoIterator<Item = S>, S: AsRef<str>>(patterns: I) -> Result<Self, Error> {
        let mut set = Self::default();
        for p in patterns {
            let p = p.as_ref();
            let p = p.strip_prefix('/').unwrap_or(p);
            if p.contains('*') {
                set.patterns.push(PathPattern::parse(p)?);
            } else {
                // Go adds these to a set unvalidated; a malformed one only ever fails to
                // match exactly.
                set.exact.push(p.to_owned());
            }
        }
        Ok(set)
    }

    fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.patterns.is_empty()
    }

    fn matches(&self, path: &str) -> bool {
        let p = path.strip_prefix('/').unwrap_or(path);
        self.exact.iter().any(|e| e == p) || self.patterns.iter().any(|pat| pat.matches(p))
    }
}

#[derive(Debug, Default, Deserialize)]
struct File {
    #[serde(default)]
    authorization: Option<FileAuthorization>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileAuthorization {
    #[serde(default)]
    rewrites: Option<FileRewrites>,
    #[serde(default)]
    resource_attributes: Option<FileResourceAttributes>,
    #[serde(default, rename = "static", deserialize_with = "nullable")]
    statics: Vec<StaticAuthorization>,
}

/// `null` read as empty, as Go reads it.
fn nullable<'de, D: serde::Deserializer<'de>, T: Deserialize<'de> + Default>(
    d: D,
) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileRewrites {
    /// Read and, as in kube-rbac-proxy, without effect.
    #[serde(default)]
    #[allow(
        dead_code,
        reason = "read for compatibility; kube-rbac-proxy ignores it too"
    )]
    insecure_passthrough: Option<bool>,
    #[serde(default)]
    by_query_parameter: Option<NameConfig>,
    #[serde(default)]
    by_http_header: Option<NameConfig>,
}

#[derive(Debug, Default, Deserialize)]
struct NameConfig {
    #[serde(default)]
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileResourceAttributes {
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    api_group: String,
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    resource: String,
    #[serde(default)]
    subresource: String,
    #[serde(default)]
    name: String,
}

fn check_len(len: usize) -> Result<(), Error> {
    if len > MAX_PROXY_CONFIG_BYTES {
        return Err(Error::TooLarge {
            what: "kube-rbac-proxy configuration",
            limit: MAX_PROXY_CONFIG_BYTES,
        });
    }
    Ok(())
}

fn bad_template() -> Error {
    Error::InvalidProxyConfig {
        reason: "resourceAttributes templates support only {{ .Value }}",
    }
}

fn both_path_flags() -> Error {
    Error::InvalidProxyConfig {
        reason: "--allow-paths and --ignore-paths cannot be used together",
    }
}
