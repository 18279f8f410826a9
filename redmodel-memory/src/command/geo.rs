//! GEO commands, following Redis 7.0's geo.c: GEOADD GEOPOS GEOHASH
//! GEODIST, GEORADIUS GEORADIUSBYMEMBER (and their `_RO` forms),
//! GEOSEARCH GEOSEARCHSTORE.
//!
//! A geo set is a sorted set whose scores are 52-bit geohashes
//! ([`geohash`]): GEOADD is ZADD with each point's score, and every
//! sorted-set command works on a geo set. A search reads the score ranges
//! of the cells covering its shape, checks each point's distance, and
//! replies in Redis's order: the cells in Redis's order and each cell by
//! score, unless sorted by distance (which COUNT implies, but for ANY).
//! Arguments are checked in Redis's order, the key's type first, so a
//! refused command changes nothing.
//!
//! One difference on the wire: a missing member's GEOPOS entry is RESP2's
//! null bulk string rather than its null array (clients read both as
//! nil), and a coordinate in RESP3 is written as the double's shortest
//! text rather than `%.17Lf`; both are the same value to a client.

mod geohash;

use redis::Value as Reply;

use self::geohash::{Kind, Shape};
use super::shared::destination::store_or_delete;
use super::{CmdResult, Ctx, Spec};
use crate::args::{int_arg, is};
use crate::error::CmdError;
use crate::float::{parse_double, LongDouble};
use crate::notify::class;
use crate::reply;
use crate::value::zset::{ScoreRange, ZSet};
use crate::value::Value;

pub(super) const COMMANDS: &[Spec] = &[
    Spec {
        name: "geoadd",
        arity: -5,
        handler: geoadd,
    },
    Spec {
        name: "geopos",
        arity: -2,
        handler: geopos,
    },
    Spec {
        name: "geohash",
        arity: -2,
        handler: geohash_command,
    },
    Spec {
        name: "geodist",
        arity: -4,
        handler: geodist,
    },
    Spec {
        name: "georadius",
        arity: -6,
        handler: georadius,
    },
    Spec {
        name: "georadius_ro",
        arity: -6,
        handler: georadius_ro,
    },
    Spec {
        name: "georadiusbymember",
        arity: -5,
        handler: georadiusbymember,
    },
    Spec {
        name: "georadiusbymember_ro",
        arity: -5,
        handler: georadiusbymember_ro,
    },
    Spec {
        name: "geosearch",
        arity: -7,
        handler: geosearch,
    },
    Spec {
        name: "geosearchstore",
        arity: -8,
        handler: geosearchstore,
    },
];

/// Redis's `getDoubleFromObjectOrReply` with a message of its own.
fn double_arg(arg: &[u8], msg: &'static str) -> Result<f64, CmdError> {
    parse_double(arg).ok_or(CmdError::err(msg))
}

/// A longitude and latitude argument pair (`extractLongLatOrReply`).
fn point_arg(args: &[&[u8]]) -> Result<[f64; 2], CmdError> {
    let long = double_arg(args[0], "value is not a valid float")?;
    let lat = double_arg(args[1], "value is not a valid float")?;
    if !geohash::valid(long, lat) {
        return Err(CmdError::err(format!(
            "invalid longitude,latitude pair {long:.6},{lat:.6}"
        )));
    }
    Ok([long, lat])
}

/// Metres per `unit` (`extractUnitOrReply`).
fn unit_arg(unit: &[u8]) -> Result<f64, CmdError> {
    match () {
        _ if is(unit, "m") => Ok(1.0),
        _ if is(unit, "km") => Ok(1000.0),
        _ if is(unit, "ft") => Ok(0.3048),
        _ if is(unit, "mi") => Ok(1609.34),
        _ => Err(CmdError::err(
            "unsupported unit provided. please use M, KM, FT, MI",
        )),
    }
}

/// A radius and its unit (`extractDistanceOrReply`): (radius, metres per unit).
fn radius_arg(args: &[&[u8]]) -> Result<(f64, f64), CmdError> {
    let radius = double_arg(args[0], "need numeric radius")?;
    if radius < 0.0 {
        return Err(CmdError::err("radius cannot be negative"));
    }
    Ok((radius, unit_arg(args[1])?))
}

