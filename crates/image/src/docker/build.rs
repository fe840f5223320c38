//! Builds the worker image: downloads (cached), unpacks the .debs into a root
//! file system, sends a `FROM scratch` build context to the engine's builder
//! (its RUN step has no network), then runs the image once with the
//! gateway's hardening to check it. Progress goes to stderr (tracing) and to
//! a progress file `codemcp check` reads.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{BuildImageOptions, RemoveContainerOptions, WaitContainerOptions};
use futures::StreamExt;

use crate::recipe::{self, Downloads, Recipe};
use crate::unpack::{Kind, RootFs, UnpackError};
use crate::{ImageError, Sources, cache_dir, fetch, rootfs};

const PROGRESS_FILE: &str = "progress";
/// The check run may wait this long for the engine.
const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// What a finished build reports.
pub struct Built {
    pub image: String,
    pub bytes: i64,
    pub downloaded: usize,
    pub cached: usize,
    pub elapsed: Duration,
}

impl fmt::Display for Built {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "built {} ({:.0} MB) in {:.1} s ({} files downloaded, {} from the cache {})",
            self.image,
            self.bytes as f64 / 1e6,
            self.elapsed.as_secs_f64(),
            self.downloaded,
            self.cached,
            cache_dir().display()
        )
    }
}

/// Builds `image` from this binary's recipe and tags it.
pub async fn build(
    docker: &Docker,
    image: &str,
    sources: &Sources,
    bootstrap: &'static str,
) -> Result<Built, ImageError> {
    let started = Instant::now();
    let recipe = recipe::for_this_machine().ok_or(ImageError::NoRecipe(std::env::consts::ARCH))?;
    let cache = cache_dir();
    let progress = Progress::start(&cache, image);
    progress.stage("downloading");
    let items = recipe::downloads(recipe, sources, true);
    let fetched = fetch::fetch_all(&fetch::client()?, &cache, &items).await?;
    let (downloaded, cached) = (fetched.downloaded, items.len() - fetched.downloaded);
    let files = fetched.files;
    tracing::info!(target: "codemcp::worker", downloaded, cached, "every pinned file is here and matches its SHA-256; unpacking");
    progress.stage("unpacking the .debs");
    let bootstrap_sha = crate::sha256_hex(bootstrap.as_bytes());
    let labels = super::labels(recipe, &bootstrap_sha);
    let context = tokio::task::spawn_blocking(move || context(recipe, files, bootstrap, labels))
        .await
        .map_err(|e| ImageError::Build(e.to_string()))??;
    progress.stage("building with the engine");
    engine_build(docker, image, context).await?;
    progress.stage("checking the image");
    check(docker, image).await?;
    let bytes = docker
        .inspect_image(image)
        .await
        .map_err(|e| ImageError::Engine(e.to_string()))?
        .size
        .unwrap_or(0);
    Ok(Built {
        image: image.to_owned(),
        bytes,
        downloaded,
        cached,
        elapsed: started.elapsed(),
    })
}

/// The build context: the Dockerfile and the root file system as one tar.
fn context(
    recipe: &Recipe,
    files: Vec<Vec<u8>>,
    bootstrap: &str,
    labels: HashMap<String, String>,
) -> Result<Vec<u8>, ImageError> {
    let Downloads {
        debs,
        wheel,
        ldconfig,
    } = Downloads::split(recipe, files)?;
    let mut root = rootfs::base(debs, bootstrap)?;
    // The RUN step unpacks the wheel and writes the linker cache.
    root.dir("tmp/codemcp-build", 0o755);
    root.file(recipe::WHEEL_IN_IMAGE, 0o644, wheel);
    let ldconfig = ldconfig_from(
        recipe,
        &ldconfig.ok_or_else(|| ImageError::Build("libc-bin was not downloaded".into()))?,
    )?;
    root.file(recipe::LDCONFIG_IN_IMAGE, 0o755, ldconfig);
    root.file(
        recipe::FINISH_IN_IMAGE,
        0o644,
        recipe::FINISH_PY.as_bytes().to_vec(),
    );
    tracing::info!(target: "codemcp::worker", paths = root.len(), mb = root.file_bytes() / 1_000_000, "root file system assembled");
    let rootfs = root.to_tar()?;
    // One LABEL step rather than one per label (the build's `labels` option).
    let mut labels: Vec<_> = labels.into_iter().collect();
    labels.sort();
    let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    let dockerfile = format!("{}LABEL {}\n", recipe::dockerfile(), labels.join(" "));
    let mut out = tar::Builder::new(Vec::with_capacity(rootfs.len() + 4096));
    for (name, data) in [
        ("Dockerfile", dockerfile.as_bytes()),
        ("rootfs.tar", &rootfs),
    ] {
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        out.append_data(&mut header, name, data)
            .map_err(UnpackError::Write)?;
    }
    Ok(out.into_inner().map_err(UnpackError::Write)?)
}

