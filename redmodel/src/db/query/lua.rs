//! The walk of a query page as one Lua script, for a server in the plain
//! layout: the page's keys in one round trip, whatever the tests reject.
//!
//! `ARGV`: how many items to find (0: all), the chunk size, the order
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

use super::walk::{bound_arg, chunk, score_text, Found};
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
local function within(s, lo, hi)
  local a, ao = bound(lo)
  local b, bo = bound(hi)
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
local function passes(m)
  for _, t in ipairs(tests) do
    local k, a = t[1], t[2]
    if k == 'in' then
      if (redis.call('SISMEMBER', a[1], m) == 1) ~= (a[2] == '1') then return false end
    elseif k == 'any' then
      local found = false
      for _, set in ipairs(a) do
        if redis.call('SISMEMBER', set, m) == 1 then found = true break end
      end
      if not found then return false end
    elseif k == 'score' then
      local s = redis.call('ZSCORE', a[1], m)
      if not s or not within(num(s), a[2], a[3]) then return false end
    elseif k == 'holder' then
      if redis.call('LINDEX', a[1], 0) ~= m then return false end
    elseif k == 'list' then
      if not redis.call('LPOS', a[1], m) then return false end
    end
  end
  return redis.call('EXISTS', m) == 1
end
local out, count = {}, 0
local function push(m, s)
  out[#out + 1] = m
  out[#out + 1] = s
  count = count + 1
  return want > 0 and count >= want
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
  local last
  for _, m in ipairs(keys) do
    if m ~= last and (not resume or less(rk, m)) and passes(m) then
      if push(m, '0') then break end
    end
    last = m
  end
  return out
end
local desc = order == 'desc'
local key, lo, hi = src[1], src[2], src[3]
local rsn = num(rs)
-- The walk goes down (or up) the sorted set a chunk at a time: each next
-- chunk starts at the last score read, past the items of that score read
-- already (`offset`), so a run of equal scores costs no re-reading.
local lo2, hi2 = lo, hi
local at = nil
if resume then
  if desc then
    local b, bo = bound(hi)
    if rsn < b or (rsn == b and not bo) then hi2, at = rs, rs end
  else
    local a, ao = bound(lo)
    if rsn > a or (rsn == a and not ao) then lo2, at = rs, rs end
  end
end
local offset = 0
while true do
  local r
  if desc then
    r = redis.call('ZRANGE', key, hi2, lo2, 'BYSCORE', 'REV', 'LIMIT', offset, size, 'WITHSCORES')
  else
    r = redis.call('ZRANGE', key, lo2, hi2, 'BYSCORE', 'LIMIT', offset, size, 'WITHSCORES')
  end
  for i = 1, #r, 2 do
    local m, st = r[i], r[i + 1]
    local ok = true
    if resume then
      local s = num(st)
      if desc then ok = s < rsn or (s == rsn and less(m, rk))
      else ok = s > rsn or (s == rsn and less(rk, m)) end
    end
    if ok and passes(m) and push(m, st) then return out end
  end
  if #r / 2 < size then return out end
  local last, ties = r[#r], 0
  for i = #r, 2, -2 do
    if r[i] ~= last then break end
    ties = ties + 1
  end
  if last == at then offset = offset + ties else offset = ties end
  at = last
  if desc then hi2 = last else lo2 = last end
end
";

static SCRIPT: LazyLock<Lua> = LazyLock::new(|| Lua::new(WALK));

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
