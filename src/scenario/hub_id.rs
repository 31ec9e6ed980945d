//! The `tokenizer:` value as a Hugging Face hub id: `Org/Name`, optionally pinned to a
//! revision with `@` (`Qwen/Qwen2.5-7B-Instruct@main`, `...@<commit sha>`, `...@v1.0`). Only the
//! syntax lives here; finding it in the cache or downloading it is `tokens::source`.

/// A model repository on the Hugging Face hub and the revision to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubId {
    /// `Org/Name`.
    pub repo: String,
    /// A branch, tag or commit; `main` when not given.
    pub revision: String,
}

/// The revision read when none is pinned (the hub's default branch name).
pub const DEFAULT_REVISION: &str = "main";

fn name_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 96
        && !s.starts_with(['.', '-'])
        && !s.contains("..")
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl HubId {
    /// `Org/Name` or `Org/Name@revision`, as the hub spells repository names (letters, digits,
    /// `-`, `_`, `.`); `None` for anything else, e.g. a path with more than one `/` or ending in
    /// `.json`. A value that is also an existing path is a path: the caller checks that first.
    pub fn parse(text: &str) -> Option<HubId> {
        let (repo, revision) = match text.split_once('@') {
            Some((r, rev)) => (r, Some(rev)),
            None => (text, None),
        };
        let (org, name) = repo.split_once('/')?;
        if !name_ok(org) || !name_ok(name) || name.ends_with(".json") {
            return None;
        }
        let revision = match revision {
            None => DEFAULT_REVISION.to_owned(),
            Some(rev)
                if !rev.is_empty()
                    && !rev.contains("..")
                    && !rev.starts_with('/')
                    && rev.chars().all(|c| {
                        c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')
                    }) =>
            {
                rev.to_owned()
            }
            Some(_) => return None,
        };
        Some(HubId {
            repo: repo.to_owned(),
            revision,
        })
    }

    /// The cache folder name huggingface_hub gives a model repository: `models--Org--Name`.
    pub fn cache_folder(&self) -> String {
        format!("models--{}", self.repo.replace('/', "--"))
    }
}

impl std::fmt::Display for HubId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.revision == DEFAULT_REVISION {
            f.write_str(&self.repo)
        } else {
            write!(f, "{}@{}", self.repo, self.revision)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_ids_and_revisions() {
        let h = HubId::parse("Qwen/Qwen2.5-7B-Instruct").unwrap();
        assert_eq!(
            (h.repo.as_str(), h.revision.as_str()),
            ("Qwen/Qwen2.5-7B-Instruct", "main")
        );
        assert_eq!(h.cache_folder(), "models--Qwen--Qwen2.5-7B-Instruct");
        let h = HubId::parse("org/name@refs/pr/3").unwrap();
        assert_eq!(h.revision, "refs/pr/3");
        assert_eq!(h.to_string(), "org/name@refs/pr/3");
        for not in [
            "tokenizer.json",
            "models/tok.json",
            "/abs/path",
            "./org/name",
            "a/b/c",
            "org/name@",
            "org/name@../x",
            "../name",
            "org/",
            "server",
        ] {
            assert_eq!(HubId::parse(not), None, "{not}");
        }
    }
}
