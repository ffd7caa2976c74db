//! The `ExecCredential` object, in every version, with Kubernetes' exact JSON.

use std::time::SystemTime;

use serde::ser::SerializeStruct as _;

use crate::api_version::{ApiVersion, KIND};
use crate::cluster::Cluster;
use crate::error::{DecodeError, Error, sanitize_json_error};
use crate::rfc3339;
use crate::secret::{ClientKey, Token};
use crate::wire::Obj;

/// Largest `KUBERNETES_EXEC_INFO` value [`ExecCredential::from_exec_info`] accepts (1 MiB).
pub const MAX_EXEC_INFO_BYTES: usize = 1024 * 1024;

/// Largest plugin stdout [`ExecCredential::from_plugin_output`] accepts by default (1 MiB).
pub const MAX_PLUGIN_OUTPUT_BYTES: usize = 1024 * 1024;

/// A `client.authentication.k8s.io` `ExecCredential`: the request a client passes to a plugin
/// in `KUBERNETES_EXEC_INFO`, and the response the plugin prints on stdout.
///
/// `Serialize` writes Kubernetes' JSON (key order `kind`, `apiVersion`, `spec`, `status`;
/// empty fields omitted; RFC 3339 timestamps). `Deserialize` reads `v1`, `v1beta1` and the
/// removed `v1alpha1`, requires `kind: ExecCredential`, ignores unknown fields, rejects
/// duplicate known fields, and never echoes a token or key in its errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecCredential {
    api_version: ApiVersion,
    spec: ExecCredentialSpec,
    status: Option<ExecCredentialStatus>,
}

/// `spec`: what the client tells the plugin.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ExecCredentialSpec {
    /// `cluster`: present only when the exec configuration sets `provideClusterInfo: true`.
    pub cluster: Option<Cluster>,
    /// `interactive`: whether the plugin may use stdin to prompt the user.
    pub interactive: bool,
}

/// `status`: the credential the plugin returns.
///
/// Empty strings are treated as absent, as Kubernetes does; a zero or `null`
/// `expirationTimestamp` means "never expires".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExecCredentialStatus {
    expiration: Option<SystemTime>,
    token: Option<Token>,
    client_certificate_data: Option<String>,
    client_key_data: Option<ClientKey>,
}

impl ExecCredential {
    /// A request, as a client builds it for `KUBERNETES_EXEC_INFO`.
    #[must_use]
    pub fn request(api_version: ApiVersion, spec: ExecCredentialSpec) -> ExecCredential {
        ExecCredential {
            api_version,
            spec,
            status: None,
        }
    }

    /// A response carrying `status`, with an empty spec.
    #[must_use]
    pub fn response(api_version: ApiVersion, status: ExecCredentialStatus) -> ExecCredential {
        ExecCredential {
            api_version,
            spec: ExecCredentialSpec::default(),
            status: Some(status),
        }
    }

    /// Plugin side: parses the value of the `KUBERNETES_EXEC_INFO` environment variable
    /// (the caller reads the environment; a trailing newline is expected and accepted).
    ///
    /// # Errors
    ///
    /// [`Error::OutputTooLarge`] above [`MAX_EXEC_INFO_BYTES`]; [`Error::Decode`],
    /// [`Error::WrongKind`], [`Error::MissingApiVersion`], [`Error::UnsupportedApiVersion`] for
    /// malformed input.
    pub fn from_exec_info(value: &str) -> Result<ExecCredential, Error> {
        if value.len() > MAX_EXEC_INFO_BYTES {
            return Err(Error::OutputTooLarge {
                limit: MAX_EXEC_INFO_BYTES,
            });
        }
        decode_json(value.as_bytes())
    }

    /// Plugin side: [`from_exec_info`](Self::from_exec_info) for an optional value, falling
    /// back to an empty, non-interactive request in `default` when the variable is not set
    /// (clients older than Kubernetes 1.11 did not set it).
    ///
    /// # Errors
    ///
    /// As [`from_exec_info`](Self::from_exec_info).
    pub fn from_exec_info_or(
        value: Option<&str>,
        default: ApiVersion,
    ) -> Result<ExecCredential, Error> {
        match value {
            Some(v) => ExecCredential::from_exec_info(v),
            None => Ok(ExecCredential::request(
                default,
                ExecCredentialSpec::default(),
            )),
        }
    }

