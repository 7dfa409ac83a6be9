//! The Lua scripts the transport runs: publishing, joining a group (lease), leaving it.

use redis::Script;
use std::sync::LazyLock;

/// `PUBLISH` (`SPUBLISH` on a cluster) to the channel, then `XADD` to the stream when the topic
/// has a live group member. Returns the number of receivers: channel subscribers + groups with
/// a live member. Four commands (each `redis.call` costs about a microsecond of Redis' time
/// beside the command's own): the topics that never have groups (replies, aborts) do not run
/// it at all, and those that may always read their members set.
///
/// KEYS: stream, members, channel (declared so that a cluster checks its slot too).
/// ARGV: payload, retention ms.
pub(super) static PUBLISH_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&PUBLISH_SOURCE.replace("PUBLISH_COMMAND", "PUBLISH")));

/// [`PUBLISH_SCRIPT`] with sharded pub/sub, for a cluster.
pub(super) static SPUBLISH_SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(&PUBLISH_SOURCE.replace("PUBLISH_COMMAND", "SPUBLISH")));

const PUBLISH_SOURCE: &str = r"
local receivers = redis.call('PUBLISH_COMMAND', KEYS[3], ARGV[1])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
-- Live members only (expired ones are pruned when leases are taken or renewed); none when
-- the set does not exist.
local members = redis.call('ZRANGE', KEYS[2], '(' .. now, '+inf', 'BYSCORE')
if #members > 0 then
  local count = 1
  if #members > 1 then
    local groups = {}
    count = 0
    for _, member in ipairs(members) do
      local colon = string.find(member, ':', 1, true)
      local group = colon and string.sub(member, colon + 1) or member
      if not groups[group] then
        groups[group] = true
        count = count + 1
      end
    end
  end
  local minid = now - ARGV[2]
  if minid < 0 then minid = 0 end
  redis.call('XADD', KEYS[1], 'MINID', '~', minid, '*', 'p', ARGV[1])
  receivers = receivers + count
end
return receivers
";

/// Creates the group if needed (at `$`: it receives what is added from now on), prunes expired
/// leases and takes or renews a member's lease; keeps the stream and the members set from
/// outliving their members.
///
/// KEYS: stream, members. ARGV: group, member, lease ms, stream ttl ms.
pub(super) static JOIN_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local created = redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], '$', 'MKSTREAM')
if type(created) == 'table' and created.err and not string.find(created.err, 'BUSYGROUP') then
  return redis.error_reply(created.err)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[3]) * 2)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
return 1
",
    )
});

/// Gives a member's lease back and deletes its consumer.
///
/// KEYS: stream, members. ARGV: group, member, consumer.
pub(super) static LEAVE_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
redis.call('ZREM', KEYS[2], ARGV[2])
redis.pcall('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[3])
return 1
",
    )
});
