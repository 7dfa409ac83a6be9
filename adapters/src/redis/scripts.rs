//! The Lua scripts the transport runs: publishing (until a topic is seen served), settling an
//! entry a publish added to a stream nobody may read, joining a group (lease), leaving it.
//!
//! The live key (`P` + `live:` + `T`) mirrors the members set: it exists exactly while a member's
//! lease runs (it expires at the latest lease's end, `PXAT`), and holds the number of groups
//! with a live member when it was last written. Every script that changes or reads the set
//! writes it again (`mark_live`), so a publisher can tell that a topic is served with a plain
//! `GET` sent with its `XADD`, without a script (see `publish.rs`).

use redis::Script;
use std::sync::LazyLock;

/// `mark_live(members, live, now)`: prunes nothing; counts the groups with a live member of the
/// members set, writes the live key (the count, expiring at the latest lease's end) or deletes
/// it when no member is live, and returns the count. Pasted in front of the scripts that use
/// it (Redis scripts cannot share functions).
const MARK_LIVE: &str = r"
local function mark_live(members_key, live_key, now)
  local live = redis.call('ZRANGE', members_key, '(' .. now, '+inf', 'BYSCORE', 'WITHSCORES')
  if #live == 0 then
    redis.call('DEL', live_key)
    return 0
  end
  local groups = {}
  local count = 0
  local last = 0
  for i = 1, #live, 2 do
    local member = live[i]
    local colon = string.find(member, ':', 1, true)
    local group = colon and string.sub(member, colon + 1) or member
    if not groups[group] then
      groups[group] = true
      count = count + 1
    end
    local ends = tonumber(live[i + 1])
    if ends > last then last = ends end
  end
  redis.call('SET', live_key, count, 'PXAT', string.format('%d', last))
  return count
end
local function redis_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
";

/// `PUBLISH` (`SPUBLISH` on a cluster) to the channel, then `XADD` to the stream when the topic
/// has a live group member, writing the live key as it finds the members set. The live key is
/// written first: a script's commands are not undone when a later one fails, and a replica
/// (a master demoted by a failover) runs `PUBLISH` but refuses writes, so a write after the
/// `PUBLISH` would report a refusal (nothing ran) for a message subscribers received. Returns
/// `{receivers, groups, now}`: the number of receivers (channel subscribers + groups with a
/// live member), the groups alone, and Redis' clock (ms). What a publisher runs until it knows
/// the topic is served; then plain commands do the same work (`publish.rs`).
///
/// KEYS: stream, members, channel, live (declared so that a cluster checks their slot too).
/// ARGV: payload, retention ms.
pub(super) static PUBLISH_SCRIPT: LazyLock<Script> = LazyLock::new(|| publish_script("PUBLISH"));

/// [`PUBLISH_SCRIPT`] with sharded pub/sub, for a cluster.
pub(super) static SPUBLISH_SCRIPT: LazyLock<Script> = LazyLock::new(|| publish_script("SPUBLISH"));

fn publish_script(command: &str) -> Script {
    Script::new(&format!(
        "{MARK_LIVE}{}",
        PUBLISH_SOURCE.replace("PUBLISH_COMMAND", command)
    ))
}

const PUBLISH_SOURCE: &str = r"
local now = redis_now()
local groups = mark_live(KEYS[2], KEYS[4], now)
local receivers = redis.call('PUBLISH_COMMAND', KEYS[3], ARGV[1])
if groups > 0 then
  local minid = now - ARGV[2]
  if minid < 0 then minid = 0 end
  redis.call('XADD', KEYS[1], 'MINID', '~', minid, '*', 'p', ARGV[1])
end
return {receivers + groups, groups, now}
";

/// Settles an entry a publisher added to a stream with the commands that found the topic's
/// live key gone (see `publish.rs`), as the publish script would have: when a member is live
/// after all (the key was missing, not the members: written by something that does not keep
/// it), the key is written again and the entry stays; else the entry is deleted unless a
/// group has been handed it already, and the stream with it when the stream is left empty and
/// without groups (the `XADD` made it). Returns `{groups, now}`: the groups the entry reached
/// (0 when it was taken back unread, so nobody can run it) and Redis' clock (ms).
///
/// KEYS: stream, members, live. ARGV: the entry's id.
pub(super) static SETTLE_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{MARK_LIVE}{}",
        r"
local now = redis_now()
local groups = mark_live(KEYS[2], KEYS[3], now)
if groups > 0 then
  return {groups, now}
end
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local function before(a, b)
  local am, as = parse(a)
  local bm, bs = parse(b)
  return am < bm or (am == bm and as < bs)
end
local info = redis.pcall('XINFO', 'GROUPS', KEYS[1])
if type(info) == 'table' and info.err then
  return {0, now}
