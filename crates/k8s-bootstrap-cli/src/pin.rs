//! `pin <ca.pem>`: the sha256 public-key pin of each CA certificate.

use std::io::Read as _;

use k8s_bootstrap::clusterinfo::{CaBundle, MAX_BUNDLE_BYTES};

use crate::args::PinArgs;
use crate::error::CliError;

pub(crate) fn run(args: &PinArgs) -> Result<(), CliError> {
    let read_err = |source| CliError::Read {
        path: args.ca.clone(),
        source,
    };
    let file = std::fs::File::open(&args.ca).map_err(read_err)?;
    let mut pem = Vec::new();
    let limit = u64::try_from(MAX_BUNDLE_BYTES)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    file.take(limit).read_to_end(&mut pem).map_err(read_err)?;
    let bundle = CaBundle::from_pem(&pem).map_err(|source| CliError::Certificates {
        path: args.ca.clone(),
        source,
    })?;
    let mut out = String::new();
    for (index, (pin, is_ca)) in bundle.pins().zip(bundle.ca_flags()).enumerate() {
        if !is_ca {
            // The pin is printed all the same (stdout stays one pin per certificate).
            eprintln!(
                "warning: {path}: certificate {n} is not a CA (no basicConstraints CA:TRUE): \
                 its pin {pin} is not a cluster CA's, which is what \
                 --discovery-token-ca-cert-hash pins (kubeadm pins the CA, e.g. \
                 /etc/kubernetes/pki/ca.crt)",
                path = args.ca.display(),
                n = index.saturating_add(1),
            );
        }
        out.push_str(&format!("{pin}\n"));
    }
    crate::output::print(&out)
}
