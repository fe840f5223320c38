#![allow(clippy::expect_used, clippy::unwrap_used)] // a test fails loudly

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

/// netbase 6.6, the real pinned .deb.
const NETBASE: &[u8] = include_bytes!("testdata/netbase_6.6_all.deb");
const NETBASE_SHA256: &str = "7bc354cb841d2e35cd8b581cfdf7383fbe6cfec95c54a619f756499ee3e10a4b";

/// A mirror on loopback answering every GET with `status` and `body`;
/// counts the requests. Fault injection: the body is what a tampered or
/// broken mirror would send.
async fn mirror(status: u16, body: Vec<u8>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let body = body.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body).await;
            });
        }
    });
    (url, hits)
}

fn netbase(urls: Vec<String>) -> Pinned {
    Pinned {
        name: "netbase_6.6_all.deb".into(),
        urls,
        size: NETBASE.len() as u64,
        sha256: NETBASE_SHA256.into(),
    }
}

#[tokio::test]
async fn a_tampered_download_is_refused_and_not_cached() {
    // Same size as the pinned file, other bytes: only the digest can tell.
    let mut tampered = NETBASE.to_vec();
    tampered[NETBASE.len() / 2] ^= 0xff;
    let (bad, _) = mirror(200, tampered).await;
    let (good, good_hits) = mirror(200, NETBASE.to_vec()).await;
    let cache = tempfile::tempdir().unwrap();
    let item = netbase(vec![
        format!("{bad}/pool/netbase.deb"),
        format!("{good}/pool/netbase.deb"),
    ]);
    let err = fetch(&client().unwrap(), cache.path(), &item)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, FetchError::Digest { .. }), "{text}");
    assert!(
        text.contains("netbase_6.6_all.deb") && text.contains(NETBASE_SHA256),
        "{text}"
    );
    assert!(text.contains("refused"), "{text}");
    // Refused outright: not looked for elsewhere, nothing kept.
    assert_eq!(good_hits.load(Ordering::SeqCst), 0);
    assert!(!is_cached(cache.path(), &item));
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn a_download_longer_than_its_pin_is_refused() {
    let mut longer = NETBASE.to_vec();
    longer.extend_from_slice(b"trailing bytes");
    let (bad, _) = mirror(200, longer).await;
    let cache = tempfile::tempdir().unwrap();
    let item = netbase(vec![format!("{bad}/netbase.deb")]);
    let err = fetch(&client().unwrap(), cache.path(), &item)
        .await
        .unwrap_err();
    assert!(matches!(err, FetchError::TooBig { .. }), "{err}");
    assert!(!is_cached(cache.path(), &item));
}

#[tokio::test]
async fn a_missing_file_is_looked_for_at_the_next_source_then_cached() {
    let (gone, _) = mirror(404, b"Not Found".to_vec()).await;
    let (good, good_hits) = mirror(200, NETBASE.to_vec()).await;
    let cache = tempfile::tempdir().unwrap();
    let item = netbase(vec![
        format!("{gone}/netbase.deb"),
        format!("{good}/netbase.deb"),
    ]);
    let (bytes, downloaded) = fetch(&client().unwrap(), cache.path(), &item)
        .await
        .unwrap();
    assert!(downloaded);
    assert_eq!(bytes, NETBASE);
    assert_eq!(good_hits.load(Ordering::SeqCst), 1);
    // The second time comes from the cache: no request at all.
    let (again, downloaded) = fetch(&client().unwrap(), cache.path(), &item)
        .await
        .unwrap();
    assert!(!downloaded);
    assert_eq!(again, NETBASE);
    assert_eq!(good_hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_cached_file_changed_on_disk_is_downloaded_again() {
    let (good, good_hits) = mirror(200, NETBASE.to_vec()).await;
    let cache = tempfile::tempdir().unwrap();
    let item = netbase(vec![format!("{good}/netbase.deb")]);
    std::fs::write(cached_path(cache.path(), &item), b"changed").unwrap();
    let (bytes, downloaded) = fetch(&client().unwrap(), cache.path(), &item)
        .await
        .unwrap();
    assert!(downloaded);
    assert_eq!(bytes, NETBASE);
    assert_eq!(good_hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn no_source_answering_names_every_one_tried() {
    // A port nothing listens on: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (gone, _) = mirror(404, Vec::new()).await;
    let cache = tempfile::tempdir().unwrap();
    let first = format!("http://127.0.0.1:{port}/netbase.deb");
    let second = format!("{gone}/netbase.deb");
    let item = netbase(vec![first.clone(), second.clone()]);
    let err = fetch(&client().unwrap(), cache.path(), &item)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, FetchError::Unavailable { .. }), "{text}");
    assert!(
        text.contains(&first) && text.contains(&second) && text.contains("404"),
        "{text}"
    );
}
