//! trybuild cases for `#[operation]`: see `tests/ui.rs`.
