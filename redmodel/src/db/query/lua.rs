//! The walk of a query page as one Lua script, for a server in the plain
//! layout: the page's keys in one round trip, whatever the tests reject.
//!
//! `ARGV`: how many items to find (0: all), the first chunk's size (each
//! next chunk is twice as large, up to `CHUNK_MAX`), the order
//! (`key`, `asc`, `desc`), whether an `after` item is given, its score and
//! key; the source (`holder`, `scores`, `inter`, `union`, `list`), its
//! argument count and arguments (a sorted source: its key and its
//! ZRANGE bounds); the test count, then each test's kind (`in`, `any`,
//! `score`, `holder`, `list`), argument count and arguments. The reply:
//! each item's key and score, flat.
//!
//! The candidates' object keys cannot be declared in `KEYS` ahead (they
//! are what the walk finds), which one server allows; a cluster never
//! runs this script (see [`super`]). Keys are compared byte by byte, as
//! Redis orders a sorted set's ties: Lua's `<` on strings follows the
//! server's collation locale.

use std::sync::LazyLock;

use super::walk::{bound_arg, chunk, score_text, Found, CHUNK_MAX};
use super::{Bounds, Order, Source, Test, Walk};
use crate::db::script::Lua;
use crate::{Db, Result};

const WALK: &str = r"
local function num(s)
  if s == 'inf' or s == '+inf' then return math.huge end
  if s == '-inf' then return -math.huge end
  return tonumber(s)
end
local function bound(t)
  if string.sub(t, 1, 1) == '(' then return num(string.sub(t, 2)), true end
  return num(t), false
end
local function within(s, a, ao, b, bo)
  if (ao and s <= a) or (not ao and s < a) then return false end
  if (bo and s >= b) or (not bo and s > b) then return false end
  return true
end
local function less(a, b)
  if a == b then return false end
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
local want, size, order = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local resume, rs, rk = ARGV[4] == '1', ARGV[5], ARGV[6]
local kind, nsrc, src = ARGV[7], tonumber(ARGV[8]), {}
for i = 1, nsrc do src[i] = ARGV[8 + i] end
local at = 9 + nsrc
local tests = {}
for t = 1, tonumber(ARGV[at]) do
  local n = tonumber(ARGV[at + 2])
  local args = {}
  for i = 1, n do args[i] = ARGV[at + 2 + i] end
  tests[t] = {ARGV[at + 1], args}
  at = at + 2 + n
