//! The certificate file store against client-go's `certificate_store_test.go` (its cases as
//! data, each naming the Go test), and hostile directories.

#![cfg(all(unix, feature = "tls-bootstrap"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "tests fail loudly"
)]

use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_bootstrap::node_certificates::{CertificateStore, Error};

const PAIR: &str = "kubelet-server";

/// A certificate and its key (PKCS#8 P-256), PEM.
fn pair(cn: &str) -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["worker-1".to_owned()]).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

fn both(p: &(String, String)) -> String {
    format!("{}{}", p.0, p.1)
}

fn t(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000 + secs)
}

fn store(dir: &Path) -> CertificateStore {
    CertificateStore::new(PAIR, dir).unwrap()
}

fn cn(store: &CertificateStore) -> Option<String> {
    store
        .load()
        .unwrap()
        .map(|p| p.certificate().common_name().to_owned())
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// What is in the directory before a load: (`-current.pem` content, configured files).
enum Layout {
    Nothing,
    /// `-current.pem` a link to a pair file with this content.
    CurrentLink(&'static str),
    /// Configured cert and key files.
    CertKeyFiles,
    /// `<pair>.crt` and `<pair>.key` in the directory.
    DefaultCertKeyFiles,
}

/// What a load finds: `Ok(Some(CN))`, `Ok(None)` for nothing, `Err(())` for an invalid pair.
type Expected = Result<Option<&'static str>, ()>;

/// (Go test, layout, expected).
#[test]
fn load_cases() {
    let good = pair("from-link");
    let files = pair("from-files");
    let cases: &[(&str, Layout, Expected)] = &[
        ("TestCurrentNoFiles", Layout::Nothing, Ok(None)),
        (
            "TestCurrentPairFile / TestLoadFile",
            Layout::CurrentLink("good"),
            Ok(Some("from-link")),
        ),
        (
            "TestLoadCertKeyBlocksEmptyFile",
            Layout::CurrentLink("empty"),
            Err(()),
        ),
        (
            "TestLoadCertKeyBlocksPartialFile",
            Layout::CurrentLink("cert-only"),
            Err(()),
        ),
        (
            "TestCurrentCertKeyFiles",
            Layout::CertKeyFiles,
            Ok(Some("from-files")),
        ),
        (
            "client-go's third place: <pair>.crt and <pair>.key",
            Layout::DefaultCertKeyFiles,
            Ok(Some("from-files")),
        ),
    ];
    for (name, layout, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut s = store(d);
        match layout {
            Layout::Nothing => {}
            Layout::CurrentLink(what) => {
                let content = match *what {
                    "good" => both(&good),
                    "empty" => String::new(),
                    _ => good.0.clone(),
                };
                let target = d.join(format!("{PAIR}-pair.pem"));
                std::fs::write(&target, content).unwrap();
                symlink(&target, d.join(format!("{PAIR}-current.pem"))).unwrap();
            }
            Layout::CertKeyFiles => {
                std::fs::write(d.join("kubelet.crt"), &files.0).unwrap();
                std::fs::write(d.join("kubelet.key"), &files.1).unwrap();
                s = s.with_files(d.join("kubelet.crt"), d.join("kubelet.key"));
            }
            Layout::DefaultCertKeyFiles => {
                std::fs::write(d.join(format!("{PAIR}.crt")), &files.0).unwrap();
                std::fs::write(d.join(format!("{PAIR}.key")), &files.1).unwrap();
            }
        }
        match (s.load(), expected) {
            (Ok(got), Ok(want)) => assert_eq!(
                got.map(|p| p.certificate().common_name().to_owned())
                    .as_deref(),
                *want,
                "{name}"
            ),
            (Err(Error::InvalidPair { .. }), Err(())) => {}
            (got, _) => panic!("{name}: {got:?}"),
        }
    }
}

#[test]
fn update_symlink_no_symlink_and_replace_existing_symlink() {
    // TestUpdateSymlinkNoSymlink, TestUpdateSymlinkReplaceExistingSymlink, TestUpdateRotation.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("pki");
    let s = store(&d);
    let first = s.update(both(&pair("one")).as_bytes(), t(0)).unwrap();
    assert_eq!(
        first.file_name().unwrap(),
        "kubelet-server-2027-01-15-08-00-00.pem"
    );
    let current = s.current_path();
    assert!(
        std::fs::symlink_metadata(&current)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_link(&current).unwrap(), first);
    assert_eq!(cn(&s).as_deref(), Some("one"));
    let second = s.update(both(&pair("two")).as_bytes(), t(61)).unwrap();
    assert_eq!(std::fs::read_link(&current).unwrap(), second);
    assert_eq!(cn(&s).as_deref(), Some("two"));
    // The rotated-out pair is kept, as client-go keeps it; no temporary file is left.
    assert_eq!(
        entries(&d),
        [
            "kubelet-server-2027-01-15-08-00-00.pem",
            "kubelet-server-2027-01-15-08-01-01.pem",
            "kubelet-server-current.pem"
        ]
    );
    // Pair files are 0600, the directory made for them 0700.
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&first), 0o600);
    assert_eq!(mode(&second), 0o600);
    assert_eq!(mode(&d), 0o700);
}

