//! The node's certificate files, in the kubelet's layout (client-go's certificate file store,
//! `k8s.io/client-go/util/certificate`).
//!
//! What client-go does: each new pair (certificate chain, then key) goes to
//! `<dir>/<pair>-<YYYY-MM-DD-HH-MM-SS>.pem`, and `<dir>/<pair>-current.pem` is a symbolic link
//! to the newest; the pair in use is read from that link, else from the configured certificate
//! and key files, else from `<dir>/<pair>.crt` and `<dir>/<pair>.key`; rotated-out pair files
//! are kept. client-go makes the new link as `<pair>-updated.pem`, removes the old link, then
//! renames, and truncates a pair file of the same second.
//!
//! What we do differently: the link is renamed over the old one in one step (never a moment
//! without `-current.pem`), and the directory is synced after; pair files are written whole
//! (temporary file, fsync, rename) with mode 0600 and never over an existing file; the
//! directory is created 0700 if missing; a `-current.pem` that is not a symbolic link (a file
//! someone put there) is read but never replaced, and an update says so before writing
//! anything; a link that points outside the directory is refused. The timestamp is UTC (the
//! kubelet uses local time). Nothing is ever deleted but client-go's own `-updated.pem` link.
//!
//! ```no_run
//! # fn main() -> Result<(), k8s_bootstrap::node_certificates::Error> {
//! use k8s_bootstrap::node_certificates::CertificateStore;
//! let store = CertificateStore::new("kubelet-client", "/var/lib/kubelet/pki")?;
//! if let Some(pair) = store.load()? {
//!     println!("using {}", pair.path().display());
//! }
//! # Ok(()) }
//! ```

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use tls_bootstrap::NodeKey;
use tls_bootstrap::rotation::CurrentCertificate;

use crate::files::{self, Existing};

#[cfg(feature = "node-certificates-http")]
mod http;
mod manager;
mod metrics;
mod resolver;
#[cfg(feature = "node-certificates-http")]
pub use http::serve_http;
pub use manager::{
    CERTIFICATE_WAIT_TIMEOUT, CertificateKind, Clients, CurrentClientFn, Manager, ManagerError,
    Snapshot, client_for_pair,
};
pub use metrics::{
    CLIENT_RENEW_ERRORS_METRIC, CLIENT_ROTATIONS_METRIC, CLIENT_TTL_METRIC, CertificateMetrics,
    SERVER_RENEW_ERRORS_METRIC, SERVER_ROTATIONS_METRIC, SERVER_TTL_METRIC,
};
pub use resolver::{ResolverError, ServingResolver};

/// The longest pair name accepted.
pub const MAX_PAIR_NAME_LEN: usize = 64;
/// The largest pair file read, in bytes.
pub const MAX_PAIR_FILE_BYTES: u64 = 64 * 1024;

/// A failure of the certificate store, naming the path and the OS reason.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The pair name is empty, too long, starts with `.`, or has a character other than ASCII
    /// letters, digits, `-`, `_` and `.`.
    #[error("invalid certificate pair name (letters, digits, '-', '_', '.'; at most 64)")]
    InvalidPairName,
    /// A file-system operation failed.
    #[error("couldn't {action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// `<pair>-current.pem` (or client-go's `<pair>-updated.pem`) is not a symbolic link: a
    /// file the store did not write, which it leaves alone.
    #[error(
        "{} is not a symbolic link; it was left as it is: move it away so that new certificates can be installed",
        path.display()
    )]
    NotASymlink {
        /// The path.
        path: PathBuf,
    },
    /// `<pair>-current.pem` points outside the store's directory.
    #[error("{} points to {}, outside {}", path.display(), target.display(), dir.display())]
    LinkOutsideDirectory {
        /// The link.
        path: PathBuf,
        /// Where it points.
        target: PathBuf,
        /// The store's directory.
        dir: PathBuf,
    },
    /// A pair file of the same name exists already (two updates within one second).
    #[error("{} already exists; it was left as it is", path.display())]
    PairFileExists {
        /// The path.
        path: PathBuf,
    },
    /// A pair file is larger than [`MAX_PAIR_FILE_BYTES`].
    #[error("{} is {len} bytes, more than {max}", path.display())]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// Its length.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// The certificate or key is unreadable, or the certificate is not for the key.
    #[error("invalid certificate/key pair in {}: {source}", path.display())]
    InvalidPair {
        /// The file (or `<new pair>` for bytes not yet written).
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: tls_bootstrap::Error,
    },
    /// [`serve_http`] failed.
    #[cfg(feature = "node-certificates-http")]
    #[error("couldn't serve /healthz, /readyz and /metrics: {source}")]
    Serve {
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

/// The kubelet's certificate files for one pair (`kubelet-client`, `kubelet-server`) in one
/// directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateStore {
    pair: String,
    dir: PathBuf,
    files: Option<(PathBuf, PathBuf)>,
}

