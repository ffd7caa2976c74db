//! The manifests under `deploy/` take the k8s-bootstrap image from kustomize's `images:`: the
//! base renders the released image of this crate's version, an overlay's `images:` entry
//! replaces it (and nothing else), and the Containerfile's user is the one the manifests run
//! as. Runs the real `kubectl kustomize` (skipped where kubectl is not installed; CI has it).
//! The documents name the features the image is built with, and the services' HTTP ports are
//! no control-plane component's, in the command's defaults and the manifests alike.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code fails loudly"
)]

use std::path::{Path, PathBuf};
use std::process::Command;

const DIRS: [&str; 3] = ["controllers", "forward-proxy", "forward-proxy-delegated"];
const RELEASED: &str = "ghcr.io/k8s-bootstrap-rs/k8s-bootstrap";

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `kubectl kustomize dir`, or `None` when kubectl is not installed.
fn kustomize(dir: &Path) -> Option<String> {
    let out = match Command::new("kubectl").arg("kustomize").arg(dir).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("skipped: kubectl is not on PATH");
            return None;
        }
        Err(e) => panic!("running kubectl: {e}"),
    };
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

/// `to` relative to the directory `from` (kustomize takes no absolute path to a base).
fn relative(from: &Path, to: &Path) -> PathBuf {
    let (from, to) = (from.canonicalize().unwrap(), to.canonicalize().unwrap());
    let mut path = PathBuf::new();
    for _ in from.components().skip(1) {
        path.push("..");
    }
    path.join(to.strip_prefix("/").unwrap())
}

/// Every container image the rendered objects name, in order.
fn images(rendered: &str) -> Vec<String> {
    rendered
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("image: "))
        .map(|image| image.trim().to_owned())
        .collect()
}

/// The deployment files name the image `k8s-bootstrap`, which only the kustomization's
/// `images:` entry turns into a pullable reference: the released image, tagged with this
/// crate's version (so a release that forgets the manifests fails here).
#[test]
fn the_base_renders_the_released_image_of_this_version() {
    for dir in DIRS {
        let dir = repository().join("deploy").join(dir);
        let file = std::fs::read_to_string(dir.join("deployment.yaml")).unwrap();
        assert!(
            images(&file).contains(&"k8s-bootstrap".to_owned()),
            "{file}"
        );
        let Some(rendered) = kustomize(&dir) else {
            return;
        };
        let ours: Vec<String> = images(&rendered)
            .into_iter()
            .filter(|i| i.contains("k8s-bootstrap"))
            .collect();
        assert_eq!(
            ours,
            [format!("{RELEASED}:{}", env!("CARGO_PKG_VERSION"))],
            "{}",
            dir.display()
        );
    }
}

/// An overlay's `images:` entry (what `kustomize edit set image` writes) points the manifests
/// at a local build; the add-on's own image in the forward-proxy example is left alone.
#[test]
fn an_overlay_sets_the_image() {
    for dir in DIRS {
        let base = repository().join("deploy").join(dir);
        let Some(before) = kustomize(&base) else {
            return;
        };
        let overlay = tempfile::tempdir().unwrap();
        std::fs::write(
            overlay.path().join("kustomization.yaml"),
            format!(
                "apiVersion: kustomize.config.k8s.io/v1beta1\n\
                 kind: Kustomization\n\
                 resources:\n  - {}\n\
                 images:\n  - name: {RELEASED}\n    newName: localhost/k8s-bootstrap\n    \
                 newTag: dev\n",
                relative(overlay.path(), &base).display()
            ),
        )
        .unwrap();
        let after = kustomize(overlay.path()).unwrap();
        let expected: Vec<String> = images(&before)
            .into_iter()
            .map(|i| {
                if i.starts_with(RELEASED) {
                    "localhost/k8s-bootstrap:dev".to_owned()
                } else {
                    i
                }
            })
            .collect();
        assert_eq!(images(&after), expected, "{dir}");
        assert!(
            images(&after).contains(&"localhost/k8s-bootstrap:dev".to_owned()),
            "{after}"
        );
        // Only the image changed.
        let strip = |s: &str| -> Vec<String> {
            s.lines()
                .filter(|l| !l.trim_start().starts_with("image: "))
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(strip(&after), strip(&before), "{dir}");
    }
}

/// The Containerfile runs the binary as the numeric user and group the manifests' pods run as
/// (`runAsUser: 65532`, `runAsNonRoot: true`, which needs a numeric user to verify), from an
/// empty base with no shell to run.
#[test]
fn the_containerfile_runs_as_the_manifests_user_from_scratch() {
    let containerfile = std::fs::read_to_string(repository().join("Containerfile")).unwrap();
    let instructions: Vec<&str> = containerfile
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .collect();
    let from: Vec<&&str> = instructions
        .iter()
        .filter(|l| l.starts_with("FROM "))
        .collect();
    assert_eq!(from, [&"FROM scratch"], "{containerfile}");
    assert!(
        instructions.contains(&"USER 65532:65532"),
        "{containerfile}"
    );
    assert!(
        !instructions.iter().any(|l| l.starts_with("RUN ")),
        "nothing can run in a scratch image: {containerfile}"
    );
    for dir in DIRS {
        let file = std::fs::read_to_string(
            repository()
                .join("deploy")
                .join(dir)
                .join("deployment.yaml"),
        )
        .unwrap();
        assert!(file.contains("runAsUser: 65532\n"), "{dir}");
        assert!(file.contains("runAsNonRoot: true\n"), "{dir}");
    }
}

/// The comma-separated feature lists in `text` that name both `controllers` and `sidecar`
/// (how the documents spell the image's build).
fn image_feature_lists(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == ','))
        .map(|word| word.trim_matches(|c| c == ',' || c == '-'))
        .filter(|word| {
            let features: Vec<&str> = word.split(',').collect();
            features.contains(&"controllers") && features.contains(&"sidecar")
        })
        .map(str::to_owned)
        .collect()
}

