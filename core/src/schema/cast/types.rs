//! Sets of JSON Schema types (`type` keywords) and the type of a JSON value.

use serde_json::Value;

use super::json::is_integral;

/// A set of JSON Schema types. `number` includes `integer`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Types(pub(super) u8);

impl Types {
    pub(super) const NONE: Types = Types(0);
    pub(super) const NULL: Types = Types(1);
    pub(super) const BOOLEAN: Types = Types(1 << 1);
    pub(super) const OBJECT: Types = Types(1 << 2);
    pub(super) const ARRAY: Types = Types(1 << 3);
    pub(super) const NUMBER: Types = Types(1 << 4);
    pub(super) const INTEGER: Types = Types(1 << 5);
    pub(super) const STRING: Types = Types(1 << 6);

    /// The set a `type` keyword allows; `None` when it is malformed or names no known type.
    pub(super) fn parse(keyword: &Value) -> Option<Types> {
        let types = match keyword {
            Value::String(name) => Types::named(name),
            Value::Array(names) => names
                .iter()
                .filter_map(Value::as_str)
                .map(Types::named)
                .fold(Types::NONE, Types::union),
            _ => Types::NONE,
        };
        (!types.is_empty()).then_some(types)
    }

    /// The set one type name allows (`number` allows integers too).
    pub(super) fn named(name: &str) -> Types {
        match name {
            "number" => Types::NUMBER.union(Types::INTEGER),
            other => Types::single(other),
        }
    }

    /// The one bit a type name stands for.
    pub(super) fn single(name: &str) -> Types {
        match name {
            "null" => Types::NULL,
            "boolean" => Types::BOOLEAN,
            "object" => Types::OBJECT,
            "array" => Types::ARRAY,
            "number" => Types::NUMBER,
            "integer" => Types::INTEGER,
            "string" => Types::STRING,
            _ => Types::NONE,
        }
    }

    /// The type of a JSON value; integral numbers (`3`, `3.0`) are `integer`.
    pub(super) fn of(value: &Value) -> Types {
        match value {
            Value::Null => Types::NULL,
            Value::Bool(_) => Types::BOOLEAN,
            Value::Number(number) if is_integral(number) => Types::INTEGER,
            Value::Number(_) => Types::NUMBER,
            Value::String(_) => Types::STRING,
            Value::Array(_) => Types::ARRAY,
            Value::Object(_) => Types::OBJECT,
        }
    }

    pub(super) fn union(self, other: Types) -> Types {
        Types(self.0 | other.0)
    }

    pub(super) fn intersect(self, other: Types) -> Types {
        Types(self.0 & other.0)
    }

    pub(super) fn contains(self, other: Types) -> bool {
        !other.is_empty() && self.0 & other.0 == other.0
    }

    pub(super) fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub(super) fn accepts(self, value: &Value) -> bool {
        self.contains(Types::of(value))
    }

    pub(super) fn integer_only(self) -> bool {
        self.contains(Types::INTEGER) && !self.contains(Types::NUMBER)
    }
}
