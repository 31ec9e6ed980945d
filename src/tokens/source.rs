//! Where the scenario's `tokenizer:` comes from: a `tokenizer.json` file, a model directory
//! holding one, or a Hugging Face hub id (`Org/Name[@revision]`) read from the local Hugging
//! Face cache in the layout huggingface_hub writes, and downloaded into it (through `hf-hub`,
//! only here) when the scenario allows it and the environment is not offline.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::scenario::hub_id::HubId;

/// The file a model directory or hub snapshot holds the tokenizer in.
pub const TOKENIZER_FILE: &str = "tokenizer.json";

/// Why the scenario's `tokenizer:` names no `tokenizer.json` ladder can read; every message
/// says what to do.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A directory without a `tokenizer.json`.
    #[error(
        "{} is a directory without a tokenizer.json: point `tokenizer` at a model directory \
         that has one (as `huggingface-cli download ORG/NAME` makes), at the file itself, or at \
         a hub id `Org/Name`",
        dir.display()
    )]
    DirWithoutFile {
        /// The directory.
        dir: PathBuf,
    },
    /// Neither an existing path nor shaped like a hub id.
    #[error(
        "tokenizer file {} does not exist (`tokenizer` is a tokenizer.json file, a model \
         directory, or a hub id `Org/Name[@revision]`)",
        path.display()
    )]
    Missing {
        /// The path, resolved against the scenario's folder.
        path: PathBuf,
    },
    /// The hub id's cached snapshot has no `tokenizer.json` and may not be downloaded.
    #[error(
        "{id}: the cached snapshot {} has no tokenizer.json; fetch it with \
         `huggingface-cli download {} tokenizer.json{}`, or point `tokenizer` at a \
         tokenizer.json file",
        snapshot.display(),
        id.repo,
        rev_flag(id)
    )]
    NoFileInSnapshot {
        /// The hub id.
        id: HubId,
        /// The snapshot folder.
        snapshot: PathBuf,
    },
    /// Not in the cache, and `HF_HUB_OFFLINE` forbids downloading.
    #[error(
        "{id} is not in the Hugging Face cache at {} and HF_HUB_OFFLINE is set, so it cannot \
         be downloaded: fetch it where you are online (`huggingface-cli download {} \
         tokenizer.json{}`) and copy the cache here (or set HF_HUB_CACHE / HF_HOME to \
         where it is), or point `tokenizer` at a tokenizer.json file",
        cache_dir.display(),
        id.repo,
        rev_flag(id)
    )]
    Offline {
        /// The hub id.
        id: HubId,
        /// The hub cache folder.
        cache_dir: PathBuf,
    },
    /// Not in the cache, and the scenario does not allow downloading.
    #[error(
        "{id} is not in the Hugging Face cache at {} (looked for {}/refs/{}); set \
         `tokenizer_download: true` to let ladder download its tokenizer.json there, run \
         `huggingface-cli download {} tokenizer.json{}`, set HF_HUB_CACHE / HF_HOME to the \
         cache that has it, or point `tokenizer` at a tokenizer.json file",
        cache_dir.display(),
        id.cache_folder(),
        id.revision,
        id.repo,
        rev_flag(id)
    )]
    NotCached {
        /// The hub id.
        id: HubId,
        /// The hub cache folder.
        cache_dir: PathBuf,
    },
    /// The download failed.
    #[error(
        "cannot download tokenizer.json of {id} into {}: {message}; check the id and your \
         network; a gated model needs HF_TOKEN set to a token with access to it; or point \
         `tokenizer` at a tokenizer.json file",
        cache_dir.display()
    )]
    Download {
        /// The hub id as written.
        id: String,
        /// The hub cache folder.
        cache_dir: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// What kind of `tokenizer:` value was used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// A `tokenizer.json` file.
    File,
    /// A model directory with a `tokenizer.json`.
    Dir,
    /// A hub id found in (or downloaded into) the Hugging Face cache.
    Hub,
    /// `tokenizer: server`: the server's own `/tokenize`.
    Server,
    /// `tokenizer: none`: no tokenizer; the server's usage counts the prompts.
    None,
}