/// A box's width, height and unit (`extractBoxOrReply`).
fn box_arg(args: &[&[u8]]) -> Result<(Kind, f64), CmdError> {
    let width = double_arg(args[0], "need numeric width")?;
    let height = double_arg(args[1], "need numeric height")?;
    if height < 0.0 || width < 0.0 {
        return Err(CmdError::err("height or width cannot be negative"));
    }
    Ok((Kind::Box { width, height }, unit_arg(args[2])?))
}

/// A distance as Redis writes it: four decimals, rounded half to even
/// (`fixedpoint_d2string`).
fn distance_text(d: f64) -> Vec<u8> {
    let scaled = (d * 10_000.0).round_ties_even() as i64;
    let sign = if scaled < 0 { "-" } else { "" };
    let abs = scaled.unsigned_abs();
    format!("{sign}{}.{:04}", abs / 10_000, abs % 10_000).into_bytes()
}

/// A coordinate as Redis replies it (`addReplyHumanLongDouble`): the
/// double's exact value to 17 decimals, trailing zeros removed, in RESP2;
/// the double itself in RESP3.
fn coordinate(d: f64, resp3: bool) -> redis::Value {
    if resp3 {
        reply::double(d)
    } else {
        reply::bulk(LongDouble::from_f64(d).to_human_string())
    }
}

/// `GEOADD key [NX|XX] [CH] longitude latitude member ...`: ZADD with each
/// point's geohash as its score (so its notifications are ZADD's).
fn geoadd(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut first = 2;
    let (mut nx, mut xx) = (false, false);
    for opt in &args[2..] {
        match () {
            _ if is(opt, "nx") => nx = true,
            _ if is(opt, "xx") => xx = true,
            // ZADD reads it.
            _ if is(opt, "ch") => {}
            _ => break,
        }
        first += 1;
    }
    let triples = &args[first..];
    if !triples.len().is_multiple_of(3) || (xx && nx) {
        return Err(CmdError::Syntax);
    }
    // Every point is checked before anything is written.
    let mut scores = Vec::with_capacity(triples.len() / 3);
    for triple in triples.chunks_exact(3) {
        let [long, lat] = point_arg(triple)?;
        scores.push(geohash::score_of(long, lat).unwrap_or(0).to_string());
    }
    let mut zadd: Vec<&[u8]> = Vec::with_capacity(first + 2 * scores.len());
    zadd.push(b"zadd");
    zadd.extend_from_slice(&args[1..first]);
    for (score, triple) in scores.iter().zip(triples.chunks_exact(3)) {
        zadd.push(score.as_bytes());
        zadd.push(triple[2]);
    }
    super::zsets::zadd(ctx, &zadd)
}

/// `GEOPOS key member ...`: each member's point, or nil.
fn geopos(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let resp3 = ctx.resp3();
    let z = ctx.read::<ZSet>(args[1])?;
    let positions = args[2..]
        .iter()
        .map(|member| match z.and_then(|z| z.score(member)) {
            Some(score) => {
                let [long, lat] = geohash::point_of(score);
                reply::array(vec![coordinate(long, resp3), coordinate(lat, resp3)])
            }
            None => reply::nil(),
        });
    Ok(reply::array(positions.collect()))
}

/// `GEOHASH key member ...`: each member's standard 11-character geohash.
fn geohash_command(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let z = ctx.read::<ZSet>(args[1])?;
    let hashes = args[2..]
        .iter()
        .map(|member| match z.and_then(|z| z.score(member)) {
            Some(score) => {
                let [long, lat] = geohash::point_of(score);
                reply::bulk(geohash::standard_text(long, lat).to_vec())
            }
            None => reply::nil(),
        });
    Ok(reply::array(hashes.collect()))
}

/// `GEODIST key member1 member2 [unit]`: the distance, or nil.
fn geodist(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let to_meters = match args.len() {
        4 => 1.0,
        5 => unit_arg(args[4])?,
        _ => return Err(CmdError::Syntax),
    };
    let Some(z) = ctx.read::<ZSet>(args[1])? else {
        return Ok(reply::nil());
    };
    let (Some(a), Some(b)) = (z.score(args[2]), z.score(args[3])) else {
        return Ok(reply::nil());
    };
    let ([x1, y1], [x2, y2]) = (geohash::point_of(a), geohash::point_of(b));
    let d = geohash::distance(x1, y1, x2, y2) / to_meters;
    Ok(reply::bulk(distance_text(d)))
}

