//! The SQL of the `file` store: one statement or one transaction per
//! compare-and-set, each run on a connection the backend holds.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, named_params};
use std::time::{SystemTime, UNIX_EPOCH};

use super::super::sealed::Fetched;
use super::{LIVE_VERSION, SWEEP_BATCH};

pub(super) fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

pub(super) fn fetch_row(
    conn: &Connection,
    handle: &str,
    max_len: usize,
    now: i64,
    idle: i64,
) -> rusqlite::Result<Fetched> {
    // A record written to expire at a fixed time (a parked run) keeps it.
    let refresh =
        "UPDATE sessions SET expires_at = CASE WHEN fixed = 0 THEN :expires ELSE expires_at END
                   WHERE handle = :handle AND version > 0 AND expires_at > :now";
    let params =
        named_params! { ":expires": now.saturating_add(idle), ":handle": handle, ":now": now };
    if conn.prepare_cached(refresh)?.execute(params)? == 0 {
        return Ok(Fetched::Absent);
    }
    // length() reads a blob's size from its header; the blob itself is only
    // returned when it fits.
    // The version comes from the same statement: what the record must say.
    let read =
        "SELECT length(r.record), CASE WHEN length(r.record) <= :max THEN r.record END, s.version
                FROM records r JOIN sessions s ON s.handle = r.handle WHERE r.handle = :handle";
    let max = i64::try_from(max_len).unwrap_or(i64::MAX);
    let row = conn
        .prepare_cached(read)?
        .query_row(named_params! { ":max": max, ":handle": handle }, |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, Option<Vec<u8>>>(1)?,
                row.get::<_, i64>(2)?,
            ))
        })
        .optional()?;
    Ok(match row {
        // Removed between the two statements.
        None => Fetched::Absent,
        Some((_, Some(record), version)) => Fetched::Record(record, version.max(0) as u64),
        Some((len, None, _)) => Fetched::TooLong(usize::try_from(len).unwrap_or(usize::MAX)),
    })
}

pub(super) fn lock_row(
    conn: &Connection,
    handle: &str,
    token: u128,
    now: i64,
    ttl: i64,
) -> rusqlite::Result<Option<u64>> {
    let sql = format!(
        "INSERT INTO sessions (handle, lease_token, lease_until) VALUES (:handle, :token, :until)
         ON CONFLICT (handle) DO UPDATE SET lease_token = excluded.lease_token, lease_until = excluded.lease_until
         WHERE sessions.lease_until <= :now
         RETURNING {LIVE_VERSION}"
    );
    let params = named_params! {
        ":handle": handle, ":token": token.to_le_bytes(), ":until": now.saturating_add(ttl), ":now": now,
    };
    let fence = conn
        .prepare_cached(&sql)?
        .query_row(params, |row| row.get::<_, i64>(0))
        .optional()?;
    Ok(fence.map(|v| v.max(0) as u64))
}

/// The version of `handle`'s live record, 0 if none.
pub(super) fn live_version(conn: &Connection, handle: &str, now: i64) -> rusqlite::Result<u64> {
    let sql = format!("SELECT {LIVE_VERSION} FROM sessions WHERE handle = :handle");
    let version = conn
        .prepare_cached(&sql)?
        .query_row(named_params! { ":handle": handle, ":now": now }, |row| {
            row.get::<_, i64>(0)
        })
        .optional()?;
    Ok(version.map_or(0, |v| v.max(0) as u64))
}

pub(super) struct Put {
    pub(super) handle: String,
    pub(super) token: u128,
    pub(super) fence: i64,
    pub(super) record: Vec<u8>,
    /// How long the record lives (ms), and whether loads leave that alone.
    pub(super) lives: i64,
    pub(super) fixed: bool,
}

