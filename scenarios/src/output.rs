//! Output files: checked, and created or refused, before any work starts,
//! so a long shrink or bench never ends in "cannot write".

use std::path::{Path, PathBuf};

/// An output file created before the work: removed again when dropped
/// unless [`keep`](Output::keep) was called, so a command that fails leaves
/// no empty file behind. A file that was there before is only checked,
/// never emptied or removed: a command that fails leaves it as it was.
#[derive(Debug)]
pub struct Output {
    path: PathBuf,
    kept: bool,
}

impl Output {
    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file was written: keep it.
    pub fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Checks that `path` ends in one of `extensions` (which decides its
/// format) and can be written: by creating it now (empty), or, if it
/// exists, by opening it for writing without changing it. `what` names
/// the file in errors ("the trace").
pub fn prepare(path: &Path, extensions: &[&str], what: &str) -> Result<Output, crate::Error> {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    if !ext.as_deref().is_some_and(|e| extensions.contains(&e)) {
        let wanted: Vec<String> = extensions.iter().map(|e| format!(".{e}")).collect();
        return Err(crate::Error::Usage(format!(
            "{what} goes to {}, but its name must end in {} (the ending decides the format)",
            path.display(),
            wanted.join(" or ")
        )));
    }
    let existed = path.is_file();
    let mut open = std::fs::OpenOptions::new();
    match existed {
        true => open.append(true),
        false => open.write(true).create_new(true),
    };
    open.open(path).map_err(|e| crate::Error::io(format!("write {what} to"), path, e))?;
    Ok(Output { path: path.to_path_buf(), kept: existed })
}

/// An I/O error in plain words, without the `(os error N)` suffix.
pub fn plain(e: &std::io::Error) -> String {
    idemsim_store::plain_error(&e.to_string(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ending_decides_and_the_directory_must_exist() {
        let dir = std::env::temp_dir().join(format!("idemsim-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let yaml = prepare(&dir.join("s.yaml"), &["json", "toml"], "the scenario").unwrap_err().to_string();
        assert!(yaml.contains("must end in .json or .toml"), "{yaml}");
        let missing = prepare(Path::new("/nonexistent/s.json"), &["json"], "the scenario").unwrap_err();
        assert!(matches!(missing, crate::Error::Io { .. }), "{missing:?}");
        assert_eq!(missing.to_string(), "cannot write the scenario to /nonexistent/s.json: No such file or directory");
        let kept = prepare(&dir.join("s.TOML"), &["json", "toml"], "the scenario").unwrap();
        kept.keep();
        assert!(dir.join("s.TOML").exists());
        drop(prepare(&dir.join("t.json"), &["json"], "the scenario").unwrap());
        assert!(!dir.join("t.json").exists(), "an output not written is removed");
        // A file that was there is neither emptied nor removed by a command that fails.
        std::fs::write(dir.join("old.json"), "{\"found\": 1}").unwrap();
        drop(prepare(&dir.join("old.json"), &["json"], "the scenario").unwrap());
        assert_eq!(std::fs::read_to_string(dir.join("old.json")).unwrap(), "{\"found\": 1}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
