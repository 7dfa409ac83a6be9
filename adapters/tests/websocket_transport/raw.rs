//! A hand-written spoke for the tests that play an attacker (or a broken peer): it sends the
//! frames it is told to, byte for byte, and reads the hub's answers and messages.
#![cfg(feature = "websocket")]
// Each suite that includes these helpers uses some of them.
#![allow(dead_code)]

use crate::ops::within;
use futures::{SinkExt, StreamExt};
use std::collections::VecDeque;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// An authenticated WebSocket to the hub, the welcome frame not read yet.
pub async fn raw_connection(url: &str, token: &str) -> Socket {
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    tokio_tungstenite::connect_async(request).await.unwrap().0
}

/// The next data frame from the hub, as text.
pub async fn next_frame(socket: &mut Socket) -> String {
    loop {
        let message = within("a frame", socket.next()).await.unwrap().unwrap();
        match message {
            Message::Text(text) => return text.to_string(),
            Message::Binary(bytes) => return String::from_utf8_lossy(&bytes).into_owned(),
            _ => {}
        }
    }
}

/// A raw spoke: requests numbered from 1, the `message` frames it receives kept aside.
pub struct RawSpoke {
    socket: Socket,
    next_id: u64,
    /// `message` frames received while waiting for answers, in order.
    pub messages: VecDeque<String>,
}

impl RawSpoke {
    /// Connects with `token` and reads the welcome.
    pub async fn connect(url: &str, token: &str) -> Self {
        let mut socket = raw_connection(url, token).await;
        let welcome = next_frame(&mut socket).await;
        assert!(welcome.contains(r#""op":"welcome""#), "{welcome}");
        Self {
            socket,
            next_id: 1,
            messages: VecDeque::new(),
        }
    }

    /// Sends a frame with this header (and payload), and returns the hub's answer to it (an
    /// `ok` or `error` frame naming its id).
    async fn request(&mut self, id: u64, header: String, payload: Option<&[u8]>) -> String {
        let message = match payload {
            Some(payload) => Message::binary([header.as_bytes(), b"\n", payload].concat()),
            None => Message::text(header),
        };
        self.socket.send(message).await.unwrap();
        self.answer(id).await
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    async fn answer(&mut self, id: u64) -> String {
        let tag = format!(r#""id":{id}"#);
        loop {
            let frame = next_frame(&mut self.socket).await;
            if frame.starts_with(r#"{"op":"message""#) {
                self.messages.push_back(frame);
            } else if frame.contains(&tag) {
                return frame;
            }
        }
    }

    /// Subscribes to `topic` (in `group` when given); the hub's answer.
    pub async fn subscribe(&mut self, topic: &str, group: Option<&str>) -> String {
        let id = self.id();
        let header = match group {
            Some(group) => {
                serde_json::json!({"op": "subscribe_group", "id": id, "topic": topic, "group": group})
            }
            None => serde_json::json!({"op": "subscribe", "id": id, "topic": topic}),
        };
        self.request(id, header.to_string(), None).await
    }

    /// Publishes `payload` on `topic`; the hub's answer.
    pub async fn publish(&mut self, topic: &str, payload: &[u8]) -> String {
        let id = self.id();
        let header = serde_json::json!({"op": "publish", "id": id, "topic": topic});
        self.request(id, header.to_string(), Some(payload)).await
    }

    /// Sends a text frame as it is, and returns the next frame from the hub that is not a
    /// `message` (an answer, with or without an id).
    pub async fn send_text(&mut self, frame: String) -> String {
        self.socket.send(Message::text(frame)).await.unwrap();
        loop {
            let frame = next_frame(&mut self.socket).await;
            if frame.starts_with(r#"{"op":"message""#) {
                self.messages.push_back(frame);
            } else {
                return frame;
            }
        }
    }

    /// Reads what arrives for `wait` (bounded), keeping `message` frames.
    pub async fn listen(&mut self, wait: Duration) {
        let until = tokio::time::Instant::now() + wait;
        while let Ok(Some(Ok(message))) = tokio::time::timeout_at(until, self.socket.next()).await {
            let text = match message {
                Message::Text(text) => text.to_string(),
                Message::Binary(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                _ => continue,
            };
            if text.starts_with(r#"{"op":"message""#) {
                self.messages.push_back(text);
            }
        }
    }
}

/// `true` when `answer` is the hub's `error` frame, refused unsent, and mentions `why`.
pub fn refused(answer: &str, why: &str) -> bool {
    answer.contains(r#""op":"error""#)
        && answer.contains(r#""unsent":true"#)
        && answer.contains(why)
}
