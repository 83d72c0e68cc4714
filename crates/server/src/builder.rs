//! [`ServerBuilder`]: a durable MCP tasks server around your tools in a dozen lines — a
//! store URL, a [`Toolbox`], limits and tokens, then stdio or Streamable HTTP. It is what
//! `tasklatch serve` runs, with the runtime in the same process (dispatcher, workers,
//! sweeper), wake-ups from other processes on a shared PostgreSQL store, and a drain on
//! SIGTERM or SIGINT: nothing new admitted, blocked calls ended, running tools given
//! `drain_ms` to reach their completion write (a second signal stops at once).
//!
//! ```no_run
//! # async fn serve(toolbox: tasklatch_server::tool::Toolbox) -> Result<(), tasklatch_server::builder::ServeError> {
//! use tasklatch_server::builder::ServerBuilder;
//! use tasklatch_server::mcp::http::Tokens;
//!
//! let tokens = Tokens::load("tokens.json".as_ref()).map_err(tasklatch_server::builder::ServeError::Config)?;
//! let serving = ServerBuilder::new("sqlite:tasks.db")
//!     .toolbox(toolbox)
//!     .tokens(tokens)
//!     .workers(4)
//!     .bind_http("127.0.0.1:8931")
//!     .await?;
//! println!("listening http://{}/mcp", serving.local_addr());
//! serving.run().await
//! # }
//! ```
//!
//! Everything runs on the ambient tokio runtime (multi-threaded, with time, IO and
//! signals enabled). A task interrupted by a crash or an unfinished drain is delivered
//! again after `lease_ms` to whichever server process runs next on the store.

use crate::mcp::http::{self, HttpConfig, Listening, Tokens};
use crate::mcp::limits::LimitsConfig;
use crate::mcp::server::stdio_negotiated;
use crate::mcp::{Assembly, Server, ServerConfig, Session};
use crate::runtime::{NoProbe, Probe, Runtime, RuntimeConfig, TokioEnv};
use crate::store::{ChangeFeed, StoreOptions, TaskStore, open_store};
use crate::tool::Toolbox;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

/// Most worker loops one process runs.
pub const WORKERS_MAX: usize = 256;

/// Why a server could not start or stopped.
#[derive(Debug)]
pub enum ServeError {
    /// The store URL could not be opened or followed.
    Store(String),
    /// The address could not be listened on.
    Listen {
        /// The address asked for.
        address: String,
        /// Why not.
        error: String,
    },
    /// A setting is out of range, or a needed one is missing (the message names it).
    Config(String),
    /// The HTTP server failed while serving.
    Serve(String),
}

impl ServeError {
    /// Whether the error is in what the server was given (a bad store URL, address or
    /// setting) rather than something that failed while running.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, ServeError::Serve(_))
    }
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Store(error) => write!(f, "store: {error}"),
            ServeError::Listen { address, error } => write!(f, "listen on {address}: {error}"),
            ServeError::Config(error) => f.write_str(error),
            ServeError::Serve(error) => write!(f, "http server: {error}"),
        }
    }
}

impl std::error::Error for ServeError {}

enum StoreChoice {
    Url(String),
    Given(Arc<dyn TaskStore>),
}

enum ToolsChoice {
    Toolbox(Toolbox),
    #[cfg(feature = "example-tools")]
    Examples {
        exports: std::path::PathBuf,
    },
}

/// A server to be: see the module docs. Every setting has the default `tasklatch serve`
/// has.
pub struct ServerBuilder {
    store: StoreChoice,
    tools: ToolsChoice,
    config: ServerConfig,
    http: HttpConfig,
    listening: Listening,
    workers: usize,
    lease_ms: u64,
    drain_ms: u64,
    probe: Arc<dyn Probe>,
}

impl ServerBuilder {
    /// A server over the store at `store_url` (`sqlite:PATH[?synchronous=full|normal]`,
    /// `memory:`, or `postgres://…` with the `postgres` feature), with no tools yet.
    pub fn new(store_url: impl Into<String>) -> ServerBuilder {
        ServerBuilder::over(StoreChoice::Url(store_url.into()))
    }

    /// A server over a store you opened (your own [`TaskStore`] adapter, for one).
    pub fn with_store(store: Arc<dyn TaskStore>) -> ServerBuilder {
        ServerBuilder::over(StoreChoice::Given(store))
    }

    fn over(store: StoreChoice) -> ServerBuilder {
        ServerBuilder {
            store,
            tools: ToolsChoice::Toolbox(Toolbox::new()),
            config: ServerConfig::default(),
            http: HttpConfig {
                tokens: Tokens::default(),
                allowed_origins: Vec::new(),
                body_bytes_max: http::BODY_BYTES_MAX,
                sessions_max: http::SESSIONS_MAX,
                anonymous: None,
            },
            listening: Listening {
                connections_max: http::CONNECTIONS_MAX,
                idle_ms: http::IDLE_MS,
            },
            workers: 4,
            lease_ms: 30_000,
            drain_ms: 10_000,
            probe: Arc::new(NoProbe),
        }
    }