/// The image's features are chosen once, by `.ci/image.sh` (its `FEATURES` default), and every
/// document that says what the image is built with says the same: the README said
/// `ring,controllers,sidecar` and deploy/forward-proxy's README `ring,sidecar,controllers`
/// while the image was built with aws-lc-rs.
#[test]
fn every_document_names_the_features_the_image_is_built_with() {
    let read = |file: &str| std::fs::read_to_string(repository().join(file)).unwrap();
    let script = read(".ci/image.sh");
    let built = script
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("features=\"${FEATURES:-")?
                .strip_suffix("}\"")
        })
        .expect(".ci/image.sh sets features from FEATURES");
    for file in [
        ".ci/image.sh",
        "Containerfile",
        "README.md",
        "deploy/forward-proxy/README.md",
        "crates/k8s-bootstrap-cli/README.md",
    ] {
        let lists = image_feature_lists(&read(file));
        assert!(!lists.is_empty(), "{file} names no image features");
        for list in lists {
            assert_eq!(list, built, "{file}");
        }
    }
}

/// Ports a control-plane node's own components listen on: kube-apiserver, etcd (clients,
/// peers, metrics), kube-controller-manager, cloud-controller-manager, kube-scheduler, the
/// kubelet (API, read-only, healthz), kube-proxy (metrics, healthz), and the insecure ports
/// kube-scheduler and kube-controller-manager had before 1.23.
const CONTROL_PLANE_PORTS: &[u16] = &[
    6443, 2379, 2380, 2381, 10257, 10258, 10259, 10250, 10255, 10248, 10249, 10256, 10251, 10252,
];

