//! The registry and the in-process subscriber API.

use redis::Value;

use super::{Message, PubSub};
use crate::command::test_util::{bulk, bulks, err, int, run, sorted};
use crate::Engine;

fn message(channel: &str, payload: &str) -> Message {
    Message {
        channel: channel.into(),
        pattern: None,
        payload: payload.into(),
    }
}

fn pmessage(pattern: &str, channel: &str, payload: &str) -> Message {
    Message {
        pattern: Some(pattern.into()),
        ..message(channel, payload)
    }
}

fn drain(sub: &mut PubSub) -> Vec<Message> {
    std::iter::from_fn(|| sub.try_recv()).collect()
}

#[test]
fn publish_reaches_channel_and_pattern_subscribers() {
    let engine = Engine::new();
    let mut c = engine.connection();
    let mut a = engine.pubsub();
    let mut b = engine.pubsub();
    assert_eq!(a.subscribe("news"), 1);
    assert_eq!(a.subscribe("news"), 1, "a second SUBSCRIBE is a no-op");
    assert_eq!(a.psubscribe("n*"), 2);
    assert_eq!(b.psubscribe("n*"), 1);
    assert_eq!(b.psubscribe("x?z"), 2);

    // One delivery to a's channel, one per pattern subscription.
    assert_eq!(run(&mut c, "PUBLISH news hello"), int(3));
    assert_eq!(run(&mut c, "PUBLISH xyz bye"), int(1));
    assert_eq!(run(&mut c, "PUBLISH other nobody"), int(0));
    assert_eq!(
        drain(&mut a),
        vec![message("news", "hello"), pmessage("n*", "news", "hello")]
    );
    assert_eq!(
        drain(&mut b),
        vec![
            pmessage("n*", "news", "hello"),
            pmessage("x?z", "xyz", "bye")
        ]
    );

    assert_eq!(a.unsubscribe("news"), 1);
    assert_eq!(a.unsubscribe("never"), 1);
    assert_eq!(a.punsubscribe("n*"), 0);
    assert_eq!(run(&mut c, "PUBLISH news again"), int(1));
    assert!(drain(&mut a).is_empty());
    assert_eq!(drain(&mut b), vec![pmessage("n*", "news", "again")]);
}

#[test]
fn pubsub_introspection() {
    let engine = Engine::new();
    let mut c = engine.connection();
    let a = engine.pubsub();
    let b = engine.pubsub();
    a.subscribe("foo");
    a.subscribe("bar");
    b.subscribe("foo");
    a.psubscribe("f*");
    b.psubscribe("f*");
    b.psubscribe("b*");
    assert_eq!(sorted(run(&mut c, "PUBSUB CHANNELS")), ["bar", "foo"]);
    assert_eq!(run(&mut c, "PUBSUB CHANNELS f*"), bulks(&["foo"]));
    assert_eq!(run(&mut c, "PUBSUB CHANNELS zz*"), bulks(&[]));
    assert_eq!(
        run(&mut c, "PUBSUB NUMSUB foo bar baz"),
        Value::Array(vec![
            bulk("foo"),
            int(2),
            bulk("bar"),
            int(1),
            bulk("baz"),
            int(0)
        ])
    );
    assert_eq!(run(&mut c, "PUBSUB NUMSUB"), bulks(&[]));
    // Unique patterns.
    assert_eq!(run(&mut c, "PUBSUB NUMPAT"), int(2));
    drop(b);
    assert_eq!(run(&mut c, "PUBSUB NUMPAT"), int(1));
    assert_eq!(
        run(&mut c, "PUBSUB NUMSUB foo"),
        Value::Array(vec![bulk("foo"), int(1)])
    );
    a.unsubscribe_all();
    assert_eq!(run(&mut c, "PUBSUB CHANNELS"), bulks(&[]));
    assert_eq!(run(&mut c, "PUBSUB NUMPAT"), int(0));
}

