//! Traces: a history as JSON Lines (a version header, then one event per
//! line), the trace hash, and reading a trace back with clear errors.

use idemsim_model::{Entry, History, RunMeta};
use serde::{Deserialize, Serialize};

/// The trace format version this build writes and reads.
pub const TRACE_VERSION: u32 = 1;

/// The first line of a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceHeader {
    /// Format version.
    pub idemsim_trace: u32,
    /// The seed that produced it.
    pub seed: u64,
    /// The scenario name.
    pub scenario: String,
    /// The protocol variant.
    pub variant: String,
    /// The checkers' settings.
    pub meta: RunMeta,
    /// The trace hash (of the event lines).
    pub hash: String,
}

/// A trace that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file is empty.
    #[error("the trace is empty")]
    Empty,
    /// The header line is not a trace header.
    #[error("line 1 is not an idemsim trace header: {0}")]
    Header(String),
    /// Another version wrote it.
    #[error("trace version {0} is not supported (this build reads version {TRACE_VERSION})")]
    Version(u32),
    /// An event line is malformed.
    #[error("line {line}: {error}")]
    Event {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        error: String,
    },
    /// The events do not hash to the header's hash.
    #[error("the trace hash is {actual} but the header says {expected}: the file was changed")]
    Hash {
        /// From the header.
        expected: String,
        /// Computed.
        actual: String,
    },
}

/// One event as its JSON line (no newline).
fn line(entry: &Entry) -> String {
    serde_json::to_string(entry).expect("events always serialize")
}

/// FNV-1a (64-bit) over the event lines, each followed by a newline: the
/// same history gives the same hash on any machine and build.
pub fn trace_hash(history: &History) -> String {
    let mut h = Fnv::default();
    for entry in &history.entries {
        // The line's bytes go straight into the hash: the same bytes as
        // `line(entry)`, without building the string.
        serde_json::to_writer(&mut h, entry).expect("events always serialize");
        h.write(b"\n");
    }
    format!("{:016x}", h.0)
}

#[derive(Clone, Copy)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

impl std::io::Write for Fnv {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        Fnv::write(self, bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes a history as JSON Lines.
pub fn to_jsonl(seed: u64, scenario: &str, variant: &str, history: &History) -> String {
    let header = TraceHeader {
        idemsim_trace: TRACE_VERSION,
        seed,
        scenario: scenario.to_string(),
        variant: variant.to_string(),
        meta: history.meta.clone(),
        hash: trace_hash(history),
    };
    let mut out = serde_json::to_string(&header).expect("headers always serialize");
    out.push('\n');
    for entry in &history.entries {
        out.push_str(&line(entry));
        out.push('\n');
    }
    out
}

/// Reads a JSON Lines trace, checking its version and hash.
pub fn from_jsonl(text: &str) -> Result<(TraceHeader, History), TraceError> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let (_, first) = lines.next().ok_or(TraceError::Empty)?;
    let version: serde_json::Value = serde_json::from_str(first).map_err(|e| TraceError::Header(e.to_string()))?;
    match version.get("idemsim_trace").and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(TRACE_VERSION) => {}
        Some(v) => return Err(TraceError::Version(v as u32)),
        None => return Err(TraceError::Header("no idemsim_trace field".into())),
    }
    let header: TraceHeader = serde_json::from_value(version).map_err(|e| TraceError::Header(e.to_string()))?;
    let mut history = History::new(header.meta.clone());
    for (i, l) in lines {
        let entry: Entry =
            serde_json::from_str(l).map_err(|e| TraceError::Event { line: i + 1, error: e.to_string() })?;
        if history.entries.last().is_some_and(|last| last.at > entry.at) {
            return Err(TraceError::Event { line: i + 1, error: "time runs backwards".into() });
        }
        history.entries.push(entry);
    }
    let actual = trace_hash(&history);
    if actual != header.hash {
        return Err(TraceError::Hash { expected: header.hash.clone(), actual });
    }
    Ok((header, history))
}

#[cfg(test)]
mod tests {
    use super::*;
    use idemsim_model::history::Phase;
    use idemsim_model::{Event, NodeId, SimTime};

    fn history() -> History {
        let mut h = History::default();
        h.push(SimTime(1), NodeId::World, Event::Phase { phase: Phase::Faults });
        h.push(SimTime(9), NodeId::World, Event::Phase { phase: Phase::End });
        h
    }

    #[test]
    fn a_trace_round_trips() {
        let text = to_jsonl(3, "default", "correct", &history());
        let (header, back) = from_jsonl(&text).unwrap();
        assert_eq!(header.seed, 3);
        assert_eq!(back, history());
        assert_eq!(text.lines().count(), 3);
    }

    #[test]
    fn the_hash_is_fnv_of_the_event_lines_as_written() {
        let h = history();
        let mut fnv = Fnv::default();
        for entry in &h.entries {
            fnv.write(line(entry).as_bytes());
            fnv.write(b"\n");
        }
        assert_eq!(trace_hash(&h), format!("{:016x}", fnv.0));
        assert_eq!(trace_hash(&h), "cd24f004b251dc99", "a trace hash never changes for the same events");
    }

    #[test]
    fn bad_traces_say_what_is_wrong() {
        assert!(matches!(from_jsonl(""), Err(TraceError::Empty)));
        assert!(matches!(from_jsonl("{}"), Err(TraceError::Header(_))));
        let text = to_jsonl(3, "default", "correct", &history());
        let v2 = text.replacen("\"idemsim_trace\":1", "\"idemsim_trace\":2", 1);
        assert!(matches!(from_jsonl(&v2), Err(TraceError::Version(2))));
        let garbled = text.replacen("\"phase\":\"end\"", "\"phase\":\"nope\"", 1);
        assert!(matches!(from_jsonl(&garbled), Err(TraceError::Event { line: 3, .. })), "{:?}", from_jsonl(&garbled));
        let tampered = text.replacen("\"at\":9", "\"at\":8", 1);
        assert!(matches!(from_jsonl(&tampered), Err(TraceError::Hash { .. })));
    }
}
