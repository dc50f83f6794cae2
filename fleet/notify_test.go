package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/fleet"
	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
)

// chanSink sends a Follower's events and passes to channels.
type chanSink struct {
	events chan inspect.Event
	passes chan fleet.Pass
}

func (s chanSink) Lock(*inspect.Lock, time.Duration) {}
func (s chanSink) Event(e inspect.Event) error       { s.events <- e; return nil }
func (s chanSink) PassDone(p fleet.Pass)             { s.passes <- p }

// followHour runs a Follower over srv's "n:*" with an interval of an hour
// until the test ends: after the first pass, only a keyspace notification
// can bring an event.
func followHour(t *testing.T, srv *redistest.Server) chanSink {
	sink := chanSink{events: make(chan inspect.Event, 64), passes: make(chan fleet.Pass, 4)}
	f := fleet.New(&inspect.Reader{Light: true}, srv.Client(t), fleet.Options{Pattern: "n:*", Interval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, ctx, sink, func(err error) error { return err }) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-sink.passes:
	case err := <-done:
		t.Fatalf("Run ended before its first pass: %v", err)
	}
	return sink
}

// TestNotifiedBetweenPasses: with notify-keyspace-events on, a lock set,
// renewed and deleted between two passes an hour apart is ACQUIRED,
// RENEWED and RELEASED before the second pass, which never comes.
func TestNotifiedBetweenPasses(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--notify-keyspace-events", "Kg$x")
	sink := followHour(t, srv)
	c := srv.Client(t)
	ctx := context.Background()
	c.Set(ctx, "n:a", "owner-1", time.Minute)
	for _, want := range []string{inspect.EventAcquired, inspect.EventRenewed, inspect.EventReleased} {
		switch want {
		case inspect.EventRenewed:
			c.PExpire(ctx, "n:a", 10*time.Minute)
		case inspect.EventReleased:
			c.Del(ctx, "n:a")
		}
		e, p := nextOwnership(sink)
		switch {
		case p != nil:
			t.Fatalf("a second pass (%v) before %s", *p, want)
		case e == nil: // the passes are an hour apart
			t.Fatalf("no %s within a minute of the change", want)
		case e.Event != want || e.Key != "n:a":
			t.Fatalf("event %s %s, want %s n:a", e.Event, e.Key, want)
		}
	}
}

// nextOwnership is the next event other than a finding's, or the next
// pass, or neither after a minute.
func nextOwnership(sink chanSink) (*inspect.Event, *fleet.Pass) {
	for {
		select {
		case e := <-sink.events:
			if e.Event != inspect.EventFinding && e.Event != inspect.EventFindingCleared { // a 10-minute TTL may be one
				return &e, nil
			}
		case p := <-sink.passes:
			return nil, &p
		case <-time.After(time.Minute):
			return nil, nil
		}
	}
}

// TestNotificationsOff: without notify-keyspace-events, or when CONFIG is
// refused (an ACL user without it), the Follower runs on passes alone,
// silently: a lock set after the first pass waits for the next one.
func TestNotificationsOff(t *testing.T) {
	t.Parallel()
	for _, extra := range [][]string{nil, {"--notify-keyspace-events", "Kg$x", "--rename-command", "CONFIG", ""}} {
		srv := redistest.Start(t, extra...)
		sink := followHour(t, srv)
		c := srv.Client(t)
		c.Set(context.Background(), "n:a", "owner-1", time.Minute)
		c.Del(context.Background(), "n:a")
		c.Set(context.Background(), "n:b", "owner-1", time.Minute)
		select {
		case e := <-sink.events:
			t.Errorf("%v: event %s %s without notifications", extra, e.Event, e.Key)
		case <-time.After(2 * time.Second): // long enough for a notification's read, far short of a pass
		}
	}
}