/// Which command of the search family runs (georadiusGeneric's flags).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    /// GEORADIUS(_RO): around coordinates.
    Coords { store: bool },
    /// GEORADIUSBYMEMBER(_RO): around a member.
    Member { store: bool },
    /// GEOSEARCH, or GEOSEARCHSTORE (`store`).
    Search { store: bool },
}

fn georadius(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Family::Coords { store: true })
}

fn georadius_ro(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Family::Coords { store: false })
}

fn georadiusbymember(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Family::Member { store: true })
}

fn georadiusbymember_ro(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Family::Member { store: false })
}

fn geosearch(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Family::Search { store: false })
}

fn geosearchstore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Family::Search { store: true })
}

/// The order of a search's results.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// A point found.
struct Found {
    member: Vec<u8>,
    score: f64,
    point: [f64; 2],
    /// In metres until the reply, then in the request's unit.
    dist: f64,
}

/// The member's point in `z` (`longLatFromMember`).
fn member_point(z: &ZSet, member: &[u8]) -> Result<[f64; 2], CmdError> {
    z.score(member)
        .map(geohash::point_of)
        .ok_or(CmdError::err("could not decode requested zset member"))
}

/// What a search asks for, read from its arguments.
struct Request<'a> {
    /// The key searched.
    src: &'a [u8],
    /// Whether `src` holds a sorted set.
    exists: bool,
    /// STORE's or STORE DIST's destination, GEOSEARCHSTORE's.
    store: Option<&'a [u8]>,
    /// Store the distances rather than the scores.
    store_dist: bool,
    /// The shape searched; `conversion` also converts the distances.
    shape: Shape,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    any: bool,
    sort: Sort,
    /// COUNT, 0 without one.
    count: i64,
    /// Which of GEOSEARCH's centres and shapes were given.
    frommember: bool,
    fromloc: bool,
    byradius: bool,
    bybox: bool,
}

/// The search family (Redis's `georadiusGeneric`), step by step in its
/// order.
fn search(ctx: &mut Ctx<'_>, args: &[&[u8]], kind: Family) -> CmdResult {
    let geosearch = matches!(kind, Family::Search { .. });
    let mut request = search_positionals(ctx, args, kind)?;
    let base = positional_count(kind);
    read_search_options(ctx, &args[base..], kind, &mut request)?;
    check_search_options(&request, geosearch, args[0])?;
    let event = if geosearch {
        "geosearchstore"
    } else {
        "georadiusstore"
    };
    // Looked up once already, as a read (`search_positionals`): not another.
    let Some(z) = ctx.read_for_write::<ZSet>(request.src)? else {
        return match request.store {
            Some(dst) => store_or_delete(
                ctx,
                dst,
                Value::ZSet(ZSet::default()),
                0,
                (class::ZSET, event),
            ),
            None => Ok(reply::array(Vec::new())),
        };
    };
    let found = search_results(z, &mut request);
    if let Some(dst) = request.store {
        let len = found.len();
        let stored = ZSet::from_pairs(found.into_iter().map(|f| {
            let score = if request.store_dist { f.dist } else { f.score };
            (f.member, score)
        }));
        let reply = store_or_delete(ctx, dst, Value::ZSet(stored), len, (class::ZSET, event));
        // Redis counts a change per member stored.
        if len > 0 {
            ctx.changes(len);
        }
        return reply;
    }
    Ok(search_reply(found, &request, ctx.resp3()))
}

/// How many arguments come before the options (the name included).
fn positional_count(kind: Family) -> usize {
    match kind {
        Family::Coords { .. } => 6,
        Family::Member { .. } => 5,
        Family::Search { store: true } => 3,
        Family::Search { store: false } => 2,
    }
}