    /// Client side: decodes a plugin's stdout, JSON or YAML as client-go's universal decoder
    /// accepts (JSON when the first non-whitespace byte is `{`), at most
    /// [`MAX_PLUGIN_OUTPUT_BYTES`].
    ///
    /// This only decodes; [`ExecCredential::into_credential`] applies client-go's output
    /// rules.
    ///
    /// # Errors
    ///
    /// [`Error::OutputTooLarge`], [`Error::Decode`] (not UTF-8, a byte-order mark, trailing
    /// data, wrong types, duplicate fields), [`Error::WrongKind`],
    /// [`Error::MissingApiVersion`], [`Error::UnsupportedApiVersion`],
    /// [`Error::InvalidExpiration`].
    pub fn from_plugin_output(stdout: &[u8]) -> Result<ExecCredential, Error> {
        ExecCredential::from_plugin_output_with_limit(stdout, MAX_PLUGIN_OUTPUT_BYTES)
    }

    /// [`from_plugin_output`](Self::from_plugin_output) with another size limit.
    ///
    /// # Errors
    ///
    /// As [`from_plugin_output`](Self::from_plugin_output).
    pub fn from_plugin_output_with_limit(
        stdout: &[u8],
        limit: usize,
    ) -> Result<ExecCredential, Error> {
        if stdout.len() > limit {
            return Err(Error::OutputTooLarge { limit });
        }
        match stdout
            .iter()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        {
            Some(b'{') => decode_json(stdout),
            _ => decode_yaml(stdout),
        }
    }

    /// The `apiVersion`.
    #[must_use]
    pub fn api_version(&self) -> ApiVersion {
        self.api_version
    }

    /// The `spec`.
    #[must_use]
    pub fn spec(&self) -> &ExecCredentialSpec {
        &self.spec
    }

    /// The `status`, if any.
    #[must_use]
    pub fn status(&self) -> Option<&ExecCredentialStatus> {
        self.status.as_ref()
    }

    /// The cluster information, when the client was configured to provide it.
    #[must_use]
    pub fn cluster(&self) -> Option<&Cluster> {
        self.spec.cluster.as_ref()
    }

    /// Plugin side: whether the plugin may prompt the user on stdin (`spec.interactive`).
    #[must_use]
    pub fn may_prompt(&self) -> bool {
        self.spec.interactive
    }

    /// Plugin side: the response to this request, in the same version the client asked for
    /// (clients reject any other version).
    #[must_use]
    pub fn respond(&self, status: ExecCredentialStatus) -> ExecCredential {
        ExecCredential::response(self.api_version, status)
    }

    /// Kubernetes' JSON encoding, as Go's `encoding/json` writes it (`<`, `>`, `&`, U+2028 and
    /// U+2029 escaped), without a trailing newline.
    #[must_use]
    pub fn to_json(&self) -> String {
        // Serialising these types cannot fail: every map key is a string.
        let json = serde_json::to_string(self).unwrap_or_default();
        go_escape(json)
    }

    /// Plugin side: the exact bytes to print on stdout (the JSON and a newline).
    #[must_use]
    pub fn to_stdout(&self) -> String {
        let mut s = self.to_json();
        s.push('\n');
        s
    }

    /// Client side: the exact value of `KUBERNETES_EXEC_INFO` (the JSON and a newline, as
    /// client-go's serializer writes it).
    #[must_use]
    pub fn to_exec_info(&self) -> String {
        self.to_stdout()
    }

    /// Client side: applies client-go's rules to a plugin response and returns the credential.
    ///
    /// `configured` is the version the exec configuration asked for. A credential whose expiry
    /// is already past at `now` is returned as client-go returns it (check
    /// [`Credential::is_expired`](crate::Credential::is_expired)): the plugin's clock and ours
    /// may disagree, and the server decides.
    ///
    /// # Errors
    ///
    /// [`Error::ApiVersionMismatch`], [`Error::MissingStatus`], [`Error::NoCredential`],
    /// [`Error::PartialKeyPair`], [`Error::InvalidKeyPair`],
    /// [`Error::InvalidLeafCertificate`].
    pub fn into_credential(
        self,
        configured: ApiVersion,
        now: SystemTime,
    ) -> Result<crate::Credential, Error> {
        if self.api_version != configured {
            return Err(Error::ApiVersionMismatch {
                configured: configured.as_str().to_owned(),
                returned: self.api_version.as_str().to_owned(),
            });
        }
        let _ = now;
        let status = self.status.ok_or(Error::MissingStatus)?;
        crate::Credential::from_status(status)
    }
}