end
for _, group in ipairs(info) do
  for i = 1, #group, 2 do
    if group[i] == 'last-delivered-id' and not before(group[i + 1], ARGV[1]) then
      return {1, now}
    end
  end
end
redis.call('XDEL', KEYS[1], ARGV[1])
if #info == 0 and redis.call('XLEN', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[1])
end
return {0, now}
"
    ))
});

/// Creates the group if needed (at `$`: it receives what is added from now on), prunes expired
/// leases and takes or renews a member's lease; keeps the stream and the members set from
/// outliving their members; writes the live key.
///
/// KEYS: stream, members, live. ARGV: group, member, lease ms, stream ttl ms.
pub(super) static JOIN_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{MARK_LIVE}{}",
        r"
local created = redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], '$', 'MKSTREAM')
if type(created) == 'table' and created.err and not string.find(created.err, 'BUSYGROUP') then
  return redis.error_reply(created.err)
end
local now = redis_now()
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[3]) * 2)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
mark_live(KEYS[2], KEYS[3], now)
return 1
"
    ))
});

/// Gives a member's lease back and deletes its consumer; writes the live key (deleting it when
/// this was the last live member: publishers stop adding to the stream at once).
///
/// KEYS: stream, members, live. ARGV: group, member, consumer.
pub(super) static LEAVE_SCRIPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        "{MARK_LIVE}{}",
        r"
redis.call('ZREM', KEYS[2], ARGV[2])
redis.pcall('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[3])
mark_live(KEYS[2], KEYS[3], redis_now())
return 1
"
    ))
});

/// The settle script's answers, each branch against a real `redis-server`.
#[cfg(test)]
mod tests {
    use super::SETTLE_SCRIPT;
    use redis::AsyncCommands;
    use redis::aio::MultiplexedConnection;

    const STREAM: &str = "s";
    const MEMBERS: &str = "m";
    const LIVE: &str = "l";

    async fn settle(conn: &mut MultiplexedConnection, id: &str) -> i64 {
        let (groups, _now): (i64, i64) = SETTLE_SCRIPT
            .key(STREAM)
            .key(MEMBERS)
            .key(LIVE)
            .arg(id)
            .invoke_async(conn)
            .await
            .unwrap();
        groups
    }

    async fn add(conn: &mut MultiplexedConnection) -> String {
        conn.xadd(STREAM, "*", &[("p", "x")]).await.unwrap()
    }

    #[tokio::test]
    async fn an_entry_is_taken_back_only_when_no_member_is_live_and_no_group_read_it() {
        let server = opkit_testkit::redis::RedisServer::start();
        let client = redis::Client::open(server.url()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();

        // No group at all (the entry made the stream): the entry and the stream go.
        let id = add(&mut conn).await;
        assert_eq!(settle(&mut conn, &id).await, 0);
        let exists: bool = conn.exists(STREAM).await.unwrap();
        assert!(!exists, "the stream the XADD made is deleted");

        // A group that has not read it, no member: the entry goes, the stream stays.
        let _: () = conn
            .xgroup_create_mkstream(STREAM, "workers", "$")
            .await
            .unwrap();
        let id = add(&mut conn).await;
        assert_eq!(settle(&mut conn, &id).await, 0);
        let length: usize = conn.xlen(STREAM).await.unwrap();
        assert_eq!(length, 0);
        let exists: bool = conn.exists(STREAM).await.unwrap();
        assert!(exists, "a stream with a group stays");

        // A group was handed it (its last delivered id is the entry's): it stays, counted.
        let id = add(&mut conn).await;
        let _: redis::Value = redis::cmd("XREADGROUP")
            .arg(&[
                "GROUP", "workers", "c1", "COUNT", "1", "STREAMS", STREAM, ">",
            ])
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(settle(&mut conn, &id).await, 1);
        let length: usize = conn.xlen(STREAM).await.unwrap();
        assert_eq!(length, 1);

        // A member is live though the live key was missing: the entry stays for it, and the
        // key is written again, expiring with the member's lease.
        let lease_end = 4_102_444_800_000_i64; // 2100-01-01
        let _: () = conn.zadd(MEMBERS, "c2:workers", lease_end).await.unwrap();
        let id = add(&mut conn).await;
        assert_eq!(settle(&mut conn, &id).await, 1);
        let length: usize = conn.xlen(STREAM).await.unwrap();
        assert_eq!(length, 2);
        let groups: i64 = conn.get(LIVE).await.unwrap();
        assert_eq!(groups, 1);
        let expires: i64 = redis::cmd("PEXPIRETIME")
            .arg(LIVE)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(expires, lease_end);
    }
}
