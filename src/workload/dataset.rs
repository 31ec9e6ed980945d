//! Prompt files: jsonl (`{"prompt": ..., "output_tokens": ...}` per line) and ShareGPT.

use std::path::Path;

use serde::Deserialize;

use super::WorkloadError;

/// One prompt read from a file, before the template is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePrompt {
    /// The prompt text, as written in the file.
    pub text: String,
    /// Output length the file asks for: jsonl's `output_tokens`, or ShareGPT's reply text.
    pub output: FileOutput,
}

/// How a file entry specifies the output length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOutput {
    /// Nothing: use `workload.output_tokens`.
    Unset,
    /// An explicit token count (jsonl `output_tokens`).
    Tokens(u32),
    /// The reference reply (ShareGPT's first `gpt` turn after the prompt); its token count is
    /// the output length, as in vLLM's benchmark.
    Reply(String),
}

/// What loading a file found, so the caller can say what was skipped.
#[derive(Debug, Clone, Default)]
pub struct FileStats {
    /// Entries without a usable prompt (empty text, no human turn).
    pub skipped: usize,
}

fn read(path: &Path) -> Result<String, WorkloadError> {
    use crate::scenario::limits::MAX_DATASET_BYTES;
    crate::fileread::read_text_bounded(path, MAX_DATASET_BYTES).map_err(|e| WorkloadError::Io {
        path: path.to_path_buf(),
        message: e.reason(),
    })
}

#[derive(Deserialize)]
struct JsonlLine {
    prompt: String,
    #[serde(default)]
    output_tokens: Option<u32>,
}

/// Read a jsonl prompt file. Blank lines are ignored and lines whose prompt is empty are
/// skipped (counted); any other malformed line is an error naming the file and line.
pub fn load_jsonl(path: &Path) -> Result<(Vec<FilePrompt>, FileStats), WorkloadError> {
    let text = read(path)?;
    let mut out = Vec::new();
    let mut stats = FileStats::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let parsed: JsonlLine =
            serde_json::from_str(line).map_err(|e| WorkloadError::Malformed {
                path: path.to_path_buf(),
                line: i + 1,
                message: format!(
                    "{e}; each line must be a JSON object like {{\"prompt\": \"...\", \"output_tokens\": 128}}"
                ),
            })?;
        if parsed.prompt.trim().is_empty() {
            stats.skipped += 1;
            continue;
        }
        out.push(FilePrompt {
            text: parsed.prompt,
            output: parsed
                .output_tokens
                .map_or(FileOutput::Unset, FileOutput::Tokens),
        });
    }
    Ok((out, stats))
}

#[derive(Deserialize)]
struct ShareGptEntry {
    conversations: Vec<ShareGptTurn>,
}

#[derive(Deserialize)]
struct ShareGptTurn {
    from: String,
    value: String,
}

fn is_human(from: &str) -> bool {
    matches!(from, "human" | "user")
}

fn is_model(from: &str) -> bool {
    matches!(
        from,
        "gpt" | "assistant" | "chatgpt" | "bard" | "bing" | "model"
    )
}

/// Read a ShareGPT file (a JSON array of `{"conversations": [{"from", "value"}, ...]}`).
/// The first `human` turn is the prompt and the first `gpt` turn after it is the reply.
/// Entries without a non-empty human turn are skipped (counted). A file that does not parse
/// is an error with the line and column serde reports.
pub fn load_sharegpt(path: &Path) -> Result<(Vec<FilePrompt>, FileStats), WorkloadError> {
    let text = read(path)?;
    let entries: Vec<ShareGptEntry> =
        serde_json::from_str(&text).map_err(|e| WorkloadError::Malformed {
            path: path.to_path_buf(),
            line: e.line(),
            message: format!(
                "{e}; expected a JSON array of {{\"conversations\": [{{\"from\": \"human\", \"value\": \"...\"}}, ...]}}"
            ),
        })?;
    let mut out = Vec::new();
    let mut stats = FileStats::default();
    for entry in entries {
        let turns = &entry.conversations;
        let Some(h) = turns
            .iter()
            .position(|t| is_human(&t.from) && !t.value.trim().is_empty())
        else {
            stats.skipped += 1;
            continue;
        };
        let reply = turns[h + 1..]
            .iter()
            .find(|t| is_model(&t.from) && !t.value.trim().is_empty());
        out.push(FilePrompt {
            text: turns[h].value.clone(),
            output: reply.map_or(FileOutput::Unset, |r| FileOutput::Reply(r.value.clone())),
        });
    }
    Ok((out, stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &tempfile::TempDir, name: &str, body: &str) -> std::path::PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p
    }

    #[test]
    fn jsonl_reads_prompts_and_skips_empty_ones() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "p.jsonl",
            "{\"prompt\": \"hello there\", \"output_tokens\": 12}\n\n{\"prompt\": \"  \"}\n{\"prompt\": \"second\", \"id\": 7}\n",
        );
        let (v, stats) = load_jsonl(&p).unwrap();
        assert_eq!(stats.skipped, 1);
        assert_eq!(
            v,
            vec![
                FilePrompt {
                    text: "hello there".into(),
                    output: FileOutput::Tokens(12)
                },
                FilePrompt {
                    text: "second".into(),
                    output: FileOutput::Unset
                },
            ]
        );
    }

    #[test]
    fn jsonl_bad_line_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "bad.jsonl",
            "{\"prompt\": \"ok\"}\n\n{\"prompt\": 3}\n",
        );
        let e = load_jsonl(&p).unwrap_err().to_string();
        assert!(e.contains("bad.jsonl:3:"), "{e}");
        let p = write(&dir, "nofield.jsonl", "{\"text\": \"ok\"}\n");
        let e = load_jsonl(&p).unwrap_err().to_string();
        assert!(
            e.contains("nofield.jsonl:1:") && e.contains("prompt"),
            "{e}"
        );
        let p = write(&dir, "trunc.jsonl", "{\"prompt\": \"ok\"\n");
        assert!(load_jsonl(&p)
            .unwrap_err()
            .to_string()
            .contains("trunc.jsonl:1:"));
        let e = load_jsonl(&dir.path().join("missing.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.jsonl"), "{e}");
    }

    #[test]
    fn sharegpt_takes_first_human_turn_and_following_reply() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "sg.json",
            r#"[
  {"id": "a", "conversations": [
     {"from": "system", "value": "be nice"},
     {"from": "human", "value": "first question"},
     {"from": "gpt", "value": "first answer"},
     {"from": "human", "value": "second question"}]},
  {"id": "b", "conversations": [{"from": "gpt", "value": "orphan reply"}]},
  {"id": "c", "conversations": [{"from": "human", "value": ""}]},
  {"id": "d", "conversations": [{"from": "human", "value": "no reply"}]}
]"#,
        );
        let (v, stats) = load_sharegpt(&p).unwrap();
        assert_eq!(stats.skipped, 2);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].text, "first question");
        assert_eq!(v[0].output, FileOutput::Reply("first answer".into()));
        assert_eq!(v[1].output, FileOutput::Unset);
    }

    #[test]
    fn sharegpt_malformed_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            &dir,
            "sg.json",
            "[\n {\"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}]},\n {\"conv\": []}\n]",
        );
        let e = load_sharegpt(&p).unwrap_err().to_string();
        assert!(e.contains("sg.json:3:"), "{e}");
        assert!(e.contains("conversations"), "{e}");
    }
}
