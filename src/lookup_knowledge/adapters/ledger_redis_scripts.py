"""The Lua scripts behind every ledger transition in Redis (docs/ledger.md#key-layout).

Each runs atomically on one node: its keys share the run's hash tag. Each answers a repeat of
its own caller's write as a success (same token, and for READY the same body), so the client's
single retry after a dropped connection or a timeout is harmless.
"""

from __future__ import annotations

# Keep the run index alive as long as its longest-lived entry; never shorten it.
TOUCH_INDEX = """
redis.call('ZADD', KEYS[2], 'NX', ARGV[#ARGV], ARGV[2])
local ttl = tonumber(ARGV[#ARGV - 1])
if redis.call('PTTL', KEYS[2]) < ttl then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
"""

# KEYS: entry, run index
# ARGV: run_id, tool_call_id, tool_name, token, query_sha256, created_at, ttl_ms, score
CLAIM = (
    """
local cur = redis.call('HMGET', KEYS[1], 'status', 'token')
if cur[1] == 'PENDING' and cur[2] == ARGV[4] then
  return false
end
if cur[1] and cur[1] ~= 'FAILED' then
  return redis.call('HGETALL', KEYS[1])
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'run_id', ARGV[1], 'tool_call_id', ARGV[2], 'tool_name', ARGV[3],
  'status', 'PENDING', 'token', ARGV[4], 'query_sha256', ARGV[5], 'created_at', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
"""
    + TOUCH_INDEX
    + """
return false
"""
)

# ARGV: run_id, tool_call_id, tool_name, token, query_sha256, created_at,
#       body, result_sha256, evidence_status, ttl_ms, score
COMPLETE = (
    """
local cur = redis.call('HMGET', KEYS[1], 'status', 'token', 'result_sha256', 'created_at')
if cur[1] == 'READY' then
  if cur[2] == ARGV[4] and cur[3] == ARGV[8] then return 1 end
  return 0
end
if cur[1] == 'PENDING' and cur[2] ~= ARGV[4] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'run_id', ARGV[1], 'tool_call_id', ARGV[2], 'tool_name', ARGV[3],
  'status', 'READY', 'token', ARGV[4], 'query_sha256', ARGV[5], 'created_at', cur[4] or ARGV[6],
  'body', ARGV[7], 'result_sha256', ARGV[8], 'evidence_status', ARGV[9])
redis.call('PEXPIRE', KEYS[1], ARGV[10])
"""
    + TOUCH_INDEX
    + """
return 1
"""
)

# ARGV: run_id, tool_call_id, tool_name, token, query_sha256, created_at, error, ttl_ms, score
FAIL = (
    """
local cur = redis.call('HMGET', KEYS[1], 'status', 'token', 'created_at')
if cur[1] == 'READY' then
  return 0
end
if cur[1] == 'PENDING' and cur[2] ~= ARGV[4] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'run_id', ARGV[1], 'tool_call_id', ARGV[2], 'tool_name', ARGV[3],
  'status', 'FAILED', 'token', ARGV[4], 'query_sha256', ARGV[5], 'created_at', cur[3] or ARGV[6],
  'error', ARGV[7])
redis.call('PEXPIRE', KEYS[1], ARGV[8])
"""
    + TOUCH_INDEX
    + """
return 1
"""
)


# KEYS: run index; ARGV: the cursor (a member, or ''), the page size.
# The members after the cursor, one more than a page (to tell whether more follow); nil when
# the cursor is not a member. Ranks never shift under a cursor: members are only ever added.
PAGE = """
local start = 0
if ARGV[1] ~= '' then
  local rank = redis.call('ZRANK', KEYS[1], ARGV[1])
  if not rank then return false end
  start = rank + 1
end
return redis.call('ZRANGE', KEYS[1], start, start + tonumber(ARGV[2]))
"""
