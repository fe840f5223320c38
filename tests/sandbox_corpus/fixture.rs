//! The files and listeners the cases aim at: planted secrets, a loopback
//! decoy, and the filesystem server's root.

use std::net::{TcpListener, UdpSocket};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::{CONFIG_SECRET, FILE_SECRET, support};

/// Files and listeners the cases aim at.
pub(crate) struct Fixture {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) decoy_port: u16,
    pub(crate) decoy_hits: Arc<AtomicUsize>,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&root).expect("mkdir root");
        std::fs::create_dir_all(&outside).expect("mkdir outside");
        std::fs::write(outside.join("secret.txt"), FILE_SECRET).expect("write secret");
        std::fs::write(root.join("in.txt"), "corpus-inside\n").expect("write in.txt");
        std::os::unix::fs::symlink("../outside/secret.txt", root.join("link")).expect("symlink");

        // A loopback TCP listener and a UDP socket on the same port: any byte or
        // connection that reaches them is an escape.
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind decoy");
        let decoy_port = listener.local_addr().expect("addr").port();
        let decoy_hits = Arc::new(AtomicUsize::new(0));
        let hits = decoy_hits.clone();
        std::thread::spawn(move || {
            for _ in listener.incoming() {
                hits.fetch_add(1, Ordering::SeqCst);
            }
        });
        if let Ok(udp) = UdpSocket::bind(("127.0.0.1", decoy_port)) {
            let hits = decoy_hits.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 64];
                while udp.recv(&mut buf).is_ok() {
                    hits.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        Self {
            dir,
            decoy_port,
            decoy_hits,
        }
    }

    pub(crate) fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    pub(crate) fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }

    pub(crate) fn servers(&self) -> Value {
        let mut fs = support::filesystem(&self.root());
        fs["env"] = json!({"CORPUS_CONFIG_SECRET": CONFIG_SECRET});
        // The corpus probes what the tools themselves let through: the
        // operator allows every tool, including those the server calls
        // destructive (which would otherwise be `ask`).
        fs["policy"] = json!({"*": "allow"});
        json!({"fs": fs, "odd": support::odd(json!({}))})
    }

    /// What must hold after every case: the planted files as they were and no
    /// traffic at the decoy.
    pub(crate) fn untouched(&self) -> Result<(), String> {
        let list = |dir: PathBuf| -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .map(|d| {
                    d.filter_map(Result::ok)
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            names
        };
        let outside = list(self.outside());
        let root = list(self.root());
        let secret = std::fs::read_to_string(self.outside().join("secret.txt")).unwrap_or_default();
        let inside = std::fs::read_to_string(self.root().join("in.txt")).unwrap_or_default();
        if outside != ["secret.txt"] || secret != FILE_SECRET {
            return Err(format!(
                "the directory outside the root changed: {outside:?}"
            ));
        }
        if root != ["in.txt", "link"] || inside != "corpus-inside\n" {
            return Err(format!("the tool root changed: {root:?}"));
        }
        let hits = self.decoy_hits.load(Ordering::SeqCst);
        if hits > 0 {
            return Err(format!(
                "the loopback decoy on port {} saw {hits} connection(s)/datagram(s)",
                self.decoy_port
            ));
        }
        Ok(())
    }
}