    /// The tools to offer (replaces any given before).
    pub fn toolbox(mut self, toolbox: Toolbox) -> ServerBuilder {
        self.tools = ToolsChoice::Toolbox(toolbox);
        self
    }

    /// The built-in example tools `tasklatch serve` offers (`export`, `archive`, `echo`,
    /// `notify`), exporting to `exports`; with `conformance_tools`, also the official
    /// conformance suite's fixture tools. Feature `example-tools`.
    #[cfg(feature = "example-tools")]
    pub fn example_tools(
        mut self,
        exports: std::path::PathBuf,
        conformance_tools: bool,
    ) -> ServerBuilder {
        self.tools = ToolsChoice::Examples { exports };
        self.config.conformance_tools = conformance_tools;
        self
    }

    /// The `serverInfo` name and version `initialize` answers with.
    pub fn name(mut self, name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        self.config.name = name.into();
        self.config.version = version.into();
        self
    }

    /// Per-caller budgets (blocked calls, requests in flight, sessions, poll rate).
    pub fn limits(mut self, limits: LimitsConfig) -> ServerBuilder {
        self.config.limits = limits;
        self
    }

    /// HTTP bearer tokens, each bound to the authorization key its tasks belong to.
    pub fn tokens(mut self, tokens: Tokens) -> ServerBuilder {
        self.http.tokens = tokens;
        self
    }

    /// HTTP requests with no `Authorization` header are bound to the key `anonymous`
    /// instead of refused (every such caller then shares that key's tasks).
    pub fn anonymous(mut self, anonymous: bool) -> ServerBuilder {
        self.http.anonymous = anonymous.then(|| "anonymous".to_owned());
        self
    }

    /// An HTTP `Origin` allowed besides loopback ones.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> ServerBuilder {
        self.http.allowed_origins.push(origin.into());
        self
    }

    /// The largest HTTP request body accepted (at least 1 KiB).
    pub fn body_bytes_max(mut self, bytes: usize) -> ServerBuilder {
        self.http.body_bytes_max = bytes.max(1024);
        self
    }

    /// HTTP connections open at once, all callers, and how long an idle one stays open.
    pub fn connections(mut self, connections_max: usize, idle_ms: u64) -> ServerBuilder {
        self.listening = Listening {
            connections_max,
            idle_ms,
        };
        self
    }

    /// Worker loops running tools in this process (1 to [`WORKERS_MAX`]).
    pub fn workers(mut self, workers: usize) -> ServerBuilder {
        self.workers = workers;
        self
    }

    /// How long a dispatched task stays leased before it is delivered again.
    pub fn lease_ms(mut self, lease_ms: u64) -> ServerBuilder {
        self.lease_ms = lease_ms;
        self
    }

    /// How long running tools may take to finish after SIGTERM.
    pub fn drain_ms(mut self, drain_ms: u64) -> ServerBuilder {
        self.drain_ms = drain_ms;
        self
    }

    /// A [`Probe`] the runtime passes its named points through (crash tests hold a
    /// worker at one).
    pub fn probe(mut self, probe: Arc<dyn Probe>) -> ServerBuilder {
        self.probe = probe;
        self
    }

    fn check(&self) -> Result<(), ServeError> {
        if !(1..=WORKERS_MAX).contains(&self.workers)
            || self.lease_ms == 0
            || self.listening.connections_max == 0
            || self.listening.idle_ms == 0
        {
            return Err(ServeError::Config(format!(
                "workers must be 1..={WORKERS_MAX}, and the lease, connections and idle timeout positive"
            )));
        }
        self.config
            .limits
            .check()
            .map_err(|error| ServeError::Config(format!("per-caller limits: {error}")))
    }

    /// Opens the store and wires server, runtime and tools; nothing runs yet.
    fn assemble(self) -> Result<Assembled, ServeError> {
        self.check()?;
        let store: Arc<dyn TaskStore> = match self.store {
            StoreChoice::Given(store) => store,
            StoreChoice::Url(url) => open_store(&url, &StoreOptions::default())
                .map(Arc::from)
                .map_err(|error| ServeError::Store(error.to_string()))?,
        };
        let runtime_config = RuntimeConfig {
            republish_after_ms: self.lease_ms,
            queue_lease_ms: self.lease_ms,
            ..RuntimeConfig::default()
        };
        let env = Arc::new(TokioEnv);
        let Assembly { server, runtime } = match self.tools {
            ToolsChoice::Toolbox(toolbox) => Assembly::with_tools(
                store.clone(),
                Arc::new(toolbox.bind(store, env.clone())),
                env,
                self.config,
                runtime_config,
                self.probe,
            ),
            #[cfg(feature = "example-tools")]
            ToolsChoice::Examples { exports } => {
                Assembly::with_probe(store, exports, env, self.config, runtime_config, self.probe)
            }
        };
        // Other processes on the same store wake this one's blocked calls (PostgreSQL).
        let feed = server
            .follow_store_changes()
            .map_err(|error| ServeError::Store(error.to_string()))?;
        Ok(Assembled {
            server,
            runtime,
            _feed: feed,
            workers: self.workers,
            drain_ms: self.drain_ms,
        })
    }

    /// Opens the store, binds `address` and installs the signal handlers: the server is
    /// reachable once [`HttpServing::run`] is called, and a SIGTERM is already caught.
    /// HTTP callers must be identified: give [`ServerBuilder::tokens`] or
    /// [`ServerBuilder::anonymous`].
    pub async fn bind_http(self, address: &str) -> Result<HttpServing, ServeError> {
        if self.http.tokens.is_empty() && self.http.anonymous.is_none() {
            return Err(ServeError::Config(
                "HTTP needs tokens or anonymous callers (every caller must be identified)".into(),
            ));
        }
        let (http, listening) = (self.http.clone(), self.listening);
        let assembled = self.assemble()?;
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|error| ServeError::Listen {
                address: address.to_owned(),
                error: error.to_string(),
            })?;
        let local_addr = listener.local_addr().map_err(|error| ServeError::Listen {
            address: address.to_owned(),
            error: error.to_string(),
        })?;
        let drained = Box::pin(assembled.drain_on_signal());
        Ok(HttpServing {
            listener,
            local_addr,
            http,
            listening,
            drained,
            assembled,
        })
    }

    /// Serves one requestor over stdin/stdout (newline-delimited JSON-RPC) until stdin
    /// ends or a signal's drain finishes.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        let assembled = self.assemble()?;
        let drained = assembled.drain_on_signal();
        assembled.runtime.start(assembled.workers);
        let session = Session {
            id: "stdio".into(),
            auth_key: "stdio/requestor".into(),
            negotiated: stdio_negotiated(),
            idempotency_header: None,
        };
        let input = tokio::io::BufReader::new(tokio::io::stdin());
        let served = crate::mcp::stdio::serve(
            assembled.server.clone(),
            session,
            input,
            tokio::io::stdout(),
        );
        tokio::select! {
            () = served => {}
            () = drained => {}
        }
        assembled.runtime.shut_down();
        Ok(())
    }
}

