//! Sessions in Redis, shared by every gateway that uses the same Redis
//! database and key.
//!
//! Keys: `codemcp:s:{HANDLE}`, a hash with the sealed record (`rec`) and its
//! version (`ver`), expiring after the idle time; `codemcp:l:{HANDLE}`, the
//! lease token, expiring after the lease time. The braces are Redis Cluster
//! hash tags: both keys of a handle land in one slot, as a script that
//! touches both requires. Every compare-and-set is one Lua script, so it is
//! atomic on the server.

use std::future::Future;
use std::time::Duration;

use ::redis::aio::ConnectionManager;
use ::redis::{AsyncCommands, Client, RedisResult, Script, Value};
use futures::FutureExt;
use futures::future::BoxFuture;

use super::sealed::{Backend, Expiry, Fetched};
use super::spec::redact_url;
use super::{Handle, StoreError, StoreLimits};

/// The longest wait for a connection: a Redis that is down shows up fast,
/// even under a long store timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The record if it fits in ARGV[2] bytes (else its length), refreshing its
/// TTL unless it was written to expire at a fixed time (`fixed`).
const FETCH: &str = r"
local n = redis.call('HSTRLEN', KEYS[1], 'rec')
if n == 0 then return false end
if redis.call('HEXISTS', KEYS[1], 'fixed') == 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
if n > tonumber(ARGV[2]) then return n end
return {redis.call('HGET', KEYS[1], 'rec'), redis.call('HGET', KEYS[1], 'ver') or '0'}
";

/// Takes the lease; returns the record's version, or nil when the lease is held.
const LOCK: &str = r"
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
return redis.call('HGET', KEYS[2], 'ver') or '0'
";

/// Writes the record if the lease is ours or free and the version is the fence.
const PUT: &str = r"
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
if (redis.call('HGET', KEYS[2], 'ver') or '0') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[2], 'rec', ARGV[4], 'ver', ARGV[3])
if ARGV[6] == '1' then redis.call('HSET', KEYS[2], 'fixed', '1') else redis.call('HDEL', KEYS[2], 'fixed') end
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return 1
";

/// PUT, then the lease deleted if it is ours (also when the write is refused).
const PUT_UNLOCK: &str = r"
local holder = redis.call('GET', KEYS[1])
local mine = holder == ARGV[1]
if holder and not mine then return 0 end
local written = 0
if (redis.call('HGET', KEYS[2], 'ver') or '0') == ARGV[2] then
  redis.call('HSET', KEYS[2], 'rec', ARGV[4], 'ver', ARGV[3])
  if ARGV[6] == '1' then redis.call('HSET', KEYS[2], 'fixed', '1') else redis.call('HDEL', KEYS[2], 'fixed') end
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
  written = 1
end
if mine then redis.call('DEL', KEYS[1]) end
return written
";

/// Deletes the lease if it is still ours.
const UNLOCK: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

pub(crate) struct RedisBackend {
    shown_url: String,
    redis: ConnectionManager,
    limits: StoreLimits,
    fetch: Script,
    lock: Script,
    put: Script,
    put_unlock: Script,
    unlock: Script,
}

fn record_key(handle: &Handle) -> String {
    format!("codemcp:s:{{{handle}}}")
}

