//! `Db::publish` and `Db::subscriber` on every backend: channels and
//! patterns, in order, across clones, and the end of a subscription.

use std::time::Duration;

use redmodel::{Db, Error, Message};
use redmodel_suite::{backend_tests, configured_server_or_skip, Proxy, RedisServer};

/// The next message, or a failure naming what was awaited.
async fn next(sub: &mut redmodel::Subscriber, what: &str) -> Message {
    tokio::time::timeout(Duration::from_secs(5), sub.next_message())
        .await
        .unwrap_or_else(|_| panic!("no message within 5 s: {what}"))
        .unwrap_or_else(|| panic!("the subscription ended: {what}"))
}

backend_tests! {
    /// Messages on a channel and on a pattern arrive whole and in the
    /// order they were published; on one node PUBLISH counts the
    /// receivers (on a cluster only those of the node it went to).
    async fn published_messages_reach_subscribers_in_order(ctx) {
        let (news, alerts) = (ctx.key("news"), ctx.key("alerts"));
        let mut sub = ctx.db.subscriber().await?;
        sub.subscribe(&news).await?;
        sub.psubscribe(format!("{alerts}:*")).await?;
        let mut other = ctx.db.clone().subscriber().await?;
        other.subscribe(&news).await?;

        let receivers = ctx.db.publish(&news, "first").await?;
        if !ctx.db.is_cluster() {
            assert_eq!(receivers, 2);
        }
        ctx.db.publish(&format!("{alerts}:fire"), b"\x00\xffbinary".as_slice()).await?;
        for i in 0..50 {
            ctx.db.publish(&news, i).await?;
        }

        let first = next(&mut sub, "first").await;
        assert_eq!((first.channel.as_str(), first.pattern.as_deref()), (news.as_str(), None));
        assert_eq!(first.text(), "first");
        let alert = next(&mut sub, "the alert").await;
        assert_eq!(alert.channel, format!("{alerts}:fire"));
        assert_eq!(alert.pattern, Some(format!("{alerts}:*")));
        assert_eq!(alert.payload, b"\x00\xffbinary");
        for i in 0..50 {
            assert_eq!(next(&mut sub, "numbered").await.text(), i.to_string());
        }
        assert_eq!(next(&mut other, "other's first").await.text(), "first");
        Ok::<(), Error>(())
    }

    /// After UNSUBSCRIBE and PUNSUBSCRIBE nothing more arrives; a channel
    /// nobody listens to counts no receiver.
    async fn unsubscribed_channels_receive_nothing(ctx) {
        let (a, b) = (ctx.key("a"), ctx.key("b"));
        let mut sub = ctx.db.subscriber().await?;
        sub.subscribe(&[a.as_str(), b.as_str()]).await?;
        sub.psubscribe(format!("{a}*")).await?;
        sub.unsubscribe(&a).await?;
        sub.punsubscribe(format!("{a}*")).await?;
        ctx.db.publish(&a, "lost").await?;
        ctx.db.publish(&b, "kept").await?;
        let got = next(&mut sub, "b's message").await;
        assert_eq!((got.channel.as_str(), got.text().as_ref()), (b.as_str(), "kept"));
        if !ctx.db.is_cluster() {
            assert_eq!(ctx.db.publish(&ctx.key("nobody"), "x").await?, 0);
        }
        drop(sub);
        Ok::<(), Error>(())
    }
}

/// On one server, a subscriber's quiet connection stays (the server
/// answers its PINGs), and one whose server goes silent without closing
/// it (a half-open TCP connection, here a proxy that stops forwarding)
/// ends: no answer to the PING sent after a silence as long as the
/// response timeout, within that timeout again. A change of its
/// subscriptions then fails, typed.
#[tokio::test]
async fn a_subscriber_whose_server_goes_silent_ends_after_its_heartbeat() {
    let test = "a_subscriber_whose_server_goes_silent_ends_after_its_heartbeat";
    let Some(server) = configured_server_or_skip(test, RedisServer::builder()) else {
        return;
    };
    let proxy = Proxy::start(server.addr()).await.expect("a proxy");
    // Room for a loaded machine: a PING's answer may take a while.
    let response = Duration::from_secs(1);
    let db = Db::connect_with_timeouts(&proxy.url(), Duration::from_secs(1), response)
        .await
        .expect("connect");
    let publisher = Db::connect(&server.url()).await.expect("connect");
    let mut sub = db.subscriber().await.expect("a subscriber");
    sub.subscribe("news").await.expect("subscribe");
    // Quiet for a few heartbeats: the server answers, nothing ends.
    tokio::time::sleep(response * 3).await;
    assert_eq!(
        publisher
            .publish("news", "still here")
            .await
            .expect("publish"),
        1
    );
    assert_eq!(
        next(&mut sub, "a message after a quiet spell").await.text(),
        "still here"
    );

    proxy.freeze();
    let frozen = std::time::Instant::now();
    // Silence (1 s) + patience (1 s), with room for a busy machine.
    let ended = tokio::time::timeout(Duration::from_secs(8), sub.next_message()).await;
    assert_eq!(
        ended.expect("the silent connection is given up within 8 s"),
        None
    );
    assert!(
        frozen.elapsed() >= response * 2,
        "given up after {:?}",
        frozen.elapsed()
    );
    assert_eq!(sub.next_message().await, None, "the end stays the end");
    let err = sub
        .subscribe("more")
        .await
        .expect_err("the connection is gone");
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
}
