//! The sandbox's `/etc`: what the root file system has, plus the `hosts`
//! and `hostname` a container gets from its engine (so `localhost` resolves
//! to the sandbox's own loopback and the hostname reads as in Docker). A
//! small tmpfs at `/etc`, the root file system's entries bound into it one
//! by one (links re-made as links: bwrap would follow them on the host),
//! the two files added, then made read-only.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const HOSTS: &str =
    "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\tcodemcp-worker\n";
const HOSTNAME: &str = "codemcp-worker\n";
/// Room for the tmpfs's directory entries only.
const ETC_BYTES: &str = "1048576";

/// The arguments that build `/etc`, and the directory holding the added files.
pub struct Etc {
    args: Vec<String>,
    _extra: tempfile::TempDir,
}

impl Etc {
    pub fn new(rootfs: &Path) -> std::io::Result<Self> {
        let extra = tempfile::Builder::new()
            .prefix("codemcp-sandbox-etc-")
            .tempdir()?;
        // bwrap may run as uid 65534 (a root gateway): it must read these.
        std::fs::set_permissions(extra.path(), std::fs::Permissions::from_mode(0o755))?;
        for (name, text) in [("hosts", HOSTS), ("hostname", HOSTNAME)] {
            let path = extra.path().join(name);
            std::fs::write(&path, text)?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
        }
        let mut args: Vec<String> = ["--size", ETC_BYTES, "--tmpfs", "/etc"]
            .map(str::to_owned)
            .to_vec();
        let mut names: Vec<_> = std::fs::read_dir(rootfs.join("etc"))?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "hosts" && n != "hostname")
            .collect();
        names.sort();
        for name in names {
            let source = rootfs.join("etc").join(&name);
            let target = format!("/etc/{name}");
            match std::fs::read_link(&source) {
                Ok(link) => args.extend([
                    "--symlink".into(),
                    link.to_string_lossy().into_owned(),
                    target,
                ]),
                Err(_) => args.extend([
                    "--ro-bind".into(),
                    source.to_string_lossy().into_owned(),
                    target,
                ]),
            }
        }
        for name in ["hosts", "hostname"] {
            let source = extra.path().join(name).to_string_lossy().into_owned();
            args.extend(["--ro-bind".into(), source, format!("/etc/{name}")]);
        }
        args.extend(["--remount-ro".into(), "/etc".into()]);
        Ok(Self {
            args,
            _extra: extra,
        })
    }

    pub fn args(&self) -> &[String] {
        &self.args
    }
}
