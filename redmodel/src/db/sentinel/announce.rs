//! Hearing a failover as the sentinels announce it: a subscription to
//! `+switch-master` on every sentinel.
//!
//! A sentinel publishes `+switch-master <master> <old ip> <old port> <new
//! ip> <new port>` on its own Pub/Sub when it adopts a new primary: the
//! leader of a failover at once, the others as they learn of it. One task
//! per sentinel keeps a subscription (and opens it again, every
//! [`RESUBSCRIBE_EVERY`], while it is lost, including a sentinel gone
//! silent without closing it, which the subscription's heartbeat
//! notices: [`SentinelConfig::heartbeat`]) and tells the backend's task which
//! sentinel announced a switch of its master, so that it asks that
//! sentinel first, who knows the new primary. The periodic question stays
//! the fallback for a sentinel whose subscription is down.

use std::time::Duration;

use tokio::sync::mpsc;

use super::SentinelConfig;

/// The channel sentinels announce a new primary on.
const SWITCH_MASTER: &str = "+switch-master";

/// The pause before subscribing again to a sentinel whose subscription
/// was lost or refused.
const RESUBSCRIBE_EVERY: Duration = Duration::from_secs(1);

/// Starts one subscription task per sentinel; each sends, on `heard`, the
/// index of its sentinel when that sentinel announces a switch of
/// `config`'s master. The tasks end once `heard`'s receiver is gone.
pub(super) fn listen(
    config: &SentinelConfig,
    sentinels: &[redis::Client],
    heard: &mpsc::UnboundedSender<usize>,
) {
    for (index, client) in sentinels.iter().enumerate() {
        tokio::spawn(subscribe(
            config.clone(),
            client.clone(),
            index,
            heard.clone(),
        ));
    }
}

/// Keeps a `+switch-master` subscription on one sentinel (see [`listen`]).
async fn subscribe(
    config: SentinelConfig,
    client: redis::Client,
    index: usize,
    heard: mpsc::UnboundedSender<usize>,
) {
    let heartbeat = config.subscribed_heartbeat();
    while !heard.is_closed() {
        let patience = config.connect + config.response;
        let opened = tokio::time::timeout(patience, async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(SWITCH_MASTER).await?;
            Ok::<_, redis::RedisError>(pubsub)
        })
        .await;
        match opened {
            Ok(Ok(mut pubsub)) => {
                loop {
                    tokio::select! {
                        message = heartbeat.next(&mut pubsub) => match message {
                            Some(message) => {
                                let text: String = message.get_payload().unwrap_or_default();
                                if names(&text, &config.master) && heard.send(index).is_err() {
                                    return;
                                }
                            }
                            None => break,
                        },
                        () = heard.closed() => return,
                    }
                }
                tracing::debug!(target: "redmodel::sentinel", sentinel = index, "the +switch-master subscription was lost");
            }
            Ok(Err(err)) => {
                tracing::debug!(target: "redmodel::sentinel", sentinel = index, error = %err, "no +switch-master subscription");
            }
            Err(_) => {
                tracing::debug!(target: "redmodel::sentinel", sentinel = index, "no +switch-master subscription: no answer");
            }
        }
        tokio::select! {
            () = tokio::time::sleep(RESUBSCRIBE_EVERY) => {}
            () = heard.closed() => return,
        }
    }
}

/// Whether a `+switch-master` payload is about `master`: its first word.
fn names(payload: &str, master: &str) -> bool {
    payload.split(' ').next() == Some(master)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announcement_is_about_the_master_it_names_first() {
        let payload = "mymaster 127.0.0.1 6379 127.0.0.1 6380";
        assert!(names(payload, "mymaster"));
        assert!(!names(payload, "my"));
        assert!(!names(payload, "other"));
        assert!(!names("", "mymaster"));
    }
}
