//! CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO, with Redis
//! 7.0.15's options, checks and error texts (networking.c's
//! `clientCommand`, tracking.c's `enableTracking`).

use std::collections::BTreeSet;

use redis::Value as Reply;

use super::{Mode, Tracking};
use crate::args::{int_arg, is};
use crate::error::CmdError;
use crate::reply;

impl Tracking {
    /// CLIENT `sub` `rest...` for connection `id`, its arity checked:
    /// `None` for a subcommand that is not tracking's. The caller then
    /// brings the keyspaces' change log in line (`sync_tracking_log`).
    pub(crate) fn client_command(
        &mut self,
        id: u64,
        sub: &[u8],
        rest: &[&[u8]],
    ) -> Option<Result<Reply, CmdError>> {
        let result = if is(sub, "tracking") {
            self.client_tracking(id, rest)
        } else if is(sub, "caching") {
            self.client_caching(id, rest[0])
        } else if is(sub, "getredir") {
            Ok(reply::int(redirect_of(&self.mode(id))))
        } else if is(sub, "trackinginfo") {
            Ok(tracking_info(&self.mode(id)))
        } else {
            return None;
        };
        Some(result)
    }
}

/// The redirect GETREDIR and TRACKINGINFO report: the client id (0 for
/// none) while tracking is on, -1 while it is off.
fn redirect_of(mode: &Mode) -> i64 {
    if mode.on {
        i64::try_from(mode.redirect).unwrap_or(i64::MAX)
    } else {
        -1
    }
}

/// CLIENT TRACKINGINFO: flags (a set), redirect, prefixes.
fn tracking_info(mode: &Mode) -> Reply {
    let mut flags = vec![if mode.on { "on" } else { "off" }];
    if mode.bcast {
        flags.push("bcast");
    }
    if mode.optin {
        flags.push("optin");
        if mode.caching {
            flags.push("caching-yes");
        }
    }
    if mode.optout {
        flags.push("optout");
        if mode.caching {
            flags.push("caching-no");
        }
    }
    if mode.noloop {
        flags.push("noloop");
    }
    if mode.broken_redirect {
        flags.push("broken_redirect");
    }
    let redirect = redirect_of(mode);
    reply::map(vec![
        (
            reply::bulk("flags"),
            reply::set(flags.into_iter().map(reply::bulk).collect()),
        ),
        (reply::bulk("redirect"), reply::int(redirect)),
        (
            reply::bulk("prefixes"),
            reply::array(mode.prefixes.iter().cloned().map(reply::bulk).collect()),
        ),
    ])
}

/// The options of CLIENT TRACKING, as parsed.
#[derive(Default)]
struct Options<'a> {
    redirect: u64,
    bcast: bool,
    optin: bool,
    optout: bool,
    noloop: bool,
    prefixes: Vec<&'a [u8]>,
}

