package trial

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/owner"
	"github.com/lockctl/lockctl/internal/redisproc"
	"github.com/lockctl/lockctl/internal/supervise"
)

// ErrNoRedisServer: the scratch server needs redis-server on PATH.
var ErrNoRedisServer = errors.New("redis-server not found on PATH: a trial starts a scratch Redis; install Debian's package redis-server (apt-get install redis-server), or give --redis URL --yes")

// redisDirPrefix starts the scratch server's directory in the temporary
// directory: lockctl-trial-redis-<owner>-<random>, so that DropOrphans can
// tell whose it is.
const redisDirPrefix = "lockctl-trial-redis-"

// startScratch starts the scratch redis-server: a free 127.0.0.1 port, no
// persistence, a directory of its own named after this lockctl, its own
// process group. It waits up
// to 10s until the server accepts connections, and returns
// ErrNoRedisServer when the binary is missing.
func startScratch(ctx context.Context) (*redisproc.Server, error) {
	s, err := redisproc.Launch(ctx, redisproc.Options{Args: redisproc.BaseArgs, DirPattern: redisDirPrefix + owner.Self().String() + "-", Attr: supervise.GroupAttr()})
	switch {
	case errors.Is(err, redisproc.ErrNotFound):
		return nil, ErrNoRedisServer
	case err != nil:
		return nil, fmt.Errorf("scratch %w", err)
	}
	return s, nil
}

// restartWait is how long the restart nemesis waits for SHUTDOWN NOSAVE
// before it kills the scratch server.
const restartWait = 5 * time.Second
