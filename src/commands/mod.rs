//! What a command does end to end, above the modules it strings together: a command runs,
//! compares, writes and reports through them, and the binary (`src/cli.rs`) only parses its
//! arguments, calls it, prints and maps the outcome to an exit code (docs/architecture.md).
//! A command speaks through the [`crate::notes::Notes`] it is given and returns a typed
//! result or error; it never prints and never decides an exit code.
//!
//! `run`, `gate` (run, then compare against the golden baseline) and `bless` beside it (with
//! `replaced`, where bless keeps the baseline it replaces), `compare`, `report` (and the one
//! report writer after a run), `merge`, `history`, `deploy` (`slurm`, `kube`), `init` and
//! `validate`.

pub mod bless;
pub mod compare;
pub mod deploy;
pub mod gate;
pub mod history;
pub mod init;
pub mod merge;
pub mod replaced;
pub mod report;
pub mod run;
pub mod validate;

pub use bless::{bless, BlessOptions, Blessed};
pub use gate::{gate, gate_outcome, GateError, GateOptions};
