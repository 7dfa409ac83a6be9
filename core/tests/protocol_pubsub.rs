//! The `PubSub` seam and `MemoryPubSub`: fan-out, competing consumers, receipts,
//! unsubscribe on drop, order.

mod protocol_support;

use bytes::Bytes;
use futures::StreamExt;
use opkit::protocol::{MemoryPubSub, PubSub, Receipt, Subscription};
use protocol_support::{has_message, within};
use std::sync::Arc;

async fn next(subscription: &mut Subscription) -> Bytes {
    within("a message", subscription.next()).await.unwrap()
}

#[test]
fn the_trait_is_object_safe_send_and_sync() {
    fn assert_send_sync<T: Send + Sync + ?Sized>() {}
    assert_send_sync::<dyn PubSub>();
    assert_send_sync::<MemoryPubSub>();
    let _bus: Arc<dyn PubSub> = Arc::new(MemoryPubSub::new());
}

#[tokio::test]
async fn every_subscriber_gets_every_message_in_order() {
    let bus = MemoryPubSub::new();
    let mut subscribers = Vec::new();
    for _ in 0..3 {
        subscribers.push(bus.subscribe("news").await.unwrap());
    }
    for n in 0..10 {
        let receipt = bus
            .publish("news", Bytes::from(format!("{n}")))
            .await
            .unwrap();
        assert_eq!(receipt, Receipt::delivered(3));
    }
    for subscriber in &mut subscribers {
        for n in 0..10 {
            assert_eq!(next(subscriber).await, format!("{n}"));
        }
        assert!(!has_message(subscriber));
    }
}

#[tokio::test]
async fn a_group_shares_messages_each_to_exactly_one_member() {
    let bus = MemoryPubSub::new();
    let mut workers = vec![
        bus.subscribe_group("jobs", "workers").await.unwrap(),
        bus.subscribe_group("jobs", "workers").await.unwrap(),
        bus.subscribe_group("jobs", "workers").await.unwrap(),
    ];
    let mut auditors = bus.subscribe_group("jobs", "auditors").await.unwrap();
    for n in 0..30 {
        let receipt = bus
            .publish("jobs", Bytes::from(format!("{n}")))
            .await
            .unwrap();
        // One worker and one auditor: each group counts once.
        assert_eq!(receipt.receivers(), Some(2));
    }
    let mut seen = Vec::new();
    for worker in &mut workers {
        let mut own = 0;
        while let Some(Some(message)) = futures::FutureExt::now_or_never(worker.next()) {
            seen.push(
                String::from_utf8(message.to_vec())
                    .unwrap()
                    .parse::<u32>()
                    .unwrap(),
            );
            own += 1;
        }
        assert_eq!(own, 10, "round robin shares evenly");
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..30).collect::<Vec<_>>(), "none lost, none twice");
    for n in 0..30 {
        assert_eq!(next(&mut auditors).await, format!("{n}"));
    }
}

#[tokio::test]
async fn receipts_count_receivers() {
    let bus = MemoryPubSub::new();
    let nobody = bus.publish("void", Bytes::from_static(b"x")).await.unwrap();
    assert!(nobody.reached_nobody());
    assert_eq!(nobody.receivers(), Some(0));
    let _a = bus.subscribe("t").await.unwrap();
    let _b = bus.subscribe("t").await.unwrap();
    let _g = bus.subscribe_group("t", "g").await.unwrap();
    let receipt = bus.publish("t", Bytes::from_static(b"x")).await.unwrap();
    assert_eq!(receipt.receivers(), Some(3));
    assert!(!Receipt::unknown().reached_nobody());
    assert_eq!(Receipt::unknown().receivers(), None);
}

#[tokio::test]
async fn dropping_a_subscription_unsubscribes() {
    let bus = MemoryPubSub::new();
    let plain = bus.subscribe("t").await.unwrap();
    let first = bus.subscribe_group("t", "g").await.unwrap();
    let mut second = bus.subscribe_group("t", "g").await.unwrap();
    assert_eq!(bus.subscriber_count("t"), 3);
    drop(plain);
    drop(first);
    assert_eq!(bus.subscriber_count("t"), 1);
    // The remaining member gets every message.
    for n in 0..4 {
        let receipt = bus.publish("t", Bytes::from(format!("{n}"))).await.unwrap();
        assert_eq!(receipt.receivers(), Some(1));
    }
    for n in 0..4 {
        assert_eq!(next(&mut second).await, format!("{n}"));
    }
    drop(second);
    assert_eq!(bus.subscriber_count("t"), 0);
    assert_eq!(bus.topic_count(), 0);
    assert!(
        bus.publish("t", Bytes::from_static(b"x"))
            .await
            .unwrap()
            .reached_nobody()
    );
}

#[tokio::test]
async fn topics_are_separate() {
    let bus = MemoryPubSub::new();
    let mut a = bus.subscribe("a").await.unwrap();
    let mut b = bus.subscribe("b").await.unwrap();
    bus.publish("a", Bytes::from_static(b"for a"))
        .await
        .unwrap();
    assert_eq!(next(&mut a).await, "for a");
    assert!(!has_message(&mut b));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_publishers_lose_nothing() {
    let bus = Arc::new(MemoryPubSub::new());
    let mut group = vec![
        bus.subscribe_group("load", "g").await.unwrap(),
        bus.subscribe_group("load", "g").await.unwrap(),
    ];
    let mut all = bus.subscribe("load").await.unwrap();
    let publishers: Vec<_> = (0..4)
        .map(|p| {
            let bus = bus.clone();
            tokio::spawn(async move {
                for n in 0..500 {
                    bus.publish("load", Bytes::from(format!("{p}:{n}")))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for publisher in publishers {
        publisher.await.unwrap();
    }
    let mut per_publisher = [0u32; 4];
    for _ in 0..2000 {
        let message = next(&mut all).await;
        let text = std::str::from_utf8(&message).unwrap();
        let (p, n) = text.split_once(':').unwrap();
        let p: usize = p.parse().unwrap();
        // Per publisher, order is kept.
        assert_eq!(n.parse::<u32>().unwrap(), per_publisher[p]);
        per_publisher[p] += 1;
    }
    // Round robin: each of the two members gets exactly half, and nothing more.
    let mut shared = Vec::new();
    for member in &mut group {
        for _ in 0..1000 {
            shared.push(next(member).await);
        }
        assert!(!has_message(member));
    }
    shared.sort();
    shared.dedup();
    assert_eq!(
        shared.len(),
        2000,
        "each message went to exactly one member"
    );
}