/// A server wired and not yet running.
struct Assembled {
    server: Arc<Server>,
    runtime: Arc<Runtime>,
    _feed: Option<ChangeFeed>,
    workers: usize,
    drain_ms: u64,
}

impl Assembled {
    /// Resolves once a SIGTERM or SIGINT was received and the drain finished. The
    /// handlers are installed here, synchronously, before the future is first polled: a
    /// SIGTERM sent as soon as the server says it listens must already be caught.
    fn drain_on_signal(&self) -> impl Future<Output = ()> + Send + 'static {
        use tokio::signal::unix::{SignalKind, signal};
        let handlers = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        );
        let (server, runtime, drain_ms) =
            (self.server.clone(), self.runtime.clone(), self.drain_ms);
        async move {
            let (Ok(term), Ok(interrupt)) = handlers else {
                eprintln!(
                    "tasklatch serve: cannot listen for SIGTERM; it will end the process at once"
                );
                return std::future::pending().await;
            };
            drained(term, interrupt, server, runtime, drain_ms).await;
        }
    }
}

async fn drained(
    mut term: tokio::signal::unix::Signal,
    mut interrupt: tokio::signal::unix::Signal,
    server: Arc<Server>,
    runtime: Arc<Runtime>,
    drain_ms: u64,
) {
    let mut signalled = async || {
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = interrupt.recv() => "SIGINT",
        }
    };
    let name = signalled().await;
    eprintln!(
        "tasklatch serve: {name}: draining (admitting nothing, blocked calls ended, up to {drain_ms} ms for running tools)"
    );
    server.drain();
    let left = tokio::select! {
        left = runtime.drain(drain_ms) => left,
        name = signalled() => {
            eprintln!("tasklatch serve: {name} again: stopping now");
            runtime.workers_running()
        }
    };
    eprintln!(
        "tasklatch serve: drained; {left} tool runs unfinished (delivered again after the lease)"
    );
}

/// A bound HTTP server: [`HttpServing::run`] starts the workers and serves.
pub struct HttpServing {
    listener: tokio::net::TcpListener,
    local_addr: SocketAddr,
    http: HttpConfig,
    listening: Listening,
    drained: std::pin::Pin<Box<dyn Future<Output = ()> + Send>>,
    assembled: Assembled,
}

impl HttpServing {
    /// The address bound (the port the system chose, for `:0`). The endpoint is `/mcp`.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Starts the runtime and serves until a signal's drain finishes; requests are still
    /// served while draining (polls, cancels).
    pub async fn run(self) -> Result<(), ServeError> {
        let HttpServing {
            listener,
            http,
            listening,
            drained,
            assembled,
            ..
        } = self;
        assembled.runtime.start(assembled.workers);
        let router = http::router(assembled.server.clone(), http);
        let served = tokio::select! {
            served = http::serve_with(listener, router, listening) => served,
            () = drained => Ok(()),
        };
        assembled.runtime.shut_down();
        served.map_err(|error| ServeError::Serve(error.to_string()))
    }
}
