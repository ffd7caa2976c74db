//! Files written as kubeadm and the kubelet write them: whole (a temporary file in the same
//! directory, synced, then moved into place, so a reader never sees half a file), and never
//! over an existing file unless the caller says so ([`Existing`]): kubeadm's preflight refuses
//! a kubeconfig that is already there.
//!
//! ```no_run
//! use k8s_bootstrap::files::{self, Existing};
//!
//! // Fails with `ErrorKind::AlreadyExists` if the file is there, even when another process
//! // creates it while this one writes.
//! files::write_private("bootstrap-kubelet.conf".as_ref(), b"apiVersion: v1\n", Existing::Refuse)?;
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::Write as _;
use std::path::Path;

/// What a write does when its destination already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Existing {
    /// Fail with [`std::io::ErrorKind::AlreadyExists`] and leave the file as it is. The check
    /// and the write are one step (the file is moved into place only if the name is free), so
    /// a file created meanwhile by another process is not replaced either.
    Refuse,
    /// Replace it (a symbolic link is replaced, not followed).
    Replace,
}

/// Writes `contents` to `path` with mode 0600 (only its owner can read it): a file that holds
/// a credential. Blocking; the files are small.
///
/// # Errors
///
/// The OS error when the directory cannot take the file, or
/// [`std::io::ErrorKind::AlreadyExists`] with [`Existing::Refuse`] when `path` exists.
pub fn write_private(path: &Path, contents: &[u8], existing: Existing) -> std::io::Result<()> {
    write(path, contents, 0o600, existing)
}

/// Writes `contents` to `path` with mode 0644 (anyone may read it): a certificate, which is
/// public. Blocking; the files are small.
///
/// # Errors
///
/// As [`write_private`].
pub fn write_readable(path: &Path, contents: &[u8], existing: Existing) -> std::io::Result<()> {
    write(path, contents, 0o644, existing)
}

fn write(path: &Path, contents: &[u8], mode: u32, existing: Existing) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // Refused before the temporary file is made: the common case fails without touching the
    // directory. The move below decides the race.
    if existing == Existing::Refuse && std::fs::symlink_metadata(path).is_ok() {
        return Err(already_exists());
    }
    let mut builder = tempfile::Builder::new();
    builder.prefix(".k8s-bootstrap-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = builder.tempfile_in(dir)?;
    file.write_all(contents)?;
    file.as_file().sync_all()?;
    match existing {
        Existing::Replace => file.persist(path).map(drop).map_err(|e| e.error),
        Existing::Refuse => file.persist_noclobber(path).map(drop).map_err(|e| {
            if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                already_exists()
            } else {
                e.error
            }
        }),
    }
}

fn already_exists() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::AlreadyExists, "the file already exists")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuse_keeps_an_existing_file_and_replace_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubelet.conf");
        std::fs::write(&path, b"the user's").unwrap();
        let err = write_private(&path, b"ours", Existing::Refuse).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"the user's");
        write_private(&path, b"ours", Existing::Replace).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"ours");
        // No temporary file is left behind either way.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn modes_and_dangling_links() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("a");
        let readable = dir.path().join("b");
        write_private(&private, b"x", Existing::Refuse).unwrap();
        write_readable(&readable, b"x", Existing::Refuse).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&private), 0o600);
        // Readable as far as the umask allows; never writable by others.
        assert_eq!(mode(&readable) & 0o622, 0o600);
        // A dangling link is a file that exists: refused, not followed.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        let err = write_private(&link, b"x", Existing::Refuse).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert!(!dir.path().join("nowhere").exists());
    }
}
