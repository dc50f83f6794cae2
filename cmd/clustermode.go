package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A server that is not the kind the settings name (issue 19 §5): a cluster
// node behind a plain redis:// URL, a cluster URL on a standalone server, a
// cluster that is down or a node that serves no slots. Each is one line
// saying what to use instead; docs/cluster.md gives each message and why its
// exit code is 2 or 3.

// clusterModeError is a refusal of that kind. Code is ExitUsage when the
// settings must change (a cluster URL on a standalone server, a database
// number on a cluster, a MOVED that could not be followed) and ExitRedis
// when the cluster itself is not serving (CLUSTERDOWN, a node with no slots).
type clusterModeError struct {
	Code int
	Msg  string
}

func (e *clusterModeError) Error() string { return e.Msg }

// clusterUse is the advice every refusal ends with.
func clusterUse(addr string) string {
	return fmt.Sprintf("use --cluster or redis+cluster://%s", addr)
}

// clusterRefusal turns a server error about cluster mode into a
// *clusterModeError, or returns nil for any other error. addr is the
// (first) address dialled.
func clusterRefusal(err error, addr string) *clusterModeError {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "cluster support disabled"):
		return &clusterModeError{ExitUsage, fmt.Sprintf("%s is not a cluster node (%q): connect with redis://%s, without --cluster or redis+cluster://", addr, msg, addr)}
	case strings.Contains(msg, "SELECT is not allowed in cluster mode"):
		return &clusterModeError{ExitUsage, fmt.Sprintf("%s is a cluster node, and a cluster has only database 0: drop the database number from the URL and %s", addr, clusterUse(addr))}
	case strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK "):
		return &clusterModeError{ExitUsage, fmt.Sprintf("%s is a cluster node (it answered %q, and lockctl could not ask it INFO cluster to follow on its own): %s", addr, msg, clusterUse(addr))}
	case strings.Contains(msg, "CLUSTERDOWN"):
		return &clusterModeError{ExitRedis, fmt.Sprintf("the cluster is down (%q): some hash slots are not served; redis-cli -h HOST -p PORT cluster info on a node says which (cluster_state, cluster_slots_ok)", msg)}
	}
	return nil
}

// noSlotsRefusal is the refusal for a cluster client seeded with a node
// that serves no slots (its CLUSTER SLOTS reply is empty).
func noSlotsRefusal(addr string) *clusterModeError {
	return &clusterModeError{ExitRedis, fmt.Sprintf("%s is a cluster node that serves no hash slots (it has not joined a cluster, or was removed from one): point --redis at a node of a working cluster, or assign slots (redis-cli --cluster create / fix)", addr)}
}

// clusterEnabled asks a standalone client's server INFO cluster (read-only)
// and reports whether it is a cluster node. A server that refuses INFO (an
// ACL without @dangerous) is taken as standalone: its first MOVED is then
// refused by clusterHook.
func clusterEnabled(ctx context.Context, c redis.UniversalClient) bool {
	info, err := c.Info(ctx, "cluster").Result()
	return err == nil && strings.Contains(info, "cluster_enabled:1")
}

// clusterHook turns a MOVED or ASK reply on a standalone client, and a
// CLUSTERDOWN reply on any client, into the one-line refusal
// (clusterRefusal): go-redis reports them bare ("MOVED 12832
// 127.0.0.1:7103"), which names neither the cause nor the fix. A cluster
// client follows MOVED and ASK itself.
type clusterHook struct {
	addr    string
	cluster bool
}

func (clusterHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h clusterHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if r := h.refusal(cmd.Err()); r != nil {
			cmd.SetErr(r)
			return r
		}
		return err
	}
}

func (h clusterHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		var first error
		for _, c := range cmds {
			if r := h.refusal(c.Err()); r != nil {
				c.SetErr(r)
				if first == nil {
					first = r
				}
			}
		}
		if first != nil {
			return first
		}
		return err
	}
}

// refusal returns the *clusterModeError for err, or nil.
func (h clusterHook) refusal(err error) error {
	var ce *clusterModeError
	if err == nil || errors.As(err, &ce) {
		return nil
	}
	msg := err.Error()
	moved := strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
	if (moved && !h.cluster) || strings.HasPrefix(msg, "CLUSTERDOWN") {
		return clusterRefusal(err, h.addr)
	}
	return nil
}
