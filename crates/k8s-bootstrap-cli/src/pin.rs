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
    for pin in bundle.pins() {
        out.push_str(&format!("{pin}\n"));
    }
    crate::output::print(&out)
}
