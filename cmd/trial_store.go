package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/lockctl/lockctl/lockcore"
	"github.com/lockctl/lockctl/trial"
	"github.com/lockctl/lockctl/trial/storeapi"
	"github.com/spf13/cobra"
)

// maxSchemaBytes bounds a --schema file (16 MiB): a schema with seed rows,
// not a data dump. A larger file is refused whole: a cut statement could
// run as another (DELETE ... WHERE cut to DELETE).
const maxSchemaBytes = 16 << 20

// trialStore is the --store setting of a trial: the server, the schema's
// text, the history and check queries, and --keep.
type trialStore struct {
	URL, Schema, History, Check string
	Keep                        bool
	// QueryTimeout bounds the history and check queries, before the
	// workers start and after they stop (--query-timeout).
	QueryTimeout time.Duration
	// warnPassword: --store itself holds a password, which ps shows; said
	// once the server has answered (storePasswordWarning).
	warnPassword bool
	// judgeNote is store's JudgeNote of the last run, for its notes.
	judgeNote string
}

// storePasswordEnv holds the --store server's password, for a --store URL
// that names only the user: unlike the flag, no process list shows it.
const storePasswordEnv = "LOCKCTL_STORE_PASSWORD"

// storePasswordWarning is --store's passwordFlagWarning.
const storePasswordWarning = "lockctl: warning: a password in --store on the command line may not be safe: a process list shows it; " +
	"give it in " + storePasswordEnv + " instead\n"

// withStorePassword puts pw into a postgres:// or mysql:// URL that names
// no password (as user:pw@); other URLs (sqlite:) come back as they are.
func withStorePassword(raw, pw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	name := ""
	if u.User != nil {
		name = u.User.Username()
	}
	u.User = url.UserPassword(name, pw)
	return u.String()
}

// storeFlags reads --schema and checks the database flags (exit 2 on bad
// input): none given empty, each needs --store.
func (v *trialFlags) storeFlags(f *Factory, cmd *cobra.Command, opts *TrialOptions) error {
	for _, name := range []string{"store", "schema", "history", "check"} {
		// An empty --store would run the whole trial without the database asked for.
		if fl := cmd.Flags().Lookup(name); fl.Changed && fl.Value.String() == "" {
			return emptyFlagError(name)
		}
	}
	for _, name := range []string{"schema", "history", "check", "keep", "query-timeout"} {
		if cmd.Flags().Changed(name) && v.store == "" {
			return usageErrorf("--%s needs --store (the scratch database it applies to)", name)
		}
	}
	if v.store == "" {
		return nil
	}
	raw := v.store
	warn := len(storeSecrets(raw)) > 0
	if pw := f.IO.getenv(storePasswordEnv); pw != "" && !warn {
		raw = withStorePassword(raw, pw)
	}
	f.secrets = append(f.secrets, storeSecrets(raw)...)
	qt, err := lockcore.ParsePositiveDuration(v.queryTimeout)
	if err != nil {
		return usageErrorf("query-timeout %s", err)
	}
	st := &trialStore{URL: raw, History: v.history, Check: v.check, Keep: v.keep, QueryTimeout: qt, warnPassword: warn}
	opts.Trial.JudgeTimeout = qt
	if v.schema != "" {
		b, err := readInputFile("schema file", v.schema, maxSchemaBytes+1)
		if err != nil {
			return err
		}
		if len(b) > maxSchemaBytes {
			return usageErrorf("schema file %q is over %d bytes (16 MiB); load bulk data from the worker or split it", v.schema, maxSchemaBytes)
		}
		st.Schema = string(b)
	}
	opts.Store = st
	return nil
}

// storeSecrets are the passwords in a --store URL: user:PASSWORD@ and a
// password= parameter. Unlike a Redis URL's (urlSecrets), a userinfo with
// no colon is the user name, not a password: masking "postgres" would
// blank the scheme and the database name out of every error.
func storeSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return urlSecrets(raw)
	}
	var out []string
	if pw, ok := u.User.Password(); ok && pw != "" {
		out = append(out, pw, url.UserPassword("", pw).String()[1:])
	}
	for _, pw := range u.Query()["password"] {
		if pw != "" {
			out = append(out, pw, url.QueryEscape(pw))
		}
	}
	return out
}

// open creates the scratch database for one run and applies the schema; it
// sets the workers' DATABASE_URL and the judge in o, and returns the drop
// to call after the run (with --keep it names the database on errOut
// instead) and the database's report for the result.
func (st *trialStore) open(ctx context.Context, o *trial.Options, errOut io.Writer) (func(), *trial.StoreReport, error) {
	s, err := storeapi.Open(ctx, st.URL)
	if err != nil {
		return nil, nil, storeError(err)
	}
	if st.warnPassword {
		st.warnPassword = false // once, not once per --runs
		fmt.Fprint(errOut, storePasswordWarning)
	}
	scheme, _, _ := strings.Cut(st.URL, ":")
	st.judgeNote = s.JudgeNote()
	rep := &trial.StoreReport{Scheme: strings.ToLower(scheme), Name: s.Name(), Kept: st.Keep, History: st.History != "", Check: st.Check != ""}
	drop := func() {
		if st.Keep {
			fmt.Fprintf(errOut, "lockctl: kept the scratch database %s\n", s.Name())
			return
		}
		if err := s.Drop(ctx); err != nil {
			fmt.Fprintf(errOut, "lockctl: %v\n", err)
		}
	}
	if st.Schema != "" {
		if err := s.ApplySchema(ctx, st.Schema); err != nil {
			drop()
			return nil, nil, storeError(fmt.Errorf("schema %w", err))
		}
	}
	err = st.timed(ctx, func(ctx context.Context) error { return s.CheckQueries(ctx, st.History, st.Check) })
	if err != nil {
		drop()
		return nil, nil, err
	}
	o.DatabaseURL = s.URL()
	o.Judge = func(ctx context.Context) ([]trial.Violation, error) {
		var vs []storeapi.Violation
		err := st.timed(ctx, func(ctx context.Context) (err error) {
			vs, err = s.Judge(ctx, st.History, st.Check)
			return err
		})
		if err != nil {
			return nil, err
		}
		out := make([]trial.Violation, 0, len(vs))
		for _, v := range vs {
			out = append(out, trial.Violation{Code: v.Code, Detail: v.Detail, Rows: v.Rows, Fence: v.Fence, Key: v.Key, Resource: v.Resource})
		}
		return out, nil
	}
	return drop, rep, nil
}

// timed runs the history and check queries (fn) within st.QueryTimeout:
// a query still running then is ended (the drivers cancel it on the
// server) and refused in one line naming the bound, exit 2.
func (st *trialStore) timed(ctx context.Context, fn func(context.Context) error) error {
	qctx, cancel := context.WithTimeout(ctx, st.QueryTimeout)
	defer cancel()
	err := fn(qctx)
	if err != nil && ctx.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded) {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("the history and check queries ran over --query-timeout %s and were ended", st.QueryTimeout)}
	}
	if err != nil {
		return storeError(err)
	}
	return nil
}

// storeError is exit 2 for what the user gave (a scheme, a schema, a
// query), else exit 3: the database server cannot be reached.
func storeError(err error) error {
	if errors.Is(err, storeapi.ErrInput) {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	return &ExitError{Code: ExitRedis, Err: err}
}
