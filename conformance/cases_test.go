package conformance

// libCase is one library in one mode: how to start its driver and what
// `lockctl inspect` must say about the lock it wrote (issue 20, item 1).
type libCase struct {
	// ID names the case in test names and in knownFailures: "<library>/<mode>".
	ID string
	// Driver is the language driver: go, node, python or php.
	Driver string
	// Lib and Mode are the driver's first two arguments.
	Lib, Mode string
	// Name is the lock name passed to the library ("%s" is replaced by a
	// per-run suffix); the library derives its keys from it.
	Name string
	// Layouts are the layout names that count as right: the detector must
	// name one of them, or give a "guess" whose candidates include one.
	Layouts []string
	// Zset: the library keeps its holders as members of a sorted set; the
	// owner is checked as a member prefix, not as the string value.
	Zset bool
	// Need are the warning and error codes that are true of this lock and
	// must be reported; Allow are others that may be, depending on timing.
	// Any other warning or error is a false finding.
	Need, Allow []string
	// Renew: the driver's "renew" command extends the lease.
	Renew bool
	// Watchdog: the library renews by itself; the suite samples for 4 s
	// and expects RENEWED events with no renew command.
	Watchdog bool
	// CrashMode is the mode of the holder that is killed, when Mode's
	// lease is too short (2 s) to outlive the read after the kill on a
	// loaded machine; default Mode.
	CrashMode string
	// Short: the default lease is shorter than a second (go-zero): only the
	// acquire step runs, retried when the key is gone before it is read.
	Short bool
	// Metadata is the holder metadata the layout must show (bsm/redislock).
	Metadata string
	// AcquiredAt: the layout derives the acquisition time from the value
	// (redis-py's uuid1), so holder.acquired_at must be now ± 1 day.
	AcquiredAt bool
}

var noFence = []string{"NO_FENCE"}

