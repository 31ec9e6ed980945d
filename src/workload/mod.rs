//! workload (see DESIGN.md module map).
