// The Node driver of the conformance suite (conformance/harness_test.go):
// takes a lock with a real Node lock library and holds it until told to
// renew or release it on stdin, or until it is killed.
//
// Usage: node driver.mjs <library> <mode> <host:port> <name>
// Prints one JSON line per action: {"op":"acquired","keys":[...],
// "owner_hex":"..."}, {"op":"renewed"}, {"op":"released"}, or
// {"op":"error","error":"..."} (then exits 1). Mode "bulk" takes BULK locks
// named <name>-<i> with a 120 s lease, prints {"op":"bulk","keys":[...]} and
// exits leaving them held (issue 20 item 2).
import { createRequire } from 'node:module';
import readline from 'node:readline';

const require = createRequire(import.meta.url);
const [lib, mainMode, addr, mainName] = process.argv.slice(2);
const BULK = 500;
const [host, port] = addr.split(':');

const emit = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const hex = (s) => Buffer.from(s, 'utf8').toString('hex');
const fail = (e) => { emit({ op: 'error', error: String(e && e.stack || e) }); process.exit(1); };

let shared;
function ioredis() {
  const Redis = require('ioredis');
  shared ??= new Redis({ host, port: Number(port), maxRetriesPerRequest: 1 });
  return shared;
}
let redis3;
function redis3Client() {
  redis3 ??= require('redis3').createClient({ host, port: Number(port) });
  return redis3;
}
// ttl is the lease in ms: the library's (or the suite's) default, 120 s in bulk.
const ttl = (mode, ms) => (mode === 'bulk' ? 120000 : ms);

// Each adapter returns {keys, owner, renew(), release()}.
const adapters = {
  // redlock v4: no default TTL in its API (10 s here); extend sets a new TTL.
  async redlock4(mode, name) {
    const Redlock = require('redlock4');
    const redlock = new Redlock([ioredis()], { retryCount: 10 });
    let l = await redlock.lock(name, ttl(mode, 10000));
    return { keys: [name], owner: l.value,
      renew: async () => { l = await l.extend(10000); },
      release: () => l.unlock() };
  },
  // redlock v5: acquire (10 s), or using() with its automatic extension
  // (mode "using": 2 s lease, extended when 500 ms remain, so the suite's
  // 4 s of reads meet the lock just before each extension).
  async redlock5(mode, name) {
    const { default: Redlock } = require('redlock5');
    const redlock = new Redlock([ioredis()], { retryCount: 10 });
    if (mode === 'using') {
      let release, acquired;
      const got = new Promise((r) => { acquired = r; });
      const done = redlock.using([name], 2000, async () => {
        await new Promise((r) => { release = r; acquired(); });
      });
      await got;
      const value = await ioredis().get(name);
      return { keys: [name], owner: value, renew: async () => {}, release: async () => { release(); await done; } };
    }
    let l = await redlock.acquire([name], ttl(mode, 10000));
    return { keys: [name], owner: l.value,
      renew: async () => { l = await l.extend(10000); },
      release: () => l.release() };
  },
  // redis-semaphore: Mutex ("mutex:<name>"), Semaphore ("semaphore:<name>",
  // limit 3) and MultiSemaphore (limit 3, 2 permits); 10 s lease refreshed
  // every 8 s by its own timer.
  async 'redis-semaphore'(mode, name) {
    const { Mutex, Semaphore, MultiSemaphore } = require('redis-semaphore');
    const client = ioredis();
    const m = mode === 'semaphore' ? new Semaphore(client, name, 3)
      : mode === 'multi' ? new MultiSemaphore(client, name, 3, 2)
        : new Mutex(client, name, { lockTimeout: mode === 'watchdog' ? 2000 : ttl(mode, 10000) });
    await m.acquire();
    const prefix = mode === 'semaphore' || mode === 'multi' ? 'semaphore:' : 'mutex:';
    return { keys: [prefix + name], owner: m.identifier,
      renew: () => m._refresh(), release: () => m.release() };
  },
  // @microfleet/ioredis-lock: 10 s default timeout; extend() resets it.
  async 'ioredis-lock'(mode, name) {
    const { createLock } = await import('@microfleet/ioredis-lock');
    const l = createLock(ioredis(), { timeout: ttl(mode, 10000) });
    await l.acquire(name);
    return { keys: [name], owner: l._id, renew: () => l.extend(), release: () => l.release() };
  },
  // node-redis-warlock: "<name>:lock" = base64 of UUIDv1 bytes; 10 s here
  // (the ttl is a required argument).
  async warlock(mode, name) {
    const warlock = require('node-redis-warlock')(redis3Client());
    const { unlock, id } = await new Promise((resolve, reject) => {
      warlock.lock(name, ttl(mode, 10000), (err, unlock, id) => (err ? reject(err) : unlock ? resolve({ unlock, id }) : reject(new Error('not acquired'))));
    });
    return { keys: [name + ':lock'], owner: id,
      renew: () => warlock.touch(name, id, 10000),
      release: () => new Promise((r, j) => unlock((e) => (e ? j(e) : r()))) };
  },
  // redis-lock: "lock.<name>" = its expiry time in ms, 5 s default (mode
  // "long": 30 s); no renew.
  async 'redis-lock'(mode, name) {
    const client = require('redis4').createClient({ url: `redis://${addr}` });
    await client.connect();
    const done = await require('redis-lock')(client)(name, mode === 'long' ? 30000 : 5000);
    const key = 'lock.' + name;
    return { keys: [key], owner: await client.get(key),
      renew: async () => { throw new Error('redis-lock has no renew'); }, release: () => done() };
  },
  // Bull 4 (npm): a worker takes the job (id "job-1", so the crash step's
  // holder takes the same key); its lock "bull:<queue>:<jobId>:lock" = the
  // queue's token (uuid v4), PX lockDuration, extended every lockRenewTime
  // (lockDuration/2) while the job runs; the job's completion deletes it.
  async bull(mode, name) {
    const Queue = require('bull');
    const q = new Queue(name, { redis: { host, port: Number(port) }, settings: { lockDuration: jobLease(mode) } });
    return jobLock(q.name, async (started) => {
      let finish;
      q.process(() => new Promise((r) => { finish = r; started(); }));
      const job = await q.add({ n: 1 }, { jobId: 'job-1', removeOnComplete: true });
      return { id: job.id, release: () => { finish(); }, close: () => q.close() };
    });
  },
  // BullMQ 6 (npm): as Bull, token "<worker uuid>:<n>".
  async bullmq(mode, name) {
    const { Queue, Worker } = require('bullmq');
    const connection = { host, port: Number(port), maxRetriesPerRequest: null };
    const q = new Queue(name, { connection });
    return jobLock(name, async (started) => {
      let finish;
      const w = new Worker(name, () => new Promise((r) => { finish = r; started(); }), { connection, lockDuration: jobLease(mode) });
      const job = await q.add('task', { n: 1 }, { jobId: 'job-1', removeOnComplete: true });
      return { id: job.id, release: () => { finish(); }, close: async () => { await w.close(); await q.close(); } };
    });
  },
};

