//! [`OperationId`]: the id a local envelope's meta names, kept without a count where it can be.

use schemars::{JsonSchema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::{Borrow, Cow};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

/// The id (`namespace.name`) of the operation that produced a result, as
/// [`LocalMeta`](super::LocalMeta) holds it.
///
/// The id an `#[operation]` fn was compiled with is held as a `&'static str`, so wrapping its
/// result and dropping the envelope touch no reference count; any other id is a string
/// shared with the registry's own copy, so wrapping allocates nothing either. Either way it
/// reads as a `str`: compare it as `&*meta.operation_id` or with `==`, make one with
/// `"math.add".into()` (a shared copy) or [`OperationId::from_static`]. It is written as a
/// JSON string.
///
/// ```
/// use opkit::envelope::OperationId;
/// let id = OperationId::from_static("math.add");
/// assert_eq!(id, "math.add");
/// assert_eq!(&*id, OperationId::from("math.add").as_str());
/// assert_eq!(serde_json::to_string(&id).unwrap(), r#""math.add""#);
/// ```
#[derive(Clone)]
pub struct OperationId(Repr);

#[derive(Clone)]
enum Repr {
    Static(&'static str),
    Shared(Arc<str>),
}

impl OperationId {
    /// An id that lives as long as the program (a literal, an `#[operation]`'s `ID`).
    pub const fn from_static(id: &'static str) -> Self {
        Self(Repr::Static(id))
    }

    /// `true` for an id made with [`from_static`](Self::from_static).
    #[cfg(test)]
    pub(crate) fn is_static(&self) -> bool {
        matches!(self.0, Repr::Static(_))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(id) => id,
            Repr::Shared(id) => id,
        }
    }
}

impl Deref for OperationId {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for OperationId {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for OperationId {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for OperationId {
    fn from(id: &str) -> Self {
        Self(Repr::Shared(Arc::from(id)))
    }
}

impl From<String> for OperationId {
    fn from(id: String) -> Self {
        Self(Repr::Shared(Arc::from(id)))
    }
}

impl From<Arc<str>> for OperationId {
    fn from(id: Arc<str>) -> Self {
        Self(Repr::Shared(id))
    }
}

impl From<&Arc<str>> for OperationId {
    fn from(id: &Arc<str>) -> Self {
        Self(Repr::Shared(id.clone()))
    }
}

impl From<OperationId> for Arc<str> {
    fn from(id: OperationId) -> Self {
        match id.0 {
            Repr::Static(id) => Arc::from(id),
            Repr::Shared(id) => id,
        }
    }
}

impl PartialEq for OperationId {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for OperationId {}

impl PartialEq<str> for OperationId {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for OperationId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialOrd for OperationId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OperationId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for OperationId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Debug for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for OperationId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for OperationId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Arc::<str>::deserialize(deserializer).map(Self::from)
    }
}

impl JsonSchema for OperationId {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        String::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        String::schema_id()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn static_and_shared_ids_are_the_same_id() {
        let fixed = OperationId::from_static("math.add");
        let shared = OperationId::from(Arc::<str>::from("math.add"));
        assert_eq!(fixed, shared);
        assert_eq!(fixed, "math.add");
        let set: HashSet<OperationId> = [fixed.clone(), shared].into_iter().collect();
        assert_eq!(set.len(), 1);
        assert!(set.contains("math.add"));
        assert_eq!(format!("{fixed} {fixed:?}"), r#"math.add "math.add""#);
        assert_eq!(Arc::<str>::from(fixed), Arc::from("math.add"));
    }

    #[test]
    fn it_is_written_and_read_as_a_string() {
        let id: OperationId = serde_json::from_str(r#""a.b""#).unwrap();
        assert_eq!(id, "a.b");
        assert_eq!(serde_json::to_value(&id).unwrap(), serde_json::json!("a.b"));
        assert!(serde_json::from_str::<OperationId>("1").is_err());
        assert_eq!(
            schemars::schema_for!(OperationId).as_value()["type"],
            serde_json::json!("string")
        );
    }
}
