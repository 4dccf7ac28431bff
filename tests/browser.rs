//! The HTML timeline in a real browser: headless Chromium driven over
//! WebDriver (chromedriver) loads the page from a `file://` URL, and the
//! test checks the rendered DOM (lanes, the highlighted violation, the
//! step-through control) and keeps a screenshot as an artifact in
//! `target/artifacts/`. Skipped with a message where Chromium is not
//! installed; under `CI=true` a missing browser fails the test.

use base64::Engine;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

fn browser_available() -> bool {
    if Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists() {
        return true;
    }
    let why = format!("{CHROMIUM} or {CHROMEDRIVER} is missing (Debian packages chromium and chromium-driver)");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why}; CI must run the browser test");
    }
    eprintln!("skipping the browser test: {why}");
    false
}

/// A chromedriver process, killed on drop.
struct Driver {
    child: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Driver {
    fn start() -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let driver = Driver { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while driver.call("GET", "/status", None).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not answer within 20 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        driver
    }

    /// One WebDriver command over HTTP/1.1; the response's `value`.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        stream.set_read_timeout(Some(Duration::from_secs(60))).map_err(|e| e.to_string())?;
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
        let payload = read_response(&mut stream)?;
        let doc: Value = serde_json::from_str(&payload).map_err(|e| format!("{e}: {payload}"))?;
        match doc["value"].get("error") {
            Some(error) => Err(format!("{error}: {}", doc["value"]["message"])),
            None => Ok(doc["value"].clone()),
        }
    }
}

/// Reads one response: headers, then `Content-Length` bytes (chromedriver
/// keeps the connection open, so reading to the end would wait).
fn read_response(stream: &mut TcpStream) -> Result<String, String> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("connection closed before a whole response".into());
        }
        raw.extend_from_slice(&buf[..n]);
        let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
        let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse::<usize>()))
            .ok_or("no Content-Length")?
            .map_err(|e| e.to_string())?;
        if raw.len() >= end + 4 + length {
            return Ok(String::from_utf8_lossy(&raw[end + 4..end + 4 + length]).into_owned());
        }
    }
}

struct Session<'d> {
    driver: &'d Driver,
    id: String,
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        let _ = self.driver.call("DELETE", &format!("/session/{}", self.id), None);
    }
}

impl Session<'_> {
    fn new(driver: &Driver) -> Session<'_> {
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900"]
            }
        }}});
        let value = driver.call("POST", "/session", Some(caps)).expect("a browser session");
        Session { driver, id: value["sessionId"].as_str().unwrap().to_string() }
    }

    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.id);
        self.driver.call(method, &path, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    fn find_all(&self, css: &str) -> Vec<String> {
        let found = self.cmd("POST", "/elements", Some(json!({"using": "css selector", "value": css})));
        found
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_object().unwrap().values().next().unwrap().as_str().unwrap().to_string())
            .collect()
    }

    fn text(&self, css: &str) -> String {
        let element = self.find_all(css).into_iter().next().unwrap_or_else(|| panic!("no {css}"));
        self.cmd("GET", &format!("/element/{element}/text"), None).as_str().unwrap().to_string()
    }

    fn script(&self, script: &str) -> Value {
        self.cmd("POST", "/execute/sync", Some(json!({ "script": script, "args": [] })))
    }

    fn click(&self, css: &str) {
        let element = self.find_all(css).into_iter().next().unwrap_or_else(|| panic!("no {css}"));
        self.cmd("POST", &format!("/element/{element}/click"), Some(json!({})));
    }
}

fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
#[cfg_attr(
    idemsim_no_browser,
    ignore = "Chromium and chromedriver are not installed (apt install chromium chromium-driver)"
)]
fn the_html_timeline_renders_lanes_the_violation_and_steps_in_chromium() {
    if !browser_available() {
        return;
    }
    // The workshop path: shrink a failure, then draw the shrunk run.
    let shrunk = artifacts().join("paused-holder-unfenced-completion-shrunk.json");
    let page = artifacts().join("timeline-paused-holder.html");
    let shrink = ["shrink", "--scenario", "paused-holder", "--variant", "unfenced-completion", "--seed", "0", "--out"];
    let (code, out, err) = crate::cli::idemsim(&[&shrink[..], &[shrunk.to_str().unwrap()]].concat());
    assert_eq!(code, 1, "{out}{err}");
    let (code, out, err) =
        crate::cli::idemsim(&["replay", "--file", shrunk.to_str().unwrap(), "--html", page.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("timeline: written to"), "{out}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"), "the page must fetch nothing");

    let driver = Driver::start();
    let session = Session::new(&driver);
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    session.cmd("POST", "/url", Some(json!({ "url": url })));
    let names = session.script("return [...document.querySelectorAll('text.lane')].map(l => l.textContent)");
    let names: Vec<&str> = names.as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(names.contains(&"db") && names.iter().any(|n| n.starts_with("server-")), "{names:?}");
    assert!(!session.find_all(".event.violation").is_empty(), "the violating events are highlighted");
    assert!(session.text("#flags").contains("[fencing]"));
    assert!(!session.find_all(".message").is_empty(), "messages are drawn as arrows");
    assert!(!session.find_all(".lease").is_empty(), "leases are drawn as bars");

    session.click("#next");
    session.click("#next");
    assert_eq!(session.text("#current-index"), "1");
    session.click("#prev");
    assert_eq!(session.text("#current-index"), "0");

    for width in [1024, 1280, 1920] {
        session.cmd("POST", "/window/rect", Some(json!({ "width": width, "height": 800 })));
        // The page lays itself out again on resize; draw now rather than wait.
        session.script("draw(); return true");
        assert_headers_over_lanes(&session, width);
        assert_leases_apart(&session, width);
        assert_violations_whole_and_colours_distinct(&session, width);
        session.click("#jump");
        let current = session.text("#detail");
        assert!(current.contains("<== violation"), "{width}px: {current}");
        assert_eq!(session.find_all(".event.current.violation").len(), 1, "{width}px");
        let visible = session.script(
            "const c = document.getElementById('chart').getBoundingClientRect();
             const row = document.querySelector('.event.current');
             const dot = row.querySelector('.dot') || row;
             const r = row.getBoundingClientRect(), d = dot.getBoundingClientRect();
             return r.top >= c.top + 20 && r.bottom <= c.bottom && d.left >= c.left && d.right <= c.right;",
        );
        assert_eq!(visible, json!(true), "{width}px: the violation is on screen after the jump");
        let shot = session.cmd("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD.decode(shot.as_str().unwrap()).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
        std::fs::write(artifacts().join(format!("timeline-paused-holder-{width}.png")), png).unwrap();
    }

    // The seed as drawn, with its fifty operations: the lanes still line up
    // at the narrowest width, and "only the violating key" leaves fewer
    // rows with the violation still there (a shrunk run has one key left).
    let full = artifacts().join("timeline-paused-holder-full.html");
    let replay = ["replay", "--scenario", "paused-holder", "--variant", "unfenced-completion", "--seed", "0", "--html"];
    let (code, out, err) = crate::cli::idemsim(&[&replay[..], &[full.to_str().unwrap()]].concat());
    assert_eq!(code, 1, "{out}{err}");
    let url = format!("file://{}", full.canonicalize().unwrap().display());
    session.cmd("POST", "/url", Some(json!({ "url": url })));
    session.cmd("POST", "/window/rect", Some(json!({ "width": 1024, "height": 800 })));
    session.script("draw(); return true");
    assert_headers_over_lanes(&session, 1024);
    assert_leases_apart(&session, 1024);
    let all: usize = session.text("#count").parse().unwrap();
    session.click("#only-key");
    let some: usize = session.text("#count").parse().unwrap();
    assert!(some < all, "the toggle hides events on other keys ({some} of {all})");
    assert!(!session.find_all(".event.violation").is_empty());
    assert_headers_over_lanes(&session, 1920);
}

/// Every lane header stands over its lane line, from measured positions.
fn assert_headers_over_lanes(session: &Session<'_>, width: u32) {
    let offsets = session.script(
        "return [...document.querySelectorAll('text.lane')].map(h => {
           const line = document.querySelector(`line.lane-line[data-lane=\"${h.dataset.lane}\"]`);
           const a = h.getBoundingClientRect(), b = line.getBoundingClientRect();
           return [h.textContent, (a.left + a.right) / 2 - (b.left + b.right) / 2];
         })",
    );
    let offsets = offsets.as_array().unwrap();
    assert!(offsets.len() >= 3, "{width}px: lanes shown: {offsets:?}");
    for o in offsets {
        let dx = o[1].as_f64().unwrap();
        assert!(dx.abs() <= 3.0, "{width}px: header {} is {dx:.1} px off its lane", o[0]);
    }
}

