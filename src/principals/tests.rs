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
