//! The calls the hub routes ([`Calls`]): for each request in flight, who made it and which
//! spoke it was routed to; and so who may answer it, who may abort it, and who receives its
//! replies.

use crate::seeded::Seeded;
use opkit::protocol::topics;
use opkit::protocol::wire::EventKind;
use std::sync::Arc;

/// Who published a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Caller {
    /// The spoke with this connection id.
    Spoke(u64),
    /// Code in the hub's process ([`HubPubSub`](super::HubPubSub)).
    Hub,
}

/// One request in flight.
#[derive(Debug)]
pub(super) struct Call {
    pub(super) caller: Caller,
    pub(super) operation_id: String,
    /// When the caller gives up, in milliseconds since the Unix epoch.
    pub(super) deadline: Option<u64>,
    /// A subscription, which its items do not end (see [`EventKind::ends_call`]).
    pub(super) subscription: bool,
    /// The spoke the request was routed to (its connection id), once it was.
    pub(super) server: Option<u64>,
}

impl Call {
    /// A request `caller` just published.
    pub(super) fn new(
        caller: Caller,
        operation_id: &str,
        deadline: Option<u64>,
        subscription: bool,
    ) -> Self {
        Self {
            caller,
            operation_id: operation_id.to_owned(),
            deadline,
            subscription,
            server: None,
        }
    }

    /// Whether the caller still waits at `now` (epoch milliseconds).
    pub(super) fn is_live(&self, now: u64) -> bool {
        self.deadline.is_none_or(|deadline| deadline > now)
    }
}

/// The requests in flight, by request id.
///
/// Invariants (kept by these methods, under the hub's `calls` lock, a leaf):
///
/// * A request id has at most one record: a second `call.requested` with an id in flight is
///   refused ([`open`](Self::open)), so nobody can take over another caller's request.
/// * `per_caller[c]` is the number of records whose caller is the spoke `c` (entries at zero
///   are removed): it is what the per-spoke limit is checked against.
/// * A record is removed by the event that ends its call when the spoke it was routed to
///   publishes it ([`answer`](Self::answer)), by its caller's abort ([`abort`](Self::abort)),
///   when its deadline passed ([`expire`](Self::expire)), when its publish reached nobody
///   ([`forget`](Self::forget)), or when its caller or its server disconnects
///   ([`take_called_by`](Self::take_called_by), [`take_served_by`](Self::take_served_by)).
#[derive(Default)]
pub(super) struct Calls {
    calls: Seeded<Arc<str>, Call>,
    per_caller: Seeded<u64, usize>,
}

impl Calls {
    /// Records a request; refused when its id is in flight already or the calling spoke holds
    /// `limit` calls.
    pub(super) fn open(
        &mut self,
        request_id: Arc<str>,
        call: Call,
        limit: usize,
    ) -> Result<(), String> {
        if self.calls.contains_key(&request_id) {
            return Err(format!(
                "the request id `{request_id}` is in flight already: request ids are unique"
            ));
        }
        if let Caller::Spoke(spoke) = call.caller {
            let count = self.per_caller.entry(spoke).or_default();
            if *count >= limit {
                return Err(format!(
                    "this spoke has {count} calls in flight, the hub's limit (HubOptions::with_max_calls_per_spoke)"
                ));
            }
            *count += 1;
        }
        self.calls.insert(request_id, call);
        Ok(())
    }

    /// Removes a record (its publish reached nobody, or failed).
    pub(super) fn forget(&mut self, request_id: &str) -> Option<Call> {
        let call = self.calls.remove(request_id)?;
        if let Caller::Spoke(spoke) = call.caller
            && let Some(count) = self.per_caller.get_mut(&spoke)
        {
            *count -= 1;
            if *count == 0 {
                self.per_caller.remove(&spoke);
            }
        }
        Some(call)
    }

    /// The request was routed to the spoke `server`: `true` when it is in flight (the first
    /// spoke it is routed to is the one that answers it).
    pub(super) fn route(&mut self, request_id: &str, server: u64) -> bool {
        match self.calls.get_mut(request_id) {
            Some(call) => {
                call.server.get_or_insert(server);
                true
            }
            None => false,
        }
    }

    /// A reply of `kind` for `request_id` published on `topic` by the spoke `from` (`None`:
    /// the hub's process). `Ok(Some((caller, ends)))`: deliver it to `caller`; `ends` when the
    /// reply ends the call (its record is gone); `Ok(None)`: no such request is in flight (it
    /// ended, or never was); an error when the publisher may not answer it.
    pub(super) fn answer(
        &mut self,
        request_id: &str,
        kind: EventKind,
        topic: &str,
        from: Option<u64>,
    ) -> Result<Option<(Caller, bool)>, String> {
        let Some(call) = self.calls.get(request_id) else {
            return Ok(None);
        };
        if let Some(spoke) = from
            && call.server != Some(spoke)
        {
            return Err(format!(
                "the request `{request_id}` was not routed to this spoke: only the spoke serving it answers it"
            ));
        }
        if !topics::is_reply_topic_for(topic, request_id) {
            return Err(format!(
                "the replies to `{request_id}` go on `{}`, not `{topic}`",
                topics::reply_topic_for(request_id)
            ));
        }
        let caller = call.caller;
        let ends = kind.ends_call(call.subscription);
        if ends {
            self.forget(request_id);
        }
        Ok(Some((caller, ends)))
    }

