//! A minimal WebSocket client (RFC 6455) for GraphQL over `graphql-transport-ws` on `/graphql`,
//! without a client crate.
//!
//! Use it with `#[path = "support/ws.rs"] mod ws;`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Debug)]
pub enum Frame {
    Text(String),
    Close(u16, String),
}

pub struct Ws {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl Ws {
    /// Opens `/graphql`, with `header_token` as the upgrade request's bearer token when given;
    /// returns the HTTP status when the upgrade is refused.
    pub async fn connect(addr: &str, header_token: Option<&str>) -> Result<Ws, u16> {
        let authorization = header_token.map(|token| format!("Bearer {token}"));
        let headers: Vec<(&str, &str)> = authorization
            .iter()
            .map(|value| ("Authorization", value.as_str()))
            .collect();
        Ws::connect_with(addr, &headers).await
    }

    /// Opens `/graphql` with the `headers` on the upgrade request; returns the HTTP status when
    /// the upgrade is refused.
    pub async fn connect_with(addr: &str, headers: &[(&str, &str)]) -> Result<Ws, u16> {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut request = format!(
            "GET /graphql HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n"
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut buffer = Vec::new();
        let head_end = loop {
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break end;
            }
            let mut chunk = [0u8; 4096];
            let read = stream.read(&mut chunk).await.unwrap();
            assert!(read > 0, "connection closed during the handshake");
            buffer.extend_from_slice(&chunk[..read]);
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
        let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
        if status != 101 {
            return Err(status);
        }
        assert!(
            head.to_ascii_lowercase()
                .contains("sec-websocket-protocol: graphql-transport-ws"),
            "{head}"
        );
        buffer.drain(..head_end + 4);
        Ok(Ws { stream, buffer })
    }

    pub async fn send(&mut self, message: Value) {
        let payload = message.to_string().into_bytes();
        let mut frame = vec![0x81u8];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n < 65536 => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        let mask = [0x12u8, 0x34, 0x56, 0x78];
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream.write_all(&frame).await.unwrap();
    }

    async fn fill(&mut self, needed: usize) -> bool {
        while self.buffer.len() < needed {
            let mut chunk = [0u8; 8192];
            match self.stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return false,
                Ok(read) => self.buffer.extend_from_slice(&chunk[..read]),
            }
        }
        true
    }

    pub async fn frame(&mut self) -> Option<Frame> {
        loop {
            if !self.fill(2).await {
                return None;
            }
            let opcode = self.buffer[0] & 0x0f;
            let (length, header) = match self.buffer[1] & 0x7f {
                126 => {
                    if !self.fill(4).await {
                        return None;
                    }
                    (
                        u16::from_be_bytes([self.buffer[2], self.buffer[3]]) as usize,
                        4,
                    )
                }
                127 => {
                    if !self.fill(10).await {
                        return None;
                    }
                    (
                        u64::from_be_bytes(self.buffer[2..10].try_into().unwrap()) as usize,
                        10,
                    )
                }
                n => (n as usize, 2),
            };
            if !self.fill(header + length).await {
                return None;
            }
            let payload: Vec<u8> = self.buffer.drain(..header + length).skip(header).collect();
            match opcode {
                0x1 => return Some(Frame::Text(String::from_utf8(payload).unwrap())),
                0x8 => {
                    let code = if payload.len() >= 2 {
                        u16::from_be_bytes([payload[0], payload[1]])
                    } else {
                        1005
                    };
                    let reason = String::from_utf8_lossy(payload.get(2..).unwrap_or(&[]));
                    return Some(Frame::Close(code, reason.into_owned()));
                }
                _ => continue,
            }
        }
    }

    /// The next JSON message within `limit` (none on timeout or close).
    pub async fn next(&mut self, limit: Duration) -> Option<Value> {
        match tokio::time::timeout(limit, self.frame()).await {
            Ok(Some(Frame::Text(text))) => Some(serde_json::from_str(&text).unwrap()),
            _ => None,
        }
    }

    /// Sends `connection_init` and returns the server's answer frame.
    pub async fn init(&mut self, payload: Value) -> Frame {
        self.send(json!({"type": "connection_init", "payload": payload}))
            .await;
        tokio::time::timeout(Duration::from_secs(10), self.frame())
            .await
            .unwrap()
            .expect("an answer to connection_init")
    }

    /// An acknowledged connection.
    pub async fn open(addr: &str, payload: Value) -> Ws {
        let mut ws = Ws::connect(addr, None).await.unwrap();
        match ws.init(payload).await {
            Frame::Text(text) => assert!(text.contains("connection_ack"), "{text}"),
            Frame::Close(code, reason) => panic!("closed: {code} {reason}"),
        }
        ws
    }

    pub async fn subscribe(&mut self, id: &str, query: &str) {
        self.send(json!({"id": id, "type": "subscribe", "payload": {"query": query}}))
            .await;
    }
}
