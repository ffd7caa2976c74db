//! The `client.authentication.k8s.io` versions.

use core::fmt;
use core::str::FromStr;

use crate::error::{Error, bounded};

/// The API group of `ExecCredential`.
pub const GROUP: &str = "client.authentication.k8s.io";

/// The kind of the object exchanged with plugins.
pub const KIND: &str = "ExecCredential";

/// A `client.authentication.k8s.io` version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ApiVersion {
    /// `client.authentication.k8s.io/v1`: the current version. `interactiveMode` is required.
    V1,
    /// `client.authentication.k8s.io/v1beta1`: still accepted; `interactiveMode` defaults to
    /// `IfAvailable`.
    V1Beta1,
    /// `client.authentication.k8s.io/v1alpha1`: removed from client-go in Kubernetes 1.24.
    /// Old plugins' output can still be read (see [`ApiVersion::is_deprecated`]), but an
    /// [`ExecConfig`](crate::ExecConfig) cannot use it.
    V1Alpha1,
}

impl ApiVersion {
    /// The full `apiVersion` string, e.g. `client.authentication.k8s.io/v1`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V1 => "client.authentication.k8s.io/v1",
            ApiVersion::V1Beta1 => "client.authentication.k8s.io/v1beta1",
            ApiVersion::V1Alpha1 => "client.authentication.k8s.io/v1alpha1",
        }
    }

    /// True for versions current clients no longer accept (`v1alpha1`).
    #[must_use]
    pub const fn is_deprecated(self) -> bool {
        matches!(self, ApiVersion::V1Alpha1)
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ApiVersion {
    type Err = Error;

    /// Parses the exact `apiVersion` string (case-sensitive, no trimming).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidApiVersion`] for anything else.
    fn from_str(s: &str) -> Result<ApiVersion, Error> {
        match s {
            "client.authentication.k8s.io/v1" => Ok(ApiVersion::V1),
            "client.authentication.k8s.io/v1beta1" => Ok(ApiVersion::V1Beta1),
            "client.authentication.k8s.io/v1alpha1" => Ok(ApiVersion::V1Alpha1),
            other => Err(Error::InvalidApiVersion(bounded(other, 100))),
        }
    }
}

impl serde::Serialize for ApiVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for ApiVersion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ApiVersion, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejects() {
        for v in [ApiVersion::V1, ApiVersion::V1Beta1, ApiVersion::V1Alpha1] {
            assert_eq!(v.as_str().parse::<ApiVersion>().unwrap(), v);
        }
        for bad in [
            "client.authentication.k8s.io/v2",
            "client.authentication.k8s.io/V1",
            " client.authentication.k8s.io/v1",
            "v1",
            "",
        ] {
            assert!(matches!(
                bad.parse::<ApiVersion>(),
                Err(Error::InvalidApiVersion(_))
            ));
        }
    }
}
