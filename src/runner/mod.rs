//! runner (see DESIGN.md module map).