/// The default of `--http-address` in `<command> --help`.
fn default_http_port(command: &str) -> u16 {
    let out = Command::new(env!("CARGO_BIN_EXE_k8s-bootstrap"))
        .args([command, "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let after = help
        .split_once("--http-address <ADDR:PORT>")
        .unwrap_or_else(|| panic!("{command} --help: {help}"))
        .1;
    let default = after
        .split_once("[default: ")
        .and_then(|(_, rest)| rest.split_once(']'))
        .unwrap()
        .0;
    default.rsplit_once(':').unwrap().1.parse().unwrap()
}

/// `controllers` and `forward-proxy` serve /healthz, /readyz and /metrics on ports no
/// control-plane component uses (they were 10258, cloud-controller-manager's, and 10259,
/// kube-scheduler's), different from each other, and the manifests use the same ports.
#[test]
fn the_http_ports_are_no_control_plane_component_s() {
    let mut ports = Vec::new();
    for (command, dir) in [
        ("controllers", "controllers"),
        ("forward-proxy", "forward-proxy"),
    ] {
        if (command == "controllers" && !cfg!(feature = "controllers"))
            || (command == "forward-proxy" && !cfg!(feature = "sidecar"))
        {
            continue;
        }
        let port = default_http_port(command);
        assert!(
            !CONTROL_PLANE_PORTS.contains(&port),
            "{command}: {port} is a control-plane component's port"
        );
        ports.push(port);
        let deployment = std::fs::read_to_string(
            repository()
                .join("deploy")
                .join(dir)
                .join("deployment.yaml"),
        )
        .unwrap();
        for expected in [
            format!("- --http-address=0.0.0.0:{port}\n"),
            format!("prometheus.io/port: \"{port}\"\n"),
            format!("containerPort: {port}\n"),
        ] {
            assert!(deployment.contains(&expected), "{dir}: no {expected:?}");
        }
    }
    if let [controllers, forward_proxy] = ports.as_slice() {
        assert_ne!(controllers, forward_proxy);
    }
}

/// The forward proxy's arguments in a rendered deployment (the `- forward-proxy` entry and
/// the `- --flag` lines after it).
fn forward_proxy_args(rendered: &str) -> Vec<String> {
    rendered
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != "- forward-proxy")
        .skip(1)
        .map_while(|l| l.strip_prefix("- --").map(|flag| format!("--{flag}")))
        .collect()
}

/// deploy/forward-proxy-delegated's components (`offline`, `front-proxy`), each in an overlay
/// beside the base as its README says: they render, change only what they say (their
/// arguments, the front proxy's CA volume and its ConfigMap reader binding), and the command
/// accepts the rendered arguments: it gets past every flag check (exit code 2) to the first
/// file it reads or the kubeconfig. The offline mode's scraper example renders too, with a
/// projected token for the audience the component accepts.
#[test]
fn the_delegated_components_render_and_the_command_accepts_their_flags() {
    let base = repository().join("deploy/forward-proxy-delegated");
    let Some(plain) = kustomize(&base) else {
        return;
    };
    let base_args = forward_proxy_args(&plain);
    assert!(
        base_args.contains(&"--authentication=token-review".to_owned()),
        "{plain}"
    );
    for (component, added, file) in [
        (
            "offline",
            &[
                "--service-account-tokens=offline-only",
                "--auth-token-audiences=metrics-addon",
            ][..],
            None,
        ),
        (
            "front-proxy",
            &[
                "--requestheader-client-ca-file=/etc/forward-proxy/requestheader/requestheader-client-ca-file",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            ][..],
            Some((
                "--requestheader-client-ca-file",
                "/etc/forward-proxy/requestheader/requestheader-client-ca-file",
            )),
        ),
    ] {
        let overlay = tempfile::tempdir().unwrap();
        std::fs::write(
            overlay.path().join("kustomization.yaml"),
            format!(
                "apiVersion: kustomize.config.k8s.io/v1beta1\n\
                 kind: Kustomization\n\
                 resources:\n  - {}\n\
                 components:\n  - {}\n",
                relative(overlay.path(), &base).display(),
                relative(overlay.path(), &base.join(component)).display()
            ),
        )
        .unwrap();
        let rendered = kustomize(overlay.path()).unwrap();
        let args = forward_proxy_args(&rendered);
        let mut expected = base_args.clone();
        expected.extend(added.iter().map(|&a| a.to_owned()));
        assert_eq!(args, expected, "{component}");
        let has = |s: &str| rendered.contains(s);
        if component == "front-proxy" {
            assert!(
                has("name: extension-apiserver-authentication-reader"),
                "{rendered}"
            );
            assert!(has("name: metrics-addon-requestheader-ca"), "{rendered}");
            assert!(
                has("mountPath: /etc/forward-proxy/requestheader"),
                "{rendered}"
            );
        } else {
            assert_eq!(rendered, plain.replace(
                "        - --http-address=0.0.0.0:10267\n",
                "        - --http-address=0.0.0.0:10267\n        - --service-account-tokens=offline-only\n        - --auth-token-audiences=metrics-addon\n",
            ));
        }

        if !cfg!(feature = "sidecar") {
            continue;
        }
        // The rendered flags, the configuration file replaced by a real one and the cluster
        // by a kubeconfig that is missing: every flag check passes first.
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.yaml");
        std::fs::write(&config, "authorization: {}\n").unwrap();
        let args: Vec<String> = args
            .into_iter()
            .map(|a| {
                if a.starts_with("--config-file=") {
                    format!("--config-file={}", config.display())
                } else {
                    a
                }
            })
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_k8s-bootstrap"))
            .arg("forward-proxy")
            .args(&args)
            .arg("--kubeconfig=/nonexistent/kubeconfig")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{component}: {args:?}: {stderr}"
        );
        match file {
            Some((flag, path)) => {
                assert!(stderr.contains(&format!("{flag} {path}")), "{stderr}");
            }
            None => assert!(stderr.contains("/nonexistent/kubeconfig"), "{stderr}"),
        }
    }

    // The offline mode's caller: a projected token for that audience, nothing else mounted.
    let scraper = kustomize(&base.join("offline/scraper-example")).unwrap();
    assert!(scraper.contains("audience: metrics-addon\n"), "{scraper}");
    assert!(
        scraper.contains("automountServiceAccountToken: false\n"),
        "{scraper}"
    );
}
