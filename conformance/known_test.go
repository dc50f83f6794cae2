package conformance

// knownFailures names the cases where today's detector is wrong, each with
// the issue item that fixes it. A listed case that fails is logged, not
// failed; one that passes says so in the log ("now passes"). Delete an entry
// when its fix lands: the case then fails CI if the detector regresses.
var knownFailures = map[string]string{
	"redsync/lock-prefix":        "issue 20 item 3: redsync under lock: is called python-redis-lock, with a false CROSS_SLOT",
	"rueidislock/default":        "issue 20 item 3: rueidislock:<i>:<name> keys are not recognised (unknown, no NO_FENCE)",
	"go-zero/default":            "issue 20 item 3: go-zero RedisLock is called laravel",
	"go-zero/ttl":                "issue 20 item 3: go-zero RedisLock is called laravel",
	"redlock4/default":           "issue 20 item 3: 1 in 64 redlock values is called redis-py with an invented acquisition time",
	"redlock5/default":           "issue 20 item 3: 1 in 64 redlock values is called redis-py with an invented acquisition time",
	"redlock5/using":             "issue 20 items 3 and 6: 1 in 64 values is called redis-py; SUBSECOND_LEASE before each extension",
	"redis-semaphore/mutex":      "issue 20 item 3: redis-semaphore Mutex is called spring-integration",
	"redis-semaphore/watchdog":   "issue 20 items 3 and 6: Mutex called spring-integration; SUBSECOND_LEASE before each refresh",
	"redis-semaphore/semaphore":  "issue 20 item 4: a zset semaphore gets WRONG_TYPE",
	"redis-semaphore/multi":      "issue 20 item 4: a zset semaphore gets WRONG_TYPE",
	"ioredis-lock/default":       "issue 20 item 3: @microfleet/ioredis-lock is called spring-integration",
	"node-redis-warlock/default": "issue 20 item 3: node-redis-warlock is called redsync",
	"redis-lock/default":         "issue 20 item 3: redis-lock (lock.<name> = expiry in ms) is not recognised",
	"symfony/default":            "issue 20 item 4: Symfony Lock's zset gets WRONG_TYPE",
	"symfony/shared":             "issue 20 item 4: Symfony Lock's zset (a read lock) gets WRONG_TYPE",

	// Bulk runs (TestBulk): 500 values per library, scanned with --pattern.
	"bulk/rueidislock":        "issue 20 item 3: rueidislock values are unknown",
	"bulk/go-zero":            "issue 20 item 3: go-zero values are called laravel",
	"bulk/redlock4":           "issue 20 item 3: ~1/64 redlock values called redis-py, acquired_at invented",
	"bulk/redlock5":           "issue 20 item 3: ~1/64 redlock values called redis-py, acquired_at invented",
	"bulk/redis-semaphore":    "issue 20 item 3: redis-semaphore Mutex values called spring-integration",
	"bulk/ioredis-lock":       "issue 20 item 3: ioredis-lock values called spring-integration",
	"bulk/node-redis-warlock": "issue 20 item 3: node-redis-warlock values called redsync",
}
