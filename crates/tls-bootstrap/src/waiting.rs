//! What a request that has not ended the wait is waiting for: an approval, or a signer to
//! issue the certificate of an approved request (and who that signer is).

use std::fmt;

use crate::object::{CertificateSigningRequest, State};

/// The signer names kube-controller-manager's `csrsigning` controller issues for
/// (`pkg/controller/certificates/signer`: one signing controller per name).
const KUBE_CONTROLLER_MANAGER_SIGNERS: [&str; 4] = [
    "kubernetes.io/kube-apiserver-client",
    "kubernetes.io/kube-apiserver-client-kubelet",
    "kubernetes.io/kubelet-serving",
    "kubernetes.io/legacy-unknown",
];

/// The domain Kubernetes reserves for its own signer names.
const KUBERNETES_SIGNER_DOMAIN: &str = "kubernetes.io/";

/// What a request that is neither issued nor denied nor failed waits for
/// ([`CertificateSigningRequest::waiting`]): what a client reports while it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Waiting<'a> {
    /// No `Approved` condition yet: an approver (kube-controller-manager's `csrapproving`
    /// controller, for a node's client certificate) or an administrator (`kubectl certificate
    /// approve <name>`) has to approve it.
    Approval,
    /// Approved, without a certificate: the signer named `signer_name` has to issue it. An
    /// approved request that stays here has no signer issuing for its name.
    Issuance {
        /// `spec.signerName`.
        signer_name: &'a str,
        /// Who issues certificates for that name.
        issuer: Issuer,
    },
}

/// Who issues the certificates of approved requests for a signer name
/// ([`Issuer::for_signer_name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Issuer {
    /// kube-controller-manager's `csrsigning` controller (`kubernetes.io/kube-apiserver-client`,
    /// `kubernetes.io/kube-apiserver-client-kubelet`, `kubernetes.io/kubelet-serving`,
    /// `kubernetes.io/legacy-unknown`). It runs only when kube-controller-manager is given a
    /// signing CA (`--cluster-signing-cert-file` and `--cluster-signing-key-file`, or the
    /// per-signer flags), as kubeadm configures it.
    KubeControllerManager,
    /// Another name in the `kubernetes.io/` domain, which Kubernetes reserves: no signer in
    /// Kubernetes issues for it, so its requests are never issued.
    Nobody,
    /// A name outside `kubernetes.io/`: a signer the cluster's operators run (a controller
    /// that watches requests for this name) issues it, if one runs.
    External,
}

impl Issuer {
    /// Who issues for `signer_name`.
    ///
    /// ```
    /// use tls_bootstrap::{Issuer, KUBELET_CLIENT_SIGNER};
    ///
    /// assert_eq!(Issuer::for_signer_name(KUBELET_CLIENT_SIGNER), Issuer::KubeControllerManager);
    /// assert_eq!(Issuer::for_signer_name("kubernetes.io/nobody"), Issuer::Nobody);
    /// assert_eq!(Issuer::for_signer_name("example.com/signer"), Issuer::External);
    /// ```
    pub fn for_signer_name(signer_name: &str) -> Issuer {
        if KUBE_CONTROLLER_MANAGER_SIGNERS.contains(&signer_name) {
            Issuer::KubeControllerManager
        } else if signer_name.starts_with(KUBERNETES_SIGNER_DOMAIN) {
            Issuer::Nobody
        } else {
            Issuer::External
        }
    }
}

/// Who issues, and what must hold for it to: the end of a progress line such as "approved,
/// waiting for signer X to issue the certificate: ...".
impl fmt::Display for Issuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Issuer::KubeControllerManager => {
                "kube-controller-manager's csrsigning controller issues it, and runs only with \
                 --cluster-signing-cert-file and --cluster-signing-key-file"
            }
            Issuer::Nobody => "no signer in Kubernetes issues for this kubernetes.io/ name",
            Issuer::External => {
                "a signer outside Kubernetes issues it, if a controller for this name runs"
            }
        })
    }
}

