//! Which real store a command talks to, and opening it.

use crate::stress::Terminator;
use idemsim_store::{IdempotencyStore, MemStore, MySqlStore, PgStore, SqlFlaw, SqliteStore, StoreError};
use std::future::Future;
use std::sync::Arc;

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
}

impl StoreTarget {
    /// Parses `mem`, `sqlite`, `pg` or `mysql`; `url` overrides the
    /// `IDEMSIM_PG_URL` / `IDEMSIM_MYSQL_URL` settings.
    pub fn parse(name: &str, url: Option<&str>) -> Result<StoreTarget, String> {
        let env = |var: &str, default: &str| {
            url.map(str::to_string).or_else(|| std::env::var(var).ok()).unwrap_or(default.into())
        };
        match name {
            "mem" => Ok(StoreTarget::Mem),
            "sqlite" => Ok(StoreTarget::Sqlite),
            "pg" => Ok(StoreTarget::Pg(env("IDEMSIM_PG_URL", "postgresql://postgres@127.0.0.1:5432/test"))),
            "mysql" => Ok(StoreTarget::MySql(env("IDEMSIM_MYSQL_URL", "mysql://root@127.0.0.1:3306/test"))),
            other => Err(format!("unknown store '{other}'; expected mem, sqlite, pg or mysql")),
        }
    }

    /// The short name.
    pub fn name(&self) -> &'static str {
        match self {
            StoreTarget::Mem => "mem",
            StoreTarget::Sqlite => "sqlite",
            StoreTarget::Pg(_) => "pg",
            StoreTarget::MySql(_) => "mysql",
        }
    }

    /// Opens an empty store in `schema` (SQL servers), with an optional
    /// flaw, and how to terminate its connections. Call inside a Tokio
    /// runtime; the store's connections belong to it.
    pub async fn open(
        &self,
        schema: &str,
        pool: usize,
        flaw: Option<SqlFlaw>,
    ) -> Result<(Arc<dyn IdempotencyStore>, Option<Terminator>), StoreError> {
        match (self, flaw) {
            (StoreTarget::Mem, None) => Ok((Arc::new(MemStore::new()), None)),
            (StoreTarget::Sqlite, None) => Ok((Arc::new(SqliteStore::in_memory()?), None)),
            (StoreTarget::Mem | StoreTarget::Sqlite, Some(_)) => {
                Err(StoreError::Unavailable("--flaw applies to the pg and mysql stores".into()))
            }
            (StoreTarget::Pg(url), flaw) => serve(PgStore::connect(url, schema, pool).await?, flaw).await,
            (StoreTarget::MySql(url), flaw) => serve(MySqlStore::connect(url, schema, pool).await?, flaw).await,
        }
    }
}

/// What a SQL server store offers beyond the trait, for stress runs.
trait SqlServer: IdempotencyStore + Clone + 'static {
    fn reset(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
    fn flawed(self, flaw: SqlFlaw) -> Self;
    fn terminate(&self, pick: u64) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

impl SqlServer for PgStore {
    fn reset(&self) -> impl Future<Output = Result<(), StoreError>> + Send {
        PgStore::reset(self)
    }
    fn flawed(self, flaw: SqlFlaw) -> Self {
        self.with_flaw(flaw)
    }
    fn terminate(&self, pick: u64) -> impl Future<Output = Result<bool, StoreError>> + Send {
        self.terminate_a_connection(pick)
    }
}

impl SqlServer for MySqlStore {
    fn reset(&self) -> impl Future<Output = Result<(), StoreError>> + Send {
        MySqlStore::reset(self)
    }
    fn flawed(self, flaw: SqlFlaw) -> Self {
        self.with_flaw(flaw)
    }
    fn terminate(&self, pick: u64) -> impl Future<Output = Result<bool, StoreError>> + Send {
        self.terminate_a_connection(pick)
    }
}

/// An emptied server store, flawed if asked, with its connection killer.
async fn serve<S: SqlServer>(
    store: S,
    flaw: Option<SqlFlaw>,
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
