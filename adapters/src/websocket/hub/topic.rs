//! Topic names as the hub reads them: which part of the call protocol a topic belongs to
//! ([`TopicKind`]) and the bound on the names spokes give it ([`check_name`]).

use opkit::protocol::topics;
use std::sync::LazyLock;

static REQUEST_PREFIX: LazyLock<String> = LazyLock::new(|| topics::request_topic(""));
static ABORT_PREFIX: LazyLock<String> = LazyLock::new(|| topics::abort_topic(""));
static REPLY_PREFIX: LazyLock<String> = LazyLock::new(|| topics::reply_topic(""));

/// What a topic carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TopicKind<'a> {
    /// `opkit.request.<operationId>`: requests for that operation.
    Request(&'a str),
    /// `opkit.abort.<operationId>`: aborts of requests for that operation.
    Abort(&'a str),
    /// `opkit.reply.<callerId>` or `opkit.reply`: replies.
    Reply,
    /// Any other topic: plain publish/subscribe, outside the call protocol.
    Plain,
}

/// The kind of `topic`.
pub(super) fn classify(topic: &str) -> TopicKind<'_> {
    if let Some(operation_id) = topic.strip_prefix(REQUEST_PREFIX.as_str()) {
        TopicKind::Request(operation_id)
    } else if let Some(operation_id) = topic.strip_prefix(ABORT_PREFIX.as_str()) {
        TopicKind::Abort(operation_id)
    } else if topic == topics::FALLBACK_REPLY_TOPIC || topic.starts_with(REPLY_PREFIX.as_str()) {
        TopicKind::Reply
    } else {
        TopicKind::Plain
    }
}

/// A topic or group name a spoke gives: at most `max` bytes, no control character. `what`
/// names it in the error.
pub(super) fn check_name(what: &str, name: &str, max: usize) -> Result<(), String> {
    if name.len() > max {
        return Err(format!(
            "the {what} name is {} bytes long, over the hub's limit of {max} (HubOptions::with_max_topic_len)",
            name.len()
        ));
    }
    if has_control(name) {
        return Err(format!("the {what} name contains a control character"));
    }
    Ok(())
}

/// Whether `name` has a control character (`char::is_control`: U+0000–U+001F, U+007F–U+009F),
/// reading an ASCII name by its bytes (every topic of the call protocol is one). Every
/// publish's topic passes here: the bytes are folded without an early exit, which the
/// compiler turns into a few wide comparisons instead of a branch per byte.
fn has_control(name: &str) -> bool {
    if name.is_ascii() {
        name.bytes()
            .fold(false, |found, byte| found | (byte < 0x20) | (byte == 0x7f))
    } else {
        name.chars().any(char::is_control)
    }
}

/// Whether `topic` is a reply topic.
pub(super) fn is_reply(topic: &str) -> bool {
    classify(topic) == TopicKind::Reply
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_are_classified_by_their_protocol_prefix() {
        assert_eq!(
            classify(&topics::request_topic("math.add")),
            TopicKind::Request("math.add")
        );
        assert_eq!(
            classify(&topics::abort_topic("math.add")),
            TopicKind::Abort("math.add")
        );
        assert_eq!(classify(&topics::reply_topic("c0ffee")), TopicKind::Reply);
        assert_eq!(classify(topics::FALLBACK_REPLY_TOPIC), TopicKind::Reply);
        for plain in ["jobs", "opkit.replyx", "opkit.requests", "opkit"] {
            assert_eq!(classify(plain), TopicKind::Plain, "{plain}");
        }
    }

    #[test]
    fn names_are_bounded_and_free_of_control_characters() {
        assert!(check_name("topic", "jobs", 4).is_ok());
        let long = check_name("topic", "jobs!", 4).unwrap_err();
        assert!(
            long.contains("5 bytes") && long.contains("with_max_topic_len"),
            "{long}"
        );
        assert!(check_name("topic", "\u{0}7\u{0}opkit.reply.c", 1024).is_err());
        assert!(check_name("group", "a\nb", 1024).is_err());
        // DEL, a C1 control (two bytes in UTF-8) and other non-ASCII names, read as `char`s.
        assert!(check_name("topic", "a\u{7f}b", 1024).is_err());
        assert!(check_name("topic", "ünï\u{85}", 1024).is_err());
        assert!(check_name("topic", "ünïcode.ok", 1024).is_ok());
    }

    #[test]
    fn every_ascii_byte_is_judged_as_char_is_control_judges_it() {
        for byte in 0..=0x7fu8 {
            for at in [0, 17, 40] {
                let mut name = "opkit.reply.0123456789abcdef0123456789abcdef"
                    .as_bytes()
                    .to_vec();
                name[at] = byte;
                let name = String::from_utf8(name).unwrap();
                assert_eq!(
                    has_control(&name),
                    (byte as char).is_control(),
                    "{byte:#x} at {at}"
                );
            }
        }
    }
}
