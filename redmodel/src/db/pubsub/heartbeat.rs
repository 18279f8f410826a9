//! Noticing a subscribed connection that went silent.
//!
//! A connection in subscribed mode receives only what is published, so a
//! peer that stopped answering without closing the socket (a half-open
//! TCP connection: a host gone, a stopped process, a dropped NAT entry)
//! looks the same as a quiet channel, for as long as the kernel keeps the
//! socket. While no message comes for [`Heartbeat::every`], the
//! connection is sent PING (which RESP2 answers in subscribed mode with a
//! `pong` message array); no answer within [`Heartbeat::patience`] counts
//! as a lost connection, which the caller replaces.

use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::PubSub;
use redis::{Msg, Value};

/// When to PING a subscribed connection, and how long to wait for its
/// answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Heartbeat {
    /// The silence after which the connection is sent PING.
    pub(crate) every: Duration,
    /// How long the answer may take before the connection counts as lost.
    pub(crate) patience: Duration,
}

impl Heartbeat {
    /// The heartbeat of a subscriber on one server or a cluster, from the
    /// `Db`'s response timeout: PING after a silence that long, answered
    /// within it again.
    pub(crate) fn after(response: Duration) -> Self {
        Heartbeat {
            every: response,
            patience: response,
        }
    }

    /// The next message on `pubsub`, sending it PING after each silence
    /// of [`every`](Self::every); `None` once the connection is closed or
    /// a PING went unanswered for [`patience`](Self::patience).
    pub(crate) async fn next(&self, pubsub: &mut PubSub) -> Option<Msg> {
        loop {
            let mut messages = pubsub.on_message();
            tokio::select! {
                // Received messages first: they prove the connection alive.
                biased;
                message = messages.next() => return message,
                () = tokio::time::sleep(self.every) => {}
            }
            drop(messages);
            match tokio::time::timeout(self.patience, pubsub.ping::<Value>()).await {
                Ok(Ok(_)) => {}
                Ok(Err(err)) => {
                    tracing::debug!(target: "redmodel::pubsub", error = %err, "a subscribed connection failed its PING");
                    return None;
                }
                Err(_) => {
                    tracing::debug!(target: "redmodel::pubsub", patience = ?self.patience, "a subscribed connection did not answer its PING: counted lost");
                    return None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use redis::RedisConnectionInfo;
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// A peer that accepts the connection and then never reads nor
    /// answers: a half-open connection, as seen from the client.
    #[tokio::test]
    async fn a_peer_that_never_answers_is_given_up_after_the_silence_and_the_patience() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let addr = listener.local_addr().expect("its address");
        let stream = TcpStream::connect(addr).await.expect("connected");
        let (_silent, _) = listener.accept().await.expect("accepted");
        // Nothing to set up, so nothing is sent before the heartbeat.
        let info = RedisConnectionInfo::default().set_skip_set_lib_name();
        let mut pubsub = PubSub::new(&info, stream).await.expect("a connection");
        let heartbeat = Heartbeat {
            every: Duration::from_millis(50),
            patience: Duration::from_millis(100),
        };
        let start = Instant::now();
        let got = tokio::time::timeout(Duration::from_secs(5), heartbeat.next(&mut pubsub))
            .await
            .expect("the silent peer given up within 5 s");
        assert!(got.is_none());
        assert!(start.elapsed() >= Duration::from_millis(150));
    }
}