fn lease_key(handle: &Handle) -> String {
    format!("codemcp:l:{{{handle}}}")
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl RedisBackend {
    /// Connects lazily: Redis may be down now and come up later.
    pub(crate) fn new(url: &str, limits: StoreLimits) -> Result<Self, StoreError> {
        let shown_url = redact_url(url);
        let config_error = |e: ::redis::RedisError| {
            StoreError::Config(format!(
                "Redis {shown_url}: {}",
                e.detail().unwrap_or("invalid settings")
            ))
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(StoreError::Config(
                "the Redis store must be opened inside a Tokio runtime".into(),
            ));
        }
        let client = Client::open(url).map_err(config_error)?;
        // No retry inside one call: the caller gets `Unavailable` at once and
        // the next call tries again (the manager reconnects a dropped
        // connection by itself), so a Redis outage never stalls a run. A
        // paused Redis keeps the connection: its answers come late and are
        // dropped, and the connection serves again once it resumes.
        let config = ::redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT.min(limits.call_timeout)))
            .set_response_timeout(Some(limits.call_timeout))
            .set_number_of_retries(0);
        let redis =
            ConnectionManager::new_lazy_with_config(client, config).map_err(config_error)?;
        Ok(Self {
            shown_url,
            redis,
            limits,
            fetch: Script::new(FETCH),
            lock: Script::new(LOCK),
            put: Script::new(PUT),
            put_unlock: Script::new(PUT_UNLOCK),
            unlock: Script::new(UNLOCK),
        })
    }

    /// `call` on the shared connection, with the time bound and the error
    /// every caller wants. A connection found dropped (Redis restarted) is
    /// replaced by the manager and the call tried once more on the new one,
    /// so the first call after a restart already works.
    async fn bounded<T, F, Fut>(&self, what: &str, call: F) -> Result<T, StoreError>
    where
        F: Fn(ConnectionManager) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let timed_out = || StoreError::TimedOut {
            store: format!("redis {}", self.shown_url),
            after: self.limits.call_timeout,
        };
        let deadline = tokio::time::Instant::now() + self.limits.call_timeout;
        let mut retried = false;
        loop {
            match tokio::time::timeout_at(deadline, call(self.redis.clone())).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(e)) if e.is_timeout() => return Err(timed_out()),
                Ok(Err(e)) if !retried && e.is_unrecoverable_error() => {
                    tracing::debug!(url = %self.shown_url, what, error = %e, "Redis connection dropped; trying a new one");
                    retried = true;
                }
                Ok(Err(e)) => {
                    tracing::debug!(url = %self.shown_url, what, error = %e, "Redis call failed");
                    return Err(StoreError::Unavailable(format!(
                        "Redis {} ({what}): {e}",
                        self.shown_url
                    )));
                }
                Err(_) => return Err(timed_out()),
            }
        }
    }

    async fn fetch_record(&self, handle: &Handle, max_len: usize) -> Result<Fetched, StoreError> {
        let mut call = self.fetch.key(record_key(handle));
        call.arg(ms(self.limits.idle)).arg(max_len);
        let value: Value = self
            .bounded("load", |mut conn| {
                let call = &call;
                async move { call.invoke_async(&mut conn).await }
            })
            .await?;
        match value {
            Value::Nil => Ok(Fetched::Absent),
            Value::Int(len) => Ok(Fetched::TooLong(usize::try_from(len).unwrap_or(usize::MAX))),
            Value::Array(mut parts) if parts.len() == 2 => {
                let version = match parts.pop() {
                    Some(Value::BulkString(v)) => std::str::from_utf8(&v)
                        .ok()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0),
                    _ => 0,
                };
                match parts.pop() {
                    Some(Value::BulkString(record)) => Ok(Fetched::Record(record, version)),
                    _ => Ok(Fetched::Absent),
                }
            }
            other => Err(StoreError::Unavailable(format!(
                "Redis {}: unexpected load reply {other:?}",
                self.shown_url
            ))),
        }
    }

    async fn lock_handle(&self, handle: &Handle, token: u128) -> Result<Option<u64>, StoreError> {
        let mut call = self.lock.key(lease_key(handle));
        call.key(record_key(handle))
            .arg(&token.to_le_bytes()[..])
            .arg(ms(self.limits.lease_ttl));
        let version: Option<String> = self
            .bounded("acquire", |mut conn| {
                let call = &call;
                async move { call.invoke_async(&mut conn).await }
            })
            .await?;
        // A version that is not a number can only come from someone else's
        // writes; treating it as no record makes the next save fail its fence.
        Ok(version.map(|v| v.parse().unwrap_or(0)))
    }

    async fn put_record(
        &self,
        handle: &Handle,
        token: u128,
        fence: u64,
        record: Vec<u8>,
        expiry: Expiry,
        then_unlock: bool,
    ) -> Result<bool, StoreError> {
        let script = if then_unlock {
            &self.put_unlock
        } else {
            &self.put
        };
        let mut call = script.key(lease_key(handle));
        call.key(record_key(handle))
            .arg(&token.to_le_bytes()[..])
            .arg(fence.to_string())
            .arg((fence + 1).to_string())
            .arg(record);
        match expiry {
            Expiry::Idle => call.arg(ms(self.limits.idle)).arg("0"),
            Expiry::Fixed(lifetime) => call.arg(ms(lifetime)).arg("1"),
        };
        let written: i64 = self
            .bounded("save", |mut conn| {
                let call = &call;
                async move { call.invoke_async(&mut conn).await }
            })
            .await?;
        Ok(written == 1)
    }

    async fn unlock_handle(&self, handle: &Handle, token: u128) -> Result<(), StoreError> {
        let mut call = self.unlock.key(lease_key(handle));
        call.arg(&token.to_le_bytes()[..]);
        let _: i64 = self
            .bounded("release", |mut conn| {
                let call = &call;
                async move { call.invoke_async(&mut conn).await }
            })
            .await?;
        Ok(())
    }

    async fn delete_record(&self, handle: &Handle) -> Result<(), StoreError> {
        let _: i64 = self
            .bounded("remove", |mut conn| async move {
                conn.del(record_key(handle)).await
            })
            .await?;
        Ok(())
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let _: String = self
            .bounded("ping", |mut conn| async move {
                ::redis::cmd("PING").query_async(&mut conn).await
            })
            .await?;
        Ok(())
    }
}

impl Backend for RedisBackend {
    fn kind(&self) -> &'static str {
        "redis"
    }

    fn describe(&self) -> String {
        format!("redis {}", self.shown_url)
    }

    fn probe(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        self.ping().boxed()
    }

    fn fetch<'a>(
        &'a self,
        handle: &'a Handle,
        max_len: usize,
    ) -> BoxFuture<'a, Result<Fetched, StoreError>> {
        self.fetch_record(handle, max_len).boxed()
    }

    fn try_lock<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
    ) -> BoxFuture<'a, Result<Option<u64>, StoreError>> {
        self.lock_handle(handle, token).boxed()
    }

    fn put<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
        fence: u64,
        record: Vec<u8>,
        expiry: Expiry,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.put_record(handle, token, fence, record, expiry, false)
            .boxed()
    }

    fn put_and_unlock<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
        fence: u64,
        record: Vec<u8>,
        expiry: Expiry,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.put_record(handle, token, fence, record, expiry, true)
            .boxed()
    }

    fn unlock<'a>(
        &'a self,
        handle: &'a Handle,
        token: u128,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.unlock_handle(handle, token).boxed()
    }

    fn delete<'a>(&'a self, handle: &'a Handle) -> BoxFuture<'a, Result<(), StoreError>> {
        self.delete_record(handle).boxed()
    }
}