/// The `tokenizer:` words that name no file: `server` and `none` (a file or directory of that
/// name is written `./server`).
pub fn special(written: &str) -> Option<SourceKind> {
    use crate::scenario::types::{TOKENIZER_NONE, TOKENIZER_SERVER};
    match written {
        TOKENIZER_SERVER => Some(SourceKind::Server),
        TOKENIZER_NONE => Some(SourceKind::None),
        _ => None,
    }
}

impl TokenizerSource {
    /// The source of `tokenizer: server` or `none`, which read no file.
    pub fn fileless(kind: SourceKind) -> TokenizerSource {
        TokenizerSource {
            kind,
            path: PathBuf::new(),
            hub_id: None,
            revision: None,
            commit: None,
            downloaded: false,
            tokenize_api: None,
        }
    }

    /// A local `tokenizer.json` was read.
    pub fn is_local(&self) -> bool {
        matches!(
            self.kind,
            SourceKind::File | SourceKind::Dir | SourceKind::Hub
        )
    }
}

/// Where the tokenizer came from, as run.json records it (with its SHA-256 beside it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenizerSource {
    /// File, directory or hub id.
    pub kind: SourceKind,
    /// The `tokenizer.json` read (none for `server` and `none`).
    #[serde(default, skip_serializing_if = "path_is_empty")]
    pub path: PathBuf,
    /// The hub id (`Org/Name`) of a hub source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hub_id: Option<String>,
    /// The revision asked for (`main` unless pinned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The commit the revision resolved to in the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// `true` when this run downloaded it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub downloaded: bool,
    /// The `/tokenize` request shape the server answered (`vllm` or `llama.cpp`), for
    /// `tokenizer: server`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenize_api: Option<String>,
}

fn path_is_empty(p: &Path) -> bool {
    p.as_os_str().is_empty()
}

/// The Hugging Face settings a hub id is resolved with. Built from the environment at the
/// edge ([`HubSettings::from_env`]); tests build it directly.
#[derive(Clone)]
pub struct HubSettings {
    /// The hub cache folder (`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
    /// `~/.cache/huggingface/hub`).
    pub cache_dir: PathBuf,
    /// `HF_HUB_OFFLINE` is set to a true value: never download.
    pub offline: bool,
    /// The scenario's `tokenizer_download`.
    pub download: bool,
    /// `HF_TOKEN`, for gated models; sent to the hub only, never printed or written.
    pub token: Option<String>,
    /// `HF_ENDPOINT`, a mirror of the hub.
    pub endpoint: Option<String>,
}

impl std::fmt::Debug for HubSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubSettings")
            .field("cache_dir", &self.cache_dir)
            .field("offline", &self.offline)
            .field("download", &self.download)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

/// huggingface_hub's cache folder rule.
pub fn hub_cache_dir(
    hf_hub_cache: Option<&str>,
    hf_home: Option<&str>,
    home: Option<&Path>,
) -> PathBuf {
    let set = |v: Option<&str>| v.filter(|s| !s.is_empty()).map(PathBuf::from);
    if let Some(dir) = set(hf_hub_cache) {
        return dir;
    }
    if let Some(home) = set(hf_home) {
        return home.join("hub");
    }
    home.unwrap_or(Path::new("."))
        .join(".cache")
        .join("huggingface")
        .join("hub")
}

