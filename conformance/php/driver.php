<?php
// The PHP driver of the conformance suite (conformance/harness_test.go): takes
// a lock with Debian's Symfony Lock 5.4 (php-symfony-lock), Laravel 8's
// cache lock (php-illuminate-cache) or malkusch/lock 2.2 (php-malkusch-lock)
// over php-redis, and holds it until told to renew or release it on stdin,
// or until it is killed.
//
// Usage: php driver.php <library> <mode> <host:port> <name>
// Prints one JSON line per action: {"op":"acquired","keys":[...],
// "owner_hex":"..."}, {"op":"renewed"}, {"op":"released"}, or
// {"op":"error","error":"..."} (then exits 1). Mode "bulk" (laravel) takes
// 500 locks named <name>-<i> (120 s), prints {"op":"bulk","keys":[...]} and
// exits leaving them held (issue 20 item 2).
require_once 'Symfony/Component/Lock/autoload.php';
require_once 'Illuminate/Cache/autoload.php';
require_once 'Illuminate/Redis/autoload.php';
require_once 'Malkusch/Lock/autoload.php';

use Illuminate\Cache\PhpRedisLock;
use Illuminate\Redis\Connections\PhpRedisConnection;
use malkusch\lock\mutex\PHPRedisMutex;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\RedisStore;

function emit(array $o): void
{
    fwrite(STDOUT, json_encode($o, JSON_UNESCAPED_SLASHES) . "\n");
}

// symfony: RedisStore keeps every lock in a zset <name> (members the
// token and "__write__", score = expiry in ms), 300 s default TTL; mode
// "shared" takes a read lock. The token is private: read from the zset.
function symfony(Redis $redis, string $mode, string $name): array
{
    $lock = (new LockFactory(new RedisStore($redis)))->createLock($name);
    $ok = $mode === 'shared' ? $lock->acquireRead(true) : $lock->acquire(true);
    if (!$ok) {
        throw new RuntimeException('not acquired');
    }
    $members = array_values(array_diff($redis->zRange($name, 0, -1), ['__write__']));
    return [[$name], $members[0] ?? '', fn () => $lock->refresh(), fn () => $lock->release()];
}

// laravel: Cache::lock($name, $seconds) on the redis store of a default
// Laravel 8 app, whose key is "laravel_database_" (the connection prefix) +
// "laravel_cache:" (the cache prefix) + name; owner Str::random() (16
// alphanumerics); $seconds = 0 (the default) sets no expiry; mode "ttl" 10 s.
// No renew in Laravel 8.
function laravel(Redis $redis, string $mode, string $name): array
{
    $redis->setOption(Redis::OPT_PREFIX, 'laravel_database_');
    $seconds = ['default' => 0, 'ttl' => 10, 'bulk' => 120][$mode];
    $lock = new PhpRedisLock(new PhpRedisConnection($redis), 'laravel_cache:' . $name, $seconds);
    if (!$lock->get()) {
        throw new RuntimeException('not acquired');
    }
    $renew = function () {
        throw new RuntimeException('Laravel 8 cache locks have no renew');
    };
    return [['laravel_database_laravel_cache:' . $name], $lock->owner(), $renew, fn () => $lock->release()];
}

// malkusch: malkusch/lock 2.2.1's PHPRedisMutex (classes/mutex/SpinlockMutex.php,
// RedisMutex.php, PHPRedisMutex.php): key "lock_" + name, token
// bin2hex(random_bytes(16)), SET NX EX timeout + 1 s (timeout 3 s by default,
// 30 s here to outlive a loaded machine's reads), DEL by an owner-checked
// script when synchronized()'s callable returns; no renew. The lock is held
// inside the callable: it runs the command loop, and never returns after a
// crash step (stdin closed). The token is private: read from the key.
function malkusch(Redis $redis, string $name): void
{
    $key = 'lock_' . $name;
    (new PHPRedisMutex([$redis], $name, 30))->synchronized(function () use ($redis, $key) {
        emit(['op' => 'acquired', 'keys' => [$key], 'owner_hex' => bin2hex((string) $redis->get($key))]);
        while (($line = fgets(STDIN)) !== false) {
            if (trim($line) === 'release') {
                return;
            }
        }
        holdUntilKilled();
    });
    emit(['op' => 'released']);
    holdUntilKilled();
}

// holdUntilKilled keeps the process (and any lock it holds) until the test kills it.
function holdUntilKilled(): never
{
    while (true) {
        sleep(3600);
    }
}

try {
    [, $lib, $mode, $addr, $name] = $argv;
    [$host, $port] = explode(':', $addr);
    $redis = new Redis();
    $redis->connect($host, (int) $port);
    if ($mode === 'bulk' && $lib === 'laravel') {
        $keys = [];
        for ($i = 0; $i < 500; $i++) {
            $keys = array_merge($keys, laravel($redis, 'bulk', "$name-$i")[0]);
        }
        emit(['op' => 'bulk', 'keys' => $keys]);
        exit(0);
    }
    if ($lib === 'malkusch') {
        malkusch($redis, $name);
    }
    if ($lib === 'symfony') {
        [$keys, $owner, $renew, $release] = symfony($redis, $mode, $name);
    } elseif ($lib === 'laravel') {
        [$keys, $owner, $renew, $release] = laravel($redis, $mode, $name);
    } else {
        throw new InvalidArgumentException("unknown library $lib: symfony, laravel or malkusch");
    }
    emit(['op' => 'acquired', 'keys' => $keys, 'owner_hex' => bin2hex($owner)]);
    while (($line = fgets(STDIN)) !== false) {
        $line = trim($line);
        if ($line === 'renew') {
            $renew();
            emit(['op' => 'renewed']);
        } elseif ($line === 'release') {
            $release();
            emit(['op' => 'released']);
        }
    }
    // stdin closed: hold until killed (the crash step).
    holdUntilKilled();
} catch (Throwable $e) {
    emit(['op' => 'error', 'error' => get_class($e) . ': ' . $e->getMessage()]);
    exit(1);
}