// jobLease is a job queue's lockDuration in ms: 2 s (renewed every 1 s),
// 30 s (its default) for the holder the suite kills, 120 s in bulk.
const jobLease = (mode) => ({ bulk: 120000, long: 30000 }[mode] ?? 2000);

// jobLock runs one job of a queue library until told to finish it: the
// lock key and its token as the library wrote them, renew a no-op (the
// library extends the lock itself), release completes the job, waits for
// the lock key to go and stops the worker.
async function jobLock(queue, start) {
  let started;
  const running = new Promise((r) => { started = r; });
  const j = await start(started);
  await running;
  const key = `bull:${queue}:${j.id}:lock`;
  let owner = null;
  for (let i = 0; i < 100 && owner === null; i++) {
    owner = await ioredis().get(key);
    if (owner === null) await new Promise((r) => setTimeout(r, 20));
  }
  return { keys: [key], owner, renew: async () => {},
    release: async () => {
      j.release();
      for (let i = 0; i < 250 && (await ioredis().exists(key)); i++) await new Promise((r) => setTimeout(r, 20));
      await j.close(); // no worker left to take the crash step's job
    } };
}

async function main() {
  const adapter = adapters[lib];
  if (!adapter) fail(`unknown library ${lib}: ${Object.keys(adapters).join(', ')}`);
  if (mainMode === 'bulk') {
    const keys = [];
    for (let i = 0; i < BULK; i++) keys.push(...(await adapter('bulk', `${mainName}-${i}`)).keys);
    emit({ op: 'bulk', keys });
    process.exit(0);
  }
  const l = await adapter(mainMode, mainName);
  emit({ op: 'acquired', keys: l.keys, owner_hex: hex(l.owner ?? '') });
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (line === 'renew') { await l.renew(); emit({ op: 'renewed' }); }
    if (line === 'release') { await l.release(); emit({ op: 'released' }); }
  }
  setInterval(() => {}, 1 << 30); // stdin closed: hold until killed
}
main().catch(fail);
