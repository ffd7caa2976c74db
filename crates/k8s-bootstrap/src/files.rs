//! Files holding credentials: written as kubeadm and the kubelet write them.

use std::io::Write as _;
use std::path::Path;

/// Writes `contents` to `path` with mode 0600, atomically (a temporary file in the same
/// directory, synced, then renamed over `path`). Blocking; the files are small.
pub(crate) fn write_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".k8s-bootstrap-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        builder.permissions(std::fs::Permissions::from_mode(0o600));
    }
    let mut file = builder.tempfile_in(dir)?;
    file.write_all(contents)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}
