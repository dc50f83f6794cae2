package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/lockctl/lockctl/trial"
	"github.com/lockctl/lockctl/trial/store"
	"github.com/spf13/cobra"
)

// maxSchemaBytes bounds a --schema file: a schema, not a data dump.
const maxSchemaBytes = 1 << 20

// trialStore is the --store setting of a trial: the server, the schema's
// text, the history and check queries, and --keep.
type trialStore struct {
	URL, Schema, History, Check string
	Keep                        bool
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
	for _, name := range []string{"schema", "history", "check", "keep"} {
		if cmd.Flags().Changed(name) && v.store == "" {
			return usageErrorf("--%s needs --store (the scratch database it applies to)", name)
		}
	}
	if v.store == "" {
		return nil
	}
	f.secrets = append(f.secrets, storeSecrets(v.store)...)
	st := &trialStore{URL: v.store, History: v.history, Check: v.check, Keep: v.keep}
	if v.schema != "" {
		b, err := readInputFile("schema file", v.schema, maxSchemaBytes)
		if err != nil {
			return err
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
	s, err := store.Open(ctx, st.URL)
	if err != nil {
		return nil, nil, storeError(err)
	}
	scheme, _, _ := strings.Cut(st.URL, ":")
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
	if err := s.CheckQueries(ctx, st.History, st.Check); err != nil {
		drop()
		return nil, nil, storeError(err)
	}
	o.DatabaseURL = s.URL()
	o.Judge = func(ctx context.Context) ([]trial.Violation, error) {
		vs, err := s.Judge(ctx, st.History, st.Check)
		if err != nil {
			return nil, storeError(err)
		}
		out := make([]trial.Violation, 0, len(vs))
		for _, v := range vs {
			out = append(out, trial.Violation{Code: v.Code, Detail: v.Detail, Rows: v.Rows, Fence: v.Fence, Key: v.Key, Resource: v.Resource})
		}
		return out, nil
	}
	return drop, rep, nil
}

// storeError is exit 2 for what the user gave (a scheme, a schema, a
// query), else exit 3: the database server cannot be reached.
func storeError(err error) error {
	if errors.Is(err, store.ErrInput) {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	return &ExitError{Code: ExitRedis, Err: err}
}
