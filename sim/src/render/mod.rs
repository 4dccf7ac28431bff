//! Runs told to people and tools: events in plain words (`timeline.rs`), a
//! violation's story (`story/`), the HTML timeline (`html/`), a concurrent
//! history drawn as lanes (`history_html.rs`) and JSON Lines traces
//! (`trace.rs`).

pub mod history_html;
pub mod html;
pub mod story;
pub mod timeline;
pub mod trace;
