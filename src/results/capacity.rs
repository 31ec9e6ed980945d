//! A result folder's `capacity.json`, read back: the one reader `compare`/`gate`, `history`,
//! `report` and `bless` share (RELIABILITY.md, the `capacity.json` row). Bounded
//! (`fileread::read_bounded`), parsed, then checked as the runner writes it
//! ([`CapacityFile::checked`]): a file that is too large, not JSON of the layout, or whose
//! numbers no search gives is refused with its path, the key that is wrong, and what to do.

use std::path::{Path, PathBuf};

use super::ResultDir;
use crate::capacity::{CapacityFile, CAPACITY_FILE};

/// Largest capacity.json read (a search of thousands of probes is a few MB).
pub const MAX_CAPACITY_BYTES: u64 = 16 * 1024 * 1024;

/// What to do about a damaged file, in every message.
const FIX: &str = "ladder writes it at the end of a search (load.search): copy the whole \
                   result folder, or run the search again";

/// Why a folder's `capacity.json` cannot be read ([`read_capacity`]).
#[derive(Debug, thiserror::Error)]
pub enum CapacityReadError {
    /// The file is there but cannot be read (too large, not a regular file, the system's
    /// error).
    #[error(transparent)]
    Read(#[from] crate::fileread::ReadError),
    /// The file is not a capacity file (serde's message).
    #[error("{}: not a capacity file: {source}; {FIX}", path.display())]
    NotACapacityFile {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// It parses, but holds what no search writes ([`CapacityFile::checked`]'s reason).
    #[error("{}: damaged capacity file: {why}; {FIX}", path.display())]
    Damaged { path: PathBuf, why: String },
}

/// A folder's `capacity.json`: `None` when it has none (not a capacity search).
pub fn read_capacity(d: &ResultDir) -> Result<Option<CapacityFile>, CapacityReadError> {
    // vLLM result files (a folder of them, or one file) are no search.
    if d.imported.is_some() || !d.path.is_dir() {
        return Ok(None);
    }
    read_capacity_in(&d.path)
}

/// The `capacity.json` in the folder `dir` ([`read_capacity`] for a folder not yet opened).
pub fn read_capacity_in(dir: &Path) -> Result<Option<CapacityFile>, CapacityReadError> {
    let path = dir.join(CAPACITY_FILE);
    let bytes = match crate::fileread::read_bounded(&path, MAX_CAPACITY_BYTES) {
        Err(crate::fileread::ReadError::NotFound(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
        Ok(bytes) => bytes,
    };
    let file: CapacityFile =
        serde_json::from_slice(&bytes).map_err(|source| CapacityReadError::NotACapacityFile {
            path: path.clone(),
            source,
        })?;
    file.checked()
        .map(Some)
        .map_err(|why| CapacityReadError::Damaged { path, why })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder holding `capacity.json` as `body` (a folder as `body`: `None`).
    fn folder_with(body: Option<&[u8]>) -> (tempfile::TempDir, ResultDir) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(CAPACITY_FILE);
        match body {
            Some(b) => std::fs::write(&path, b).unwrap(),
            None => std::fs::create_dir(&path).unwrap(),
        }
        let dir = ResultDir {
            path: tmp.path().to_path_buf(),
            info: crate::results::write::tests::sample_info("cap"),
            rungs: vec![],
            imported: None,
            imported_send_times: vec![],
        };
        (tmp, dir)
    }

    #[test]
    fn a_capacity_file_that_is_not_one_names_its_path_and_serde_s_reason() {
        let (tmp, dir) = folder_with(Some(b"{\"answer\": 3}"));
        let e = read_capacity(&dir).unwrap_err();
        let path = tmp.path().join(CAPACITY_FILE);
        let CapacityReadError::NotACapacityFile { path: p, source } = &e else {
            panic!("{e:?}");
        };
        assert_eq!(p, &path);
        assert_eq!(
            e.to_string(),
            format!("{}: not a capacity file: {source}; {FIX}", path.display())
        );
    }

    #[test]
    fn a_capacity_file_that_cannot_be_read_says_what_the_reader_says() {
        let (_tmp, dir) = folder_with(None);
        let e = read_capacity(&dir).unwrap_err();
        let CapacityReadError::Read(inner) = &e else {
            panic!("{e:?}");
        };
        assert!(
            matches!(inner, crate::fileread::ReadError::Directory(_)),
            "{inner:?}"
        );
        assert_eq!(e.to_string(), inner.to_string());
    }

    #[test]
    fn a_folder_without_a_capacity_file_is_no_search() {
        let (tmp, dir) = folder_with(Some(b"{}"));
        std::fs::remove_file(tmp.path().join(CAPACITY_FILE)).unwrap();
        assert!(read_capacity(&dir).unwrap().is_none());
    }

    /// A search's file as the runner writes it: probes at 40 (inside), 80 (inside) and 160
    /// req/s (outside), the answer 100 [80, 160].
    fn written() -> serde_json::Value {
        let probe = |level: f64, verdict: &str| {
            serde_json::json!({
                "level": level, "measurements": 1, "requests": 400, "verdict": verdict,
                "terms": [{ "metric": "p99_ttft_ms", "value": 90.0, "lo": 80.0, "hi": 120.0,
                            "n": 400, "verdict": verdict }],
                "bracket": [null, null]
            })
        };
        serde_json::json!({
            "format_version": 1, "over": "rate", "unit": "req/s",
            "slo": [{ "metric": "p99_ttft_ms", "max": 150.0 }, { "metric": "error_rate", "max": 0.01 }],
            "confidence": 0.9, "precision": "5%",
            "probes": [probe(40.0, "inside"), probe(80.0, "inside"), probe(160.0, "outside")],
            "answer": { "status": "converged", "capacity": 100.0, "lo": 80.0, "hi": 160.0 },
            "text": "capacity 100 req/s [80, 160] at p99 TTFT <= 150 ms and error rate <= 0.01",
            "requests": 1200, "spent_s": 30.0
        })
    }

    fn read_json(v: &serde_json::Value) -> Result<Option<CapacityFile>, CapacityReadError> {
        let (_tmp, dir) = folder_with(Some(v.to_string().as_bytes()));
        read_capacity(&dir)
    }

    #[test]
    fn a_file_as_the_runner_writes_it_is_read_and_its_line_made_again_from_its_numbers() {
        let f = read_json(&written()).unwrap().unwrap();
        assert_eq!(f.answer.capacity, Some(100.0));
        assert_eq!(
            f.text,
            "capacity 100 req/s [80, 160] at p99 TTFT <= 150 ms and error rate <= 0.01"
        );
        // A line that says something else is not kept: the reader makes it from the numbers.
        let mut v = written();
        v["text"] = "PASS\ncapacity 999 req/s [990, 1000] Bearer sk-abcdef1234567890".into();
        let f = read_json(&v).unwrap().unwrap();
        assert_eq!(
            f.text,
            "capacity 100 req/s [80, 160] at p99 TTFT <= 150 ms and error rate <= 0.01"
        );
    }

    #[test]
    fn numbers_no_search_writes_are_refused_with_the_key_and_what_to_do() {
        type Edit = fn(&mut serde_json::Value);
        let cases: &[(&str, Edit)] = &[
            ("format_version 2 is newer", |v| {
                v["format_version"] = 2.into()
            }),
            ("over \"rate\" with unit \"users\"", |v| {
                v["unit"] = "users".into()
            }),
            ("slo is empty", |v| v["slo"] = serde_json::json!([])),
            ("slo metric \"p99_ttft_ms<script>\" is not one", |v| {
                v["slo"][0]["metric"] = "p99_ttft_ms<script>".into()
            }),
            (
                "slo term error_rate: its bound 2 is a fraction above 1",
                |v| v["slo"][1]["max"] = 2.0.into(),
            ),
            ("answer: capacity 0.7 with interval [1, 0.5]", |v| {
                v["answer"] = serde_json::json!({"status": "converged", "capacity": 0.7, "lo": 1.0, "hi": 0.5})
            }),
            ("answer.capacity: level 0 is not a positive number", |v| {
                v["answer"] = serde_json::json!({"status": "converged", "capacity": 0.0, "lo": 0.0, "hi": 0.0})
            }),
            (
                "answer.lo 120 is not the level of a probe judged inside",
                |v| v["answer"] = serde_json::json!({"status": "interrupted", "capacity": 125.0, "lo": 120.0, "hi": 160.0}),
            ),
            (
                "answer.hi 80 is not the level of a probe judged outside",
                |v| v["answer"] = serde_json::json!({"status": "converged", "capacity": 60.0, "lo": 40.0, "hi": 80.0}),
            ),
            ("answer: a search gives a point exactly when", |v| {
                v["answer"]["hi"] = serde_json::Value::Null
            }),
            ("probes[0]: level 5e-324 is below the lowest level", |v| {
                v["probes"][0]["level"] = 5e-324.into()
            }),
            ("probes[2]: level 1e300 is past 1e12", |v| {
                v["probes"][2]["level"] = 1e300.into()
            }),
            (
                "probes[1]: p99_ttft_ms: -3 is not a measured value (Negative)",
                |v| v["probes"][1]["terms"][0]["value"] = (-3.0).into(),
            ),
            ("confidence 1.5 is not a level", |v| {
                v["confidence"] = 1.5.into()
            }),
        ];
        for (want, edit) in cases {
            let mut v = written();
            edit(&mut v);
            let e = read_json(&v).unwrap_err();
            let msg = e.to_string();
            assert!(
                matches!(e, CapacityReadError::Damaged { .. }) && msg.contains(want),
                "{want}: {msg}"
            );
            assert!(msg.ends_with(FIX), "{msg}");
        }
        // Over users, levels are whole numbers of users.
        let mut v = written();
        v["over"] = "users".into();
        v["unit"] = "users".into();
        v["probes"][0]["level"] = 2.5.into();
        let msg = read_json(&v).unwrap_err().to_string();
        assert!(msg.contains("level 2.5 is no number of users"), "{msg}");
    }

    #[test]
    fn the_same_slo_in_another_order_is_the_same_quantity() {
        let a = read_json(&written()).unwrap().unwrap();
        let mut v = written();
        let terms = v["slo"].as_array().unwrap().clone();
        v["slo"] = serde_json::json!([terms[1], terms[0]]);
        let b = read_json(&v).unwrap().unwrap();
        assert!(a.same_quantity(&b) && b.same_quantity(&a));
        v["slo"][0]["max"] = 0.02.into();
        let c = read_json(&v).unwrap().unwrap();
        assert!(!a.same_quantity(&c));
        v = written();
        v["over"] = "users".into();
        v["unit"] = "users".into();
        let d = read_json(&v).unwrap().unwrap();
        assert!(!a.same_quantity(&d));
    }
}
