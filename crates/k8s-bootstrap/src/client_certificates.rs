//! The certificate chain a TLS client presented, as a request extension: put there by the
//! server that terminated TLS (the forward proxy does), read by whatever authenticates the
//! request afterwards (the delegated-auth layer's x509 and front-proxy authenticators).

use std::sync::Arc;

/// The certificate chain a client presented in its TLS handshake (DER: its certificate first,
/// then any intermediates it sent), in the extensions of each request of that connection.
///
/// The forward proxy inserts it when it verifies client certificates; any other TLS server can
/// insert one built with [`ClientCertificates::from_der_chain`] (with tokio-rustls, from
/// `ServerConnection::peer_certificates`). Holding one proves nothing by itself: whoever
/// authenticates with it verifies the chain against its own CA.
#[derive(Clone)]
pub struct ClientCertificates(Arc<[Vec<u8>]>);

impl ClientCertificates {
    /// The chain from its certificates, DER, the client's own first.
    pub fn from_der_chain<I, C>(chain: I) -> ClientCertificates
    where
        I: IntoIterator<Item = C>,
        C: Into<Vec<u8>>,
    {
        ClientCertificates(chain.into_iter().map(Into::into).collect())
    }

    /// The client's certificate, DER.
    #[must_use]
    pub fn leaf_der(&self) -> Option<&[u8]> {
        self.0.first().map(Vec::as_slice)
    }

    /// The chain as the client sent it (its certificate, then intermediates), DER.
    pub fn chain_der(&self) -> impl Iterator<Item = &[u8]> {
        self.0.iter().map(Vec::as_slice)
    }

    /// The chain as a slice of DER certificates, as `delegated_auth`'s verifiers take it.
    #[must_use]
    pub fn as_slice(&self) -> &[Vec<u8>] {
        &self.0
    }

    /// Whether the client presented no certificate.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for ClientCertificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCertificates")
            .field("certificates", &self.0.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_chain_in_order_and_debug_shows_only_its_length() {
        let c = ClientCertificates::from_der_chain([vec![1_u8, 2], vec![3]]);
        assert_eq!(c.leaf_der(), Some(&[1_u8, 2][..]));
        assert_eq!(
            c.chain_der().collect::<Vec<_>>(),
            [&[1_u8, 2][..], &[3][..]]
        );
        assert_eq!(c.as_slice().len(), 2);
        assert!(!c.is_empty());
        assert_eq!(format!("{c:?}"), "ClientCertificates { certificates: 2 }");
        assert!(ClientCertificates::from_der_chain(Vec::<Vec<u8>>::new()).is_empty());
    }
}