/// The key, and the centre and radius GEORADIUS and GEORADIUSBYMEMBER
/// take before their options (GEOSEARCHSTORE: its destination).
fn search_positionals<'a>(
    ctx: &mut Ctx<'_>,
    args: &[&'a [u8]],
    kind: Family,
) -> Result<Request<'a>, CmdError> {
    let src = if kind == (Family::Search { store: true }) {
        args[2]
    } else {
        args[1]
    };
    let exists = ctx.read::<ZSet>(src)?.is_some();
    let mut request = Request {
        src,
        exists,
        store: None,
        store_dist: false,
        shape: Shape {
            center: [0.0; 2],
            kind: Kind::Radius(0.0),
            conversion: 0.0,
        },
        withdist: false,
        withhash: false,
        withcoord: false,
        any: false,
        sort: Sort::None,
        count: 0,
        frommember: false,
        fromloc: false,
        byradius: false,
        bybox: false,
    };
    let shape = &mut request.shape;
    match kind {
        Family::Coords { .. } => {
            shape.center = point_arg(&args[2..4])?;
            let (radius, unit) = radius_arg(&args[4..6])?;
            (shape.kind, shape.conversion) = (Kind::Radius(radius), unit);
        }
        Family::Member { .. } if !exists => {}
        Family::Member { .. } => {
            // Looked up once already (a read): not another.
            let z = ctx.read_for_write::<ZSet>(src)?.ok_or(CmdError::Syntax)?;
            shape.center = member_point(z, args[2])?;
            let (radius, unit) = radius_arg(&args[3..5])?;
            (shape.kind, shape.conversion) = (Kind::Radius(radius), unit);
        }
        Family::Search { store: true } => request.store = Some(args[1]),
        Family::Search { store: false } => {}
    }
    Ok(request)
}