end
-- Those of the candidates `ms` that pass every test, in order: one
-- command per test for the whole chunk (SMISMEMBER, ZMSCORE), not one
-- per candidate, each asked of the candidates the tests before it kept.
local function passing(ms)
  for _, t in ipairs(tests) do
    if #ms == 0 then return ms end
    local k, a, n, left = t[1], t[2], #ms, {}
    if k == 'in' then
      local r, has = redis.call('SMISMEMBER', a[1], unpack(ms)), a[2] == '1'
      for i = 1, n do
        if (r[i] == 1) == has then left[#left + 1] = ms[i] end
      end
    elseif k == 'any' then
      local any = {}
      for _, set in ipairs(a) do
        local r = redis.call('SMISMEMBER', set, unpack(ms))
        for i = 1, n do
          if r[i] == 1 then any[i] = true end
        end
      end
      for i = 1, n do
        if any[i] then left[#left + 1] = ms[i] end
      end
    elseif k == 'score' then
      local r = redis.call('ZMSCORE', a[1], unpack(ms))
      local lo, lo_open = bound(a[2])
      local hi, hi_open = bound(a[3])
      for i = 1, n do
        if r[i] and within(num(r[i]), lo, lo_open, hi, hi_open) then left[#left + 1] = ms[i] end
      end
    elseif k == 'holder' then
      local h = redis.call('LINDEX', a[1], 0)
      for i = 1, n do
        if h == ms[i] then left[#left + 1] = ms[i] end
      end
    elseif k == 'list' then
      for i = 1, n do
        if redis.call('LPOS', a[1], ms[i]) then left[#left + 1] = ms[i] end
      end
    end
    ms = left
  end
  return ms
end
local out, count = {}, 0
-- Keeps the candidates of `ms` that pass and whose object exists, in
-- order, until the page is full; the kept ones, and whether it is full.
local function keep(ms)
  local kept = {}
  for _, m in ipairs(passing(ms)) do
    if redis.call('EXISTS', m) == 1 then
      kept[#kept + 1] = m
      count = count + 1
      if want > 0 and count >= want then return kept, true end
    end
  end
  return kept, false
end
if order == 'key' then
  local keys
  if kind == 'holder' then
    local h = redis.call('LINDEX', src[1], 0)
    keys = h and {h} or {}
  elseif kind == 'scores' then keys = redis.call('ZRANGE', src[1], src[2], src[3], 'BYSCORE')
  elseif kind == 'inter' then keys = redis.call('SINTER', unpack(src))
  elseif kind == 'union' then keys = redis.call('SUNION', unpack(src))
  else keys = redis.call('LRANGE', src[1], 0, -1) end
  table.sort(keys, less)
  local cands, last = {}, nil
  for _, m in ipairs(keys) do
    if m ~= last and (not resume or less(rk, m)) then cands[#cands + 1] = m end
    last = m
  end
  local pos = 1
  while pos <= #cands do
    local chunk = {}
    for i = pos, math.min(pos + size - 1, #cands) do chunk[#chunk + 1] = cands[i] end
    local kept, full = keep(chunk)
    for _, m in ipairs(kept) do
      out[#out + 1] = m
      out[#out + 1] = '0'
    end
    if full then return out end
    pos = pos + #chunk
    size = math.min(size * 2, CHUNK_MAX)
  end
  return out
end
local desc = order == 'desc'
local key, lo, hi = src[1], src[2], src[3]
-- The walk goes by rank, which the script's atomicity keeps still: the
-- range's first and last ranks in the walk's order come from ZCOUNT
-- (O(log n)), each chunk is a ZRANGE by rank, and no score travels but
-- those of the items kept (ZMSCORE). A bound's complement: the scores
-- below `(x` are those up to `x`, and the reverse.
local function flip(b)
  if string.sub(b, 1, 1) == '(' then return string.sub(b, 2) end
  return '(' .. b
end
local pos
if desc then pos = redis.call('ZCOUNT', key, flip(hi), '+inf')
else pos = redis.call('ZCOUNT', key, '-inf', flip(lo)) end
local stop = pos + redis.call('ZCOUNT', key, lo, hi)
if resume then
  -- The rank just past the `after` item: its own, if it is still there
  -- with its score; else past every item before it in the walk's order.
  local after
  local s = redis.call('ZSCORE', key, rk)
  if s and num(s) == num(rs) then
    if desc then after = redis.call('ZREVRANK', key, rk)
    else after = redis.call('ZRANK', key, rk) end
    after = after + 1
  else
    if desc then after = redis.call('ZCOUNT', key, '(' .. rs, '+inf')
    else after = redis.call('ZCOUNT', key, '-inf', '(' .. rs) end
    for _, m in ipairs(redis.call('ZRANGE', key, rs, rs, 'BYSCORE')) do
      if (desc and less(rk, m)) or (not desc and less(m, rk)) then after = after + 1 end
    end
  end
  if after > pos then pos = after end
end
while pos < stop do
  local last = math.min(pos + size, stop) - 1
  local r
  if desc then r = redis.call('ZRANGE', key, pos, last, 'REV')
  else r = redis.call('ZRANGE', key, pos, last) end
  local kept, full = keep(r)
  if #kept > 0 then
    local scores = redis.call('ZMSCORE', key, unpack(kept))
    for i, m in ipairs(kept) do
      out[#out + 1] = m
      out[#out + 1] = scores[i]
    end
  end
  if full or #r == 0 then return out end
  pos = last + 1
  size = math.min(size * 2, CHUNK_MAX)
end
return out
";

static SCRIPT: LazyLock<Lua> =
    LazyLock::new(|| Lua::new(&WALK.replace("CHUNK_MAX", &CHUNK_MAX.to_string())));

/// The walk as the script; `None` if the server refuses scripts.
pub(super) async fn run(db: &Db, w: &Walk) -> Result<Option<Found>> {
    // The script reads its keys from ARGV; the first, declared, routes
    // it to the node of their slot on a cluster.
    let route: Option<&str> = w.keys().next();
    let mut call = SCRIPT.call(route.as_slice());
    let want = w.limit.map_or(0, |l| l.saturating_add(1));
    call.arg(want).arg(chunk(w.limit));
    call.arg(match w.order {
        Order::Key => "key",
        Order::Score { desc: false } => "asc",
        Order::Score { desc: true } => "desc",
    });
    match &w.after {
        Some(a) => call.arg("1").arg(score_text(a.score)).arg(&a.key),
        None => call.arg("0").arg("0").arg(""),
    };
    let (kind, args): (&str, Vec<String>) = match &w.source {
        Source::Holder(entry) => ("holder", vec![entry.clone()]),
        Source::Scores { key, bounds } => ("scores", scored(key, bounds)),
        Source::Sets { keys, all: true } => ("inter", keys.clone()),
        Source::Sets { keys, all: false } => ("union", keys.clone()),
        Source::List(key) => ("list", vec![key.clone()]),
    };
    call.arg(kind).arg(args.len()).arg(args);
    call.arg(w.tests.len());
    for test in &w.tests {
        let (kind, args): (&str, Vec<String>) = match test {
            Test::InSet { key, has } => ("in", vec![key.clone(), u8::from(*has).to_string()]),
            Test::InAnySet(keys) => ("any", keys.clone()),
            Test::Score { key, bounds } => ("score", scored(key, bounds)),
            Test::Holder(entry) => ("holder", vec![entry.clone()]),
            Test::InList(key) => ("list", vec![key.clone()]),
        };
        call.arg(kind).arg(args.len()).arg(args);
    }
    let Some(mut items) = call.invoke::<Vec<(String, f64)>>(db).await? else {
        return Ok(None);
    };
    let more = w.limit.is_some_and(|l| items.len() > l);
    if let Some(limit) = w.limit {
        items.truncate(limit);
    }
    Ok(Some(Found { items, more }))
}

/// A sorted set's key and a score range's two ends, as the script reads
/// them (ZRANGE's bounds).
fn scored(key: &str, bounds: &Bounds) -> Vec<String> {
    vec![
        key.to_string(),
        bound_arg(bounds.min, bounds.min_open),
        bound_arg(bounds.max, bounds.max_open),
    ]
}
