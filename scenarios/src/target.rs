//! Which real store a command talks to, and opening it.

use crate::stress::Terminator;
#[cfg(feature = "mysql")]
use idemsim_store::MySqlStore;
#[cfg(feature = "pg")]
use idemsim_store::PgStore;
#[cfg(feature = "redis")]
use idemsim_store::RedisStore;
use idemsim_store::{IdempotencyStore, MemStore, SqliteStore, StoreError, StoreFlaw};
#[cfg(any(feature = "pg", feature = "mysql", feature = "redis"))]
use std::future::Future;
use std::sync::Arc;

idemsim_model::named_enum! {
    /// The stores a command can name: the one list that `--store`'s
    /// parsing, its error and every loop over stores read.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum StoreName {
        /// The in-memory store.
        Mem = "mem",
        /// SQLite, in memory.
        Sqlite = "sqlite",
        /// PostgreSQL.
        Pg = "pg",
        /// MySQL or MariaDB.
        MySql = "mysql",
        /// Redis.
        Redis = "redis",
    }
}

impl StoreName {
    /// A server the machine runs (a URL, a schema), not a store embedded in
    /// the process.
    pub fn is_server(self) -> bool {
        match self {
            StoreName::Mem | StoreName::Sqlite => false,
            StoreName::Pg | StoreName::MySql | StoreName::Redis => true,
        }
    }

    /// `mem, sqlite, pg, mysql or redis`.
    pub fn listed() -> String {
        let names: Vec<&str> = StoreName::ALL.iter().map(|s| s.name()).collect();
        let (last, rest) = names.split_last().expect("stores");
        format!("{} or {last}", rest.join(", "))
    }
}

/// A store named on the command line.
#[derive(Clone, Debug)]
pub enum StoreTarget {
    /// `MemStore`.
    Mem,
    /// `SqliteStore` on a private in-memory database.
    Sqlite,
    /// `PgStore` at this URL.
    Pg(String),
    /// `MySqlStore` at this URL.
    MySql(String),
    /// `RedisStore` at this URL.
    Redis(String),
}

impl StoreTarget {
    /// Parses `mem`, `sqlite`, `pg`, `mysql` or `redis`; `url` overrides
    /// the `IDEMSIM_PG_URL` / `IDEMSIM_MYSQL_URL` / `IDEMSIM_REDIS_URL`
    /// settings.
    pub fn parse(name: &str, url: Option<&str>) -> Result<StoreTarget, crate::Error> {
        let env = |var: &str, default: &str| {
            url.map(str::to_string).or_else(|| std::env::var(var).ok()).unwrap_or(default.into())
        };
        let Some(kind) = StoreName::from_name(name) else {
            return Err(crate::Error::Unknown {
                what: "store",
                name: name.to_string(),
                hint: format!("expected {}", StoreName::listed()),
            });
        };
        if !kind.is_server() && url.is_some() {
            return Err(crate::Error::Usage(format!("--url applies to the pg, mysql and redis stores, not to {name}")));
        }
        let target = match kind {
            StoreName::Mem => StoreTarget::Mem,
            StoreName::Sqlite => StoreTarget::Sqlite,
            StoreName::Pg => StoreTarget::Pg(env("IDEMSIM_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")),
            StoreName::MySql => StoreTarget::MySql(env("IDEMSIM_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")),
            StoreName::Redis => StoreTarget::Redis(env("IDEMSIM_REDIS_URL", "redis://127.0.0.1:6379")),
        };
        match target.built() {
            true => Ok(target),
            false => Err(crate::Error::Usage(not_built(name))),
        }
    }

    /// Whether this build has the store's adapter (the `pg`, `mysql` and
    /// `redis` features).
    pub fn built(&self) -> bool {
        match self {
            StoreTarget::Mem | StoreTarget::Sqlite => true,
            StoreTarget::Pg(_) => cfg!(feature = "pg"),
            StoreTarget::MySql(_) => cfg!(feature = "mysql"),
            StoreTarget::Redis(_) => cfg!(feature = "redis"),
        }
    }

    /// The short name.
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Which store it is.
    pub fn kind(&self) -> StoreName {
        match self {
            StoreTarget::Mem => StoreName::Mem,
            StoreTarget::Sqlite => StoreName::Sqlite,
            StoreTarget::Pg(_) => StoreName::Pg,
            StoreTarget::MySql(_) => StoreName::MySql,
            StoreTarget::Redis(_) => StoreName::Redis,
        }
    }