// cases is every library and mode the suite runs. Versions are pinned by
// go.mod, node/package-lock.json and the Debian release (docs/conformance.md).
var cases = []libCase{
	// Go: redsync v4 (8 s default expiry, Extend, Unlock). redsync and
	// redislock write under the key their caller names, a random token
	// other libraries write too: a generic base64-token seen in them, no
	// name, so no NO_FENCE either (issue 27: a shared shape names no one).
	{ID: "redsync/default", Driver: "go", Lib: "redsync", Mode: "default", Name: "order-%s",
		Layouts: []string{"redsync"}, Renew: true},
	// The redsync value under a `lock:` key: was python-redis-lock + CROSS_SLOT.
	{ID: "redsync/lock-prefix", Driver: "go", Lib: "redsync", Mode: "default", Name: "lock:order-%s",
		Layouts: []string{"redsync"}, Renew: true},
	{ID: "redislock/default", Driver: "go", Lib: "redislock", Mode: "default", Name: "bsm-%s",
		Layouts: []string{"redislock"}, Renew: true},
	{ID: "redislock/metadata", Driver: "go", Lib: "redislock", Mode: "metadata", Name: "bsm-meta-%s",
		Layouts: []string{"redislock"}, Renew: true, Metadata: "worker-7"},
	// rueidislock: 3 keys rueidislock:<i>:<name>, binary random value, 5 s
	// validity extended every 2.5 s by its own goroutine.
	{ID: "rueidislock/default", Driver: "go", Lib: "rueidislock", Mode: "default", Name: "rueidis-%s",
		Layouts: []string{"rueidislock"}, Need: noFence, Watchdog: true},
	// go-zero: default lease 0 s + 500 ms: SUBSECOND_LEASE is true here.
	// 16 alphanumerics name no library (issue 27): a generic random token.
	{ID: "go-zero/default", Driver: "go", Lib: "go-zero", Mode: "default", Name: "zero-%s",
		Layouts: []string{"go-zero"}, Need: []string{"SUBSECOND_LEASE"}, Short: true},
	{ID: "go-zero/ttl", Driver: "go", Lib: "go-zero", Mode: "ttl", Name: "zero-ttl-%s",
		Layouts: []string{"go-zero"}, Renew: true},

	// Node: redlock v4 and v5 (32 random hex: a generic hex token, no
	// name, so no NO_FENCE either), v5's using() auto-extends.
	{ID: "redlock4/default", Driver: "node", Lib: "redlock4", Mode: "default", Name: "rl4-%s",
		Layouts: []string{"node-redlock"}, Renew: true},
	{ID: "redlock5/default", Driver: "node", Lib: "redlock5", Mode: "default", Name: "rl5-%s",
		Layouts: []string{"node-redlock"}, Renew: true},
	{ID: "redlock5/using", Driver: "node", Lib: "redlock5", Mode: "using", Name: "rl5-using-%s",
		Layouts: []string{"node-redlock"}, Watchdog: true, CrashMode: "default"},
	// redis-semaphore: Mutex "mutex:<name>" = UUIDv4; Semaphore and
	// MultiSemaphore "semaphore:<name>" zset, members <uuid>_<n>.
	{ID: "redis-semaphore/mutex", Driver: "node", Lib: "redis-semaphore", Mode: "mutex", Name: "rsm-%s",
		Layouts: []string{"redis-semaphore"}, Need: noFence, Renew: true},
	{ID: "redis-semaphore/watchdog", Driver: "node", Lib: "redis-semaphore", Mode: "watchdog", Name: "rsw-%s",
		Layouts: []string{"redis-semaphore"}, Need: noFence, Watchdog: true, CrashMode: "mutex"},
	{ID: "redis-semaphore/semaphore", Driver: "node", Lib: "redis-semaphore", Mode: "semaphore", Name: "rss-%s",
		Layouts: []string{"redis-semaphore"}, Zset: true, Allow: noFence, Renew: true},
	{ID: "redis-semaphore/multi", Driver: "node", Lib: "redis-semaphore", Mode: "multi", Name: "rsms-%s",
		Layouts: []string{"redis-semaphore"}, Zset: true, Allow: noFence, Renew: true},
	// A bare UUID: a generic token (issue 27).
	{ID: "ioredis-lock/default", Driver: "node", Lib: "ioredis-lock", Mode: "default", Name: "mf-%s",
		Layouts: []string{"microfleet-ioredis-lock"}, Renew: true},
	{ID: "node-redis-warlock/default", Driver: "node", Lib: "warlock", Mode: "default", Name: "wl-%s",
		Layouts: []string{"node-redis-warlock"}, Need: noFence, Renew: true},
	// redis-lock: "lock.<name>" = its own expiry in Unix ms, 5 s; no renew.
	{ID: "redis-lock/default", Driver: "node", Lib: "redis-lock", Mode: "default", Name: "rlk-%s",
		Layouts: []string{"node-redis-lock"}, Need: noFence},
	// Job queues (issue 27 item 3): a worker's job lock
	// "bull:<queue>:<jobId>:lock", extended by the library every
	// lockDuration/2 (2 s here, 30 s for the crash) while the job runs;
	// the job hash beside it is on another slot (CROSS_SLOT: Bull wants a
	// {hash tag} prefix on a cluster).
	{ID: "bull/default", Driver: "node", Lib: "bull", Mode: "default", Name: "bq-%s",
		Layouts: []string{"bull"}, Need: noFence, Allow: []string{"CROSS_SLOT"}, Watchdog: true, CrashMode: "long"},
	{ID: "bullmq/default", Driver: "node", Lib: "bullmq", Mode: "default", Name: "bmq-%s",
		Layouts: []string{"bullmq"}, Need: noFence, Allow: []string{"CROSS_SLOT"}, Watchdog: true, CrashMode: "long"},
	// asynq (issue 44): a task enqueued with Unique(30 s) on queue "<name>"
	// and run by a server: the unique key "asynq:{<name>}:unique:<type>:" =
	// the task id, and the queue's lease zset of running tasks, extended by
	// the server's heartbeater; its queue and server keys are companions.
	{ID: "asynq/unique", Driver: "go", Lib: "asynq", Mode: "unique", Name: "aq-%s",
		Layouts: []string{"asynq-unique", "asynq-lease"}, Zset: true, Need: noFence},

	// Python: redis-py Lock, uuid1().hex; no timeout by default (NO_TTL is true).
	{ID: "redis-py/default", Driver: "python", Lib: "redis-py", Mode: "default", Name: "py-%s",
		Layouts: []string{"redis-py"}, Need: []string{"NO_FENCE", "NO_TTL"}, AcquiredAt: true},
	{ID: "redis-py/ttl", Driver: "python", Lib: "redis-py", Mode: "ttl", Name: "py-ttl-%s",
		Layouts: []string{"redis-py"}, Need: noFence, Renew: true, AcquiredAt: true},

	// RQ (issue 44, Debian's python3-rq): a job enqueued on queue "<name>"
	// and run by a forking worker until released: the queue's started-job
	// zset "rq:wip:<name>" holds its id scored by the lease's end (90 s),
	// renewed by the worker's heartbeat; the queue's, job's and worker's
	// other keys are companions. The crash kills the worker and its job.
	{ID: "rq/default", Driver: "python", Lib: "rq", Mode: "default", Name: "rq-%s",
		Layouts: []string{"rq"}, Zset: true, Need: noFence},

	// PHP (Debian bookworm): Symfony Lock 5.4's RedisStore keeps even an
	// exclusive lock in a zset (members the token and "__write__", score =
	// expiry in ms, PEXPIREAT), 300 s by default: LEASE_OVER_CAP is true.
	{ID: "symfony/default", Driver: "php", Lib: "symfony", Mode: "default", Name: "sf-%s",
		Layouts: []string{"symfony-lock"}, Zset: true, Need: []string{"LEASE_OVER_CAP"}, Allow: noFence, Renew: true},
	{ID: "symfony/shared", Driver: "php", Lib: "symfony", Mode: "shared", Name: "sf-read-%s",
		Layouts: []string{"symfony-lock"}, Zset: true, Need: []string{"LEASE_OVER_CAP"}, Allow: noFence, Renew: true},
	// Laravel 8 Cache::lock: 16 alphanumerics under the app's prefixes; no
	// expiry by default (NO_TTL is true), no renew.
	{ID: "laravel/default", Driver: "php", Lib: "laravel", Mode: "default", Name: "lv-%s",
		Layouts: []string{"laravel"}, Need: []string{"NO_FENCE", "NO_TTL"}},
	{ID: "laravel/ttl", Driver: "php", Lib: "laravel", Mode: "ttl", Name: "lv-ttl-%s",
		Layouts: []string{"laravel"}, Need: noFence},
	// malkusch/lock 2.2 PHPRedisMutex: "lock_<name>" = 32 random hex, a
	// shape many libraries write (issue 27): a generic hex token with
	// malkusch-lock among layout.seen_in, no name, so no NO_FENCE. Held
	// while synchronized()'s callable runs; no renew.
	{ID: "malkusch/default", Driver: "php", Lib: "malkusch", Mode: "default", Name: "mk-%s",
		Layouts: []string{"malkusch-lock"}},
}
