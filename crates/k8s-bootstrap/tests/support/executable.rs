//! Writing an executable a test then runs, shared by the exec tests.
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

/// Writes an executable file through `sh` (a process of its own), so that no descriptor open
/// for writing on it ever exists in this test process: a process a parallel test forks could
/// otherwise inherit one for a moment and make running the file fail with ETXTBSY ("text file
/// busy").
pub(crate) fn write_executable(path: &std::path::Path, contents: &str) {
    use std::io::Write as _;
    let mut child = std::process::Command::new("sh")
        .args(["-c", "cat > \"$0\" && chmod 755 \"$0\""])
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(contents.as_bytes())
        .unwrap();
    assert!(
        child.wait().unwrap().success(),
        "writing {}",
        path.display()
    );
}