impl ExecCredentialSpec {
    /// A spec with the given cluster information and interactivity.
    #[must_use]
    pub fn new(cluster: Option<Cluster>, interactive: bool) -> ExecCredentialSpec {
        ExecCredentialSpec {
            cluster,
            interactive,
        }
    }
}

impl ExecCredentialStatus {
    /// A status carrying a bearer token.
    #[must_use]
    pub fn with_token(token: Token) -> ExecCredentialStatus {
        ExecCredentialStatus {
            token: Some(token),
            ..ExecCredentialStatus::default()
        }
    }

    /// A status carrying a client certificate chain (PEM) and its private key (PEM).
    #[must_use]
    pub fn with_client_certificate(
        certificate_pem: impl Into<String>,
        key: ClientKey,
    ) -> ExecCredentialStatus {
        ExecCredentialStatus {
            client_certificate_data: Some(certificate_pem.into()),
            client_key_data: Some(key),
            ..ExecCredentialStatus::default()
        }
    }

    /// Adds (or replaces) the bearer token; a token and a certificate may be returned together.
    #[must_use]
    pub fn token(mut self, token: Token) -> ExecCredentialStatus {
        self.token = Some(token);
        self
    }

    /// Adds (or replaces) the client certificate and key.
    #[must_use]
    pub fn client_certificate(
        mut self,
        certificate_pem: impl Into<String>,
        key: ClientKey,
    ) -> ExecCredentialStatus {
        self.client_certificate_data = Some(certificate_pem.into());
        self.client_key_data = Some(key);
        self
    }

    /// Sets `expirationTimestamp`. It is written in whole seconds (fractions are truncated,
    /// as Kubernetes does).
    #[must_use]
    pub fn expires_at(mut self, at: SystemTime) -> ExecCredentialStatus {
        self.expiration = Some(at);
        self
    }

    /// `expirationTimestamp`; `None` means the credential does not expire.
    #[must_use]
    pub fn expiration(&self) -> Option<SystemTime> {
        self.expiration
    }

    /// `token`, if non-empty.
    #[must_use]
    pub fn bearer_token(&self) -> Option<&Token> {
        self.token.as_ref()
    }

    /// `clientCertificateData` (PEM), if non-empty.
    #[must_use]
    pub fn client_certificate_data(&self) -> Option<&str> {
        self.client_certificate_data.as_deref()
    }

    /// `clientKeyData` (PEM), if non-empty.
    #[must_use]
    pub fn client_key_data(&self) -> Option<&ClientKey> {
        self.client_key_data.as_ref()
    }

    pub(crate) fn into_parts(
        self,
    ) -> (
        Option<SystemTime>,
        Option<Token>,
        Option<String>,
        Option<ClientKey>,
    ) {
        (
            self.expiration,
            self.token,
            self.client_certificate_data,
            self.client_key_data,
        )
    }
}

impl serde::Serialize for ExecCredential {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ExecCredential", 4)?;
        st.serialize_field("kind", KIND)?;
        st.serialize_field("apiVersion", self.api_version.as_str())?;
        st.serialize_field("spec", &self.spec)?;
        if let Some(status) = &self.status {
            st.serialize_field("status", status)?;
        }
        st.end()
    }
}

impl serde::Serialize for ExecCredentialSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ExecCredentialSpec", 2)?;
        if let Some(c) = &self.cluster {
            st.serialize_field("cluster", c)?;
        }
        st.serialize_field("interactive", &self.interactive)?;
        st.end()
    }
}

impl serde::Serialize for ExecCredentialStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("ExecCredentialStatus", 4)?;
        if let Some(t) = self.expiration {
            st.serialize_field("expirationTimestamp", &rfc3339::format(t))?;
        }
        if let Some(t) = &self.token {
            st.serialize_field("token", t.expose_secret())?;
        }
        if let Some(c) = &self.client_certificate_data {
            st.serialize_field("clientCertificateData", c)?;
        }
        if let Some(k) = &self.client_key_data {
            st.serialize_field("clientKeyData", k.expose_secret())?;
        }
        st.end()
    }
}

