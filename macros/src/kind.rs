//! [`Kind`]: query, mutation or subscription, as the attribute says.

/// Query, mutation or subscription, as written in the attribute.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Query,
    Mutation,
    Subscription,
}

impl Kind {
    pub(crate) fn keyword(self) -> &'static str {
        match self {
            Self::Query => "query",
            Self::Mutation => "mutation",
            Self::Subscription => "subscription",
        }
    }
}