/// A certificate and its key, read from the store.
pub struct LoadedPair {
    path: PathBuf,
    chain_der: Vec<Vec<u8>>,
    certificate: CurrentCertificate,
    key: NodeKey,
}

impl CertificateStore {
    /// The store for `pair` in `dir` (no file is touched).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPairName`].
    pub fn new(pair: &str, dir: impl Into<PathBuf>) -> Result<CertificateStore, Error> {
        let ok = !pair.is_empty()
            && pair.len() <= MAX_PAIR_NAME_LEN
            && !pair.starts_with('.')
            && pair
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !ok {
            return Err(Error::InvalidPairName);
        }
        Ok(CertificateStore {
            pair: pair.to_owned(),
            dir: dir.into(),
            files: None,
        })
    }

    /// The store, also reading the pair from `cert_file` and `key_file` when there is no
    /// `-current.pem` (the kubelet's `--tls-cert-file`/`--tls-private-key-file`, or its
    /// kubeconfig's client certificate and key).
    #[must_use]
    pub fn with_files(
        mut self,
        cert_file: impl Into<PathBuf>,
        key_file: impl Into<PathBuf>,
    ) -> CertificateStore {
        self.files = Some((cert_file.into(), key_file.into()));
        self
    }

    /// `<dir>/<pair>-current.pem`.
    #[must_use]
    pub fn current_path(&self) -> PathBuf {
        self.dir.join(format!("{}-current.pem", self.pair))
    }

    fn updated_path(&self) -> PathBuf {
        self.dir.join(format!("{}-updated.pem", self.pair))
    }

    /// The pair in use, in client-go's order: `-current.pem` (its target), else the configured
    /// files, else `<dir>/<pair>.crt` and `<dir>/<pair>.key`; `None` when none exists (a
    /// dangling `-current.pem` link counts as none, as client-go's `os.Stat` finds). First
    /// finishes an update client-go left half done (a `-updated.pem` link and no
    /// `-current.pem`: the link is renamed into place). Blocking; the files are small.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] naming the path; [`Error::LinkOutsideDirectory`]; [`Error::NotASymlink`]
    /// for a `-updated.pem` that is a file; [`Error::TooLarge`]; [`Error::InvalidPair`] when
    /// the file found does not hold a certificate and its key.
    pub fn load(&self) -> Result<Option<LoadedPair>, Error> {
        self.recover()?;
        let current = self.current_path();
        match std::fs::symlink_metadata(&current) {
            Ok(meta) => {
                if meta.file_type().is_symlink() {
                    self.check_link(&current)?;
                }
                if exists(&current)? {
                    let bytes = read(&current)?;
                    return parse_pair(&current, &bytes, &bytes).map(Some);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error("read", &current, e)),
        }
        let fallback = [
            self.files.clone(),
            Some((
                self.dir.join(format!("{}.crt", self.pair)),
                self.dir.join(format!("{}.key", self.pair)),
            )),
        ];
        for (cert, key) in fallback.into_iter().flatten() {
            if exists(&cert)? && exists(&key)? {
                let cert_bytes = read(&cert)?;
                let key_bytes = read(&key)?;
                return parse_pair(&cert, &cert_bytes, &key_bytes).map(Some);
            }
        }
        Ok(None)
    }

    /// Installs a new pair: `pair_pem` (the certificate chain then the key, as
    /// `IssuedCertificate::to_kubelet_pem` writes it) is checked, written whole to
    /// `<dir>/<pair>-<YYYY-MM-DD-HH-MM-SS>.pem` (UTC, from `now`) with mode 0600, and
    /// `-current.pem` is pointed at it in one rename. The directory is created (0700) if
    /// missing. Returns the new file's path. Blocking.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPair`] before anything is written; [`Error::NotASymlink`] when
    /// `-current.pem` or `-updated.pem` is a file (nothing is written);
    /// [`Error::PairFileExists`]; [`Error::Io`] naming the path.
    pub fn update(&self, pair_pem: &[u8], now: SystemTime) -> Result<PathBuf, Error> {
        parse_pair(Path::new("<new pair>"), pair_pem, pair_pem)?;
        let current = self.current_path();
        let updated = self.updated_path();
        for link in [&current, &updated] {
            match std::fs::symlink_metadata(link) {
                Ok(meta) if !meta.file_type().is_symlink() => {
                    return Err(Error::NotASymlink { path: link.clone() });
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error("inspect", link, e)),
            }
        }
        create_dir(&self.dir)?;
        let stamp: String = tls_bootstrap::rfc3339(now)
            .chars()
            .filter(|c| *c != 'Z')
            .map(|c| if c == 'T' || c == ':' { '-' } else { c })
            .collect();
        let file = self.dir.join(format!("{}-{stamp}.pem", self.pair));
        files::write_private(&file, pair_pem, Existing::Refuse).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                Error::PairFileExists { path: file.clone() }
            } else {
                io_error("write", &file, e)
            }
        })?;
        let target = std::path::absolute(&file).map_err(|e| io_error("resolve", &file, e))?;
        // client-go's temporary link name; a leftover link of that name is its own.
        match std::fs::remove_file(&updated) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error("remove", &updated, e)),
        }
        symlink(&target, &updated).map_err(|e| io_error("create the link", &updated, e))?;
        std::fs::rename(&updated, &current).map_err(|e| io_error("rename into", &current, e))?;
        sync_dir(&self.dir)?;
        Ok(file)
    }

    fn recover(&self) -> Result<(), Error> {
        let current = self.current_path();
        match std::fs::symlink_metadata(&current) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error("inspect", &current, e)),
        }
        let updated = self.updated_path();
        match std::fs::symlink_metadata(&updated) {
            Ok(meta) if meta.file_type().is_symlink() => std::fs::rename(&updated, &current)
                .map_err(|e| io_error("rename into", &current, e)),
            Ok(_) => Err(Error::NotASymlink { path: updated }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_error("inspect", &updated, e)),
        }
    }

    /// A link must name a file directly in the store's directory.
    fn check_link(&self, link: &Path) -> Result<(), Error> {
        let target = std::fs::read_link(link).map_err(|e| io_error("read the link", link, e))?;
        let joined = if target.is_absolute() {
            target.clone()
        } else {
            self.dir.join(&target)
        };
        let outside = || Error::LinkOutsideDirectory {
            path: link.to_owned(),
            target: target.clone(),
            dir: self.dir.clone(),
        };
        let parent = joined.parent().ok_or_else(outside)?;
        let dir =
            std::fs::canonicalize(&self.dir).map_err(|e| io_error("resolve", &self.dir, e))?;
        match std::fs::canonicalize(parent) {
            Ok(p) if p == dir => Ok(()),
            _ => Err(outside()),
        }
    }
}

