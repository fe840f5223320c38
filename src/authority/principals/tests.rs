use std::os::unix::fs::PermissionsExt;

use super::*;

fn temp_file(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("codemcp-principals-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir.join("tokens.json")
}

#[test]
fn added_token_authenticates_its_principal_and_is_not_stored() {
    let path = temp_file("add");
    let alice = add_token(&path, "alice").unwrap();
    let bob = add_token(&path, "bob").unwrap();
    assert!(alice.len() >= 43, "256 random bits");
    let text = fs::read_to_string(&path).unwrap();
    assert!(!text.contains(&alice) && !text.contains(&bob));
    let mode = fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let principals = Principals::load(&path).unwrap();
    assert_eq!(principals.authenticate(&alice).unwrap().name, "alice");
    assert_eq!(principals.authenticate(&bob).unwrap().name, "bob");
    assert!(principals.authenticate("guess").is_none());
    assert!(principals.authenticate("").is_none());
    assert_ne!(
        principals.authenticate(&alice).unwrap().owner(),
        principals.authenticate(&bob).unwrap().owner()
    );
}

#[test]
fn a_second_principal_of_one_name_is_refused() {
    let path = temp_file("dup");
    add_token(&path, "ci").unwrap();
    assert!(matches!(
        add_token(&path, "ci"),
        Err(PrincipalsError::Exists { .. })
    ));
    assert!(matches!(
        add_token(&path, "no spaces"),
        Err(PrincipalsError::BadName(_))
    ));
    remove_token(&path, "ci").unwrap();
    assert!(matches!(
        remove_token(&path, "ci"),
        Err(PrincipalsError::Unknown { .. })
    ));
}

#[test]
fn a_bad_digest_is_an_error_at_its_line_and_column() {
    let text = "{\"principals\": {\n  \"a\": {\"sha256\": \"abc\"}\n}}";
    let Err(PrincipalsError::Parse { line, message, .. }) = parse(Path::new("t.json"), text) else {
        panic!("a short digest must be refused");
    };
    assert_eq!(line, 2);
    assert!(message.contains("64 hex digits"), "{message}");
    let policy = format!(
        "{{\"principals\": {{\"a\": {{\"sha256\": \"{}\",\n \"policy\": {{\"fs\": {{\"w\": \"maybe\"}}}}}}}}}}",
        "0".repeat(64)
    );
    let Err(PrincipalsError::Parse { line, .. }) = parse(Path::new("t.json"), &policy) else {
        panic!("a bad decision must be refused");
    };
    assert_eq!(line, 2);
}

#[test]
fn a_token_added_while_serving_works_without_a_restart() {
    let path = temp_file("reload");
    add_token(&path, "first").unwrap();
    let principals = Principals::load(&path).unwrap();
    let later = add_token(&path, "later").unwrap();
    // The file is looked at again at most once a second.
    std::thread::sleep(RECHECK + Duration::from_millis(50));
    assert_eq!(principals.authenticate(&later).unwrap().name, "later");
    // A file broken by hand keeps the principals that were good.
    fs::write(&path, "{ not json").unwrap();
    std::thread::sleep(RECHECK + Duration::from_millis(50));
    assert_eq!(principals.authenticate(&later).unwrap().name, "later");
}

#[test]
fn a_principal_added_by_another_user_to_a_writable_file_is_not_reloaded() {
    let path = temp_file("writable");
    let alice = add_token(&path, "alice").unwrap();
    let principals = Principals::load(&path).unwrap();
    // Someone makes the file world-writable and adds themselves.
    fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
    let mallory_token = "mallory-token";
    let body = serde_json::json!({"principals": {
        "alice": {"sha256": hex(&token_digest(&alice))},
        "mallory": {"sha256": hex(&token_digest(mallory_token))},
    }});
    fs::write(&path, body.to_string()).unwrap();
    std::thread::sleep(RECHECK + Duration::from_millis(200));
    assert!(principals.authenticate(mallory_token).is_none());
    assert_eq!(principals.authenticate(&alice).unwrap().name, "alice");
    let err = Principals::load(&path).unwrap_err().to_string();
    assert!(err.contains("chmod 600"), "{err}");
}

#[test]
fn a_tokens_file_that_is_a_fifo_or_another_users_is_refused() {
    let path = temp_file("fifo");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    let err = Principals::load(&path).unwrap_err().to_string();
    assert!(err.contains("a FIFO"), "{err}");
    fs::remove_file(&path).unwrap();
    if nix::unistd::geteuid().is_root() {
        add_token(&path, "alice").unwrap();
        std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
        let err = Principals::load(&path).unwrap_err().to_string();
        assert!(err.contains("owned by uid 65534"), "{err}");
    }
}
