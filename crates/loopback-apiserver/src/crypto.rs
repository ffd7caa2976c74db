//! rustls's crypto provider, as the crate's `ring` / `aws-lc-rs` features select it.

/// The crypto provider the crate's feature selects (`aws-lc-rs` wins over `ring`, as in kube),
/// else the process default that the application installed, if any.
pub(crate) fn provider() -> Option<rustls::crypto::CryptoProvider> {
    #[cfg(feature = "aws-lc-rs")]
    {
        Some(rustls::crypto::aws_lc_rs::default_provider())
    }
    #[cfg(all(feature = "ring", not(feature = "aws-lc-rs")))]
    {
        Some(rustls::crypto::ring::default_provider())
    }
    #[cfg(not(any(feature = "ring", feature = "aws-lc-rs")))]
    {
        rustls::crypto::CryptoProvider::get_default().map(|p| (**p).clone())
    }
}