impl LoadedPair {
    /// The file it was read from (the certificate file when the key is separate).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The certificates as read, DER, the leaf first (the `CERTIFICATE` blocks of the file).
    #[must_use]
    pub fn certificate_chain_der(&self) -> &[Vec<u8>] {
        &self.chain_der
    }

    /// What the rotation decision reads of the leaf certificate.
    #[must_use]
    pub fn certificate(&self) -> &CurrentCertificate {
        &self.certificate
    }

    /// The private key.
    #[must_use]
    pub fn key(&self) -> &NodeKey {
        &self.key
    }
}

impl std::fmt::Debug for LoadedPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPair")
            .field("path", &self.path)
            .field("certificate", &self.certificate)
            .field("key", &"<redacted>")
            .finish()
    }
}

fn io_error(action: &'static str, path: &Path, source: io::Error) -> Error {
    Error::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

/// Whether `path` exists, following links (Go's `os.Stat`).
fn exists(path: &Path) -> Result<bool, Error> {
    match std::fs::metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_error("inspect", path, e)),
    }
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| io_error("open", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| io_error("inspect", path, e))?
        .len();
    if len > MAX_PAIR_FILE_BYTES {
        return Err(Error::TooLarge {
            path: path.to_owned(),
            len,
            max: MAX_PAIR_FILE_BYTES,
        });
    }
    let mut out = Vec::new();
    file.take(MAX_PAIR_FILE_BYTES)
        .read_to_end(&mut out)
        .map_err(|e| io_error("read", path, e))?;
    Ok(out)
}

fn parse_pair(path: &Path, cert_pem: &[u8], key_pem: &[u8]) -> Result<LoadedPair, Error> {
    let invalid = |source| Error::InvalidPair {
        path: path.to_owned(),
        source,
    };
    let key = NodeKey::from_pem(key_pem).map_err(invalid)?;
    let chain_der: Vec<Vec<u8>> = tls_bootstrap::go_pem_blocks(cert_pem, 16)
        .into_iter()
        .filter(|b| b.label() == "CERTIFICATE")
        .map(|b| b.der().to_vec())
        .collect();
    let leaf = chain_der
        .first()
        .ok_or(tls_bootstrap::Error::Pem {
            what: "certificate",
            reason: "no CERTIFICATE PEM block",
        })
        .map_err(invalid)?;
    let certificate = CurrentCertificate::from_der(leaf).map_err(invalid)?;
    if certificate.public_key_der() != key.public_key_der() {
        return Err(invalid(tls_bootstrap::Error::WrongKey));
    }
    Ok(LoadedPair {
        path: path.to_owned(),
        chain_der,
        certificate,
        key,
    })
}

fn create_dir(dir: &Path) -> Result<(), Error> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .map_err(|e| io_error("create the directory", dir, e))
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(_target: &Path, _link: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "symbolic links need a unix system",
    ))
}

fn sync_dir(dir: &Path) -> Result<(), Error> {
    #[cfg(unix)]
    {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_error("sync", dir, e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
