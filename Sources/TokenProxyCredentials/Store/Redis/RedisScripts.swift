/// The Lua scripts the Redis store runs with `EVAL`: each runs atomically on the server, so
/// a check and the change it guards cannot be split by another client.
enum RedisScripts {
    /// Compare-and-set of hash fields. `KEYS[1]` is the hash, `KEYS[2]` the revision counter;
    /// `ARGV` holds triples (field, value expected now, new value), an empty string meaning
    /// "absent" (a sealed value is never empty). Writes every new value only when every field
    /// still holds what the writer read, then counts a revision. Returns the new revision, or
    /// 0 when another writer came first (the writer reads again and retries).
    static let compareAndSet = """
        for i = 1, #ARGV, 3 do
          local current = redis.call('HGET', KEYS[1], ARGV[i])
          if current == false then current = '' end
          if current ~= ARGV[i + 1] then return 0 end
        end
        for i = 1, #ARGV, 3 do
          if ARGV[i + 2] == '' then
            redis.call('HDEL', KEYS[1], ARGV[i])
          else
            redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2])
          end
        end
        return redis.call('INCR', KEYS[2])
        """

    /// Extends a lease (`KEYS[1]`) to `ARGV[2]` milliseconds only while it holds the holder's
    /// fencing value `ARGV[1]`. Returns 1 when extended, 0 when the lease is gone or another's.
    static let renewLease = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          return redis.call('PEXPIRE', KEYS[1], ARGV[2])
        end
        return 0
        """

    /// Deletes a lease (`KEYS[1]`) only while it holds the fencing value `ARGV[1]`: a holder
    /// whose lease expired never deletes the next holder's.
    static let releaseLease = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          return redis.call('DEL', KEYS[1])
        end
        return 0
        """
}
