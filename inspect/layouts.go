package inspect

// LayoutInfo is what lockctl knows of one library's lock layout, as
// docs/layouts.md's table shows it (generated from Layouts by
// TestLayoutsDoc, which also checks that every layout name the detector
// can give has a row and every row is a name it gives).
type LayoutInfo struct {
	// Name is the layout name inspect reports (layout.name, candidates).
	Name string
	// Library names the library and its ecosystem.
	Library string
	// Version is the version whose behaviour the detector follows.
	Version string
	// Verified is "run in CI" (the conformance suite runs the library) or
	// "from source at tag X" (values copied from its source, cited in
	// inspect/fixtures_test.go and layouts_test.go).
	Verified string
	// Key, Value: the key pattern and the value's shape.
	Key, Value string
	// TTL is the default lease; Renewal how it is extended; Release what
	// the release checks; Fencing the fencing token, if any.
	TTL, Renewal, Release, Fencing string
}

// RunInCI is LayoutInfo.Verified of a library the conformance suite runs.
const RunInCI = "run in CI"

// Layouts lists every layout the detector names, in the table's order.
var Layouts = []LayoutInfo{
	{"lockctl", "lockctl (Go, lockcore)", "this one", RunInCI, "`lock:{field}:{value}` (lock.key_template)", "`<fence>:<32 hex>`",
		"= budget; 60 s renewed for long tasks", "Keeper renews at a third of the lease", "owner-checked script", "INCR `{<key>}:fence` (lock.fence_template)"},
	{"microi", "seed platform (Microi, .NET)", "values from issue 20", "from the platform's values", "`<name>:Lease`", "`<fence>:<ULID or 32-hex GUID>`",
		"–", "–", "–", "INCR sibling `<name>:FencingToken`"},
	{"redsync", "go-redsync/redsync (Go)", "v4.18.1", RunInCI, "any", "base64 of 16 random bytes (24 chars, `==`)",
		"8 s", "`Extend()` by hand", "owner-checked script", "no"},
	{"redislock", "bsm/redislock (Go)", "v0.9.4", RunInCI, "any", "raw URL base64 of 16 bytes (22 chars) + optional metadata",
		"given to `Obtain`", "`Refresh()` by hand", "owner-checked script", "no"},
	{"rueidislock", "redis/rueidis rueidislock (Go)", "v1.0.80", RunInCI, "`rueidislock:<i>:<name>`, i < 3", "24 random bytes (binary)",
		"5 s (`SET PXAT`)", "every 2.5 s while held", "owner-checked script", "no"},
	{"go-zero", "zeromicro/go-zero RedisLock (Go)", "v1.10.3", RunInCI, "any (no prefix)", "16 alphanumerics",
		"seconds×1000+500 ms (500 ms by default)", "no", "owner-checked script", "no"},
	{"node-redlock", "redlock (npm)", "4.2.0, 5.0.0-beta.2", RunInCI, "any", "32 random hex",
		"given", "v5 `using()`: when 500 ms remain; v4 `extend()` by hand", "owner-checked script", "no"},
	{"malkusch-lock", "malkusch/lock PHPRedisMutex, PredisMutex (PHP, Debian php-malkusch-lock)", "2.2.1", RunInCI, "`lock_<name>`", "32 random hex",
		"timeout + 1 s (3 s by default: 4 s)", "none: held while `synchronized()` runs", "owner-checked script", "no"},
	{"redis-semaphore", "redis-semaphore Mutex, Semaphore, MultiSemaphore (npm)", "5.8.0", RunInCI, "`mutex:<key>`; zset `semaphore:<key>`", "UUIDv4; zset members `<uuid>[_<n>]` scored by acquire time (ms)",
		"10 s", "every 8 s while held", "owner-checked script", "no"},
	{"symfony-lock", "Symfony Lock RedisStore, shared locks (PHP, php-symfony-lock)", "5.4.53", RunInCI, "the resource name (a zset, PEXPIREAT)", "base64 of 32 random bytes scored by expiry (ms); `__write__` for a writer",
		"300 s", "`refresh()` by hand", "owner-checked script", "no"},
	{"redisson-permit-semaphore", "Redisson RPermitExpirableSemaphore (Java)", "4.7.0", "from source at tag redisson-4.7.0", "counter `<name>` + zset `{<name>}:timeout`", "16-byte permit ids scored by expiry (ms)",
		"none by default", "`updateLeaseTime()` by hand", "owner-checked script", "no"},
	{"microfleet-ioredis-lock", "@microfleet/ioredis-lock (npm)", "6.0.1", RunInCI, "any", "UUIDv4",
		"10 s", "`extend()` by hand", "owner-checked script", "no"},
	{"node-redis-warlock", "node-redis-warlock (npm)", "1.0.2", RunInCI, "`<key>:lock`", "base64 of UUIDv1 bytes (24 chars, `==`)",
		"given", "`touch()` by hand", "owner-checked script", "no"},
	{"node-redis-lock", "redis-lock (npm)", "1.0.0", RunInCI, "`lock.<name>`", "Unix ms expiry (13 digits)",
		"5 s", "no", "none: deletes if its own time has not passed", "no"},
	{"redis-py", "redis-py `Lock` (Python, Debian python3-redis)", "4.3.4", RunInCI, "any", "`uuid1().hex` (32 hex, time inside)",
		"none (timeout=None)", "`extend()` by hand", "owner-checked script", "no"},
	{"laravel", "Laravel cache locks (PHP, php-illuminate-cache)", "8.83.26", RunInCI, "`<cache prefix><name>`", "16 alphanumerics",
		"none (seconds 0: SETNX)", "no", "owner-checked script", "no"},
	{"python-redis-lock", "python-redis-lock (Python)", "4.0.0", "from source at tag v4.0.0", "`lock:<name>` (+ `lock-signal:<name>` after a release)", "base64 of 18 random bytes (24 chars, no `=`)",
		"none (expire=None)", "auto_renewal: every expire×2/3", "owner-checked script", "no"},
	{"redisson", "Redisson RLock (Java)", "3.52.0", "from source at tag redisson-3.52.0", "any (a hash)", "field `<client uuid>:<thread>` → hold count",
		"30 s (watchdog)", "watchdog every 10 s", "owner-checked script", "no"},
	{"redisson-fenced", "Redisson RFencedLock (Java)", "3.52.0", "from source at tag redisson-3.52.0", "the hash + `redisson_lock_token:{<name>}`", "as redisson",
		"30 s (watchdog)", "watchdog every 10 s", "owner-checked script", "INCR `redisson_lock_token:{<name>}`"},
	{"redisson-fair", "Redisson fair lock (Java)", "3.52.0", "from source at tag redisson-3.52.0", "the hash + `redisson_lock_queue:{<name>}`, `redisson_lock_timeout:{<name>}`", "as redisson",
		"30 s (watchdog)", "watchdog every 10 s", "owner-checked script", "no"},
	{"redisson-rw", "Redisson read/write lock (Java)", "3.52.0", "from source at tag redisson-3.52.0", "any (a hash)", "field `mode` = read/write + holders",
		"30 s (watchdog)", "watchdog every 10 s", "owner-checked script", "no"},
	{"shedlock", "ShedLock Redis provider (Java)", "7.9.0", "from source at tag shedlock-parent-7.9.0", "`job-lock:<env>:<name>`", "`ADDED:<iso time>@<host>[:<uuid>]`",
		"lockAtMostFor", "`extend()` by hand", "owner-checked script (safe updates), else DEL", "no"},
	{"spring-integration", "Spring Integration RedisLockRegistry (Java)", "6.5.10", "from source at tag v6.5.10", "`<registryKey>:<path>`", "UUIDv4 (clientId)",
		"60 s (expireAfter)", "`renewLock()` by hand", "owner-checked script", "no"},
	{"distributedlock", "DistributedLock.Redis (.NET)", "2.8.1", "from source at tag 2.8.1", "the name given", "`<host>_<pid>_<guid n>`",
		"30 s", "auto-extended while held", "owner-checked script", "no"},
	{"freeredis", "FreeRedis (.NET)", "1.0.1", "from source at tag v1.0.1", "`RedisClientLock:<name>`", "GUID",
		"given (seconds)", "auto-extended every timeout/2", "owner-checked script", "no"},
	{"csredis", "CSRedisCore (.NET)", "3.8.668", "from source at tag v3.8.668", "`CSRedisClientLock:<name>`", "GUID",
		"given (seconds)", "auto-extended every timeout/2", "owner-checked script", "no"},
	{"sidekiq-unique-jobs", "sidekiq-unique-jobs (Ruby)", "8.1.0", "from source at tag v8.1.0", "hash `<digest>:LOCKED` (or `uniquejobs:<digest>`)", "jid → time",
		"the job's lock_ttl, none by default", "no", "owner-checked script", "no"},
	{"bull", "Bull job locks (npm)", "4.16.5", RunInCI, "`<prefix>:<queue>:<jobId>:lock` (prefix `bull`) + job hash `<prefix>:<queue>:<jobId>`; the queue's keys (`id`, `wait`, `active`…) are `job_queue` companions beside a job's list or set", "UUIDv4 (the queue's token)",
		"lockDuration 30 s", "every lockDuration/2 while the job runs", "owner-checked script", "no"},
	{"bullmq", "BullMQ job locks (npm)", "6.7.0", RunInCI, "`<prefix>:<queue>:<jobId>:lock` (prefix `bull`) + job hash `<prefix>:<queue>:<jobId>`; the queue's keys (`meta`, `id`, `marker`…) are `job_queue` companions beside its `events` stream", "`<worker uuid>:<n>`",
		"lockDuration 30 s", "every lockDuration/2 while the job runs", "owner-checked script", "no"},
	{"asynq-unique", "asynq unique tasks (Go, hibiken/asynq)", "0.26.0", RunInCI, "`asynq:{<queue>}:unique:<type>:<md5 hex>` + task hash `asynq:{<queue>}:t:<id>`", "the task id (UUID)",
		"the `Unique(ttl)` option", "no", "deleted when the task succeeds", "no"},
	{"asynq-lease", "asynq task leases (Go, hibiken/asynq)", "0.26.0", RunInCI, "zset `asynq:{<queue>}:lease`, no TTL; the queue's and servers' keys (`asynq:queues`, `:active`, `:t:<id>`, `asynq:servers:{…}`…) are `job_queue` and `job` companions", "task ids scored by lease end (Unix s)",
		"30 s per task", "heartbeat every 5 s (ZADD XX)", "ZREM when the task ends", "no"},
	{"rq", "RQ started jobs (Python, Debian python3-rq)", "1.13.0", RunInCI, "zset `rq:wip:<queue>`, no TTL; the queue's, jobs' and workers' keys (`rq:queues`, `rq:queue:<queue>`, `rq:job:<id>`, `rq:worker:<name>`…) are `job_queue` and `job` companions", "job ids scored by lease end (Unix s); the scheduler's `rq:scheduler-lock:<queue>` = its pid (from source)",
		"job_monitoring_interval + 60 s (90 s); scheduler 61 s", "worker heartbeat every 30 s (ZADD XX); scheduler EXPIRE every 1 s", "ZREM when the job ends; scheduler DEL", "no"},
	{"redis-lock-gem", "redis-lock (Ruby, mlanett)", "0.2.7", "from source at tag v0.2.7", "`lock:owner:<key>` + `lock:expire:<key>`", "`<host>:<pid>` + Unix s",
		"60 s, in a value (no Redis TTL)", "`extend_life` by hand", "owner-checked", "no"},
}
