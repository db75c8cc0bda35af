/// The Lua scripts the Redis store runs with `EVAL`: each runs atomically on the server, so
/// a check and the change it guards cannot be split by another client.
enum RedisScripts {
    /// Compare-and-set of hash fields. `KEYS[1]` is the hash; `KEYS[2...]` are leases the
    /// writer holds, `ARGV[2...]` their fencing values in the same order. `ARGV[1]` is an
    /// epoch for a hash that has none yet. After the fences come, for each field: its name,
    /// the value expected now, the generation counter expected now (`generation:FIELD`), the
    /// new generation, and the new value; an empty string means "absent" (a sealed value is
    /// never empty).
    ///
    /// Returns -1, writing nothing, when a lease no longer holds the writer's fence (it
    /// expired or another proxy took it); 0 when a field or its counter no longer holds what
    /// the writer read (another writer came first: read again and retry). Otherwise writes
    /// every new value and generation (a deleted field keeps its counter), gives the hash its
    /// epoch if it has none (a hash created anew, after a restart or an eviction, gets a new
    /// one), and returns the hash's new revision counter and its epoch.
    static let compareAndSet = """
        for k = 2, #KEYS do
          if redis.call('GET', KEYS[k]) ~= ARGV[k] then return -1 end
        end
        local first = #KEYS + 1
        for i = first, #ARGV, 5 do
          local current = redis.call('HGET', KEYS[1], ARGV[i])
          if current == false then current = '' end
          if current ~= ARGV[i + 1] then return 0 end
          local generation = redis.call('HGET', KEYS[1], 'generation:' .. ARGV[i])
          if generation == false then generation = '' end
          if generation ~= ARGV[i + 2] then return 0 end
        end
        if redis.call('HEXISTS', KEYS[1], 'epoch') == 0 then
          redis.call('HSET', KEYS[1], 'epoch', ARGV[1])
        end
        for i = first, #ARGV, 5 do
          redis.call('HSET', KEYS[1], 'generation:' .. ARGV[i], ARGV[i + 3])
          if ARGV[i + 4] == '' then
            redis.call('HDEL', KEYS[1], ARGV[i])
          else
            redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 4])
          end
        end
        return {redis.call('HINCRBY', KEYS[1], 'revision', 1), redis.call('HGET', KEYS[1], 'epoch')}
        """

    /// Takes a lease (`KEYS[1]`) for the fencing value `ARGV[1]` for `ARGV[2]` milliseconds
    /// when nobody holds it (`SET NX PX`). Returns 1 when taken; 0 when another holds it
    /// with at most that lifetime left; 2 when the key held was stale, with no expiry or a
    /// longer one than a lease can have (written by hand or by a tool, or its TTL dropped):
    /// its expiry is then cut to one lifetime, so it is taken over within that and no
    /// writer can block a provider for longer. A holder that is alive keeps it by renewing.
    /// Returns 3, changing nothing, when the key holds another type than a string: not a lease,
    /// and not this store's to expire.
    static let acquireLease = """
        if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
        if redis.call('TYPE', KEYS[1]).ok ~= 'string' then return 3 end
        local ttl = redis.call('PTTL', KEYS[1])
        if ttl == -1 or ttl > tonumber(ARGV[2]) then
          redis.call('PEXPIRE', KEYS[1], ARGV[2])
          return 2
        end
        if ttl == -2 then
          if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
        end
        return 0
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
