//! Which operations a handler serves: the refresh that subscribes to the operations
//! registered since and unsubscribes from the removed ones, and the loop that receives one
//! operation's requests and aborts.

use super::HandlerState;
use crate::protocol::pubsub::{Subscription, TransportError};
use crate::protocol::topics;
use crate::spec::OperationKind;
use futures::StreamExt;
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// One served operation.
pub(super) struct Served {
    /// Stops the operation's receiving task.
    stop: CancellationToken,
    /// Tells this subscription from a later one for the same id.
    generation: u64,
    /// The receiving task; `None` until it is spawned.
    task: Option<tokio::task::JoinHandle<()>>,
}

/// Refreshes every `interval` until the handler stops.
pub(super) async fn refresh_periodically(shared: Arc<HandlerState>, interval: Duration) {
    loop {
        tokio::select! {
            () = shared.shutdown.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
        if let Err(error) = shared.refresh().await {
            tracing::warn!(%error, "the call handler could not refresh its subscriptions");
        }
    }
}

impl HandlerState {
    /// Serves the operations registered since the last refresh and stops serving the removed
    /// ones; serialized by `refreshing`.
    pub(super) async fn refresh(self: &Arc<Self>) -> Result<(), TransportError> {
        let _refreshing = self.refreshing.lock().await;
        if self.shutdown.is_cancelled() {
            return Ok(());
        }
        let specs = self.registry.specs();
        let wanted: BTreeSet<String> = specs.iter().map(|spec| spec.id()).collect();
        let queries: HashSet<String> = specs
            .iter()
            .filter(|spec| spec.kind == OperationKind::Query)
            .map(|spec| spec.id())
            .collect();
        let (added, removed): (Vec<String>, Vec<Served>) = {
            let mut served = self.served.lock();
            let gone: Vec<String> = served
                .keys()
                .filter(|id| !wanted.contains(*id))
                .cloned()
                .collect();
            let removed = gone.iter().filter_map(|id| served.remove(id)).collect();
            let added = wanted
                .into_iter()
                .filter(|id| !served.contains_key(id))
                .collect();
            (added, removed)
        };
        // Wait until the removed operations' subscriptions are dropped, so that requests
        // published after the refresh no longer reach this handler.
        for mut operation in removed {
            operation.stop.cancel();
            if let Some(task) = operation.task.take() {
                // The task only ends by itself; a panic in it was already reported.
                drop(task.await);
            }
        }
        for id in added {
            let topic = topics::request_topic(&id);
            let requests = if self.query_redelivery && queries.contains(&id) {
                self.pubsub
                    .subscribe_group_idempotent(&topic, topics::HANDLER_GROUP)
                    .await?
            } else {
                self.pubsub
                    .subscribe_group(&topic, topics::HANDLER_GROUP)
                    .await?
            };
            let aborts = self.pubsub.subscribe(&topics::abort_topic(&id)).await?;
            let stop = self.shutdown.child_token();
            let generation = self.generation.fetch_add(1, Ordering::Relaxed);
            // Listed before the task starts: a task that ends at once unlists itself.
            self.served.lock().insert(
                id.clone(),
                Served {
                    stop: stop.clone(),
                    generation,
                    task: None,
                },
            );
            let task = tokio::spawn(self.clone().serve_operation(
                id.clone(),
                generation,
                requests,
                aborts,
                stop,
            ));
            if let Some(served) = self.served.lock().get_mut(&id)
                && served.generation == generation
            {
                served.task = Some(task);
            }
        }
        Ok(())
    }

    /// Receives the requests and aborts of one operation until stopped.
    async fn serve_operation(
        self: Arc<Self>,
        id: String,
        generation: u64,
        mut requests: Subscription,
        mut aborts: Subscription,
        stop: CancellationToken,
    ) {
        // The permit the next request will run under: taken before that request is read, so
        // a handler at its limit reads no more (see the module docs).
        let mut permit = None;
        loop {
            let Some(ready) = permit.take() else {
                tokio::select! {
                    biased;
                    () = stop.cancelled() => return,
                    taken = self.permits.clone().acquire_owned() => match taken {
                        Ok(taken) => permit = Some(taken),
                        Err(_) => return,
                    },
                    abort = aborts.next() => match abort {
                        Some(payload) => self.abort(&id, &payload),
                        None => break,
                    },
                }
                continue;
            };
            tokio::select! {
                // Requests before aborts: an abort published after its request never
                // overtakes it on a transport that keeps order per topic.
                biased;
                () = stop.cancelled() => return,
                request = requests.next() => match request {
                    Some(payload) => self.accept(&id, &payload, ready),
                    None => break,
                },
                abort = aborts.next() => match abort {
                    Some(payload) => {
                        permit = Some(ready);
                        self.abort(&id, &payload);
                    }
                    None => break,
                },
            }
        }
        // The transport lost a subscription: forget the operation so the next refresh
        // subscribes again.
        tracing::warn!(operation = %id, "a subscription of the call handler ended");
        let mut served = self.served.lock();
        if served
            .get(&id)
            .is_some_and(|served| served.generation == generation)
        {
            served.remove(&id);
        }
    }
}
