//! One rmcp client connection to an upstream MCP server: spawning or dialing it,
//! the handshake, tool listing, and the notifications it sends us.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams, Tool};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

use super::UpstreamError;
use super::child::{ChildTransport, Liveness};
use super::progress::WithoutProgressToken;
use crate::config::{ServerConfig, Transport};

/// A server that keeps sending `next_cursor` is cut off here.
const MAX_TOOL_PAGES: usize = 200;

/// A live connection to one upstream.
pub struct Client {
    service: RunningService<RoleClient, UpstreamClient>,
    /// Watches a stdio server's output; HTTP connections have none.
    liveness: Option<Arc<Liveness>>,
}

impl Client {
    pub fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    pub fn liveness(&self) -> Option<Arc<Liveness>> {
        self.liveness.clone()
    }

    /// Whether calls can still go through. rmcp's own `is_closed` stays false
    /// after the transport ended by itself, hence the other two checks.
    pub fn is_alive(&self) -> bool {
        !self.service.is_closed()
            && !self.service.peer().is_transport_closed()
            && !self.liveness.as_ref().is_some_and(|l| l.is_lost())
    }
}

/// Our side of an upstream connection. It advertises no roots, sampling or
/// elicitation (server-filesystem would replace its allowed directories with our
/// roots), and forwards `tools/list_changed` to the catalog.
pub struct UpstreamClient {
    server: String,
    changes: mpsc::UnboundedSender<String>,
}

impl ClientHandler for UpstreamClient {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(target: "codemcp::upstream", server = %self.server, "upstream tool list changed");
        let _ = self.changes.send(self.server.clone());
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("codemcp", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// Connects and completes the MCP handshake within the server's timeout.
/// `max_message` bounds one message from the server (a stdio line, an SSE event).
pub async fn connect(
    config: &ServerConfig,
    changes: mpsc::UnboundedSender<String>,
    max_message: usize,
) -> Result<Client, UpstreamError> {
    let handler = UpstreamClient {
        server: config.name.clone(),
        changes,
    };
    let timeout = config.handshake_timeout;
    let connecting = async {
        match &config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let child = Child {
                    command,
                    args,
                    env,
                    cwd: cwd.as_deref(),
                };
                let (transport, liveness) = spawn_child(&config.name, &child, max_message)?;
                let service = handler
                    .serve(WithoutProgressToken(transport))
                    .await
                    .map_err(|e| handshake(config, e))?;
                Ok(Client {
                    service,
                    liveness: Some(liveness),
                })
            }
            Transport::Http { url, headers } => {
                let oauth = &config.oauth;
                let http = http_config(&config.name, url, headers, max_message)?;
                // A configured Authorization header wins over OAuth.
                let static_auth = http.auth_header.is_some();
                let oauth_client = match static_auth {
                    true => None,
                    false => super::oauth::authorized_client(&config.name, url, oauth)
                        .await
                        .map_err(|e| login_error(config, &e))?,
                };
                let served = match oauth_client {
                    Some(client) => {
                        let transport = StreamableHttpClientTransport::with_client(client, http);
                        handler.serve(WithoutProgressToken(transport)).await
                    }
                    None => {
                        let transport = StreamableHttpClientTransport::from_config(http);
                        handler.serve(WithoutProgressToken(transport)).await
                    }
                };
                // Turned away for want of a (new) login: say which command helps.
                if served.is_err()
                    && !static_auth
                    && let Some(e) = super::oauth::needs_login(&config.name, url, oauth).await
                {
                    return Err(login_error(config, &e));
                }
                Ok(Client {
                    service: served.map_err(|e| handshake(config, e))?,
                    liveness: None,
                })
            }
        }
    };
    tokio::time::timeout(timeout, connecting)
        .await
        .map_err(|_| UpstreamError::Handshake {
            server: config.name.clone(),
            message: format!("no handshake within {} s", timeout.as_secs_f64()),
        })?
}

fn handshake(config: &ServerConfig, e: impl std::fmt::Display) -> UpstreamError {
    UpstreamError::Handshake {
        server: config.name.clone(),
        message: e.to_string(),
    }
}

/// What starts a stdio server.
struct Child<'a> {
    command: &'a str,
    args: &'a [String],
    env: &'a std::collections::BTreeMap<String, String>,
    cwd: Option<&'a std::path::Path>,
}

fn spawn_child(
    server: &str,
    child: &Child<'_>,
    max_message: usize,
) -> Result<(ChildTransport, Arc<Liveness>), UpstreamError> {
    let mut cmd = tokio::process::Command::new(child.command);
    cmd.args(child.args).envs(child.env).kill_on_drop(true);
    if let Some(cwd) = child.cwd {
        cmd.current_dir(cwd);
    }
    codemcp_base::process::die_with_parent(&mut cmd);
    let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
    // Its own process group, so killing it also kills what it started (npx → node).
    wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
    let (transport, liveness, stderr) =
        ChildTransport::spawn(wrapped, max_message).map_err(|e| UpstreamError::Spawn {
            server: server.to_owned(),
            command: child.command.to_owned(),
            message: e.to_string(),
        })?;
    if let Some(stderr) = stderr {
        let server = server.to_owned();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(target: "codemcp::upstream::stderr", server = %server, "{line}");
            }
        });
    }
    Ok((transport, liveness))
}

