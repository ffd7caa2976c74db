//! The kubelet's kubeconfig after the TLS bootstrap.

use base64::Engine as _;
use zeroize::Zeroizing;

use crate::accept::IssuedCertificate;
use crate::error::Error;
use crate::key::NodeKey;

/// The cluster entry's name in the kubelet's kubeconfig.
pub const KUBELET_CLUSTER: &str = "default-cluster";
/// The user entry's name in the kubelet's kubeconfig.
pub const KUBELET_USER: &str = "default-auth";
/// The context's name in the kubelet's kubeconfig.
pub const KUBELET_CONTEXT: &str = "default-context";
/// Where the kubelet keeps its client certificate and key by default.
pub const KUBELET_CLIENT_PEM: &str = "/var/lib/kubelet/pki/kubelet-client-current.pem";

/// The kubeconfig the kubelet writes once bootstrapped: cluster `default-cluster` (`server`,
/// the CA inline), user `default-auth` whose `client-certificate` and `client-key` both name
/// `client_pem_path` (the file [`IssuedCertificate::to_kubelet_pem`] fills), context
/// `default-context` with namespace `default`. Holds no secret; write it with mode 0600 as the
/// kubelet does.
///
/// # Errors
///
/// [`Error::InvalidKubeconfig`] if `server` is not an `https://` URL or a value contains a
/// control character.
pub fn kubelet_kubeconfig(
    server: &str,
    ca_pem: &str,
    client_pem_path: &str,
) -> Result<String, Error> {
    let user = format!(
        "    client-certificate: {p}\n    client-key: {p}\n",
        p = quote(client_pem_path)?
    );
    Ok(document(server, ca_pem, &user)?.to_string())
}

/// The same kubeconfig with the certificate and key inline (`client-certificate-data`,
/// `client-key-data`), for tools that carry one file. It holds the private key: the buffer is
/// zeroed on drop.
///
/// # Errors
///
/// As [`kubelet_kubeconfig`], and [`NodeKey::to_pem`]'s.
pub fn kubelet_kubeconfig_inline(
    server: &str,
    ca_pem: &str,
    certificate: &IssuedCertificate,
    key: &NodeKey,
) -> Result<Zeroizing<String>, Error> {
    let b64 = |d: &[u8]| base64::engine::general_purpose::STANDARD.encode(d);
    let key_pem = key.to_pem()?;
    let key_b64 = Zeroizing::new(b64(key_pem.as_bytes()));
    let mut user = Zeroizing::new(String::new());
    user.push_str("    client-certificate-data: ");
    user.push_str(&b64(certificate.to_pem().as_bytes()));
    user.push_str("\n    client-key-data: ");
    user.push_str(&key_b64);
    user.push('\n');
    document(server, ca_pem, &user)
}

fn document(server: &str, ca_pem: &str, user: &str) -> Result<Zeroizing<String>, Error> {
    if !server.starts_with("https://") {
        return Err(Error::InvalidKubeconfig {
            reason: "the server must be an https:// URL",
        });
    }
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem.as_bytes());
    let mut out = Zeroizing::new(String::with_capacity(
        ca.len().saturating_add(user.len()).saturating_add(512),
    ));
    out.push_str("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: ");
    out.push_str(&ca);
    out.push_str("\n    server: ");
    out.push_str(&quote(server)?);
    out.push_str(&format!(
        "\n  name: {KUBELET_CLUSTER}\ncontexts:\n- context:\n    cluster: {KUBELET_CLUSTER}\n    namespace: default\n    user: {KUBELET_USER}\n  name: {KUBELET_CONTEXT}\ncurrent-context: {KUBELET_CONTEXT}\nkind: Config\npreferences: {{}}\nusers:\n- name: {KUBELET_USER}\n  user:\n"
    ));
    out.push_str(user);
    Ok(out)
}

/// A YAML double-quoted scalar (JSON string syntax is valid YAML), refusing control
/// characters.
fn quote(value: &str) -> Result<String, Error> {
    if value.chars().any(char::is_control) {
        return Err(Error::InvalidKubeconfig {
            reason: "a value contains a control character",
        });
    }
    serde_json::to_string(value).map_err(|_| Error::InvalidKubeconfig {
        reason: "couldn't quote a value",
    })
}