    /// `call.aborted` for `request_id`, published on the abort topic of `operation_id` by
    /// `from`. `Ok(Some(call))`: the call is aborted (its record removed); `Ok(None)`: no such
    /// request is in flight; an error when `from` is not its caller (the hub may abort any
    /// call) or the topic is not its operation's.
    pub(super) fn abort(
        &mut self,
        request_id: &str,
        operation_id: &str,
        from: Caller,
    ) -> Result<Option<Call>, String> {
        let Some(call) = self.calls.get(request_id) else {
            return Ok(None);
        };
        if from != Caller::Hub && call.caller != from {
            return Err(format!(
                "the request `{request_id}` was made by another caller: only its caller aborts it"
            ));
        }
        if call.operation_id != operation_id {
            return Err(format!(
                "the request `{request_id}` is for `{}`: its abort goes on that operation's abort topic",
                call.operation_id
            ));
        }
        Ok(self.forget(request_id))
    }

    /// Takes the records of the calls routed to the spoke `server` (it is gone).
    pub(super) fn take_served_by(&mut self, server: u64) -> Vec<(Arc<str>, Call)> {
        self.take(|call| call.server == Some(server))
    }

    /// Takes the records of the calls the spoke `caller` made (it is gone).
    pub(super) fn take_called_by(&mut self, caller: u64) -> Vec<(Arc<str>, Call)> {
        self.take(|call| call.caller == Caller::Spoke(caller))
    }

    fn take(&mut self, which: impl Fn(&Call) -> bool) -> Vec<(Arc<str>, Call)> {
        let ids: Vec<Arc<str>> = self
            .calls
            .iter()
            .filter(|(_, call)| which(call))
            .map(|(id, _)| id.clone())
            .collect();
        ids.into_iter()
            .filter_map(|id| self.forget(&id).map(|call| (id, call)))
            .collect()
    }

    /// Drops the records whose deadline passed at `now` (their callers gave up).
    pub(super) fn expire(&mut self, now: u64) {
        let expired: Vec<Arc<str>> = self
            .calls
            .iter()
            .filter(|(_, call)| !call.is_live(now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.forget(&id);
        }
    }

    /// How many requests routed to a spoke are live at `now`.
    pub(super) fn routed_live(&self, now: u64) -> usize {
        self.calls
            .values()
            .filter(|call| call.server.is_some() && call.is_live(now))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(caller: Caller) -> Call {
        Call::new(caller, "math.add", None, false)
    }

    #[test]
    fn only_the_server_answers_and_only_the_caller_aborts() {
        let mut calls = Calls::default();
        calls
            .open("c:1".into(), call(Caller::Spoke(1)), 10)
            .unwrap();
        assert!(
            calls
                .open("c:1".into(), call(Caller::Spoke(2)), 10)
                .is_err()
        );
        let reply = topics::reply_topic("c");
        // Not routed yet: nobody may answer.
        assert!(
            calls
                .answer("c:1", EventKind::Responded, &reply, Some(2))
                .is_err()
        );
        assert!(calls.route("c:1", 2));
        assert!(!calls.route("c:9", 2));
        assert!(
            calls
                .answer("c:1", EventKind::Responded, &reply, Some(3))
                .is_err()
        );
        assert!(
            calls
                .answer("c:1", EventKind::Responded, "opkit.reply.d", Some(2))
                .is_err()
        );
        assert!(calls.abort("c:1", "math.add", Caller::Spoke(2)).is_err());
        assert!(calls.abort("c:1", "math.sub", Caller::Spoke(1)).is_err());
        assert_eq!(
            calls.answer("c:1", EventKind::Responded, &reply, Some(2)),
            Ok(Some((Caller::Spoke(1), true)))
        );
        // The call ended: the record is gone, a late reply or abort finds nothing.
        assert_eq!(
            calls.answer("c:1", EventKind::Responded, &reply, Some(2)),
            Ok(None)
        );
        assert!(
            calls
                .abort("c:1", "math.add", Caller::Spoke(1))
                .unwrap()
                .is_none()
        );
        assert!(calls.per_caller.is_empty());
    }

    #[test]
    fn each_spoke_holds_at_most_its_limit() {
        let mut calls = Calls::default();
        calls.open("a:1".into(), call(Caller::Spoke(1)), 2).unwrap();
        calls.open("a:2".into(), call(Caller::Spoke(1)), 2).unwrap();
        let refused = calls
            .open("a:3".into(), call(Caller::Spoke(1)), 2)
            .unwrap_err();
        assert!(refused.contains("with_max_calls_per_spoke"), "{refused}");
        calls.open("b:1".into(), call(Caller::Spoke(2)), 2).unwrap();
        calls.open("h:1".into(), call(Caller::Hub), 0).unwrap();
        assert_eq!(calls.take_called_by(1).len(), 2);
        calls.open("a:3".into(), call(Caller::Spoke(1)), 2).unwrap();
        let mut live = Call::new(Caller::Spoke(3), "x.y", Some(100), false);
        live.server = Some(4);
        calls.open("d:1".into(), live, 2).unwrap();
        assert_eq!(calls.routed_live(99), 1);
        calls.expire(100);
        assert_eq!(calls.routed_live(0), 0);
        assert!(
            calls
                .abort("h:1", "math.add", Caller::Hub)
                .unwrap()
                .is_some()
        );
    }
}
