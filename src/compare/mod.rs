//! compare (see DESIGN.md module map).
