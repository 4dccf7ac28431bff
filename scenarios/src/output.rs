//! Output files: checked, and created or refused, before any work starts,
//! so a long shrink or bench never ends in "cannot write".

use std::path::{Path, PathBuf};

/// Checks that `path` ends in one of `extensions` (which decides its
/// format) and can be written, by creating it now (empty). Returns it.
/// `what` names the file in errors ("the trace").
pub fn prepare(path: &Path, extensions: &[&str], what: &str) -> Result<PathBuf, String> {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    if !ext.as_deref().is_some_and(|e| extensions.contains(&e)) {
        let wanted: Vec<String> = extensions.iter().map(|e| format!(".{e}")).collect();
        return Err(format!(
            "{what} goes to {}, but its name must end in {} (the ending decides the format)",
            path.display(),
            wanted.join(" or ")
        ));
    }
    std::fs::File::create(path).map_err(|e| format!("cannot write {what} to {}: {}", path.display(), plain(&e)))?;
    Ok(path.to_path_buf())
}

/// An I/O error in plain words, without the `(os error N)` suffix.
pub fn plain(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ending_decides_and_the_directory_must_exist() {
        let dir = std::env::temp_dir().join(format!("idemsim-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let yaml = prepare(&dir.join("s.yaml"), &["json", "toml"], "the scenario").unwrap_err();
        assert!(yaml.contains("must end in .json or .toml"), "{yaml}");
        let missing = prepare(Path::new("/nonexistent/s.json"), &["json"], "the scenario").unwrap_err();
        assert_eq!(missing, "cannot write the scenario to /nonexistent/s.json: No such file or directory");
        assert!(prepare(&dir.join("s.TOML"), &["json", "toml"], "the scenario").is_ok());
        std::fs::remove_dir_all(&dir).ok();
    }
}
