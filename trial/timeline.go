package trial

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/history"
	"github.com/lockctl/lockctl/inspect"
	"github.com/redis/go-redis/v9"
)

// owners maps what the workers sent to Redis to the worker that sent it:
// each argument of a write to a key matching --lock-pattern (SET's value,
// a script's ARGV), so that a sampled owner token names its worker.
type owners struct {
	pattern string
	mu      sync.Mutex
	byToken map[string]int
}

// writeCommands are the commands whose arguments may carry a lock's owner
// token: SET (redis-py, redis-cli, most libraries) and scripts (redsync,
// lockcore, redlock).
var writeCommands = map[string]bool{"SET": true, "EVAL": true, "EVALSHA": true, "EVAL_RO": true, "EVALSHA_RO": true, "FCALL": true, "HSET": true, "SETNX": true, "SETEX": true, "PSETEX": true}

// observe records a command worker sent through its proxy.
func (o *owners) observe(worker int, args []string) {
	if len(args) < 3 || !writeCommands[strings.ToUpper(args[0])] {
		return
	}
	name := strings.ToUpper(args[0])
	var keys, argv []string
	switch name {
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL":
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 0 || 3+n > len(args) {
			return
		}
		keys, argv = args[3:3+n], args[3+n:]
	default:
		keys, argv = args[1:2], args[2:]
	}
	for _, k := range keys {
		if globMatch(o.pattern, k) {
			o.mu.Lock()
			for _, a := range argv {
				o.byToken[a] = worker
			}
			o.mu.Unlock()
			return
		}
	}
}

// worker names the worker that wrote owner token tok (0: none seen).
func (o *owners) worker(tok string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.byToken[tok]
}

// holding is one sampled lock key with its holder.
type holding struct {
	key    string
	worker int
}

// sampler reads the keys matching --lock-pattern every interval with
// inspect's reads and derives watch's events from them.
type sampler struct {
	t       *trial
	client  redis.UniversalClient
	reader  *inspect.Reader
	differs map[string]*inspect.Differ
	// last is each key's holder at its last sample (a key that went away
	// names the worker that held it).
	last     map[string]int
	mu       sync.Mutex
	held     []holding
	events   []Event
	interval time.Duration
	// samples counts the samples tried; refused those Redis refused (SCAN
	// or a read denied by ACL or rename-command), the last one's reply in
	// refusal: the timeline is then blind, not empty.
	samples, refused int
	refusal          string
}

// run samples until ctx ends; a failed sample (Redis restarting) is skipped.
func (s *sampler) run(ctx context.Context) {
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	for {
		s.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (s *sampler) sample(ctx context.Context) {
	s.mu.Lock()
	s.samples++
	s.mu.Unlock()
	keys, err := s.scan(ctx)
	if err != nil {
		s.failed(err)
		return
	}
	at := time.Now()
	locks, err := s.reader.Read(ctx, s.client, keys)
	if err != nil {
		s.failed(err)
		return
	}
	done := time.Now()
	var held []holding
	holds := map[int]bool{}
	for _, l := range locks {
		if l.Exists && l.PTTLMS == -1 { // a counter or a fence key: locks expire
			continue
		}
		d := s.differs[l.Key]
		if d == nil {
			d = inspect.NewDiffer(inspect.WatchOptions{})
			s.differs[l.Key] = d
		}
		smp := inspect.SampleOf(l, at)
		smp.Done = done
		w := s.last[l.Key]
		if l.Exists {
			w = s.t.owners.worker(smp.Owner)
			held = append(held, holding{l.Key, w})
			holds[w] = true
		}
		s.last[l.Key] = w
		for _, e := range d.Next(smp) {
			if e.Event == inspect.EventFree { // a key's first sample: nothing happened
				continue
			}
			s.add(Event{At: e.At, AtMS: at.Sub(s.t.start).Milliseconds(), Key: e.Key, Event: e.Event, Worker: w, Fence: e.Fence, PTTLMS: e.PTTLMS, Detail: e.Message})
		}
	}
	for i := 1; i <= s.t.opts.Workers; i++ {
		s.t.lanes.set(i, laneHolds, holds[i])
	}
	s.mu.Lock()
	s.held = held
	s.mu.Unlock()
}

// scan lists the keys matching the pattern, plus the keys seen before (a
// key that went away still gets its EXPIRED or RELEASED).
func (s *sampler) scan(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var keys []string
	for k := range s.differs {
		seen[k] = true
		keys = append(keys, k)
	}
	var cursor uint64
	for {
		page, next, err := s.client.Scan(ctx, cursor, s.t.opts.LockPattern, 1000).Result()
		if err != nil {
			return nil, err
		}
		for _, k := range page {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		if cursor = next; cursor == 0 {
			return keys, nil
		}
	}
}

// failed counts a sample Redis refused. A connection error or LOADING (a
// restart nemesis) is not a refusal: the next sample may work.
func (s *sampler) failed(err error) {
	var re redis.Error
	if !errors.As(err, &re) || strings.HasPrefix(re.Error(), "LOADING") {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused++
	s.refusal = re.Error()
}

// blind says how much of the timeline Redis refused ("" none of it).
func (s *sampler) blind() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused == 0 {
		return ""
	}
	return fmt.Sprintf("partial: Redis refused %d of %d samples of the lock timeline (%s): lock events and %s could not be seen; allow SCAN and the reads of inspect on --lock-pattern", s.refused, s.samples, s.refusal, history.CodeFenceBackwards)
}

func (s *sampler) add(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

// holders returns the lock keys held at the last sample and their workers.
func (s *sampler) holders() []holding {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]holding(nil), s.held...)
}

// timeline returns the events in time order.
func (s *sampler) timeline() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event{}, s.events...)
}
