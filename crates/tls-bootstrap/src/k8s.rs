//! `CertificateSigningRequest` to and from k8s-openapi 0.29's type.

use k8s_openapi::api::certificates::v1 as api;

use crate::error::Error;
use crate::object::CertificateSigningRequest;

impl TryFrom<&CertificateSigningRequest> for api::CertificateSigningRequest {
    type Error = Error;

    /// Through JSON, so every field carries over.
    fn try_from(csr: &CertificateSigningRequest) -> Result<Self, Error> {
        let json = csr.to_json()?;
        serde_json::from_slice(&json).map_err(|e| Error::Json {
            line: e.line(),
            column: e.column(),
        })
    }
}

impl TryFrom<&api::CertificateSigningRequest> for CertificateSigningRequest {
    type Error = Error;

    /// Through JSON, with [`CertificateSigningRequest::from_json`]'s checks and limits.
    fn try_from(csr: &api::CertificateSigningRequest) -> Result<Self, Error> {
        let json = serde_json::to_vec(csr).map_err(|_| Error::InvalidObject {
            field: "object",
            reason: "couldn't serialise",
        })?;
        CertificateSigningRequest::from_json(&json)
    }
}
