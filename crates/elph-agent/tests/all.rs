//! The one integration-test binary of elph-agent (see DESIGN.md: one binary per crate).

mod suite;