/// Bars of different leases never overlap on screen.
fn assert_leases_apart(session: &Session<'_>, width: u32) {
    let overlaps = session.script(
        "const bars = [...document.querySelectorAll('rect.lease')].map(b => [b.dataset.key + '#' + b.dataset.attempt, b.getBoundingClientRect()]);
         const out = [];
         for (let i = 0; i < bars.length; i++) for (let j = i + 1; j < bars.length; j++) {
           const [p, a] = bars[i], [q, b] = bars[j];
           if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) out.push([p, q]);
         }
         return [bars.length, out];",
    );
    assert!(offsets_ok(&overlaps), "{width}px: overlapping lease bars: {overlaps}");
}

fn offsets_ok(v: &Value) -> bool {
    v[0].as_u64().unwrap_or(0) > 0 && v[1].as_array().is_some_and(Vec::is_empty)
}

/// The rows that matter are told whole: every violating row's text is its
/// full label (wrapped, never cut with an ellipsis) and lies inside the
/// chart; and faults, refused writes and violations have a colour each.
fn assert_violations_whole_and_colours_distinct(session: &Session<'_>, width: u32) {
    let rows = session.script(
        "const c = document.getElementById('chart').getBoundingClientRect();
         return [...document.querySelectorAll('.event.violation')].map(g => {
           const t = g.querySelector('text.label'), b = t.getBoundingClientRect();
           return [t.textContent, g.querySelector('title').textContent, b.right <= c.right + 1, t.querySelectorAll('tspan').length];
         })",
    );
    let rows = rows.as_array().unwrap();
    assert!(!rows.is_empty(), "{width}px: violating rows");
    for row in rows {
        let (shown, whole) = (row[0].as_str().unwrap(), row[1].as_str().unwrap());
        assert!(!shown.contains('\u{2026}'), "{width}px: a violating row is cut: {shown}");
        assert_eq!(shown.replace(' ', ""), whole.replace(' ', ""), "{width}px: the whole label, wrapped");
        assert_eq!(row[2], json!(true), "{width}px: the row's text is inside the chart: {whole}");
    }
    let fill = |css: &str| {
        session.script(&format!("const d = document.querySelector('{css}'); return d ? d.getAttribute('fill') : null"))
    };
    let (fault, refused, violation) =
        (fill(".mark-fault:not(.violation) .dot"), fill(".mark-fenced:not(.violation) .dot"), fill(".violation .dot"));
    assert!(fault.is_string() && violation.is_string(), "{width}px: a fault and a violation are drawn");
    assert_ne!(fault, violation, "{width}px: faults and violations have a colour each");
    if refused.is_string() {
        assert_ne!(refused, violation, "{width}px: a refused write is not a violation");
        assert_ne!(refused, fault, "{width}px: a refused write is not a fault");
    }
    // A refused write's line goes back to its writer, an execution's lane.
    let to = session.script(
        "return [...document.querySelectorAll('line.refused')].map(l => document.querySelector(`text.lane[data-lane=\"${l.dataset.to}\"]`)?.textContent)",
    );
    for lane in to.as_array().unwrap() {
        let lane = lane.as_str().unwrap_or("");
        assert!(lane.starts_with("server-") || lane == "reconciler", "{width}px: refused to {lane}");
    }
}
