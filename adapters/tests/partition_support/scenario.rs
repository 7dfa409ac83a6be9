//! A load of calls through a partition, and what became of them: every call's outcome and
//! duration, whether a mutation said "not sent" ran, whether one ran twice, and how long the
//! caller took to succeed again after each event. Transport-agnostic (a
//! [`PendingRequestMap`] and how often the replicas ran each mutation), and written against APIs that predate
//! the partition work, so the same runner measures the code before it.
#![allow(dead_code, missing_docs)]

use opkit::protocol::PendingRequestMap;
use opkit::{ErrorCode, OperationContext};
use parking_lot::Mutex;
use serde_json::json;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What became of one call.
#[derive(Debug, Clone)]
pub struct Record {
    /// `test.work`'s input (a mutation), or `None` for a query.
    pub mutation: Option<u64>,
    /// When it started, from the start of the run.
    pub started: Duration,
    pub took: Duration,
    /// `None`: OK; else the error's code and `details.delivery`.
    pub error: Option<(ErrorCode, Option<String>)>,
}

impl Record {
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    fn not_sent(&self) -> bool {
        matches!(&self.error, Some((_, Some(delivery))) if delivery == "notSent")
    }
}

/// A load: one call every `period` (mutations and queries in turn), each with `deadline`.
pub struct Load {
    pub records: Arc<Mutex<Vec<Record>>>,
    pub start: Instant,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Load {
    pub fn start(map: PendingRequestMap, period: Duration, deadline: Duration) -> Self {
        let records = Arc::new(Mutex::new(Vec::new()));
        let stop = CancellationToken::new();
        let start = Instant::now();
        let task = tokio::spawn(drive(
            map,
            period,
            deadline,
            records.clone(),
            stop.clone(),
            start,
        ));
        Self {
            records,
            start,
            stop,
            task,
        }
    }

    /// From the start of the run.
    pub fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// Stops starting calls and waits for the started ones (each ends by its deadline, or
    /// the test fails after `patience`).
    pub async fn finish(self, patience: Duration) -> Vec<Record> {
        self.stop.cancel();
        tokio::time::timeout(patience, self.task)
            .await
            .expect("the calls of the load ended")
            .expect("the load did not panic");
        self.records.lock().clone()
    }
}

async fn drive(
    map: PendingRequestMap,
    period: Duration,
    deadline: Duration,
    records: Arc<Mutex<Vec<Record>>>,
    stop: CancellationToken,
    start: Instant,
) {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut calls = tokio::task::JoinSet::new();
    let mut n = 0_u64;
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        n += 1;
        let (map, records) = (map.clone(), records.clone());
        let mutation = (n % 2 == 1).then_some(n);
        calls.spawn(async move {
            let ctx = OperationContext::default().with_timeout(deadline);
            let began = Instant::now();
            let result = match mutation {
                Some(n) => map.call("test.work", json!({"n": n}), &ctx).await,
                None => map.call("math.add", json!({"a": 1, "b": 2}), &ctx).await,
            };
            let error = result.err().map(|error| {
                let delivery = error
                    .details
                    .as_ref()
                    .and_then(|details| details.get("delivery"))
                    .and_then(|delivery| delivery.as_str())
                    .map(str::to_owned);
                (error.code, delivery)
            });
            records.lock().push(Record {
                mutation,
                started: began - start,
                took: began.elapsed(),
                error,
            });
        });
    }
    while calls.join_next().await.is_some() {}
}

/// The figures of one run.
#[derive(Debug, Default)]
pub struct Report {
    pub calls: usize,
    pub ok: usize,
    /// By error code and delivery.
    pub errors: HashMap<String, usize>,
    /// Calls that ended later than their deadline plus the slack.
    pub late: usize,
    /// The latest end past the deadline.
    pub worst_overrun: Duration,
    /// Mutations whose error said "not sent" that ran.
    pub not_sent_ran: usize,
    /// Mutations that ran more than once.
    pub ran_twice: usize,
    /// Mutations that failed (any error but "not sent") and ran.
    pub unknown_ran: usize,
    /// Mutations that failed with `TRANSPORT_ERROR` and ran, by `details.delivery`.
    pub transport_ran: HashMap<String, usize>,
    /// Per event: its label and the time from it to the start of the first call that
    /// succeeded after it (`None`: none did).
    pub recovery: Vec<(String, Option<Duration>)>,
}

