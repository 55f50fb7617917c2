//! A small client of `sarsen-kv` nodes (used by the cluster test, the
//! benchmark and the example script): finds the leader by following the
//! nodes' redirects and retries while the cluster elects one.

use std::time::{Duration, Instant};

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No node accepted the call before the deadline (no leader, nodes
    /// down); `last` is the last failure seen.
    #[error("no answer within {waited:?} ({last})")]
    Timeout {
        /// How long the client tried.
        waited: Duration,
        /// The last failure.
        last: String,
    },
    /// A node answered with an error that retrying will not fix.
    #[error("HTTP {status}: {body}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The response body.
        body: String,
    },
}

/// A client of a `sarsen-kv` cluster, given the nodes' `host:port`
/// addresses. Not shared between threads: each thread makes its own.
pub struct KvClient {
    http: reqwest::Client,
    nodes: Vec<String>,
    leader: usize,
    /// How long one call keeps retrying (default 10 s).
    pub deadline: Duration,
}

enum Step<T> {
    Done(T),
    Retry(String),
}

impl KvClient {
    /// A client of the nodes at `nodes` (`host:port` each, at least one).
    pub fn new(nodes: Vec<String>) -> KvClient {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        KvClient {
            http,
            nodes,
            leader: 0,
            deadline: Duration::from_secs(10),
        }
    }

    /// The address of the node the client takes for the leader.
    pub fn leader(&self) -> Option<&str> {
        self.nodes.get(self.leader).map(String::as_str)
    }

    async fn try_once(
        &mut self,
        method: reqwest::Method,
        path: &str,
        body: Vec<u8>,
    ) -> Step<Result<(u16, Vec<u8>), ClientError>> {
        let Some(addr) = self.nodes.get(self.leader).cloned() else {
            return Step::Done(Err(ClientError::Status {
                status: 0,
                body: "no nodes".into(),
            }));
        };
        let sent = self
            .http
            .request(method, format!("http://{addr}{path}"))
            .body(body)
            .send()
            .await;
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                self.leader = (self.leader + 1) % self.nodes.len();
                return Step::Retry(format!("{addr}: {e}"));
            }
        };
        let status = resp.status().as_u16();
        let hint = resp
            .headers()
            .get("x-leader")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = match resp.bytes().await {
            Ok(b) => b.to_vec(),
            Err(e) => return Step::Retry(format!("{addr}: {e}")),
        };
        match status {
            200 | 404 => Step::Done(Ok((status, bytes))),
            421 | 503 => {
                match hint {
                    Some(h) => match self.nodes.iter().position(|n| *n == h) {
                        Some(i) => self.leader = i,
                        None => {
                            self.nodes.push(h);
                            self.leader = self.nodes.len() - 1;
                        }
                    },
                    None => self.leader = (self.leader + 1) % self.nodes.len(),
                }
                Step::Retry(format!(
                    "{addr}: HTTP {status} {}",
                    String::from_utf8_lossy(&bytes)
                ))
            }
            _ => Step::Done(Err(ClientError::Status {
                status,
                body: String::from_utf8_lossy(&bytes).into_owned(),
            })),
        }
    }

    async fn call(
        &mut self,
        method: reqwest::Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(u16, Vec<u8>), ClientError> {
        let start = Instant::now();
        let mut quick = 0;
        loop {
            match self.try_once(method.clone(), path, body.clone()).await {
                Step::Done(r) => return r,
                Step::Retry(last) => {
                    if start.elapsed() > self.deadline {
                        return Err(ClientError::Timeout {
                            waited: start.elapsed(),
                            last,
                        });
                    }
                    // A redirect is followed at once; after a round of
                    // them, wait for the election to settle.
                    quick += 1;
                    if quick > self.nodes.len() {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        }
    }

    /// Sets `key` to `value` through the leader; returns the log index of
    /// the write once it is committed and applied.
    ///
    /// # Errors
    /// [`ClientError::Timeout`] when no leader took it in time (the write
    /// may or may not have happened), [`ClientError::Status`] when the
    /// state machine refused it (HTTP 400).
    pub async fn put(&mut self, key: &str, value: &[u8]) -> Result<u64, ClientError> {
        let (_, body) = self
            .call(reqwest::Method::PUT, &format!("/kv/{key}"), value.to_vec())
            .await?;
        Ok(parse_index(&body))
    }

    /// Deletes `key` through the leader; returns the log index.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub async fn delete(&mut self, key: &str) -> Result<u64, ClientError> {
        let (_, body) = self
            .call(reqwest::Method::DELETE, &format!("/kv/{key}"), Vec::new())
            .await?;
        Ok(parse_index(&body))
    }

    /// Merges `operand` into `key` through the leader; returns the log
    /// index.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub async fn merge(&mut self, key: &str, operand: &[u8]) -> Result<u64, ClientError> {
        let (_, body) = self
            .call(
                reqwest::Method::POST,
                &format!("/kv/{key}/merge"),
                operand.to_vec(),
            )
            .await?;
        Ok(parse_index(&body))
    }

    /// A linearizable read of `key` through the leader.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub async fn get(&mut self, key: &str) -> Result<Option<Vec<u8>>, ClientError> {
        let (status, body) = self
            .call(reqwest::Method::GET, &format!("/kv/{key}"), Vec::new())
            .await?;
        Ok((status == 200).then_some(body))
    }
}

fn parse_index(body: &[u8]) -> u64 {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("index").and_then(serde_json::Value::as_u64))
        .unwrap_or(0)
}
