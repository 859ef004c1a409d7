-- mxl:1
-- mxlimit's shared GCRA buckets: one atomic step over every bucket of one
-- request. The protocol is docs/shared-state.md, "Protocol mxl:1";
-- src/shared/store_ops.h is its reference in C++, and
-- tests/shared/redis_store_test.cc holds this script to it op by op.
--
-- KEYS[i]           bucket i, i = 1..N
-- ARGV[1]           op: check | peek | charge | sync
-- ARGV[2]           cost: an integer; negative (a refund) only for charge
-- ARGV[3], ARGV[4]  now: seconds and nanoseconds (0..999999999) of the
--                   caller's clock, or both empty for the server's (TIME)
-- ARGV[2+3i..4+3i]  bucket i: T (emission interval, ns), burst, and mode:
--                   1 enforcing (denies when it has no room); 0 shadow
--                   (never denies; charged only when every shadow bucket
--                   has room, all or nothing like the enforcing ones); 2
--                   observed (a shadow bucket of a request already
--                   shadow-denied elsewhere: answered, never charged);
--                   optionally followed by /Q (not for sync): the bucket
--                   keeps its lead up to tau + Q ns (0 <= Q < 2^40), the
--                   queue of late admissions of an on_limit: delay policy
-- ARGV[5+3N]        optional, not for sync: at, in ns (0 <= at < 2^40):
--                   the op applies as of now + at (a request admitted
--                   late is read and charged as if it arrived then); the
--                   TTL of what it writes still counts from now
--
-- A key holds its bucket's TAT in integer nanoseconds, in decimal (Redis
-- then stores it as a machine integer, the smallest value it has). An
-- absent key is a full
-- bucket, and every write sets PX so that the key goes exactly when its
-- bucket is full again: nothing to scan, nothing to clean up.
--
-- Reply: {allowed, lead_1, ..., lead_N}, each lead (TAT - now, before the
-- op) clamped to [0, tau + Q], tau = burst * T. For sync: {1, lead after_1, ...}:
-- sync (approximate sharing) adds each charge to the TAT and keeps debt, a
-- lead past tau up to DEBT_TAUS + 1 taus, never pulled back.
--
-- Exactness: Lua numbers are doubles, exact below 2^53. Absolute times in ns
-- (about 1.7e18) are not, so times stay (sec, nsec) pairs and only
-- differences become numbers: leads, which the caller keeps below 2^53 by
-- never sending a tau of 2^53 ns or more.

-- Writes after TIME need effects replication before Redis 5; a no-op since.
if redis.replicate_commands then redis.replicate_commands() end

local E9 = 1000000000
-- How many taus of debt a synced bucket may carry beyond tau (store.h's
-- kDebtTaus).
local DEBT_TAUS = 16

