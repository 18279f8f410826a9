//! How a connection writes what client-side caching tells it
//! (`crate::tracking`), as Redis's `sendTrackingMessage` writes it.

use crate::tracking::Note;

use super::encode;

/// The channel RESP2 connections receive redirected invalidations on.
const CHANNEL: &[u8] = b"__redis__:invalidate";

/// Writes `note` for a connection speaking `resp`, `subscribed` or not
/// (RESP2's subscribed mode):
/// - an invalidation is a `>2 invalidate [keys]` push in RESP3; a RESP2
///   connection receives it only if it is the redirection target of
///   another and subscribed, as a message of `__redis__:invalidate`;
///   otherwise nothing is written (RESP2 has no pushes);
/// - a broken redirection is a `>2 tracking-redir-broken id` push, in
///   RESP3 only.
///
/// The keys come as an array, or a null for "every key" (FLUSHALL).
pub(super) fn write_note(out: &mut Vec<u8>, note: &Note, resp: u8, subscribed: bool) {
    match note {
        Note::Invalidate { keys, redirected } => {
            if resp >= 3 {
                encode::push_header(out, 2, resp);
                encode::bulk(out, b"invalidate");
            } else if *redirected && subscribed {
                encode::push_header(out, 3, resp);
                encode::bulk(out, b"message");
                encode::bulk(out, CHANNEL);
            } else {
                return;
            }
            match keys {
                Some(keys) => {
                    encode::array_header(out, keys.len());
                    for key in keys {
                        encode::bulk(out, key);
                    }
                }
                None if resp >= 3 => out.extend_from_slice(b"_\r\n"),
                None => out.extend_from_slice(b"$-1\r\n"),
            }
        }
        Note::RedirBroken(id) => {
            if resp >= 3 {
                encode::push_header(out, 2, resp);
                encode::bulk(out, b"tracking-redir-broken");
                out.push(b':');
                out.extend_from_slice(itoa::Buffer::new().format(*id).as_bytes());
                out.extend_from_slice(b"\r\n");
            }
        }
    }
}