impl<'de> serde::Deserialize<'de> for ExecCredential {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ExecCredential, D::Error> {
        let Obj(wire) = <Obj<WireCredential>>::deserialize(d)?;
        wire.into_credential().map_err(serde::de::Error::custom)
    }
}

impl<'de> serde::Deserialize<'de> for ExecCredentialSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ExecCredentialSpec, D::Error> {
        let Obj(wire) = <Obj<WireSpec>>::deserialize(d)?;
        Ok(wire.into_spec())
    }
}

impl<'de> serde::Deserialize<'de> for ExecCredentialStatus {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ExecCredentialStatus, D::Error> {
        let Obj(wire) = <Obj<WireStatus>>::deserialize(d)?;
        wire.into_status().map_err(serde::de::Error::custom)
    }
}

#[derive(serde::Deserialize)]
struct WireCredential {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default, rename = "apiVersion")]
    api_version: Option<String>,
    #[serde(default)]
    spec: Option<Obj<WireSpec>>,
    #[serde(default)]
    status: Option<Obj<WireStatus>>,
}

#[derive(serde::Deserialize)]
struct WireSpec {
    #[serde(default)]
    cluster: Option<Obj<Cluster>>,
    #[serde(default)]
    interactive: Option<bool>,
}

#[derive(serde::Deserialize)]
struct WireStatus {
    #[serde(default, rename = "expirationTimestamp")]
    expiration_timestamp: Option<String>,
    #[serde(default)]
    token: Option<SecretString>,
    #[serde(default, rename = "clientCertificateData")]
    client_certificate_data: Option<String>,
    #[serde(default, rename = "clientKeyData")]
    client_key_data: Option<SecretString>,
}

/// A string field that must never appear in an error message.
struct SecretString(zeroize::Zeroizing<String>);