impl Report {
    /// Reads `records` against what the replicas ran (`runs(n)`: how often mutation `n`
    /// ran), for events at the given times (from the start of the run).
    pub fn of(
        records: &[Record],
        runs: impl Fn(u64) -> usize,
        deadline: Duration,
        slack: Duration,
        events: &[(String, Duration)],
    ) -> Self {
        let mut report = Self {
            calls: records.len(),
            ..Self::default()
        };
        for record in records {
            match &record.error {
                None => report.ok += 1,
                Some((code, delivery)) => {
                    let key = format!("{code:?}/{}", delivery.as_deref().unwrap_or("-"));
                    *report.errors.entry(key).or_default() += 1;
                }
            }
            if record.took > deadline + slack {
                report.late += 1;
            }
            report.worst_overrun = report
                .worst_overrun
                .max(record.took.saturating_sub(deadline));
            if let Some(n) = record.mutation {
                let ran = runs(n);
                if ran > 1 {
                    report.ran_twice += 1;
                }
                if ran > 0 && record.not_sent() {
                    report.not_sent_ran += 1;
                }
                if ran > 0 && !record.ok() && !record.not_sent() {
                    report.unknown_ran += 1;
                }
                if let Some((ErrorCode::TransportError, delivery)) = &record.error
                    && ran > 0
                {
                    let key = delivery.as_deref().unwrap_or("-").to_owned();
                    *report.transport_ran.entry(key).or_default() += 1;
                }
            }
        }
        for (label, at) in events {
            let first = records
                .iter()
                .filter(|record| record.ok() && record.started >= *at)
                .map(|record| record.started - *at)
                .min();
            report.recovery.push((label.clone(), first));
        }
        report
    }

    /// One row per figure, for the test output and the before/after table.
    pub fn table(&self, title: &str) -> String {
        let mut out = format!("== {title}\n");
        let _ = writeln!(out, "calls {} ok {}", self.calls, self.ok);
        let mut errors: Vec<_> = self.errors.iter().collect();
        errors.sort();
        for (key, count) in errors {
            let _ = writeln!(out, "  {key}: {count}");
        }
        let _ = writeln!(
            out,
            "late (past deadline + slack) {}, worst overrun {:?}",
            self.late, self.worst_overrun
        );
        let _ = writeln!(
            out,
            "'not sent' mutations that ran {}, mutations run twice {}, failed (unknown) mutations that ran {}",
            self.not_sent_ran, self.ran_twice, self.unknown_ran
        );
        let mut transport_ran: Vec<_> = self.transport_ran.iter().collect();
        transport_ran.sort();
        let _ = writeln!(
            out,
            "TRANSPORT_ERROR mutations that ran, by details.delivery: {transport_ran:?}"
        );
        for (label, recovery) in &self.recovery {
            let _ = writeln!(out, "  first success after {label}: {recovery:?}");
        }
        out
    }
}

impl Load {
    /// Ends the load (waiting at most `deadline + 2 * slack` for the calls in flight), lets
    /// the requests held in cut connections' buffers run (they arrive at the heal: 1 s), and
    /// reads the records against what the replicas ran ([`Report::of`]).
    pub async fn finish_and_report(
        self,
        runs: impl Fn(u64) -> usize,
        deadline: Duration,
        slack: Duration,
        events: &[(String, Duration)],
    ) -> Report {
        let records = self.finish(deadline + slack * 2).await;
        pause(Duration::from_secs(1)).await;
        Report::of(&records, runs, deadline, slack, events)
    }
}

/// Sleeps `duration`: the time between two partition events.
pub async fn pause(duration: Duration) {
    tokio::time::sleep(duration).await;
}

impl Report {
    /// Asserts what the transports promise through partitions: the load ran (more than
    /// `min_calls` calls), no call ended past its deadline plus the slack, no mutation that
    /// reported "not sent" ran, none ran twice, and a call succeeded after every event.
    pub fn assert_promises_kept(&self, min_calls: usize) {
        assert!(self.calls > min_calls, "the load ran: {} calls", self.calls);
        assert_eq!(self.late, 0, "calls ended past their deadline + slack");
        assert_eq!(self.not_sent_ran, 0, "a mutation reported not sent ran");
        assert_eq!(self.ran_twice, 0, "a mutation ran twice");
        for (label, recovery) in &self.recovery {
            assert!(recovery.is_some(), "no call succeeded after {label}");
        }
    }
}

/// After the partitions, with no restart: five `math.add` calls through `map` succeed (each
/// within 5 s, all of them within 30 s) with the right sums.
pub async fn calls_succeed_after_the_partitions(map: &PendingRequestMap) {
    for n in 0..5 {
        let ctx = OperationContext::default().with_timeout(Duration::from_secs(5));
        let sum = tokio::time::timeout(
            Duration::from_secs(30),
            map.call("math.add", json!({"a": n, "b": 1}), &ctx),
        )
        .await
        .expect("a call after the partitions: answered within 30 s")
        .expect("a call after the partitions succeeds");
        assert_eq!(sum.data, json!({"sum": n + 1}));
    }
}
