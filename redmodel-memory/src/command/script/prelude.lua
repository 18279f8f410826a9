-- Builds the `redis` and `cjson` libraries and the sandbox of user
-- scripts, as Redis 7.0 does in script_lua.c and eval.c. Runs once per Lua
-- state, with the Rust primitives as arguments; returns the environment
-- user scripts run in.
local call, pcall, sha1hex, log, raw_encode, raw_decode, json_null, set_resp,
  register_function, libs, guarded_setmetatable, guarded_loadstring,
  acl_check_cmd, redis_version, redis_version_num, protected_access = ...
local G = _G
local error, type, select, setmetatable, tostring =
    error, type, select, setmetatable, tostring

local function refuse() error('Attempt to modify a readonly table', 2) end
-- What getmetatable gives for a protected table: a table that refuses
-- writes, so that a script changing it gets Redis's error.
local locked = setmetatable({}, {__newindex = refuse, __metatable = false})
-- The protected tables: setmetatable refuses them with Redis's error.
-- Each maps to the table it stands for, which `pairs` and `next` walk (a
-- proxy holds nothing itself; Redis's read-only tables hold their
-- entries), or to `true`.
local protected = setmetatable({}, {__mode = 'k'})
local function readonly(t)
  local proxy = setmetatable({}, {
    __index = t,
    __newindex = refuse,
    __metatable = locked,
  })
  protected[proxy] = t
  return proxy
end

local redis = {}
-- redis.call, pcall, sha1hex and log are C functions as in Redis: a Lua
-- wrapper called in tail position would hide the line of the caller from
-- errors.
redis.call = call
redis.pcall = pcall
redis.sha1hex = sha1hex
redis.acl_check_cmd = acl_check_cmd
local function one_string(n, v)
  return n == 1 and type(v) == 'string'
end
redis.error_reply = function(...)
  local e = ...
  if not one_string(select('#', ...), e) then
    return {err = 'ERR wrong number or type of arguments'}
  end
  e = tostring(e)
  if e:sub(1, 1) == '-' then e = e:sub(2) end
  -- As Redis: a message without a code (no space) gets ERR's.
  if not e:find(' ', 1, true) then e = 'ERR ' .. e end
  return {err = (e:gsub('[\r\n]+$', ''))}
end
redis.status_reply = function(...)
  local s = ...
  if not one_string(select('#', ...), s) then
    return {err = 'ERR wrong number or type of arguments'}
  end
  return {ok = tostring(s)}
end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.log = log
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.set_repl = function() end
-- EVAL's state only (a function's `redis` has none of these): the
-- debugger's calls, outside a debugging session (which the engine has
-- not: breakpoint says none was hit, debug logs nothing), and
-- replicate_commands.
local eval = register_function == nil
if eval then
  redis.breakpoint = function() return false end
  redis.debug = function() end
  redis.replicate_commands = function() return true end
end
redis.setresp = set_resp
redis.acl_check_cmd = acl_check_cmd
redis.REDIS_VERSION = redis_version
redis.REDIS_VERSION_NUM = redis_version_num

-- A lua-cjson module: its own settings, which scripts may change
-- (`cjson.new` makes another, as lua-cjson's does).
local function new_cjson()
  local cjson = {_NAME = 'cjson', _VERSION = '2.1.0'}
  -- lua-cjson's settings (Redis's scripts may change them).
  local encode_max_depth, decode_max_depth, encode_invalid_numbers = 1000, 1000, false
  local function depth_setting(name, current, v)
    if v == nil then return current end
    v = G.tonumber(v)
    if v == nil or v < 1 or v > 2147483647 or v % 1 ~= 0 then
      error("bad argument #1 to '" .. name .. "' (expected integer between 1 and 2147483647)", 3)
    end
    return v
  end
  cjson.encode_max_depth = function(v)
    encode_max_depth = depth_setting('encode_max_depth', encode_max_depth, v)
    return encode_max_depth
  end
  cjson.decode_max_depth = function(v)
    decode_max_depth = depth_setting('decode_max_depth', decode_max_depth, v)
    return decode_max_depth
  end
  cjson.encode_invalid_numbers = function(v)
    if v ~= nil then encode_invalid_numbers = v and v ~= 'off' end
    return encode_invalid_numbers
  end
  -- Settings without effect here: the buffer is never kept, numbers are
  -- read as lua-cjson's defaults read them.
  cjson.encode_keep_buffer = function(v) if v == nil then return true end return v end
  cjson.decode_invalid_numbers = function(v) if v == nil then return true end return v end
  cjson.encode_number_precision = function(v) return v or 14 end
  cjson.encode_sparse_array = function() return false, 2, 10 end
  cjson.encode = function(...)
    if select('#', ...) ~= 1 then error('bad argument #1 to \'encode\' (expected 1 argument)', 2) end
    local s, e = raw_encode(..., encode_max_depth, encode_invalid_numbers)
    if s == nil then error(e, 2) end
    return s
  end
  cjson.decode = function(...)
    if select('#', ...) ~= 1 then error('bad argument #1 to \'decode\' (expected 1 argument)', 2) end
    local ok, v = raw_decode(..., decode_max_depth)
    if not ok then error(v, 2) end
    return v
  end
  cjson.null = json_null
  cjson.new = new_cjson
  return cjson