/// Redis's `stringCheckPrefix`: one of the two starts with the other.
fn overlaps(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl Tracking {
    /// Connection `id`'s mode (the default, off, for an unknown one).
    fn mode(&self, id: u64) -> Mode {
        self.peers
            .get(&id)
            .map(|p| p.mode.clone())
            .unwrap_or_default()
    }

    /// `CLIENT TRACKING on|off [REDIRECT id] [PREFIX p]... [BCAST] [OPTIN]
    /// [OPTOUT] [NOLOOP]`.
    fn client_tracking(&mut self, id: u64, args: &[&[u8]]) -> Result<Reply, CmdError> {
        let (switch, opts) = args.split_first().ok_or(CmdError::Syntax)?;
        let mut o = Options::default();
        let mut i = 0;
        while i < opts.len() {
            let opt = opts[i];
            let more = i + 1 < opts.len();
            if is(opt, "redirect") && more {
                i += 1;
                if o.redirect != 0 {
                    return Err(CmdError::err(
                        "A client can only redirect to a single other client",
                    ));
                }
                let target = int_arg(opts[i])?;
                // Required to exist now, though it may go away later.
                match u64::try_from(target) {
                    Ok(target) if self.peers.contains_key(&target) => o.redirect = target,
                    _ => {
                        return Err(CmdError::err(
                            "The client ID you want redirect to does not exist",
                        ))
                    }
                }
            } else if is(opt, "bcast") {
                o.bcast = true;
            } else if is(opt, "optin") {
                o.optin = true;
            } else if is(opt, "optout") {
                o.optout = true;
            } else if is(opt, "noloop") {
                o.noloop = true;
            } else if is(opt, "prefix") && more {
                i += 1;
                o.prefixes.push(opts[i]);
            } else {
                return Err(CmdError::Syntax);
            }
            i += 1;
        }
        if is(switch, "off") {
            self.disable(id);
            return Ok(reply::ok());
        }
        if !is(switch, "on") {
            return Err(CmdError::Syntax);
        }
        let current = self.mode(id);
        self.check(&current, &o)?;
        self.enable(id, o);
        Ok(reply::ok())
    }

    /// The checks of CLIENT TRACKING on, in Redis's order.
    fn check(&self, current: &Mode, o: &Options<'_>) -> Result<(), CmdError> {
        if !o.bcast && !o.prefixes.is_empty() {
            return Err(CmdError::err(
                "PREFIX option requires BCAST mode to be enabled",
            ));
        }
        if current.on && current.bcast != o.bcast {
            return Err(CmdError::err(
                "You can't switch BCAST mode on/off before disabling tracking for this client, \
                 and then re-enabling it with a different mode.",
            ));
        }
        if o.bcast && (o.optin || o.optout) {
            return Err(CmdError::err(
                "OPTIN and OPTOUT are not compatible with BCAST",
            ));
        }
        if o.optin && o.optout {
            return Err(CmdError::err(
                "You can't specify both OPTIN mode and OPTOUT mode",
            ));
        }
        if (o.optin && current.optout) || (o.optout && current.optin) {
            return Err(CmdError::err(
                "You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, \
                 and then re-enabling it with a different mode.",
            ));
        }
        if o.bcast {
            check_prefixes(&current.prefixes, &o.prefixes)?;
        }
        Ok(())
    }

    /// Redis's `enableTracking`: the options replace the flags; BCAST's
    /// prefixes (the empty one if none is given) add to those it has.
    fn enable(&mut self, id: u64, o: Options<'_>) {
        let Some(peer) = self.peers.get_mut(&id) else {
            return;
        };
        let m = &mut peer.mode;
        if !m.on {
            self.clients += 1;
        }
        m.on = true;
        m.broken_redirect = false;
        m.redirect = o.redirect;
        m.bcast = o.bcast;
        m.optin = o.optin;
        m.optout = o.optout;
        m.noloop = o.noloop;
        if !o.bcast {
            return;
        }
        let empty: &[&[u8]] = &[b""];
        let prefixes = if o.prefixes.is_empty() {
            empty
        } else {
            &o.prefixes
        };
        for prefix in prefixes {
            m.prefixes.insert(prefix.to_vec());
            self.prefixes
                .entry(prefix.to_vec())
                .or_default()
                .clients
                .insert(id);
        }
    }

    /// CLIENT CACHING yes|no.
    fn client_caching(&mut self, id: u64, opt: &[u8]) -> Result<Reply, CmdError> {
        let Some(m) = self
            .peers
            .get_mut(&id)
            .map(|p| &mut p.mode)
            .filter(|m| m.on)
        else {
            return Err(CmdError::err(
                "CLIENT CACHING can be called only when the client is in tracking mode with \
                 OPTIN or OPTOUT mode enabled",
            ));
        };
        if is(opt, "yes") {
            if !m.optin {
                return Err(CmdError::err(
                    "CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
                ));
            }
        } else if is(opt, "no") {
            if !m.optout {
                return Err(CmdError::err(
                    "CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
                ));
            }
        } else {
            return Err(CmdError::Syntax);
        }
        m.caching = true;
        Ok(reply::ok())
    }
}

/// Redis's `checkPrefixCollisionsOrReply`: no new prefix may overlap one
/// the client has, or another new one.
fn check_prefixes(existing: &BTreeSet<Vec<u8>>, new: &[&[u8]]) -> Result<(), CmdError> {
    for (i, prefix) in new.iter().enumerate() {
        if let Some(old) = existing.iter().find(|old| overlaps(old, prefix)) {
            return Err(CmdError::err(format!(
                "Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single \
                 client must not overlap.",
                lossy(prefix),
                lossy(old)
            )));
        }
        if let Some(other) = new[i + 1..].iter().find(|other| overlaps(prefix, other)) {
            return Err(CmdError::err(format!(
                "Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a \
                 single client must not overlap.",
                lossy(prefix),
                lossy(other)
            )));
        }
    }
    Ok(())
}
