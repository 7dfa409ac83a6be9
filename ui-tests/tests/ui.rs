//! trybuild cases for `#[operation]`: `pass/` must compile, `fail/` must fail with the
//! `.stderr` beside each case. Refresh snapshots with `TRYBUILD=overwrite cargo test -p opkit-ui-tests`.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("pass/*.rs");
    cases.compile_fail("fail/*.rs");
}