impl<'de> serde::Deserialize<'de> for SecretString {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SecretString, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = SecretString;
            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SecretString, E> {
                Ok(SecretString(zeroize::Zeroizing::new(v.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<SecretString, E> {
                Ok(SecretString(zeroize::Zeroizing::new(v)))
            }
        }
        d.deserialize_string(V)
    }
}

impl WireCredential {
    fn into_credential(self) -> Result<ExecCredential, Error> {
        if self.kind.as_deref() != Some(KIND) {
            return Err(Error::WrongKind);
        }
        let api_version: ApiVersion = self
            .api_version
            .as_deref()
            .ok_or(Error::MissingApiVersion)?
            .parse()
            .map_err(|_| Error::UnsupportedApiVersion)?;
        let spec = self.spec.map(|Obj(s)| s.into_spec()).unwrap_or_default();
        let status = match self.status {
            Some(Obj(s)) => Some(s.into_status()?),
            None => None,
        };
        Ok(ExecCredential {
            api_version,
            spec,
            status,
        })
    }
}

impl WireSpec {
    fn into_spec(self) -> ExecCredentialSpec {
        ExecCredentialSpec {
            cluster: self.cluster.map(|Obj(c)| c),
            interactive: self.interactive.unwrap_or(false),
        }
    }
}

impl WireStatus {
    fn into_status(self) -> Result<ExecCredentialStatus, Error> {
        let expiration = match self.expiration_timestamp {
            None => None,
            Some(s) => {
                let (secs, nanos) =
                    rfc3339::parse_unix(&s).map_err(|e| Error::InvalidExpiration {
                        reason: e.to_string(),
                    })?;
                if secs == rfc3339::GO_ZERO_UNIX && nanos == 0 {
                    None
                } else {
                    Some(rfc3339::to_system_time(secs, nanos).map_err(|e| {
                        Error::InvalidExpiration {
                            reason: e.to_string(),
                        }
                    })?)
                }
            }
        };
        Ok(ExecCredentialStatus {
            expiration,
            token: self
                .token
                .filter(|t| !t.0.is_empty())
                .map(|t| Token::new(t.0.to_string())),
            client_certificate_data: self.client_certificate_data.filter(|c| !c.is_empty()),
            client_key_data: self
                .client_key_data
                .filter(|k| !k.0.is_empty())
                .map(|k| ClientKey::new(k.0.to_string())),
        })
    }
}

fn decode_json(bytes: &[u8]) -> Result<ExecCredential, Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let result = <Obj<WireCredential> as serde::Deserialize>::deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
    match result {
        Ok(Obj(wire)) => wire.into_credential(),
        Err(e) => Err(Error::Decode(sanitize_json_error(&e))),
    }
}

fn decode_yaml(bytes: &[u8]) -> Result<ExecCredential, Error> {
    let text = core::str::from_utf8(bytes).map_err(|e| {
        Error::Decode(DecodeError {
            format: "YAML",
            line: 0,
            column: 0,
            reason: format!("not UTF-8 after byte {}", e.valid_up_to()),
        })
    })?;
    if text.starts_with('\u{feff}') {
        return Err(Error::Decode(DecodeError {
            format: "YAML",
            line: 1,
            column: 1,
            reason: "byte-order mark".to_owned(),
        }));
    }
    if has_second_document(text) {
        return Err(Error::Decode(DecodeError {
            format: "YAML",
            line: 0,
            column: 0,
            reason: "more than one document".to_owned(),
        }));
    }
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_reader_input_bytes: Some(MAX_PLUGIN_OUTPUT_BYTES),
            max_depth: 32,
            max_nodes: 10_000,
            max_events: 40_000,
            max_aliases: 0,
            max_anchors: 0,
            max_documents: 1,
            max_merge_keys: 0,
        },
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
        with_snippet: false,
    };
    // client-go turns YAML into JSON and decodes that, so a value's type is judged as in JSON
    // output: `token: 123456789123` is a number, and a number is not a token. Duplicate keys
    // are refused (see the options above) before the conversion could pick one.
    // Output that is not an object at all (a plugin that printed a message, or nothing) is
    // named as such rather than as a YAML problem: most plugins print JSON.
    let not_an_object = |reason: &str| {
        Error::Decode(DecodeError {
            format: "JSON or YAML",
            line: 0,
            column: 0,
            reason: reason.to_owned(),
        })
    };
    if text.trim().is_empty() {
        return Err(not_an_object(
            "the plugin printed nothing on standard output (expected an ExecCredential object)",
        ));
    }
    let value = match serde_saphyr::from_str_with_options::<serde_json::Value>(text, options) {
        Ok(value @ serde_json::Value::Object(_)) => value,
        // The YAML error text quotes the input (source snippets); keep none of it.
        Ok(_) | Err(_) => {
            return Err(not_an_object(
                "the plugin printed text that is not an ExecCredential object (a JSON object, \
                 `{\"apiVersion\": ..., \"kind\": \"ExecCredential\", ...}`)",
            ));
        }
    };
    match serde_json::from_value::<Obj<WireCredential>>(value) {
        Ok(Obj(wire)) => wire.into_credential(),
        Err(e) => Err(Error::Decode(DecodeError {
            format: "YAML",
            line: 0,
            column: 0,
            ..sanitize_json_error(&e)
        })),
    }
}

/// True when the text holds more than one YAML document: a `---` marker after content, or
/// content after a `...` end marker (markers are recognised at column 0).
fn has_second_document(text: &str) -> bool {
    let is_marker = |line: &str, m: &str| {
        line.strip_prefix(m)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r']))
    };
    let mut seen_content = false;
    let mut ended = false;
    for line in text.lines() {
        if is_marker(line, "---") {
            if seen_content || ended {
                return true;
            }
            continue;
        }
        if is_marker(line, "...") {
            ended = true;
            continue;
        }
        let t = line.trim();
        if !t.is_empty() && !t.starts_with('#') && !line.starts_with('%') {
            if ended {
                return true;
            }
            seen_content = true;
        }
    }
    false
}

/// Go's `encoding/json` escapes `<`, `>`, `&`, U+2028 and U+2029 inside strings. None of these
/// characters can appear outside a string in JSON, so replacing them everywhere is exact.
fn go_escape(json: String) -> String {
    if !json.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return json;
    }
    let mut out = String::with_capacity(json.len().saturating_add(16));
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}
