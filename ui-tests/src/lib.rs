//! trybuild cases for `#[operation]`: see `tests/ui.rs` and `README.md`.
