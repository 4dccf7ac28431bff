//! Decides at build time which prerequisites are missing, so a test that
//! cannot run here shows as `ignored, <reason>` under `cargo test` and
//! `cargo nextest run` instead of a silent `ok`. Under `CI=true` nothing is
//! ignored: the tests run and fail without their server or browser.
//!
//! It reruns on every build (it watches a path that never exists), so a
//! server started or a browser installed later is seen at the next build.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

fn main() {
    println!("cargo:rerun-if-changed=/nonexistent/idemsim-recheck-prerequisites");
    for var in ["CI", "IDEMSIM_PG_URL", "IDEMSIM_MYSQL_URL", "IDEMSIM_REDIS_URL"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    for flag in ["idemsim_no_browser", "idemsim_no_pg", "idemsim_no_mysql", "idemsim_no_redis"] {
        println!("cargo::rustc-check-cfg=cfg({flag})");
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        return;
    }
    let browser = ["/usr/bin/chromium", "/usr/bin/chromedriver"].iter().all(|p| std::path::Path::new(p).exists());
    if !browser {
        println!("cargo:rustc-cfg=idemsim_no_browser");
    }
    let servers = [
        ("idemsim_no_pg", "IDEMSIM_PG_URL", "postgresql://postgres@127.0.0.1:5432/test", 5432),
        ("idemsim_no_mysql", "IDEMSIM_MYSQL_URL", "mysql://root@127.0.0.1:3306/test", 3306),
        ("idemsim_no_redis", "IDEMSIM_REDIS_URL", "redis://127.0.0.1:6379", 6379),
    ];
    for (flag, var, default, port) in servers {
        let url = std::env::var(var).unwrap_or_else(|_| default.to_string());
        if !reachable(&url, port) {
            println!("cargo:rustc-cfg={flag}");
        }
    }
}

fn reachable(url: &str, default_port: u16) -> bool {
    let Some(rest) = url.split_once("://").map(|(_, r)| r) else { return false };
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let host_port = rest.split(['/', '?']).next().unwrap_or_default();
    let address = match host_port.contains(':') {
        true => host_port.to_string(),
        false => format!("{host_port}:{default_port}"),
    };
    use std::net::ToSocketAddrs;
    let Some(addr): Option<SocketAddr> = address.to_socket_addrs().ok().and_then(|mut a| a.next()) else {
        return false;
    };
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
}
