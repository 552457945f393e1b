/** The Lua scripts that make each Redis step of the key-value store atomic (kv/redis.ts). */

export const INCR_WITH_TTL = `
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return v`

/**
 * Hits on fixed windows, in order, each its own step: ARGV[1] holds "by windowMs reads" per hit,
 * space-separated (one argument for the whole command rather than three a hit: each argument is
 * a string and several more to write, per hit, on every request); KEYS holds each hit's counter
 * followed by its reads. Each hit answers
 * {count, ttl, 1, reads…}; {count, ttl, 0, error} when it was counted but a read failed (a key
 * of another type); {false, error} when it could not be counted. A failing hit fails alone
 * (pcall): the others in the command are answered as if it had not been there.
 *
 * Under load one command carries the hits of many requests, mostly on the same few counters
 * (a busy client's) with the same reads (its account's version tokens). Inside the script
 * nothing else runs, so a counter's TTL asked once holds for the command's later hits on it, and
 * a key read once holds until one of the command's own hits counts on it: each is asked of Redis
 * once a command, not once a hit (a command of eleven hits on one counter with three reads made
 * 66 calls, now 15). A new window's TTL is set after its first INCRBY, in the same atomic step,
 * where a SET NX before every INCRBY did it.
 */
export const HIT_WINDOWS = `
local function failed(reply)
  if type(reply) == 'table' and reply.err then return reply.err end
  return nil
end
local out = {}
local ttls = {}
local reads = {}
local k = 1
local h = 0
for by, windowMs, readCount in string.gmatch(ARGV[1], '(%-?%d+) (%d+) (%d+)') do
  h = h + 1
  local n = tonumber(readCount)
  if windowMs == '0' then
    -- No counter, only reads (getMany): MGET's answer, as a hit counting 0.
    local values = redis.call('MGET', unpack(KEYS, k, k + n - 1))
    local hit = {0, 0, 1}
    for i = 1, n do hit[i + 3] = values[i] end
    out[h] = hit
    k = k + n
  else
    local counter = KEYS[k]
    local count = redis.pcall('INCRBY', counter, by)
    local err = failed(count)
    if err then
      out[h] = {false, err}
    else
      -- Counted on: a read of it from here on asks Redis again.
      reads[counter] = nil
      local ttl = ttls[counter]
      if ttl == nil then
        ttl = redis.pcall('PTTL', counter)
        if ttl < 0 then
          -- A new window (or a counter left without a TTL): this hit starts it.
          redis.pcall('PEXPIRE', counter, windowMs)
          ttl = tonumber(windowMs)
        end
        ttls[counter] = ttl
      end
      local hit = {count, ttl, 1}
      for i = 1, n do
        local key = KEYS[k + i]
        -- A missing key reads as false: only nil means not read yet.
        local value = reads[key]
        if value == nil then
          value = redis.pcall('GET', key)
          reads[key] = value
        end
        local readErr = failed(value)
        if readErr then
          hit = {count, ttl, 0, readErr}
          break
        end
        hit[i + 3] = value
      end
      out[h] = hit
    end
    k = k + 1 + n
  end
end
return out`

export const DECR_IF_POSITIVE = `
local v = tonumber(redis.call('GET', KEYS[1]))
if v == nil or v <= 0 then return false end
return redis.call('DECR', KEYS[1])`
