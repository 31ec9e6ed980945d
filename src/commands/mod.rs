//! What a command does end to end, above the modules it strings together: a command runs,
//! compares, writes and reports through them, and the binary (`src/cli.rs`) only parses its
//! arguments, calls it, prints and maps the outcome to an exit code (docs/architecture.md).
//!
//! So far `gate` (`ladder gate`: run, then compare against the golden baseline) and
//! `ladder bless` beside it, with `replaced` (where bless keeps the baseline it replaces),
//! and `history` (`ladder history`). The other commands still live in their modules
//! (`runner::run`, `compare::compare_dirs`, `report`, `deploy`).

pub mod gate;
pub mod history;
pub mod replaced;

pub use gate::{bless, gate, gate_outcome, BlessOptions, Blessed, GateError, GateOptions};
