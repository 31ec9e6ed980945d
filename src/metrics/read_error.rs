//! Why a rung's JSON could not be read back into a [`super::RungSummary`]: the first key
//! missing or of the wrong type, named as it is written.

/// The first broken key of a rung summary (or of a section of it) read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// An integer key missing or not an integer.
    #[error("missing or non-integer key `{key}`")]
    NotInteger { key: String },
    /// A numeric key missing or not a number.
    #[error("missing or non-numeric key `{key}`")]
    NotNumeric { key: String },
    /// A key missing where null (NaN) or a number is expected.
    #[error("missing key `{key}`")]
    Missing { key: String },
    /// A key present but not a number (nor null).
    #[error("key `{key}` is not a number")]
    NotANumber { key: String },
    /// A count that is not a whole number (`key` may be a path such as
    /// `errors_by_class.http_5xx`).
    #[error("{key} is not a count")]
    NotACount { key: String },
    /// A text key with a value outside its list (`expected`).
    #[error("unknown `{key}` {found:?} ({expected})")]
    Unknown {
        key: &'static str,
        found: String,
        expected: &'static str,
    },
    /// A section that does not parse (`reason` as serde_json says it).
    #[error("key `{key}`: {reason}")]
    Section { key: &'static str, reason: String },
    /// A whole section is malformed (`what` says how, e.g. "`repeats` has no `runs` list").
    #[error("{what}")]
    Malformed { what: &'static str },
    /// A repeat of a pooled rung that is not an object.
    #[error("repeats.runs[{index}] is not an object")]
    RepeatNotObject { index: usize },
    /// A repeat of a pooled rung with a broken key.
    #[error("repeats.runs[{index}]: {source}")]
    InRepeat {
        index: usize,
        source: Box<ReadError>,
    },
    /// A model's counts that do not add up.
    #[error("completed ({completed}) + failed ({failed}) is not num_prompts ({num_prompts})")]
    ModelCounts {
        completed: u64,
        failed: u64,
        num_prompts: u64,
    },
    /// A model's entry with a broken key.
    #[error("models[{model}]: {source}")]
    InModel {
        model: String,
        source: Box<ReadError>,
    },
}

impl ReadError {
    pub(crate) fn not_integer(key: &str) -> Self {
        ReadError::NotInteger { key: key.into() }
    }
    pub(crate) fn not_numeric(key: &str) -> Self {
        ReadError::NotNumeric { key: key.into() }
    }
    pub(crate) fn missing(key: &str) -> Self {
        ReadError::Missing { key: key.into() }
    }
    pub(crate) fn not_a_number(key: &str) -> Self {
        ReadError::NotANumber { key: key.into() }
    }
    pub(crate) fn not_a_count(key: &str) -> Self {
        ReadError::NotACount { key: key.into() }
    }
    pub(crate) fn malformed(what: &'static str) -> Self {
        ReadError::Malformed { what }
    }
    /// This error inside model `model`'s entry.
    pub(crate) fn in_model(self, model: &str) -> Self {
        ReadError::InModel {
            model: model.into(),
            source: Box::new(self),
        }
    }
}