fn login_error(config: &ServerConfig, e: &super::oauth::OAuthError) -> UpstreamError {
    UpstreamError::Auth {
        server: config.name.clone(),
        message: e.to_string(),
    }
}

fn http_config(
    server: &str,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    max_message: usize,
) -> Result<StreamableHttpClientTransportConfig, UpstreamError> {
    let mut custom = HashMap::new();
    let mut auth = None;
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("authorization") {
            // rmcp sends its own Authorization header from `auth_header` (without "Bearer ").
            auth = Some(value.strip_prefix("Bearer ").unwrap_or(value).to_owned());
            continue;
        }
        let bad = |what: &str| UpstreamError::Config {
            server: server.to_owned(),
            message: format!("invalid header {what} '{name}'"),
        };
        let name = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?;
        let value = http::HeaderValue::from_str(value).map_err(|_| bad("value"))?;
        custom.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    config.custom_headers = custom;
    config.auth_header = auth;
    // rmcp caps plain JSON bodies at 16 MiB by itself; this bounds SSE events.
    Ok(config.max_sse_event_size(max_message))
}

/// The server's `serverInfo.version` from its handshake.
pub fn server_version(client: &Client) -> String {
    client
        .peer()
        .peer_info()
        .and_then(|info| info.server_info.as_ref().map(|i| i.version.clone()))
        .unwrap_or_default()
}

/// Every tool as the server lists it, following pagination.
pub async fn list_raw(client: &Client, server: &str) -> Result<Vec<Tool>, UpstreamError> {
    let mut tools: Vec<Tool> = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_TOOL_PAGES {
        let page = client
            .peer()
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .map_err(|e| UpstreamError::List {
                server: server.to_owned(),
                message: e.to_string(),
            })?;
        tools.extend(page.tools);
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    if cursor.is_some() {
        tracing::warn!(target: "codemcp::upstream", %server, "tools/list kept paginating; using the first {MAX_TOOL_PAGES} pages");
    }
    Ok(tools
        .into_iter()
        .filter(|t| shown_name(server, &t.name))
        .collect())
}

/// Whether a tool's name can be shown to people as it is: a name with
/// control, bidi or invisible characters could forge or reorder the text of
/// an approval question or a log line, so the tool is left out (logged).
fn shown_name(server: &str, name: &str) -> bool {
    if !codemcp_base::for_humans::has_hidden(name) {
        return true;
    }
    tracing::warn!(
        target: "codemcp::upstream",
        %server,
        tool = %codemcp_base::for_humans::shortened(name, 200),
        "tool left out: its name has control, bidi or invisible characters"
    );
    false
}

/// How many times its configured timeout a retried server may take to start.
const PATIENCE_MAX: u32 = 4;

/// Retry pacing for a server that went down: 0.5 s doubling to 30 s.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    failures: u32,
    last_attempt: Option<Instant>,
}

impl Backoff {
    pub const fn new() -> Self {
        Self {
            failures: 0,
            last_attempt: None,
        }
    }

    pub fn delay(&self) -> Duration {
        if self.failures == 0 {
            return Duration::ZERO;
        }
        Duration::from_millis(500u64.saturating_mul(1 << self.failures.min(7).saturating_sub(1)))
            .min(Duration::from_secs(30))
    }

    /// Time left before the next attempt is allowed.
    pub fn wait_left(&self) -> Duration {
        match self.last_attempt {
            Some(at) => self.delay().saturating_sub(at.elapsed()),
            None => Duration::ZERO,
        }
    }

    /// The handshake (and first listing) timeout for the next attempt: `base` times one more
    /// than the failures so far, at most [`PATIENCE_MAX`] times. A server slower to start than
    /// its timeout (a Python server on a loaded machine) would otherwise be killed at the same
    /// point on every retry and never join.
    pub fn patience(&self, base: Duration) -> Duration {
        base.saturating_mul(self.failures.saturating_add(1).min(PATIENCE_MAX))
    }

    pub fn attempted(&mut self, ok: bool) {
        self.last_attempt = Some(Instant::now());
        self.failures = if ok {
            0
        } else {
            self.failures.saturating_add(1)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failed_start_gives_the_next_one_more_time_up_to_four_times() {
        let base = Duration::from_secs(30);
        let mut b = Backoff::new();
        assert_eq!(b.patience(base), base);
        b.attempted(false);
        assert_eq!(b.patience(base), Duration::from_secs(60));
        for _ in 0..10 {
            b.attempted(false);
        }
        assert_eq!(b.patience(base), Duration::from_secs(120));
        b.attempted(true);
        assert_eq!(b.patience(base), base);
    }

    #[test]
    fn backoff_doubles_and_resets() {
        let mut b = Backoff::new();
        assert_eq!(b.delay(), Duration::ZERO);
        b.attempted(false);
        assert_eq!(b.delay(), Duration::from_millis(500));
        b.attempted(false);
        assert_eq!(b.delay(), Duration::from_secs(1));
        for _ in 0..20 {
            b.attempted(false);
        }
        assert_eq!(b.delay(), Duration::from_secs(30));
        b.attempted(true);
        assert_eq!(b.delay(), Duration::ZERO);
    }
}
