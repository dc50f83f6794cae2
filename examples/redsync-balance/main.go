// Command redsync-balance is a `lockctl trial` worker: under a redsync lock
// it reads an account's balance from PostgreSQL, works for a while, and
// writes the balance plus 10 with a ledger row of +10. The check query finds
// a balance that differs from its ledger: a lost update.
//
// Without -fenced the write is a plain read-modify-write: a holder paused
// past its lease writes over the next holder's update (unsafe). With
// -fenced it takes a fence (INCR on a Redis counter right after the
// acquire), claims the account with it before reading (UPDATE … WHERE
// fence < $1) and commits only while the claim is still its own (WHERE
// fence = $1): a stale holder's commit is refused (safe).
//
// It needs REDIS_URL and DATABASE_URL (postgres://…), as lockctl trial gives.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
)

const (
	account  = "acc-1"
	lockKey  = "lock:account:" + account
	fenceKey = "fence:account:" + account
	lease    = time.Second            // redsync's expiry: no renewal
	work     = 300 * time.Millisecond // between the read and the write
	rounds   = 20                     // updates per worker start
)

func main() {
	fenced := flag.Bool("fenced", false, "claim the account with a fence before reading, commit only under that claim")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("redsync-balance: ")
	opt, err := redis.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatalf("REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opt)
	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatalf("DATABASE_URL: %v", err)
	}
	rs := redsync.New(goredis.NewPool(rdb))
	ctx := context.Background()
	for range rounds {
		m := rs.NewMutex(lockKey, redsync.WithExpiry(lease), redsync.WithTries(100), redsync.WithRetryDelay(20*time.Millisecond))
		if err := m.LockContext(ctx); err != nil {
			log.Printf("lock: %v", err)
			continue
		}
		if *fenced {
			err = fencedUpdate(ctx, rdb, db)
		} else {
			err = update(ctx, db)
		}
		if err != nil {
			log.Print(err)
		}
		// An unlock after the lease ran out fails: nothing to do then.
		_, _ = m.UnlockContext(ctx)
	}
}

// update is the unsafe read-modify-write.
func update(ctx context.Context, db *sql.DB) error {
	var balance int64
	if err := db.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = $1", account).Scan(&balance); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	time.Sleep(work)
	return commit(ctx, db, balance+10, "UPDATE accounts SET balance = $1 WHERE id = $2", 0)
}

// fencedUpdate claims the account with a new fence, reads, works, and
// commits only if no later fence claimed it meanwhile.
func fencedUpdate(ctx context.Context, rdb *redis.Client, db *sql.DB) error {
	fence, err := rdb.Incr(ctx, fenceKey).Result()
	if err != nil {
		return fmt.Errorf("fence: %w", err)
	}
	var balance int64
	err = db.QueryRowContext(ctx, "UPDATE accounts SET fence = $1 WHERE id = $2 AND fence < $1 RETURNING balance", fence, account).Scan(&balance)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("fence %d refused at the claim: a later holder has claimed the account", fence)
	}
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	time.Sleep(work)
	return commit(ctx, db, balance+10, "UPDATE accounts SET balance = $1 WHERE id = $2 AND fence = $3", fence)
}

// commit writes the new balance and its ledger row in one transaction; the
// ledger row records the fence (0: none) for --history.
func commit(ctx context.Context, db *sql.DB, balance int64, update string, fence int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	args := []any{balance, account}
	if fence > 0 {
		args = append(args, fence)
	}
	res, err := tx.ExecContext(ctx, update, args...)
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("fence %d refused at the commit: a later holder has claimed the account", fence)
	}
	var f any
	if fence > 0 {
		f = fence
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO ledger (account, amount, fence) VALUES ($1, 10, $2)", account, f); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return tx.Commit()
}
