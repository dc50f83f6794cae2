// A lockctl trial worker on redlock (one Redis node) and PostgreSQL (pg):
// it takes lock:account:acc-1 for 1000 ms, reads account acc-1's balance,
// works 300 ms and writes the balance plus 10 with a ledger row of +10.
// Nothing at the write boundary checks that the lock is still held, so a
// holder paused past its lease writes over the next holder's update.
// REDIS_URL and DATABASE_URL come from lockctl trial.
'use strict';
const Redis = require('ioredis');
const Redlock = require('redlock');
const { Client } = require('pg');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const redis = new Redis(process.env.REDIS_URL);
  const redlock = new Redlock([redis], { retryCount: 100, retryDelay: 20, retryJitter: 10 });
  const db = new Client({ connectionString: process.env.DATABASE_URL });
  await db.connect();
  for (let i = 0; i < 20; i++) {
    let lock;
    try {
      lock = await redlock.lock('lock:account:acc-1', 1000);
    } catch (err) {
      continue; // held by another worker all along
    }
    const { rows } = await db.query("SELECT balance FROM accounts WHERE id = 'acc-1'");
    await sleep(300); // the work
    await db.query('BEGIN');
    await db.query("UPDATE accounts SET balance = $1 WHERE id = 'acc-1'", [Number(rows[0].balance) + 10]);
    await db.query("INSERT INTO ledger (account, amount) VALUES ('acc-1', 10)");
    await db.query('COMMIT');
    await lock.unlock().catch(() => {}); // the lease ran out: someone else's lock now
  }
  await db.end();
  redis.disconnect();
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
