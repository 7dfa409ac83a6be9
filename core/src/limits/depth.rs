//! Nesting depth of JSON values, measured with recursion bounded by the limit.
//!
//! A [`Value`] built in code can nest arbitrarily deep (parsers stop at a limit; code does
//! not), and deep values overflow the stack of recursive code: schema validation, cast,
//! serialization, even serde_json's own `Drop`. [`check_depth`] answers with a pass whose
//! recursion stops at the limit (never more than `limit + 1` frames, whatever the value's depth),
//! and only for a value that is too deep walks it again with an explicit stack of iterators
//! (no recursion, no allocation up to [`INLINE_FRAMES`] levels) to name the first container
//! nested too deep; [`dismantle`] drops a value of any depth without recursion.

use crate::error::{CallError, Violation};
use serde_json::Value;

use super::MAX_INPUT_DEPTH;

/// A JSON value nested deeper than a limit, and where.
///
/// ```
/// use opkit::limits::{TooDeep, check_depth};
/// use serde_json::json;
///
/// assert_eq!(check_depth(&json!({"a": [1]}), 2), Ok(()));
/// let too_deep = check_depth(&json!({"a": [[1]]}), 2).unwrap_err();
/// assert_eq!(too_deep, TooDeep { pointer: "/a/0".into(), limit: 2 });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("nested deeper than {limit} levels of arrays and objects")]
pub struct TooDeep {
    /// JSON pointer (RFC 6901) of the first array or object below the limit.
    pub pointer: String,
    /// The limit that was exceeded.
    pub limit: usize,
}

/// Checks that no array or object in `value` is nested more than `limit` levels deep.
///
/// The depth of a scalar is 0; an array or object is one level deeper than its deepest
/// member (`[]` and `{"a": 1}` have depth 1, `{"a": [1]}` depth 2). On failure the error
/// names the first container (in document order) that lies deeper than `limit`.
pub fn check_depth(value: &Value, limit: usize) -> Result<(), TooDeep> {
    if deeper_than(value, limit) {
        first_too_deep(value, limit)
    } else {
        Ok(())
    }
}

/// `true` when `value` nests deeper than `limit`. The recursion stops at the limit: at most
/// `limit + 1` frames, however deep the value is.
fn deeper_than(value: &Value, limit: usize) -> bool {
    // Scalars are tested inline: only containers cost a call.
    let nested = |member: &Value| is_container(member) && deeper_than(member, limit - 1);
    match value {
        Value::Array(items) => limit == 0 || items.iter().any(nested),
        Value::Object(members) => limit == 0 || members.values().any(nested),
        _ => false,
    }
}

fn is_container(value: &Value) -> bool {
    matches!(value, Value::Array(_) | Value::Object(_))
}

/// The first container (in document order) nested deeper than `limit`, found without recursion.
fn first_too_deep(value: &Value, limit: usize) -> Result<(), TooDeep> {
    let Some(root) = Frame::of(value) else {
        return Ok(());
    };
    if limit == 0 {
        return Err(TooDeep {
            pointer: String::new(),
            limit,
        });
    }
    let mut stack = Stack::new(root);
    while let Some(top) = stack.top() {
        match top.next() {
            None => stack.pop(),
            Some(child) => {
                if let Some(frame) = Frame::of(child) {
                    if stack.len() == limit {
                        return Err(TooDeep {
                            pointer: stack.pointer(),
                            limit,
                        });
                    }
                    stack.push(frame);
                }
            }
        }
    }
    Ok(())
}

/// Admits an input of the registry: `VALIDATION_ERROR` for one nested deeper than
/// [`MAX_INPUT_DEPTH`] (the value is then dropped without recursion).
pub(crate) fn admit_input(input: Value) -> Result<Value, CallError> {
    match check_input(&input) {
        Ok(()) => Ok(input),
        Err(error) => {
            dismantle(input);
            Err(error)
        }
    }
}

/// `VALIDATION_ERROR` (one violation at the offending pointer) for an input nested deeper
/// than [`MAX_INPUT_DEPTH`].
pub(crate) fn check_input(input: &Value) -> Result<(), CallError> {
    check_depth(input, MAX_INPUT_DEPTH).map_err(|too_deep| {
        let message = format!("{too_deep} (opkit::limits::MAX_INPUT_DEPTH)");
        CallError::validation(
            "input",
            vec![Violation {
                path: too_deep.pointer,
                message,
            }],
        )
    })
}

/// Drops `value` without recursion, whatever its depth.
pub fn dismantle(value: Value) {
    let mut pending = match value {
        Value::Array(items) => items,
        Value::Object(members) => members.into_iter().map(|(_, member)| member).collect(),
        _ => return,
    };
    while let Some(value) = pending.pop() {
        match value {
            Value::Array(items) => pending.extend(items),
            Value::Object(members) => pending.extend(members.into_iter().map(|(_, member)| member)),
            _ => {}
        }
    }
}

/// An array or object being walked, and the key of the member visited last.
enum Frame<'a> {
    Array {
        items: std::slice::Iter<'a, Value>,
        next_index: usize,
    },
    Object {
        members: serde_json::map::Iter<'a>,
        key: &'a str,
    },
}

