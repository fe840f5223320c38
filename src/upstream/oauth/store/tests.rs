use std::os::unix::fs::PermissionsExt;

use rmcp::transport::auth::{CredentialStore, StoredCredentials};

use super::*;

fn credentials(access: &str) -> StoredCredentials {
    let token = serde_json::from_value(serde_json::json!({
        "access_token": access, "token_type": "Bearer",
        "expires_in": 3600, "refresh_token": "refresh-1"
    }))
    .expect("a token response");
    StoredCredentials::new("client-1".into(), Some(token), vec!["mcp".into()], Some(1))
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).expect("exists").permissions().mode() & 0o777
}

#[tokio::test]
async fn tokens_are_saved_0600_in_a_0700_directory_and_logout_deletes_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let oauth_dir = dir.path().join("codemcp/oauth");
    let store = TokenStore::in_dir(&oauth_dir, "remote", "https://mcp.example.com/mcp");
    assert!(store.load().await.expect("no file is fine").is_none());
    store.save(credentials("access-1")).await.expect("saves");
    assert_eq!(mode(store.path()), 0o600);
    assert_eq!(mode(&oauth_dir), 0o700);
    let loaded = store.load().await.expect("loads").expect("some");
    assert_eq!(loaded.client_id, "client-1");
    // A refresh (rmcp calls save again) replaces the token and keeps the
    // registration's secret.
    store
        .set_client_secret(Some("dcr-secret".into()))
        .await
        .expect("secret");
    store.save(credentials("access-2")).await.expect("saves");
    let file = store.read().expect("reads").expect("some");
    assert_eq!(file.client_secret.as_deref(), Some("dcr-secret"));
    let text = fs::read_to_string(store.path()).expect("text");
    assert!(
        text.contains("access-2") && !text.contains("access-1"),
        "{text}"
    );
    assert!(store.remove().expect("logout"), "a file was deleted");
    assert!(!store.path().exists());
    assert!(
        !store.remove().expect("second logout"),
        "nothing left to delete"
    );
}

#[test]
fn each_server_name_and_url_has_its_own_file() {
    let dir = Path::new("/x");
    let a = TokenStore::in_dir(dir, "gh", "https://a.example/mcp");
    let b = TokenStore::in_dir(dir, "gh", "https://b.example/mcp");
    let c = TokenStore::in_dir(dir, "../evil", "https://a.example/mcp");
    assert_ne!(a.path(), b.path());
    assert_eq!(c.path().parent(), Some(dir), "{}", c.path().display());
}

#[tokio::test]
async fn a_token_file_readable_by_others_is_made_private() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = TokenStore::in_dir(dir.path(), "remote", "https://mcp.example.com/mcp");
    store.save(credentials("a")).await.expect("saves");
    fs::set_permissions(store.path(), fs::Permissions::from_mode(0o644)).expect("chmod");
    assert!(store.read().expect("still usable").is_some());
    assert_eq!(mode(store.path()), 0o600, "fixed on read");
}

#[tokio::test]
async fn a_token_file_that_is_a_symlink_or_someone_elses_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = TokenStore::in_dir(dir.path(), "remote", "https://mcp.example.com/mcp");
    let elsewhere = dir.path().join("planted.json");
    fs::write(&elsewhere, "{}").expect("write");
    std::os::unix::fs::symlink(&elsewhere, store.path()).expect("symlink");
    let refused = store
        .read()
        .err()
        .expect("a symlink is refused")
        .to_string();
    assert!(refused.contains("is a symlink"), "{refused}");
    assert!(
        store.load().await.is_err(),
        "rmcp sees a store error, not 'no login'"
    );
    fs::remove_file(store.path()).expect("unlink");
    // Another owner: only root can hand a file to someone else.
    if nix::unistd::geteuid().is_root() {
        store.save(credentials("a")).await.expect("saves");
        nix_chown(store.path(), 65534);
        let refused = store
            .read()
            .err()
            .expect("foreign file refused")
            .to_string();
        assert!(refused.contains("owned by uid 65534"), "{refused}");
    }
}

#[tokio::test]
async fn a_token_file_writable_by_others_is_refused_not_repaired() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = TokenStore::in_dir(dir.path(), "remote", "https://mcp.example.com/mcp");
    store.save(credentials("a")).await.expect("saves");
    fs::set_permissions(store.path(), fs::Permissions::from_mode(0o666)).expect("chmod");
    let refused = store.read().err().expect("refused").to_string();
    assert!(refused.contains("chmod 600"), "{refused}");
    assert_eq!(
        mode(store.path()),
        0o666,
        "left for the operator to look at"
    );
}

fn nix_chown(path: &Path, uid: u32) {
    std::os::unix::fs::chown(path, Some(uid), None).expect("chown as root");
}

#[tokio::test]
async fn a_refused_refresh_token_leaves_the_client_and_drops_the_tokens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = TokenStore::in_dir(dir.path(), "remote", "https://mcp.example.com/mcp");
    let saved = credentials("a");
    store.save(saved.clone()).await.expect("saves");
    store
        .on_refresh_token_rejected(&saved)
        .await
        .expect("recorded");
    let file = store.read().expect("reads").expect("some");
    assert!(file.refresh_rejected);
    let kept = file.credentials.expect("client kept");
    assert_eq!(kept.client_id, "client-1");
    assert!(kept.token_response.is_none(), "dead tokens are dropped");
}

#[test]
fn a_garbled_token_file_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = TokenStore::in_dir(dir.path(), "remote", "https://mcp.example.com/mcp");
    fs::write(store.path(), "not json").expect("write");
    fs::set_permissions(store.path(), fs::Permissions::from_mode(0o600)).expect("chmod");
    let error = store.read().err().expect("refused").to_string();
    assert!(
        error.contains("not a codemcp token file") && error.contains("codemcp auth logout remote"),
        "{error}"
    );
}

#[tokio::test]
async fn two_gateways_sharing_a_login_refresh_one_at_a_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = "https://mcp.example.com/mcp";
    // Two stores on one file, as two gateway processes have.
    let first = TokenStore::in_dir(dir.path(), "remote", url);
    let second = TokenStore::in_dir(dir.path(), "remote", url);
    let held = first.acquire_refresh_guard().await.expect("locks");
    let waiting = tokio::spawn(async move { second.acquire_refresh_guard().await.is_ok() });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "the second refresh waits for the first"
    );
    drop(held);
    let got = tokio::time::timeout(std::time::Duration::from_secs(30), waiting)
        .await
        .expect("the second refresh goes on once the first is done")
        .expect("task");
    assert!(got);
}

#[tokio::test]
async fn a_rejection_does_not_drop_tokens_another_process_saved_since() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = TokenStore::in_dir(dir.path(), "remote", "https://mcp.example.com/mcp");
    let old = credentials("old");
    store.save(credentials("new")).await.expect("saves");
    store
        .on_refresh_token_rejected(&old)
        .await
        .expect("handled");
    let file = store.read().expect("reads").expect("some");
    assert!(!file.refresh_rejected);
    assert!(file.credentials.and_then(|c| c.token_response).is_some());
}