#[test]
fn update_with_bad_cert_key_data_writes_nothing() {
    // TestUpdateWithBadCertKeyData, and a certificate that is not for the key.
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let a = pair("a");
    let b = pair("b");
    for bad in [
        vec![0u8, 0],
        a.0.clone().into_bytes(),
        format!("{}{}", a.0, b.1).into_bytes(),
    ] {
        assert!(matches!(
            s.update(&bad, t(0)),
            Err(Error::InvalidPair { .. })
        ));
    }
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn a_current_file_that_is_not_a_symlink_is_left_alone() {
    // TestUpdateSymlinkExistingFileError: client-go refuses too, after writing the pair file;
    // here nothing is written.
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let mine = both(&pair("users"));
    std::fs::write(s.current_path(), &mine).unwrap();
    // It is read, as client-go reads it...
    assert_eq!(cn(&s).as_deref(), Some("users"));
    // ... but never replaced, and the error says so.
    let err = s.update(both(&pair("new")).as_bytes(), t(0)).unwrap_err();
    assert!(matches!(&err, Error::NotASymlink { path } if *path == s.current_path()));
    assert!(
        err.to_string()
            .contains("is not a symbolic link; it was left as it is")
    );
    assert_eq!(std::fs::read_to_string(s.current_path()).unwrap(), mine);
    assert_eq!(entries(dir.path()), ["kubelet-server-current.pem"]);
}

#[test]
fn a_symlink_outside_the_directory_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let target = outside.path().join("kubelet-server-evil.pem");
    std::fs::write(&target, both(&pair("evil"))).unwrap();
    symlink(&target, s.current_path()).unwrap();
    assert!(matches!(
        s.load(),
        Err(Error::LinkOutsideDirectory { target: t, .. }) if t == target
    ));
    // A relative link that climbs out is refused too.
    std::fs::remove_file(s.current_path()).unwrap();
    let rel: PathBuf = [
        "..",
        outside.path().file_name().unwrap().to_str().unwrap(),
        "kubelet-server-evil.pem",
    ]
    .iter()
    .collect();
    symlink(&rel, s.current_path()).unwrap();
    assert!(matches!(s.load(), Err(Error::LinkOutsideDirectory { .. })));
}

#[test]
fn a_dangling_symlink_is_no_pair_and_is_replaced() {
    // TestLoadCertKeyBlocksNoFile: the link's file is gone. client-go's os.Stat sees nothing
    // there and reads the configured files; an update replaces the link.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = store(d);
    symlink(d.join("kubelet-server-gone.pem"), s.current_path()).unwrap();
    assert!(s.load().unwrap().is_none());
    let files = pair("from-files");
    std::fs::write(d.join("kubelet.crt"), &files.0).unwrap();
    std::fs::write(d.join("kubelet.key"), &files.1).unwrap();
    let s = s.with_files(d.join("kubelet.crt"), d.join("kubelet.key"));
    assert_eq!(cn(&s).as_deref(), Some("from-files"));
    let new = s.update(both(&pair("new")).as_bytes(), t(0)).unwrap();
    assert_eq!(std::fs::read_link(s.current_path()).unwrap(), new);
    assert_eq!(cn(&s).as_deref(), Some("new"));
}

