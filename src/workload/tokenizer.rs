//! Loading a local Hugging Face `tokenizer.json` (a file, or a model directory holding one);
//! finding it for a hub id is [`super::tokenizer_source`].

use std::path::Path;

pub use tokenizers::Tokenizer;

/// Largest tokenizer file we try to load; real ones are a few MB.
pub const MAX_TOKENIZER_BYTES: u64 = 256 * 1024 * 1024;

/// Load a tokenizer file, with an error that says what is wrong in user terms.
pub fn load(path: &Path) -> Result<Tokenizer, String> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("tokenizer file {} does not exist", path.display()),
        _ => format!("cannot read tokenizer file {}: {e}", path.display()),
    })?;
    if meta.is_dir() {
        let inner = path.join(super::tokenizer_source::TOKENIZER_FILE);
        if inner.is_file() {
            return load(&inner);
        }
        return Err(format!(
            "{} is a directory without a tokenizer.json: point `tokenizer` at a model \
             directory that has one, at the file itself, or at a hub id `Org/Name`",
            path.display()
        ));
    }
    let bytes = crate::fileread::read_bounded(path, MAX_TOKENIZER_BYTES).map_err(|e| match e {
        crate::fileread::ReadError::TooLarge { .. } => format!(
            "{} {}: too large to be a tokenizer.json",
            path.display(),
            e.reason()
        ),
        e => format!("tokenizer file {}: {}", path.display(), e.reason()),
    })?;
    Tokenizer::from_bytes(&bytes)
        .map(without_truncation)
        .map_err(|e| {
            format!(
                "{} is not a Hugging Face tokenizer.json ({e})",
                path.display()
            )
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
pub fn check(path: &Path) -> Result<(), String> {
    load(path).map(|_| ())
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
            .contains("does not exist"));
        assert!(load(dir.path()).unwrap_err().contains("is a directory"));
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "{\"hello\": 1}").unwrap();
        assert!(load(&bad)
            .unwrap_err()
            .contains("not a Hugging Face tokenizer"));
    }
}