/// Reads the options after the positional arguments, in order; the first
/// one that does not fit is a syntax error.
fn read_search_options<'a>(
    ctx: &mut Ctx<'_>,
    rest: &[&'a [u8]],
    kind: Family,
    request: &mut Request<'a>,
) -> Result<(), CmdError> {
    let geosearch = matches!(kind, Family::Search { .. });
    let may_store = matches!(
        kind,
        Family::Coords { store: true } | Family::Member { store: true }
    );
    let r = request;
    let mut i = 0;
    while i < rest.len() {
        let arg = rest[i];
        let left = rest.len() - i - 1;
        if is(arg, "withdist") {
            r.withdist = true;
        } else if is(arg, "withhash") {
            r.withhash = true;
        } else if is(arg, "withcoord") {
            r.withcoord = true;
        } else if is(arg, "any") {
            r.any = true;
        } else if is(arg, "asc") {
            r.sort = Sort::Asc;
        } else if is(arg, "desc") {
            r.sort = Sort::Desc;
        } else if is(arg, "count") && left >= 1 {
            r.count = int_arg(rest[i + 1])?;
            if r.count <= 0 {
                return Err(CmdError::err("COUNT must be > 0"));
            }
            i += 1;
        } else if (is(arg, "store") || is(arg, "storedist")) && left >= 1 && may_store {
            r.store = Some(rest[i + 1]);
            r.store_dist = is(arg, "storedist");
            i += 1;
        } else if is(arg, "storedist") && kind == (Family::Search { store: true }) {
            r.store_dist = true;
        } else if is(arg, "frommember") && left >= 1 && geosearch && !r.fromloc {
            if r.exists {
                // Looked up once already (a read): not another.
                let z = ctx.read_for_write::<ZSet>(r.src)?.ok_or(CmdError::Syntax)?;
                r.shape.center = member_point(z, rest[i + 1])?;
            }
            r.frommember = true;
            i += 1;
        } else if is(arg, "fromlonlat") && left >= 2 && geosearch && !r.frommember {
            r.shape.center = point_arg(&rest[i + 1..i + 3])?;
            r.fromloc = true;
            i += 2;
        } else if is(arg, "byradius") && left >= 2 && geosearch && !r.bybox {
            let (radius, unit) = radius_arg(&rest[i + 1..i + 3])?;
            (r.shape.kind, r.shape.conversion) = (Kind::Radius(radius), unit);
            r.byradius = true;
            i += 2;
        } else if is(arg, "bybox") && left >= 3 && geosearch && !r.byradius {
            (r.shape.kind, r.shape.conversion) = box_arg(&rest[i + 1..i + 4])?;
            r.bybox = true;
            i += 3;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    Ok(())
}

/// The options that do not go together, checked in Redis's order.
fn check_search_options(r: &Request<'_>, geosearch: bool, name: &[u8]) -> Result<(), CmdError> {
    if r.store.is_some() && (r.withdist || r.withhash || r.withcoord) {
        return Err(CmdError::err(format!(
            "{} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            if geosearch {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            }
        )));
    }
    let name = String::from_utf8_lossy(name);
    if geosearch && !(r.frommember || r.fromloc) {
        return Err(CmdError::err(format!(
            "exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if geosearch && !(r.byradius || r.bybox) {
        return Err(CmdError::err(format!(
            "exactly one of BYRADIUS and BYBOX can be specified for {name}"
        )));
    }
    if r.any && r.count == 0 {
        return Err(CmdError::err("the ANY argument requires COUNT argument"));
    }
    Ok(())
}

/// The points found, sorted and cut to COUNT, their distances in the
/// request's unit. COUNT without ANY sorts nearest first.
fn search_results(z: &ZSet, r: &mut Request<'_>) -> Vec<Found> {
    if r.count != 0 && r.sort == Sort::None && !r.any {
        r.sort = Sort::Asc;
    }
    let limit = if r.any { r.count as usize } else { 0 };
    let mut found = points_in(z, &r.shape, limit);
    match r.sort {
        Sort::None => {}
        Sort::Asc => found.sort_by(|a, b| a.dist.total_cmp(&b.dist)),
        Sort::Desc => found.sort_by(|a, b| b.dist.total_cmp(&a.dist)),
    }
    if r.count > 0 {
        found.truncate(r.count as usize);
    }
    for f in &mut found {
        f.dist /= r.shape.conversion;
    }
    found
}

/// The reply: each member alone, or with what WITHDIST, WITHHASH and
/// WITHCOORD ask for.
fn search_reply(found: Vec<Found>, r: &Request<'_>, resp3: bool) -> Reply {
    let options = usize::from(r.withdist) + usize::from(r.withhash) + usize::from(r.withcoord);
    let items = found.into_iter().map(|f| {
        let member = reply::bulk(f.member);
        if options == 0 {
            return member;
        }
        let mut item = Vec::with_capacity(options + 1);
        item.push(member);
        if r.withdist {
            item.push(reply::bulk(distance_text(f.dist)));
        }
        if r.withhash {
            item.push(reply::int(f.score as i64));
        }
        if r.withcoord {
            item.push(reply::array(vec![
                coordinate(f.point[0], resp3),
                coordinate(f.point[1], resp3),
            ]));
        }
        reply::array(item)
    });
    reply::array(items.collect())
}

/// The points of `z` in `shape`, cell by cell in Redis's order, each cell
/// by score; with a `limit` (ANY), stopping once that many are found
/// (`membersOfAllNeighbors`).
fn points_in(z: &ZSet, shape: &Shape, limit: usize) -> Vec<Found> {
    let cells = shape.cells();
    let mut found = Vec::new();
    let mut last = 0;
    for (i, &cell) in cells.iter().enumerate() {
        let Some((min, max)) = geohash::score_range(cell) else {
            continue;
        };
        // A cell the same as the last one searched (at coarse steps, a
        // neighbour can be the cell itself), skipped as Redis skips it:
        // compared with the last searched only, and never with the centre.
        if last != 0 && cell == cells[last] {
            continue;
        }
        if limit != 0 && found.len() >= limit {
            break;
        }
        let range = ScoreRange::half_open(min, max);
        let span = z.score_span(&range);
        for (member, score) in z.iter_from(span.start).take(span.len()) {
            let point = geohash::point_of(score);
            if let Some(dist) = shape.distance_within(point) {
                found.push(Found {
                    member: member.to_vec(),
                    score,
                    point,
                    dist,
                });
            }
            if limit != 0 && found.len() >= limit {
                break;
            }
        }
        last = i;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::distance_text;

    #[test]
    fn distances_have_four_decimals_rounded_half_to_even() {
        assert_eq!(distance_text(0.0), b"0.0000");
        assert_eq!(distance_text(166_274.151_6), b"166274.1516");
        assert_eq!(distance_text(0.000_04), b"0.0000");
        assert_eq!(distance_text(0.000_06), b"0.0001");
        assert_eq!(distance_text(12.5), b"12.5000");
    }
}
