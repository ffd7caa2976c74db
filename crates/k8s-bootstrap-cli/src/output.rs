//! Printing: stdout writes that report a closed pipe as an error, and kubeadm's
//! `output.kubeadm.k8s.io/v1alpha3` `BootstrapToken` object as JSON or YAML.

use std::io::Write as _;

use k8s_bootstrap::bootstrap_token::KubeadmToken;
use serde::{Deserialize, Serialize};

use crate::args::OutputFormat;
use crate::error::CliError;

/// Writes `text` to stdout.
pub(crate) fn print(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| CliError::Output(e.to_string()))
}

/// The fields of kubeadm's JSON for a token, read back from [`KubeadmToken::to_json`].
#[derive(Deserialize, Serialize)]
struct Fields {
    token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ttl: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usages: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    groups: Option<Vec<String>>,
}

/// kubeadm's output object: type meta, then the token's fields (full token included, as kubeadm
/// prints it).
#[derive(Serialize)]
struct OutputToken {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    #[serde(flatten)]
    fields: Fields,
}

fn output_object(token: &KubeadmToken) -> Result<OutputToken, CliError> {
    let json = token
        .to_json()
        .map_err(|e| CliError::Output(e.to_string()))?;
    let fields: Fields =
        serde_json::from_str(&json).map_err(|e| CliError::Output(e.to_string()))?;
    Ok(OutputToken {
        kind: "BootstrapToken",
        api_version: "output.kubeadm.k8s.io/v1alpha3",
        fields,
    })
}

/// The tokens in `format` (JSON: one indented object per token; YAML: one document per token).
/// `Text` is not handled here.
pub(crate) fn tokens(format: OutputFormat, tokens: &[KubeadmToken]) -> Result<String, CliError> {
    let mut out = String::new();
    for (i, t) in tokens.iter().enumerate() {
        let object = output_object(t)?;
        match format {
            OutputFormat::Json => {
                let s = serde_json::to_string_pretty(&object)
                    .map_err(|e| CliError::Output(e.to_string()))?;
                out.push_str(&s);
                out.push('\n');
            }
            OutputFormat::Yaml | OutputFormat::Text => {
                if i > 0 {
                    out.push_str("---\n");
                }
                let value =
                    serde_json::to_value(&object).map_err(|e| CliError::Output(e.to_string()))?;
                out.push_str(&yaml(&value));
            }
        }
    }
    Ok(out)
}

/// A flat object as YAML, in the struct's field order; strings are double-quoted JSON strings
/// (valid YAML), lists are block sequences.
fn yaml(value: &serde_json::Value) -> String {
    let order = [
        "apiVersion",
        "kind",
        "token",
        "description",
        "ttl",
        "expires",
        "usages",
        "groups",
    ];
    let mut out = String::new();
    for key in order {
        let Some(v) = value.get(key) else { continue };
        match v {
            serde_json::Value::Array(items) => {
                out.push_str(&format!("{key}:\n"));
                for item in items {
                    out.push_str(&format!("- {item}\n"));
                }
            }
            other => out.push_str(&format!("{key}: {other}\n")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_yaml() {
        let kt =
            KubeadmToken::new(Some("abcdef.0123456789abcdef".parse().unwrap())).with_defaults();
        let json = tokens(OutputFormat::Json, std::slice::from_ref(&kt)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["kind"], "BootstrapToken");
        assert_eq!(v["token"], "abcdef.0123456789abcdef");
        assert_eq!(v["ttl"], "24h0m0s");
        let yaml = tokens(OutputFormat::Yaml, &[kt.clone(), kt]).unwrap();
        assert!(yaml.starts_with("apiVersion: \"output.kubeadm.k8s.io/v1alpha3\"\nkind: \"BootstrapToken\"\ntoken: \"abcdef.0123456789abcdef\"\nttl: \"24h0m0s\"\nusages:\n- \"signing\"\n- \"authentication\"\n"));
        assert_eq!(yaml.matches("---\n").count(), 1);
    }
}