pub(super) fn unlock_row(
    conn: &Connection,
    handle: &str,
    token: u128,
    now: i64,
) -> rusqlite::Result<()> {
    let sql = "UPDATE sessions SET lease_token = NULL, lease_until = 0 WHERE handle = :handle AND lease_token = :token";
    conn.prepare_cached(sql)?
        .execute(named_params! { ":handle": handle, ":token": token.to_le_bytes() })?;
    drop_if_dead(conn, handle, now)
}

/// Saves `put`'s record if its lease still holds; with `unlock`, the lease
/// is freed in the same transaction (one commit, not two).
pub(super) fn put_row(
    conn: &mut Connection,
    put: &Put,
    now: i64,
    unlock: bool,
) -> rusqlite::Result<bool> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let update = format!(
        "UPDATE sessions SET version = :fence + 1, expires_at = :expires, fixed = :fixed,
             lease_token = CASE WHEN :unlock AND lease_token = :token THEN NULL ELSE lease_token END,
             lease_until = CASE WHEN :unlock AND lease_token = :token THEN 0 ELSE lease_until END
         WHERE handle = :handle AND (lease_token = :token OR lease_until <= :now) AND {LIVE_VERSION} = :fence"
    );
    let expires = now.saturating_add(put.lives);
    let mut claimed = tx.prepare_cached(&update)?.execute(named_params! {
        ":fence": put.fence, ":expires": expires, ":fixed": put.fixed, ":handle": put.handle,
        ":token": put.token.to_le_bytes(), ":now": now, ":unlock": unlock,
    })? == 1;
    if !claimed && put.fence == 0 {
        // No row at all (never leased, or swept after our lease expired): a
        // first save may create it.
        let insert =
            "INSERT INTO sessions (handle, version, expires_at, fixed) VALUES (:handle, 1, :expires, :fixed)
                      ON CONFLICT (handle) DO NOTHING";
        let params =
            named_params! { ":handle": put.handle, ":expires": expires, ":fixed": put.fixed };
        claimed = tx.prepare_cached(insert)?.execute(params)? == 1;
    }
    if !claimed {
        return Ok(false);
    }
    // An update in place, where a row is there, is cheaper than REPLACE's
    // delete and insert.
    let params = named_params! { ":handle": put.handle, ":record": put.record };
    let update = "UPDATE records SET record = :record WHERE handle = :handle";
    if tx.prepare_cached(update)?.execute(params)? == 0 {
        let insert = "INSERT INTO records (handle, record) VALUES (:handle, :record)";
        tx.prepare_cached(insert)?.execute(params)?;
    }
    tx.commit()?;
    Ok(true)
}

/// Deletes `handle`'s row (and record) when it holds neither a live record
/// nor a live lease.
pub(super) fn drop_if_dead(conn: &Connection, handle: &str, now: i64) -> rusqlite::Result<()> {
    let sql = format!(
        "DELETE FROM sessions WHERE handle = :handle AND lease_until <= :now AND {LIVE_VERSION} = 0"
    );
    conn.prepare_cached(&sql)?
        .execute(named_params! { ":handle": handle, ":now": now })?;
    Ok(())
}

pub(super) fn sweep_batch(conn: &Connection, now: i64) -> rusqlite::Result<usize> {
    let sql = "DELETE FROM sessions WHERE handle IN (
                   SELECT handle FROM sessions WHERE expires_at <= :now AND lease_until <= :now LIMIT :batch)";
    conn.prepare_cached(sql)?
        .execute(named_params! { ":now": now, ":batch": SWEEP_BATCH })
}

/// Returns free pages to the file system, then empties the WAL, so the
/// files shrink after sessions expire. Each pragma works a step per row, so
/// its rows are read to the end (which `execute_batch` does not do).
pub(super) fn shrink(conn: &Connection) -> rusqlite::Result<()> {
    for pragma in [
        "PRAGMA incremental_vacuum",
        "PRAGMA wal_checkpoint(TRUNCATE)",
    ] {
        let mut stmt = conn.prepare_cached(pragma)?;
        let mut rows = stmt.query([])?;
        while rows.next()?.is_some() {}
    }
    Ok(())
}