end
local cjson = new_cjson()

G.redis = readonly(redis)
G.cjson = readonly(cjson)
-- The libraries Redis embeds besides cjson (see libs.rs).
for name, lib in G.pairs(libs) do
  G[name] = readonly(lib)
end
-- Lua's own libraries are read-only too, as Redis makes every table of
-- the globals.
for _, name in G.ipairs({'string', 'math', 'table', 'coroutine'}) do
  G[name] = readonly(G[name])
end
-- A string's methods come from that same (read-only) `string`, and its
-- metatable is read-only too (what getmetatable gives for a string).
G.getmetatable('').__index = G.string
local string_meta = readonly(G.getmetatable(''))
-- Redis 7.0 loads no os, io, package or debug library and removes these;
-- 7.2 and later keep getfenv, setfenv and newproxy.
G.print, G.dofile, G.loadfile = nil, nil, nil
if redis_version_num < 0x070200 then
  G.getfenv, G.setfenv, G.newproxy = nil, nil, nil
end
-- The error handler Redis defines for EVAL's scripts, a global a script
-- can call: an error as Redis's error table.
if eval then
  G.__redis__err__handler = function(err)
    if type(err) ~= 'table' then
      err = {err = 'ERR ' .. tostring(err)}
    end
    return err
  end
end

-- A script reads globals through `env`, which finds them in G by a plain
-- table lookup (a Lua function per global read cost more than the commands
-- of a small script); a name G lacks reaches G's own __index, the error.
setmetatable(G, {
  __index = function(_, k)
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
  end,
})
local env = setmetatable({}, {
  __index = G,
  __newindex = refuse,
  __metatable = locked,
})
protected[env] = G
G._G = env
local raw_setmetatable = setmetatable
-- setmetatable refusing protected tables, and loadstring refusing binary
-- chunks, are Rust functions (see sandbox.rs): a Lua wrapper called in
-- tail position would hide the caller's line from errors.
G.setmetatable = guarded_setmetatable(protected)
-- pairs, next and the raw accessors see the tables behind the proxies,
-- as Redis's read-only tables are seen (see sandbox.rs).
G.pairs, G.next, G.rawget, G.rawset, G.getmetatable =
  protected_access(protected, env, string_meta, G.next, G.rawget, G.rawset, G.getmetatable)
G.loadstring = guarded_loadstring(G.loadstring)

-- Functions (FCALL) get KEYS and ARGV as arguments, and Lua 5.1's xpcall
-- passes none.
local xpcall = G.xpcall
local function call_with(f, handler, keys, argv)
  return xpcall(function() return f(keys, argv) end, handler)
end

if register_function == nil then
  return env, nil, nil, nil, call_with
end

-- A function library is loaded with nothing but the library API in
-- sight: `redis` with register_function, log and the version; any other
-- name, in it or global, is an error (Redis's error metatable), and
-- nothing can be assigned.
local function strict(t, what)
  return setmetatable({}, {
    __index = function(_, k)
      local v = t[k]
      if v == nil then
        error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
      end
      return v
    end,
    __newindex = function() error('Attempt to modify a readonly table', 2) end,
    __metatable = false,
  })
end
local api = {
  register_function = register_function,
  log = log,
  LOG_DEBUG = redis.LOG_DEBUG, LOG_VERBOSE = redis.LOG_VERBOSE,
  LOG_NOTICE = redis.LOG_NOTICE, LOG_WARNING = redis.LOG_WARNING,
  REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM,
}
local load_api = strict({redis = strict(api)})
-- Libraries' environment: reads go to `env` when their functions run
-- and to `load_api` while the library loads (the Rust side swaps
-- `__index`); writes always fail.
local library_mt = {
  __index = env,
  __newindex = refuse,
  __metatable = locked,
}
local library_env = raw_setmetatable({}, library_mt)
protected[library_env] = true
return env, load_api, library_env, library_mt, call_with
