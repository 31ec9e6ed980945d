//! Loading a local Hugging Face `tokenizer.json` (a file, or a model directory holding one)
//! and counting with it; finding it for a hub id is [`super::source`].

use std::path::{Path, PathBuf};

use tokenizers::Tokenizer;

/// Largest tokenizer file we try to load; real ones are a few MB.
pub const MAX_TOKENIZER_BYTES: u64 = 256 * 1024 * 1024;

/// Why a tokenizer file could not be loaded, in user terms.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Nothing at the path.
    #[error("tokenizer file {} does not exist", path.display())]
    Missing {
        /// The path given.
        path: PathBuf,
    },
    /// The path could not be looked at.
    #[error("cannot read tokenizer file {}: {message}", path.display())]
    Unreadable {
        /// The path given.
        path: PathBuf,
        /// What the OS said.
        message: String,
    },
    /// A directory without a `tokenizer.json` in it.
    #[error(
        "{} is a directory without a tokenizer.json: point `tokenizer` at a model directory \
         that has one, at the file itself, or at a hub id `Org/Name`",
        path.display()
    )]
    DirWithoutFile {
        /// The directory.
        path: PathBuf,
    },
    /// Over [`MAX_TOKENIZER_BYTES`].
    #[error("{} {reason}: too large to be a tokenizer.json", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The bounded reader's reason.
        reason: String,
    },
    /// The bounded reader refused or failed to read it.
    #[error("tokenizer file {}: {reason}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The bounded reader's reason.
        reason: String,
    },
    /// Read, but not a tokenizer.json.
    #[error("{} is not a Hugging Face tokenizer.json ({message})", path.display())]
    NotTokenizer {
        /// The file.
        path: PathBuf,
        /// What the tokenizers crate said.
        message: String,
    },
}

/// Load a tokenizer file, with an error that says what is wrong in user terms.
pub fn load(path: &Path) -> Result<Tokenizer, LoadError> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => LoadError::Missing {
            path: path.to_path_buf(),
        },
        _ => LoadError::Unreadable {
            path: path.to_path_buf(),
            message: e.to_string(),
        },
    })?;
    if meta.is_dir() {
        let inner = path.join(super::source::TOKENIZER_FILE);
        if inner.is_file() {
            return load(&inner);
        }
        return Err(LoadError::DirWithoutFile {
            path: path.to_path_buf(),
        });
    }
    let bytes = crate::fileread::read_bounded(path, MAX_TOKENIZER_BYTES).map_err(|e| match e {
        crate::fileread::ReadError::TooLarge { .. } => LoadError::TooLarge {
            path: path.to_path_buf(),
            reason: e.reason(),
        },
        e => LoadError::Read {
            path: path.to_path_buf(),
            reason: e.reason(),
        },
    })?;
    Tokenizer::from_bytes(&bytes)
        .map(without_truncation)
        .map_err(|e| LoadError::NotTokenizer {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
}

/// Drop truncation and padding settings some tokenizer.json files carry: they would cap or
/// pad every count we take.
pub fn without_truncation(mut t: Tokenizer) -> Tokenizer {
    // Clearing truncation cannot fail (only setting a too-small max length can).
    let _ = t.with_truncation(None);
    t.with_padding(None);
    t
}

/// Check that a tokenizer file loads (used by `ladder validate`).
pub fn check(path: &Path) -> Result<(), LoadError> {
    load(path).map(|_| ())
}

/// Token count of `text` encoded without special tokens (used to re-tokenize outputs when the
/// server sends no usage). Returns 0 if the tokenizer fails on the text.
///
/// Counts are only right when the tokenizer has no truncation or padding configured;
/// [`load`] clears both.
pub fn count(tokenizer: &Tokenizer, text: &str) -> u32 {
    tokenizer
        .encode_fast(text, false)
        .map(|e| e.len() as u32)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tokenizers/ladder-tiny.json")
    }

    #[test]
    fn loads_the_shipped_fixture() {
        let t = load(&fixture()).unwrap();
        let enc = t.encode("baba babai babe", false).unwrap();
        assert_eq!(enc.get_ids().len(), 3);
    }

    #[test]
    fn refuses_missing_directory_and_garbage() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(&dir.path().join("nope.json"))
            .unwrap_err()
            .to_string()
            .contains("does not exist"));
        assert!(load(dir.path())
            .unwrap_err()
            .to_string()
            .contains("is a directory"));
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{\"hello\": 1}").unwrap();
        assert!(load(&bad)
            .unwrap_err()
            .to_string()
            .contains("not a Hugging Face tokenizer"));
    }
}
