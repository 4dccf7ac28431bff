//! Finding the real database servers, or saying why a test skips.

/// `IDEMSIM_PG_URL`, or the local default.
pub fn pg_url() -> String {
    std::env::var("IDEMSIM_PG_URL").unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".into())
}

/// `IDEMSIM_MYSQL_URL`, or the local default.
pub fn mysql_url() -> String {
    std::env::var("IDEMSIM_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into())
}

/// `IDEMSIM_REDIS_URL`, or the local default.
pub fn redis_url() -> String {
    std::env::var("IDEMSIM_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// The URL if its server accepts TCP connections. Otherwise: under
/// `CI=true` a panic (CI must run these tests), elsewhere `None` and a
/// message saying the test is skipped and how to run it.
pub fn server_or_skip(what: &str, url: String) -> Option<String> {
    let address = host_port(&url);
    let reachable = address.as_deref().is_some_and(|a| {
        use std::net::ToSocketAddrs;
        a.to_socket_addrs()
            .ok()
            .and_then(|mut it| it.next())
            .is_some_and(|addr| std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(2)).is_ok())
    });
    if reachable {
        return Some(url);
    }
    let why = format!("{what} is not reachable at {} ({url})", address.unwrap_or_else(|| "?".into()));
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why}; CI must run the real-store tests");
    }
    eprintln!("SKIPPED: {why}. Start it, or point IDEMSIM_PG_URL / IDEMSIM_MYSQL_URL / IDEMSIM_REDIS_URL at one, to run this test.");
    None
}

fn host_port(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let host_port = rest.split(['/', '?']).next()?;
    if host_port.contains(':') {
        Some(host_port.to_string())
    } else {
        let port = match url.split_once("://").map(|(scheme, _)| scheme) {
            Some("mysql") => 3306,
            Some("redis") => 6379,
            _ => 5432,
        };
        Some(format!("{host_port}:{port}"))
    }
}