/// Replies and errors observed from redis-server 7.0.15.
#[test]
fn pubsub_errors() {
    let mut c = Engine::new().connection();
    assert_eq!(
        run(&mut c, "PUBSUB"),
        err("ERR wrong number of arguments for 'pubsub' command")
    );
    assert_eq!(
        run(&mut c, "PUBSUB FOO"),
        err("ERR unknown subcommand 'FOO'. Try PUBSUB HELP.")
    );
    assert_eq!(
        run(&mut c, "PUBSUB NUMPAT x"),
        err("ERR wrong number of arguments for 'pubsub|numpat' command")
    );
    assert_eq!(
        run(&mut c, "PUBSUB CHANNELS a b"),
        err("ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP.")
    );
    assert_eq!(
        run(&mut c, "PUBLISH a"),
        err("ERR wrong number of arguments for 'publish' command")
    );
    let Value::Array(help) = run(&mut c, "PUBSUB HELP") else {
        panic!("not an array");
    };
    assert_eq!(help.len(), 14);
    // No subscriber to serve SUBSCRIBE on an in-process connection.
    let Value::ServerError(e) = run(&mut c, "SUBSCRIBE a") else {
        panic!("SUBSCRIBE was accepted");
    };
    assert!(
        e.details().unwrap_or("").contains("Engine::pubsub"),
        "{e:?}"
    );
}

#[test]
fn shard_channels_are_apart() {
    let engine = Engine::new();
    let mut c = engine.connection();
    let mut a = engine.pubsub();
    a.subscribe("chan");
    a.psubscribe("*");
    // SPUBLISH reaches shard subscribers only: none here.
    assert_eq!(run(&mut c, "SPUBLISH chan x"), int(0));
    assert_eq!(run(&mut c, "PUBSUB SHARDCHANNELS"), bulks(&[]));
    assert_eq!(
        run(&mut c, "PUBSUB SHARDNUMSUB chan"),
        Value::Array(vec![bulk("chan"), int(0)])
    );
    assert!(drain(&mut a).is_empty());
}

#[tokio::test]
async fn recv_waits_and_stream_yields() {
    use futures_core::Stream;
    use std::pin::Pin;

    let engine = Engine::new();
    let mut sub = engine.pubsub();
    sub.subscribe(b"bin\x00ary");
    let publisher = engine.clone();
    let task = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        publisher
            .connection()
            .execute(&[b"PUBLISH", b"bin\x00ary", b"\xff"]);
    });
    let m = sub.recv().await.unwrap();
    assert_eq!(m.channel, b"bin\x00ary");
    assert_eq!(m.payload, b"\xff");
    task.await.unwrap();

    engine
        .connection()
        .execute(&[b"PUBLISH", b"bin\x00ary", b"2"]);
    let next = std::future::poll_fn(|cx| Pin::new(&mut sub).poll_next(cx)).await;
    assert_eq!(next.map(|m| m.payload), Some(b"2".to_vec()));
}

/// A subscriber that falls behind by more than the pubsub hard limit is
/// dropped, as Redis disconnects such a client; the others go on.
#[test]
fn a_slow_subscriber_is_dropped_at_the_limit() {
    let engine = Engine::new();
    let mut c = engine.connection();
    let set = c.execute(&[
        b"CONFIG",
        b"SET",
        b"client-output-buffer-limit",
        b"pubsub 1000 0 0",
    ]);
    assert_eq!(set, Value::Okay);
    let mut slow = engine.pubsub();
    let mut fast = engine.pubsub();
    slow.subscribe("c");
    fast.subscribe("c");
    let payload = vec![b'x'; 300];
    for _ in 0..5 {
        c.execute(&[b"PUBLISH", b"c", &payload]);
        assert!(fast.try_recv().is_some());
    }
    // The slow one got what was queued before the limit, then nothing.
    assert_eq!(
        run(&mut c, "PUBSUB NUMSUB c"),
        Value::Array(vec![bulk("c"), int(1)])
    );
    assert_eq!(drain(&mut slow).len(), 4);
    assert_eq!(slow.subscribe("c"), 0, "a dropped subscriber stays dropped");
}
