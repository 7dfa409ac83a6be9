//! Which encoding a request picks with its `Accept-Encoding`, read as tower-http's compression
//! reads it (it offers gzip alone here), so that what the server gzips itself (a whole body, the
//! OpenAPI document) is what the compression layer would have gzipped.

use crate::http_server::header_list;
use http::{HeaderMap, header};

/// `true` when tower-http's compression, offering gzip alone, picks it for a request with
/// these headers: among the `Accept-Encoding` items naming `gzip` (or `x-gzip`) or
/// `identity`, with no parameter or a well-formed weight as their one parameter, the one
/// with the highest nonzero weight is gzip (gzip winning a tie). A `*` is not taken for
/// either.
pub(crate) fn prefers_gzip(headers: &HeaderMap) -> bool {
    let (mut gzip, mut identity) = (0, 0);
    for item in header_list::items(headers, header::ACCEPT_ENCODING) {
        let (coding, weight) = match item.split_once(';') {
            Some((coding, weight)) => match qvalue(weight.trim()) {
                Some(weight) => (coding, weight),
                None => continue,
            },
            None => (item, 1000),
        };
        let coding = coding.trim();
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            gzip = gzip.max(weight);
        } else if coding.eq_ignore_ascii_case("identity") {
            identity = identity.max(weight);
        }
    }
    gzip > 0 && gzip >= identity
}

/// A weight parameter, `q=` and a qvalue (RFC 9110 §12.4.2, as tower-http reads it: a `0`
/// or `1`, then optionally `.` and up to three digits, at most 1), in thousandths.
fn qvalue(parameter: &str) -> Option<u16> {
    let value = parameter
        .strip_prefix("q=")
        .or_else(|| parameter.strip_prefix("Q="))?;
    let (whole, fraction) = match value.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (value, ""),
    };
    let whole: u16 = match whole {
        "0" => 0,
        "1" => 1000,
        _ => return None,
    };
    if fraction.len() > 3 || !fraction.bytes().all(|digit| digit.is_ascii_digit()) {
        return None;
    }
    let thousandths = fraction
        .bytes()
        .zip([100, 10, 1])
        .map(|(digit, scale)| u16::from(digit - b'0') * scale)
        .sum::<u16>();
    let weight = whole + thousandths;
    (weight <= 1000).then_some(weight)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use http::{HeaderValue, Request};
    use tower_service::Service;

    /// What tower-http's layer alone does with a compressible answer for these
    /// `Accept-Encoding` values: compress it or not.
    async fn layer_compresses(values: &[&'static str]) -> bool {
        let mut layered = axum::Router::new()
            .route("/", axum::routing::get(|| async { vec![b'x'; 2_000] }))
            .layer(tower_http::compression::CompressionLayer::new());
        let mut request = Request::new(Body::empty());
        for value in values {
            request
                .headers_mut()
                .append(header::ACCEPT_ENCODING, HeaderValue::from_static(value));
        }
        std::future::poll_fn(|cx| Service::<Request<Body>>::poll_ready(&mut layered, cx))
            .await
            .unwrap();
        let response = layered.call(request).await.unwrap();
        response.headers().contains_key(header::CONTENT_ENCODING)
    }

    #[tokio::test]
    async fn gzip_is_picked_when_tower_http_picks_it() {
        let cases: &[&[&'static str]] = &[
            &[],
            &["gzip"],
            &["GZIP"],
            &["x-gzip"],
            &["gzip, deflate, br"],
            &["br;q=1.0, gzip;q=0.5"],
            &["gzip;q=0"],
            &["gzip;q=0.000"],
            &["gzip;q=0.001"],
            &["gzip; q=0.5"],
            &["gzip ;q=0.5"],
            &["gzip;q = 0.5"],
            &["gzip;Q=1"],
            &["gzip;q=1.000"],
            &["gzip;q=1.001"],
            &["gzip;q=0.5000"],
            &["gzip;q=.5"],
            &["gzip;q=0.5;level=1"],
            &["gzip;level=1"],
            &["gzip;q=0.5, identity"],
            &["gzip, identity"],
            &["gzip;q=0.5, identity;q=0.5"],
            &["gzip;q=0.5, identity;q=0.6"],
            &["identity;q=0, gzip;q=0.1"],
            &["identity"],
            &["*"],
            &["*;q=0.5, gzip;q=0"],
            &["deflate", "gzip;q=0.2"],
            &["gzip;q=0", "gzip"],
            &["gzip", "identity;q=1"],
            &[" gzip ,identity;q=0.9 "],
            &["gzip;q=0.9;", "identity;q=0.95"],
        ];
        for values in cases {
            let mut headers = HeaderMap::new();
            for value in *values {
                headers.append(header::ACCEPT_ENCODING, HeaderValue::from_static(value));
            }
            assert_eq!(
                prefers_gzip(&headers),
                layer_compresses(values).await,
                "{values:?}"
            );
        }
    }

    #[test]
    fn qvalues_are_read_as_the_grammar_writes_them() {
        assert_eq!(qvalue("q=1"), Some(1000));
        assert_eq!(qvalue("q=0.25"), Some(250));
        assert_eq!(qvalue("Q=0.5"), Some(500));
        assert_eq!(qvalue("q=0."), Some(0));
        assert_eq!(qvalue("q=1.0"), Some(1000));
        for bad in [
            "q=2", "q=1.5", "q=0.1234", "q=", "q=-0", "q=0.a", "x=1", "q=00.5",
        ] {
            assert_eq!(qvalue(bad), None, "{bad}");
        }
    }
}