impl<'a> Frame<'a> {
    fn of(value: &'a Value) -> Option<Self> {
        match value {
            Value::Array(items) => Some(Self::Array {
                items: items.iter(),
                next_index: 0,
            }),
            Value::Object(members) => Some(Self::Object {
                members: members.iter(),
                key: "",
            }),
            _ => None,
        }
    }

    fn next(&mut self) -> Option<&'a Value> {
        match self {
            Self::Array { items, next_index } => {
                let item = items.next()?;
                *next_index += 1;
                Some(item)
            }
            Self::Object { members, key } => {
                let (name, member) = members.next()?;
                *key = name;
                Some(member)
            }
        }
    }

    /// Appends `/<token>` of the member visited last to `pointer`.
    fn push_token(&self, pointer: &mut String) {
        pointer.push('/');
        match self {
            Self::Array { next_index, .. } => {
                pointer.push_str(&next_index.saturating_sub(1).to_string());
            }
            Self::Object { key, .. } => pointer.push_str(&crate::schema::pointer::escape(key)),
        }
    }
}

/// Levels kept inline before the stack spills to the heap.
const INLINE_FRAMES: usize = 8;

/// The frames from the root down: the first [`INLINE_FRAMES`] inline, the rest on the heap.
struct Stack<'a> {
    inline: [Option<Frame<'a>>; INLINE_FRAMES],
    len: usize,
    spilled: Vec<Frame<'a>>,
}

impl<'a> Stack<'a> {
    fn new(root: Frame<'a>) -> Self {
        let mut stack = Self {
            inline: [const { None }; INLINE_FRAMES],
            len: 0,
            spilled: Vec::new(),
        };
        stack.push(root);
        stack
    }

    fn len(&self) -> usize {
        self.len
    }

    fn push(&mut self, frame: Frame<'a>) {
        if self.len < INLINE_FRAMES {
            self.inline[self.len] = Some(frame);
        } else {
            self.spilled.push(frame);
        }
        self.len += 1;
    }

    fn pop(&mut self) {
        self.len -= 1;
        if self.len < INLINE_FRAMES {
            self.inline[self.len] = None;
        } else {
            self.spilled.pop();
        }
    }

    fn top(&mut self) -> Option<&mut Frame<'a>> {
        match self.len {
            0 => None,
            len if len <= INLINE_FRAMES => self.inline[len - 1].as_mut(),
            _ => self.spilled.last_mut(),
        }
    }

    /// The JSON pointer of the member the top frame visited last.
    fn pointer(&self) -> String {
        let mut pointer = String::new();
        let inline = self.inline.iter().flatten();
        for frame in inline.chain(self.spilled.iter()) {
            frame.push_token(&mut pointer);
        }
        pointer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested_arrays(depth: usize) -> Value {
        let mut value = json!(0);
        for _ in 0..depth {
            value = Value::Array(vec![value]);
        }
        value
    }

    #[test]
    fn depth_counts_containers_only() {
        assert_eq!(check_depth(&json!(1), 0), Ok(()));
        assert!(check_depth(&json!([]), 0).is_err());
        assert_eq!(check_depth(&json!([]), 1), Ok(()));
        assert_eq!(check_depth(&json!({"a": 1, "b": "x"}), 1), Ok(()));
        assert_eq!(check_depth(&nested_arrays(40), 40), Ok(()));
        let error = check_depth(&nested_arrays(41), 40).unwrap_err();
        assert_eq!(error.pointer, "/0".repeat(40));
    }

    #[test]
    fn pointer_names_the_first_offender_with_escaped_keys() {
        let value = json!({"ok": [[1]], "a/b": [0, {"c~d": [[[]]]}]});
        let error = check_depth(&value, 3).unwrap_err();
        assert_eq!(error.pointer, "/a~1b/1/c~0d");
        // Past the inline frames, the pointer still runs from the root.
        let mut deep = json!({"x": [1, 2, nested_arrays(20)]});
        let error = check_depth(&deep, 10).unwrap_err();
        assert_eq!(error.pointer, format!("/x/2{}", "/0".repeat(8)));
        deep["x"][2] = json!(null);
        assert_eq!(check_depth(&deep, 10), Ok(()));
    }

    #[test]
    fn siblings_after_a_deep_branch_are_walked() {
        let value = json!([nested_arrays(5), 1, {"k": nested_arrays(9)}]);
        assert_eq!(check_depth(&value, 11), Ok(()));
        let error = check_depth(&value, 10).unwrap_err();
        assert_eq!(error.pointer, "/2/k".to_owned() + &"/0".repeat(8));
    }

    #[test]
    fn very_deep_values_are_checked_and_dropped_without_recursion() {
        // Deep enough to overflow a recursive walk or drop on a 2 MiB test thread.
        let deep = nested_arrays(1_000_000);
        let error = admit_input(deep).unwrap_err();
        assert_eq!(error.code, crate::ErrorCode::ValidationError);
        assert!(
            error.message.contains("MAX_INPUT_DEPTH"),
            "{}",
            error.message
        );
        let mut object = Value::Null;
        for _ in 0..1_000_000 {
            object = Value::Object(serde_json::Map::from_iter([("k".to_owned(), object)]));
        }
        dismantle(object);
    }
}
