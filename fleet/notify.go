package fleet

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/inspect"
	"github.com/redis/go-redis/v9"
)

// notifiedEvents are the keyspace events that make a key read at once,
// between passes: a lock set, given a TTL, deleted or expired.
var notifiedEvents = map[string]bool{"set": true, "expire": true, "del": true, "expired": true}

// subscribe returns the keyspace notifications of the keys matching
// pattern when the server sends them (its notify-keyspace-events has K and
// a class of the events above; redis.io/docs/latest/develop/pubsub/keyspace-notifications),
// else nil: CONFIG GET refused, notifications off, a cluster (each node
// would need a subscription) or PSUBSCRIBE refused. It never sets them:
// lockctl is read-only. Close the PubSub when done.
func subscribe(ctx context.Context, c redis.UniversalClient, pattern string) *redis.PubSub {
	rc, ok := c.(*redis.Client) // a server, or a Sentinel's primary
	if !ok {
		return nil
	}
	cfg, err := rc.ConfigGet(ctx, "notify-keyspace-events").Result()
	flags := cfg["notify-keyspace-events"]
	if err != nil || !strings.Contains(flags, "K") || !strings.ContainsAny(flags, "Ag$x") {
		return nil
	}
	ps := rc.PSubscribe(ctx, "__keyspace@"+strconv.Itoa(rc.Options().DB)+"__:"+pattern)
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation, or the ACL's refusal
		_ = ps.Close()
		return nil
	}
	return ps
}

// notified reads the key of a keyspace notification at once and hands its
// events to sink, as a pass would (a key gone is diffed as gone and
// forgotten); Sink.Lock is not called, a pass's counts stay the pass's.
func (f *Follower) notified(ctx context.Context, msg *redis.Message, sink Sink) error {
	_, key, ok := strings.Cut(msg.Channel, "__:")
	if !ok || !notifiedEvents[msg.Payload] {
		return nil
	}
	locks, err := f.reader.Read(ctx, f.client, []string{key})
	if err != nil || len(locks) != 1 || locks[0].Role != "" {
		return nil // the next pass reads it again
	}
	l := &locks[0]
	at := f.opts.Now()
	st, known := f.keys[key]
	if !l.Exists {
		if !known {
			return nil
		}
		delete(f.keys, key)
		return wrapSink(emitAll(sink, st.d.Next(inspect.Sample{At: at, Key: key, PTTLMS: -2})))
	}
	return wrapSink(emitAll(sink, f.diff(l, at, at, false)))
}

// emitAll hands events to sink in order, returning its first error.
func emitAll(sink Sink, events []inspect.Event) error {
	for _, e := range events {
		if err := sink.Event(e); err != nil {
			return err
		}
	}
	return nil
}

// wrapSink marks a Sink error as one that ends Run.
func wrapSink(err error) error {
	if err == nil {
		return nil
	}
	return &sinkError{err}
}

// errPassDue is waitBetween's word that the next pass is due.
var errPassDue = errors.New("next pass due")

// waitBetween waits d between two passes, handing each message of msgs
// (nil: none) to onMsg meanwhile; it returns errPassDue when d is over,
// ctx's error when ctx ends, nil when until ends, and onMsg's error.
func waitBetween(ctx, until context.Context, d time.Duration, msgs <-chan *redis.Message, onMsg func(*redis.Message) error) error {
	wait := time.NewTimer(d)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-until.Done():
			return nil
		case <-wait.C:
			return errPassDue
		case m := <-msgs:
			if err := onMsg(m); err != nil {
				return err
			}
		}
	}
}