/// libc-bin's static `ldconfig`, for the build step alone.
fn ldconfig_from(recipe: &Recipe, deb: &[u8]) -> Result<Vec<u8>, ImageError> {
    let mut tool = RootFs::default();
    tool.add_deb(recipe.ldconfig.package, deb)?;
    match tool.get("usr/sbin/ldconfig").map(|n| &n.kind) {
        Some(Kind::File(bytes)) => Ok(bytes.clone()),
        _ => Err(ImageError::Build(format!(
            "{} holds no usr/sbin/ldconfig",
            recipe.ldconfig.path
        ))),
    }
}

/// Sends the context to the engine's builder and follows its output.
async fn engine_build(docker: &Docker, image: &str, context: Vec<u8>) -> Result<(), ImageError> {
    tracing::info!(target: "codemcp::worker", image, mb = context.len() / 1_000_000, "sending the build context to the engine");
    let options = BuildImageOptions {
        dockerfile: "Dockerfile".into(),
        t: Some(image.to_owned()),
        rm: true,
        forcerm: true,
        // The RUN step unpacks and compiles what is already there.
        networkmode: Some("none".into()),
        ..Default::default()
    };
    let mut output = docker.build_image(options, None, Some(bollard::body_full(context.into())));
    while let Some(info) = output.next().await {
        let info = info.map_err(|e| ImageError::Build(e.to_string()))?;
        if let Some(error) = info.error_detail.and_then(|d| d.message) {
            return Err(ImageError::Build(error));
        }
        if let Some(line) = info
            .stream
            .as_deref()
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            tracing::info!(target: "codemcp::worker", "engine: {line}");
        }
    }
    Ok(())
}

/// Runs the new image once as the gateway does (no capabilities, read-only
/// root, no network, user 65534) and checks what the workers rely on.
async fn check(docker: &Docker, image: &str) -> Result<(), ImageError> {
    let probe = "import os, websockets, websockets.asyncio.client; \
                 assert os.getuid() == 65534, os.getuid(); \
                 assert os.path.exists('/opt/codemcp/bootstrap.py'); \
                 assert not os.access('/opt/codemcp/bootstrap.py', os.W_OK)";
    let body = ContainerCreateBody {
        image: Some(image.to_owned()),
        cmd: Some(vec!["python3".into(), "-c".into(), probe.into()]),
        host_config: Some(HostConfig {
            cap_drop: Some(vec!["ALL".into()]),
            security_opt: Some(vec!["no-new-privileges".into()]),
            readonly_rootfs: Some(true),
            network_mode: Some("none".into()),
            memory: Some(256 << 20),
            pids_limit: Some(64),
            ..Default::default()
        }),
        ..Default::default()
    };
    let engine = |e: bollard::errors::Error| ImageError::Engine(e.to_string());
    let id = docker
        .create_container(None, body)
        .await
        .map_err(engine)?
        .id;
    let ran = tokio::time::timeout(CHECK_TIMEOUT, async {
        docker.start_container(&id, None).await?;
        let options = WaitContainerOptions {
            condition: "not-running".into(),
        };
        match docker.wait_container(&id, Some(options)).next().await {
            Some(Ok(done)) => Ok(done.status_code),
            Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => Ok(code),
            Some(Err(e)) => Err(e),
            None => Ok(-1),
        }
    })
    .await;
    let remove = RemoveContainerOptions {
        force: true,
        ..Default::default()
    };
    let _ = docker.remove_container(&id, Some(remove)).await;
    match ran {
        Ok(Ok(0)) => Ok(()),
        Ok(Ok(code)) => Err(ImageError::Check(format!(
            "python3 in the image exited with {code} (uid 65534, websockets, a read-only bootstrap expected)"
        ))),
        Ok(Err(e)) => Err(engine(e)),
        Err(_) => Err(ImageError::Check(format!(
            "no answer within {} s",
            CHECK_TIMEOUT.as_secs()
        ))),
    }
}

/// The progress file: one line, `PID STAGE IMAGE`, removed at the end.
struct Progress {
    path: PathBuf,
    image: String,
}

impl Progress {
    fn start(cache: &Path, image: &str) -> Self {
        let _ = std::fs::create_dir_all(cache);
        Self {
            path: cache.join(PROGRESS_FILE),
            image: image.to_owned(),
        }
    }

    fn stage(&self, stage: &str) {
        let line = format!("{} {} ({stage})\n", std::process::id(), self.image);
        let _ = std::fs::write(&self.path, line);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The build another process (or this one) has under way, if its pid lives.
pub fn progress_elsewhere(cache: &Path) -> Option<(u32, String)> {
    let text = std::fs::read_to_string(cache.join(PROGRESS_FILE)).ok()?;
    let (pid, what) = text.trim().split_once(' ')?;
    let pid: u32 = pid.parse().ok()?;
    Path::new(&format!("/proc/{pid}"))
        .exists()
        .then(|| (pid, what.to_owned()))
}