impl CertificateSigningRequest {
    /// What the request waits for, read from [`state`](CertificateSigningRequest::state):
    /// [`Waiting::Approval`] while pending, [`Waiting::Issuance`] (with `spec.signerName` and
    /// its [`Issuer`]) once approved without a certificate; `None` once the wait is over
    /// (issued, denied or failed).
    pub fn waiting(&self) -> Option<Waiting<'_>> {
        match self.state() {
            State::Pending => Some(Waiting::Approval),
            State::Approved => Some(Waiting::Issuance {
                signer_name: &self.spec.signer_name,
                issuer: Issuer::for_signer_name(&self.spec.signer_name),
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Issuer, Waiting};
    use crate::{CertificateSigningRequest, Condition, KUBELET_CLIENT_SIGNER};

    fn csr(
        signer: &str,
        conditions: &[(&str, &str)],
        certificate: Option<&[u8]>,
    ) -> CertificateSigningRequest {
        let mut builder = CertificateSigningRequest::builder(b"request".to_vec(), signer);
        for (kind, status) in conditions {
            builder =
                builder.condition(Condition::new(kind, "Reason", "message").with_status(status));
        }
        if let Some(pem) = certificate {
            builder = builder.certificate(pem);
        }
        builder.build()
    }

    /// Each status a request can have while a client waits, and what the wait is for.
    #[test]
    fn what_a_request_waits_for() {
        let kcm = Some(Waiting::Issuance {
            signer_name: KUBELET_CLIENT_SIGNER,
            issuer: Issuer::KubeControllerManager,
        });
        let pem: Option<&[u8]> = Some(b"pem");
        for (conditions, certificate, expected) in [
            (&[][..], None, Some(Waiting::Approval)),
            // A condition of another type does not approve.
            (&[("Pending", "True")][..], None, Some(Waiting::Approval)),
            (&[("Approved", "True")][..], None, kcm),
            // As client-go reads it: approved whatever the condition's status.
            (&[("Approved", "False")][..], None, kcm),
            // An empty certificate is no certificate.
            (&[("Approved", "True")][..], Some(&b""[..]), kcm),
            (&[("Approved", "True")][..], pem, None),
            // A certificate without approval: still pending (only an approved one is issued).
            (&[][..], pem, Some(Waiting::Approval)),
            (&[("Denied", "True")][..], None, None),
            (&[("Approved", "True"), ("Denied", "True")][..], None, None),
            (&[("Approved", "True"), ("Failed", "True")][..], None, None),
            // Denied or failed whatever the status, as client-go reads them.
            (&[("Approved", "True"), ("Failed", "False")][..], None, None),
        ] {
            let csr = csr(KUBELET_CLIENT_SIGNER, conditions, certificate);
            assert_eq!(csr.waiting(), expected, "{conditions:?} {certificate:?}");
        }
    }

    #[test]
    fn an_approved_request_names_its_signer_and_who_issues_for_it() {
        for (signer, issuer) in [
            (
                "kubernetes.io/kube-apiserver-client",
                Issuer::KubeControllerManager,
            ),
            (
                "kubernetes.io/kube-apiserver-client-kubelet",
                Issuer::KubeControllerManager,
            ),
            (
                "kubernetes.io/kubelet-serving",
                Issuer::KubeControllerManager,
            ),
            (
                "kubernetes.io/legacy-unknown",
                Issuer::KubeControllerManager,
            ),
            (
                "kubernetes.io/kube-apiserver-client-kubelets",
                Issuer::Nobody,
            ),
            ("kubernetes.io/", Issuer::Nobody),
            ("example.com/kubelet", Issuer::External),
            ("kubernetes.io.example.com/x", Issuer::External),
            ("Kubernetes.io/kubelet-serving", Issuer::External),
        ] {
            let approved = csr(signer, &[("Approved", "True")], None);
            assert_eq!(
                approved.waiting(),
                Some(Waiting::Issuance {
                    signer_name: signer,
                    issuer
                }),
                "{signer}"
            );
        }
    }

    #[test]
    fn the_issuer_says_who_issues_and_what_it_needs() {
        assert_eq!(
            Issuer::KubeControllerManager.to_string(),
            "kube-controller-manager's csrsigning controller issues it, and runs only with \
             --cluster-signing-cert-file and --cluster-signing-key-file"
        );
        assert!(
            Issuer::Nobody
                .to_string()
                .contains("no signer in Kubernetes")
        );
        assert!(Issuer::External.to_string().contains("outside Kubernetes"));
    }
}
