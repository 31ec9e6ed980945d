//! client (see DESIGN.md module map).
