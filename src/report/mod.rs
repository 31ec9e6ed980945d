//! report (see DESIGN.md module map).