    /// Opens an empty store in `schema` (SQL servers; the key prefix on
    /// Redis), with an optional
    /// flaw, and how to terminate its connections. Call inside a Tokio
    /// runtime; the store's connections belong to it.
    #[cfg_attr(not(any(feature = "pg", feature = "mysql", feature = "redis")), allow(unused_variables))]
    pub async fn open(
        &self,
        schema: &str,
        pool: usize,
        flaw: Option<StoreFlaw>,
    ) -> Result<(Arc<dyn IdempotencyStore>, Option<Terminator>), StoreError> {
        match (self, flaw) {
            (StoreTarget::Mem, None) => Ok((Arc::new(MemStore::new()), None)),
            (StoreTarget::Sqlite, None) => Ok((Arc::new(SqliteStore::in_memory()?), None)),
            (StoreTarget::Mem | StoreTarget::Sqlite, Some(_)) => {
                Err(StoreError::Unavailable("--flaw applies to the pg, mysql and redis stores".into()))
            }
            #[cfg(feature = "pg")]
            (StoreTarget::Pg(url), flaw) => serve(PgStore::connect(url, schema, pool).await?, flaw).await,
            #[cfg(feature = "mysql")]
            (StoreTarget::MySql(url), flaw) => serve(MySqlStore::connect(url, schema, pool).await?, flaw).await,
            #[cfg(feature = "redis")]
            (StoreTarget::Redis(url), flaw) => serve(RedisStore::connect(url, schema, pool).await?, flaw).await,
            #[allow(unreachable_patterns)]
            (other, _) => Err(StoreError::Unavailable(not_built(other.name()))),
        }
    }
}

/// What a server store offers beyond the trait, for stress runs.
#[cfg(any(feature = "pg", feature = "mysql", feature = "redis"))]
trait ServerStore: IdempotencyStore + Clone + 'static {
    fn reset(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
    fn flawed(self, flaw: StoreFlaw) -> Self;
    fn terminate(&self, pick: u64) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

#[cfg(feature = "pg")]
impl ServerStore for PgStore {
    fn reset(&self) -> impl Future<Output = Result<(), StoreError>> + Send {
        PgStore::reset(self)
    }
    fn flawed(self, flaw: StoreFlaw) -> Self {
        self.with_flaw(flaw)
    }
    fn terminate(&self, pick: u64) -> impl Future<Output = Result<bool, StoreError>> + Send {
        self.terminate_a_connection(pick)
    }
}

#[cfg(feature = "redis")]
impl ServerStore for RedisStore {
    fn reset(&self) -> impl Future<Output = Result<(), StoreError>> + Send {
        RedisStore::reset(self)
    }
    fn flawed(self, flaw: StoreFlaw) -> Self {
        self.with_flaw(flaw)
    }
    fn terminate(&self, pick: u64) -> impl Future<Output = Result<bool, StoreError>> + Send {
        self.terminate_a_connection(pick)
    }
}

#[cfg(feature = "mysql")]
impl ServerStore for MySqlStore {
    fn reset(&self) -> impl Future<Output = Result<(), StoreError>> + Send {
        MySqlStore::reset(self)
    }
    fn flawed(self, flaw: StoreFlaw) -> Self {
        self.with_flaw(flaw)
    }
    fn terminate(&self, pick: u64) -> impl Future<Output = Result<bool, StoreError>> + Send {
        self.terminate_a_connection(pick)
    }
}

/// An emptied server store, flawed if asked, with its connection killer.
#[cfg(any(feature = "pg", feature = "mysql", feature = "redis"))]
async fn serve<S: ServerStore>(
    store: S,
    flaw: Option<StoreFlaw>,
) -> Result<(Arc<dyn IdempotencyStore>, Option<Terminator>), StoreError> {
    store.reset().await?;
    let store = match flaw {
        Some(f) => store.flawed(f),
        None => store,
    };
    let handle = store.clone();
    let terminate: Terminator = Arc::new(move |pick| {
        let s = handle.clone();
        Box::pin(async move { s.terminate(pick).await })
    });
    Ok((Arc::new(store), Some(terminate)))
}

/// Why a store cannot be opened: this build left its adapter out.
pub fn not_built(store: &str) -> String {
    format!("this idemsim was built without the `{store}` feature (the {store} store's adapter)")
}