/// huggingface_hub's reading of `HF_HUB_OFFLINE`.
fn truthy(v: Option<&str>) -> bool {
    v.is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

impl HubSettings {
    /// From `HF_HUB_CACHE`, `HF_HOME`, `HOME`, `HF_HUB_OFFLINE`, `HF_TOKEN`, `HF_ENDPOINT`.
    pub fn from_env(download: bool) -> HubSettings {
        let var = |k: &str| std::env::var(k).ok();
        let home = var("HOME").map(PathBuf::from);
        HubSettings {
            cache_dir: hub_cache_dir(
                var("HF_HUB_CACHE").as_deref(),
                var("HF_HOME").as_deref(),
                home.as_deref(),
            ),
            offline: truthy(var("HF_HUB_OFFLINE").as_deref()),
            download,
            token: var("HF_TOKEN").filter(|t| !t.is_empty()),
            endpoint: var("HF_ENDPOINT").filter(|e| !e.is_empty()),
        }
    }
}

/// The `tokenizer.json` of the scenario's `tokenizer:` value. `written` is the value as
/// written, `resolved` the same against the scenario's folder. A value that is an existing
/// path is a file or a model directory; otherwise one shaped like `Org/Name[@rev]` is a hub
/// id. Every error says what to do.
pub fn resolve(
    written: &str,
    resolved: &Path,
    hub: &HubSettings,
) -> Result<TokenizerSource, SourceError> {
    let local = |kind, path: PathBuf| TokenizerSource {
        kind,
        path,
        hub_id: None,
        revision: None,
        commit: None,
        downloaded: false,
        tokenize_api: None,
    };
    if resolved.is_dir() {
        let inner = resolved.join(TOKENIZER_FILE);
        if inner.is_file() {
            return Ok(local(SourceKind::Dir, inner));
        }
        return Err(SourceError::DirWithoutFile {
            dir: resolved.to_path_buf(),
        });
    }
    if resolved.exists() {
        return Ok(local(SourceKind::File, resolved.to_path_buf()));
    }
    let Some(id) = HubId::parse(written) else {
        return Err(SourceError::Missing {
            path: resolved.to_path_buf(),
        });
    };
    match cached(&id, &hub.cache_dir) {
        Cached::Found { path, commit } => Ok(TokenizerSource {
            kind: SourceKind::Hub,
            path,
            hub_id: Some(id.repo.clone()),
            revision: Some(id.revision.clone()),
            commit: Some(commit),
            downloaded: false,
            tokenize_api: None,
        }),
        Cached::NoFile { snapshot } if !hub.download || hub.offline => {
            Err(SourceError::NoFileInSnapshot { id, snapshot })
        }
        _ if hub.offline => Err(SourceError::Offline {
            id,
            cache_dir: hub.cache_dir.clone(),
        }),
        _ if !hub.download => Err(SourceError::NotCached {
            id,
            cache_dir: hub.cache_dir.clone(),
        }),
        _ => download(&id, hub),
    }
}

fn rev_flag(id: &HubId) -> String {
    if id.revision == crate::scenario::hub_id::DEFAULT_REVISION {
        String::new()
    } else {
        format!(" --revision {}", id.revision)
    }
}

enum Cached {
    Found { path: PathBuf, commit: String },
    NoFile { snapshot: PathBuf },
    Missing,
}

fn is_commit(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// huggingface_hub's layout: `models--Org--Name/refs/<revision>` holds the commit of a branch
/// or tag; `snapshots/<commit>/tokenizer.json` the file. A commit pinned as the revision is
/// its own snapshot folder.
fn cached(id: &HubId, cache_dir: &Path) -> Cached {
    let repo = cache_dir.join(id.cache_folder());
    let commit = if is_commit(&id.revision) {
        id.revision.clone()
    } else {
        // A commit hash: 40 hex digits and a newline.
        match crate::fileread::read_text_bounded(&repo.join("refs").join(&id.revision), 4096) {
            Ok(c) if is_commit(c.trim()) => c.trim().to_owned(),
            _ => return Cached::Missing,
        }
    };
    let snapshot = repo.join("snapshots").join(&commit);
    let path = snapshot.join(TOKENIZER_FILE);
    if path.is_file() {
        Cached::Found { path, commit }
    } else if snapshot.is_dir() {
        Cached::NoFile { snapshot }
    } else {
        Cached::Missing
    }
}

/// Download the hub id's `tokenizer.json` into the cache (hf-hub writes the same layout), on a
/// runtime of its own: this runs before the run's runtime exists, and in `ladder validate`.
fn download(id: &HubId, hub: &HubSettings) -> Result<TokenizerSource, SourceError> {
    use hf_hub::api::tokio::ApiBuilder;
    use hf_hub::{Cache, Repo, RepoType};

    let fail = |e: &dyn std::fmt::Display| SourceError::Download {
        id: id.to_string(),
        cache_dir: hub.cache_dir.clone(),
        message: e.to_string(),
    };
    let mut builder =
        ApiBuilder::from_cache(Cache::new(hub.cache_dir.clone())).with_progress(false);
    if let Some(t) = &hub.token {
        builder = builder.with_token(Some(t.clone()));
    }
    if let Some(e) = &hub.endpoint {
        builder = builder.with_endpoint(e.clone());
    }
    let api = builder.build().map_err(|e| fail(&e))?;
    let repo = api.repo(Repo::with_revision(
        id.repo.clone(),
        RepoType::Model,
        id.revision.clone(),
    ));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| fail(&e))?;
    let path = rt
        .block_on(repo.download(TOKENIZER_FILE))
        .map_err(|e| fail(&e))?;
    let commit = match cached(id, &hub.cache_dir) {
        Cached::Found { commit, .. } => Some(commit),
        _ => None,
    };
    Ok(TokenizerSource {
        kind: SourceKind::Hub,
        path,
        hub_id: Some(id.repo.clone()),
        revision: Some(id.revision.clone()),
        commit,
        downloaded: true,
        tokenize_api: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_folder_follows_huggingface_hub() {
        let home = Path::new("/home/u");
        assert_eq!(
            hub_cache_dir(Some("/c"), Some("/h"), Some(home)),
            PathBuf::from("/c")
        );
        assert_eq!(
            hub_cache_dir(None, Some("/h"), Some(home)),
            PathBuf::from("/h/hub")
        );
        assert_eq!(
            hub_cache_dir(Some(""), None, Some(home)),
            PathBuf::from("/home/u/.cache/huggingface/hub")
        );
        assert!(truthy(Some("1")) && truthy(Some("TRUE")) && !truthy(Some("0")) && !truthy(None));
    }

    /// The messages as they read when they were `format!`ed strings, word for word.
    #[test]
    fn hub_errors_read_as_before() {
        let id = HubId::parse("Org/Name@v2").unwrap();
        let cache_dir = PathBuf::from("/c");
        let e = SourceError::NoFileInSnapshot {
            id: id.clone(),
            snapshot: PathBuf::from("/c/snap"),
        };
        assert_eq!(
            e.to_string(),
            "Org/Name@v2: the cached snapshot /c/snap has no tokenizer.json; fetch it with \
             `huggingface-cli download Org/Name tokenizer.json --revision v2`, or point \
             `tokenizer` at a tokenizer.json file"
        );
        let e = SourceError::Offline {
            id: id.clone(),
            cache_dir: cache_dir.clone(),
        };
        assert_eq!(
            e.to_string(),
            "Org/Name@v2 is not in the Hugging Face cache at /c and HF_HUB_OFFLINE is set, so it \
             cannot be downloaded: fetch it where you are online (`huggingface-cli download \
             Org/Name tokenizer.json --revision v2`) and copy the cache here (or set \
             HF_HUB_CACHE / HF_HOME to where it is), or point `tokenizer` at a tokenizer.json \
             file"
        );
        let e = SourceError::NotCached {
            id: HubId::parse("Org/Name").unwrap(),
            cache_dir,
        };
        assert_eq!(
            e.to_string(),
            "Org/Name is not in the Hugging Face cache at /c (looked for \
             models--Org--Name/refs/main); set `tokenizer_download: true` to let ladder \
             download its tokenizer.json there, run `huggingface-cli download Org/Name \
             tokenizer.json`, set HF_HUB_CACHE / HF_HOME to the cache that has it, or point \
             `tokenizer` at a tokenizer.json file"
        );
    }

    #[test]
    fn the_token_is_never_in_debug_output() {
        let mut h = HubSettings::from_env(false);
        h.token = Some("hf_fake_token_for_tests".into());
        assert!(!format!("{h:?}").contains("hf_fake"));
    }
}