#[test]
fn an_interrupted_update_is_finished() {
    // client-go's recover(): an `-updated.pem` link and no `-current.pem`.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = store(d);
    let target = d.join("kubelet-server-2027-01-01-00-00-00.pem");
    std::fs::write(&target, both(&pair("half-done"))).unwrap();
    symlink(&target, d.join("kubelet-server-updated.pem")).unwrap();
    assert_eq!(cn(&s).as_deref(), Some("half-done"));
    assert_eq!(std::fs::read_link(s.current_path()).unwrap(), target);
    // An `-updated.pem` that is a file is not client-go's: left alone, and said.
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    std::fs::write(dir.path().join("kubelet-server-updated.pem"), "mine").unwrap();
    assert!(matches!(s.load(), Err(Error::NotASymlink { .. })));
    assert!(matches!(
        s.update(both(&pair("x")).as_bytes(), t(0)),
        Err(Error::NotASymlink { .. })
    ));
}

#[test]
fn two_updates_in_one_second_never_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let first = s.update(both(&pair("first")).as_bytes(), t(0)).unwrap();
    let before = std::fs::read(&first).unwrap();
    let err = s
        .update(both(&pair("second")).as_bytes(), t(0))
        .unwrap_err();
    assert!(matches!(err, Error::PairFileExists { path } if path == first));
    assert_eq!(std::fs::read(&first).unwrap(), before);
    assert_eq!(cn(&s).as_deref(), Some("first"));
}

#[test]
fn unreadable_or_missing_directories_name_the_path_and_reason() {
    // A directory path that is a file.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let s = store(&file);
    let err = s.load().unwrap_err();
    assert!(
        matches!(&err, Error::Io { path, .. } if path.starts_with(&file)),
        "{err}"
    );
    assert!(err.to_string().contains("not-a-dir"), "{err}");
    let err = s.update(both(&pair("x")).as_bytes(), t(0)).unwrap_err();
    assert!(matches!(&err, Error::Io { .. }), "{err}");

    // A directory without permissions: refused with the OS reason, unless this process may
    // read anything (root), in which case the pair is read.
    let locked = dir.path().join("locked");
    let s = store(&locked);
    s.update(both(&pair("locked")).as_bytes(), t(0)).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let privileged = std::fs::read_dir(&locked).is_ok();
    let got = s.load();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
    if privileged {
        assert_eq!(got.unwrap().unwrap().certificate().common_name(), "locked");
    } else {
        let err = got.unwrap_err();
        assert!(
            matches!(&err, Error::Io { source, .. }
            if source.kind() == std::io::ErrorKind::PermissionDenied),
            "{err}"
        );
        assert!(err.to_string().contains("locked"), "{err}");
    }
}

#[test]
fn pair_names_are_checked_and_keys_not_printed() {
    for bad in ["", ".hidden", "a/b", "a\0b", &"x".repeat(65)] {
        assert!(matches!(
            CertificateStore::new(bad, "/tmp"),
            Err(Error::InvalidPairName)
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let p = pair("k");
    s.update(both(&p).as_bytes(), t(0)).unwrap();
    let loaded = s.load().unwrap().unwrap();
    assert_eq!(loaded.certificate_chain_der().len(), 1);
    assert_eq!(
        loaded.key().public_key_der(),
        loaded.certificate().public_key_der()
    );
    let debug = format!("{loaded:?}");
    let key_body: String = p.1.lines().nth(1).unwrap().to_owned();
    assert!(!debug.contains(&key_body) && debug.contains("<redacted>"));
}
