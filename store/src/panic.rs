//! Turning a caught panic into one line of text.

/// The text of a panic payload (`&str` or `String`), for reporting a store
/// (or a simulation) that panicked without propagating the panic.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        return (*s).to_string();
    }
    panic.downcast_ref::<String>().cloned().unwrap_or_else(|| "non-text panic payload".to_string())
}