-- q, r with a = q * b + r and 0 <= r < b, exactly: the float division may
-- round q up or down by one next to a multiple of b.
local function divmod(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then
    q, r = q - 1, r + b
  elseif r >= b then
    q, r = q + 1, r - b
  end
  return q, r
end

local op = ARGV[1]
local cost = tonumber(ARGV[2])
local now_s, now_ns
if ARGV[3] == '' and ARGV[4] == '' then
  local t = redis.call('TIME')
  now_s, now_ns = tonumber(t[1]), tonumber(t[2]) * 1000
else
  now_s, now_ns = tonumber(ARGV[3]), tonumber(ARGV[4])
end
local at = 0
if #ARGV == 5 + 3 * #KEYS and op ~= 'sync' then
  at = tonumber(ARGV[#ARGV])
  if at == nil or at < 0 or at >= 2 ^ 40 or at ~= math.floor(at) then
    return redis.error_reply('ERR mxl:1 bad arguments')
  end
elseif #ARGV ~= 4 + 3 * #KEYS then
  return redis.error_reply('ERR mxl:1 bad arguments')
end
if (op ~= 'check' and op ~= 'peek' and op ~= 'charge' and op ~= 'sync') or
    cost == nil or now_s == nil or now_ns == nil then
  return redis.error_reply('ERR mxl:1 bad arguments')
end
-- Late: every lead below is measured from now + at.
if at > 0 then
  local s
  s, now_ns = divmod(now_ns + at, E9)
  now_s = now_s + s
end

local n = #KEYS
local T, burst, tau, raw, lead, mode, cap = {}, {}, {}, {}, {}, {}, {}
local allowed = 1
-- Whether every shadow bucket has room: only then are they charged.
local shadow_room = true
-- Every key is read before any is written, as store_ops.h does.
for i = 1, n do
  local a = 2 + 3 * i
  T[i], burst[i] = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  tau[i] = burst[i] * T[i]
  local v = redis.call('GET', KEYS[i])
  -- Split into seconds and nanoseconds as text: the whole number is too
  -- large for a Lua number to hold exactly.
  local s, ns
  if v and string.find(v, '^%d+$') then
    if #v > 9 then
      s, ns = string.sub(v, 1, #v - 9), string.sub(v, #v - 8)
    else
      s, ns = '0', v
    end
  end
  -- A value in another format is treated as absent (a full bucket) and
  -- overwritten by the next write: self-healing rather than stuck.
  if s then
    raw[i] = (tonumber(s) - now_s) * E9 + (tonumber(ns) - now_ns)
  else
    raw[i] = 0
  end
  mode[i] = ARGV[a + 2]
  cap[i] = tau[i]
  if op ~= 'sync' then
    local m, q = string.match(mode[i], '^(%d)/(%d+)$')
    if m then
      q = tonumber(q)
      if q >= 2 ^ 40 then
        return redis.error_reply('ERR mxl:1 bad arguments')
      end
      mode[i], cap[i] = m, tau[i] + q
    end
  end
  lead[i] = math.min(math.max(raw[i], 0), cap[i])
  if (op == 'check' or op == 'peek') and lead[i] + cost * T[i] > tau[i] then
    if mode[i] == '1' then
      allowed = 0
    elseif mode[i] ~= '2' then
      shadow_room = false
    end
  end
end

-- Sets bucket i's TAT to now + after (after: its lead after the op, ns) with
-- PX floor((at + after) / 1 ms) + 1 (the TTL counts from the real now); a
-- TAT not after the real now is a full bucket: DEL.
-- KEYS[i] goes straight into redis.call: cluster proxies reject scripts that
-- compute key names.
local function store(i, after)
  if after + at <= 0 then
    redis.call('DEL', KEYS[i])
    return
  end
  local s, ns = divmod(after, E9)
  s, ns = now_s + s, now_ns + ns
  if ns >= E9 then s, ns = s + 1, ns - E9 end
  local ms = divmod(after + at, 1000000)
  local tat = s > 0 and string.format('%d%09d', s, ns) or
                string.format('%d', ns)
  redis.call('SET', KEYS[i], tat, 'PX', string.format('%d', ms + 1))
end

if op == 'sync' then
  -- Approximate sharing: add each process's charges, keep the debt.
  local reply = {1}
  for i = 1, n do
    local after = math.max(raw[i], 0) + tonumber(ARGV[4 + 3 * i])
    after = math.min(math.max(after, 0), (1 + DEBT_TAUS) * tau[i])
    store(i, after)
    reply[i + 1] = after
  end
  return reply
end

if op ~= 'peek' then
  for i = 1, n do
    if op == 'charge' then
      -- Drained by the cost, refunded by a negative one, within
      -- [full, empty] (empty: tau plus the queue); no decision.
      local c = math.min(math.max(cost, -burst[i]), burst[i])
      store(i, math.min(math.max(lead[i] + c * T[i], 0), cap[i]))
    elseif allowed == 1 and (mode[i] == '1' or
                             (mode[i] ~= '2' and shadow_room)) then
      store(i, lead[i] + cost * T[i])
    elseif raw[i] > cap[i] then
      -- The clock stepped back: persist the pull-back to now + tau (+ Q).
      store(i, cap[i])
    end
  end
end

local reply = {allowed}
for i = 1, n do reply[i + 1] = lead[i] end
return reply
