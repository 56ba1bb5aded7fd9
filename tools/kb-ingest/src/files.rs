//! Finds the documents to ingest: files given directly, and `*.md`, `*.markdown`, `*.txt`
//! under folders (recursively, skipping hidden entries).

use std::path::{Path, PathBuf};

use shared::{Error, Result};

/// Extensions picked up when walking a folder (compared case-insensitively). A file named
/// directly is taken whatever its extension.
pub const EXTENSIONS: &[&str] = &["md", "markdown", "txt"];

/// One document on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// `<id prefix><file stem>`.
    pub document_id: String,
    pub path: PathBuf,
}

/// The documents under `paths`, sorted by id. Fails on a missing path, a file stem that
/// cannot be an id, or two files with the same id.
pub fn collect(paths: &[PathBuf], id_prefix: &str) -> Result<Vec<SourceFile>> {
    let mut files = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path)
            .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
        if meta.is_dir() {
            walk(path, &mut files)?;
        } else {
            files.push(path.clone());
        }
    }
    let mut sources: Vec<SourceFile> = Vec::with_capacity(files.len());
    for path in files {
        let document_id = format!("{id_prefix}{}", document_stem(&path)?);
        sources.push(SourceFile { document_id, path });
    }
    sources.sort_by(|a, b| a.document_id.cmp(&b.document_id).then(a.path.cmp(&b.path)));
    sources.dedup_by(|b, a| a.path == b.path);
    if let Some(pair) = sources
        .windows(2)
        .find(|pair| pair[0].document_id == pair[1].document_id)
    {
        return Err(Error::Invalid(format!(
            "{} and {} would both be document {:?}; rename one",
            pair[0].path.display(),
            pair[1].path.display(),
            pair[0].document_id
        )));
    }
    Ok(sources)
}

/// Whether every path is a folder: then the paths describe the whole knowledge base (within
/// the id prefix) and pruning is the default.
pub fn all_folders(paths: &[PathBuf]) -> bool {
    paths.iter().all(|p| p.is_dir())
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::Invalid(format!("{}: {e}", dir.display())))?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::Invalid(format!("{}: {e}", dir.display())))?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        paths.push(entry.path());
    }
    paths.sort();
    for path in paths {
        // Follows symlinks to files; symlinked folders are walked too (no cycle check: a
        // knowledge-base folder is not expected to contain loops).
        let meta = std::fs::metadata(&path)
            .map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))?;
        if meta.is_dir() {
            walk(&path, out)?;
        } else if meta.is_file() && has_document_extension(&path) {
            out.push(path);
        }
    }
    Ok(())
}

fn has_document_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

/// The file stem as document id; `#` is refused because chunk ids are `<document>#<n>`.
fn document_stem(path: &Path) -> Result<String> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{}: no usable file name for a document id",
                path.display()
            ))
        })?;
    if stem.contains('#') {
        return Err(Error::Invalid(format!(
            "{}: a document id must not contain '#'",
            path.display()
        )));
    }
    Ok(stem.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "kb-ingest-files-{name}-{}-{}",
            std::process::id(),
            fastrand_suffix()
        ));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        dir
    }

    fn fastrand_suffix() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    }

    fn write(path: &Path, text: &str) {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn walks_folders_for_document_extensions() {
        let dir = temp_dir("walk");
        write(&dir.join("b.md"), "b");
        write(&dir.join("sub/a.MARKDOWN"), "a");
        write(&dir.join("sub/deeper/c.txt"), "c");
        write(&dir.join("image.png"), "x");
        write(&dir.join(".hidden.md"), "x");
        write(&dir.join(".git/d.md"), "x");
        let extra = dir.join("notes.rst");
        write(&extra, "named directly");

        let found = collect(&[dir.clone(), extra.clone()], "p-").unwrap_or_else(|e| panic!("{e}"));
        let ids: Vec<&str> = found.iter().map(|f| f.document_id.as_str()).collect();
        assert_eq!(ids, ["p-a", "p-b", "p-c", "p-notes"]);
        assert!(all_folders(std::slice::from_ref(&dir)));
        assert!(!all_folders(&[dir.clone(), extra]));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn duplicate_ids_and_missing_paths_are_errors() {
        let dir = temp_dir("dup");
        write(&dir.join("x/guide.md"), "1");
        write(&dir.join("y/guide.txt"), "2");
        let err = collect(std::slice::from_ref(&dir), "")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("would both be document \"guide\""), "{err}");

        let err = collect(&[dir.join("missing")], "")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("missing"), "{err}");

        // The same file named twice is one document.
        let file = dir.join("x/guide.md");
        let found = collect(&[file.clone(), file], "").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(found.len(), 1);

        write(&dir.join("bad#id.md"), "3");
        assert!(collect(&[dir.join("bad#id.md")], "").is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
