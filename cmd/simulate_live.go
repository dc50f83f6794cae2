package cmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/lockcore"
	"github.com/lockctl/lockctl/simulate"
)

// The live run of `lockctl simulate --redis`: the scenario against a real
// Redis, printed beside the model's verdict.

// SimulateLiveResult is the JSON shape of a live run: the model's result and
// the live one side by side, whether their verdicts agree, and whether they
// found the same violation codes (simulate.ViolationCodes; times differ by
// design).
type SimulateLiveResult struct {
	Model     simulate.Result     `json:"model"`
	Live      simulate.LiveResult `json:"live"`
	Agrees    bool                `json:"agrees"`
	SameCodes bool                `json:"same_codes"`
}

// simulateLive runs the scenario against Redis and prints both verdicts;
// --expect judges the live verdict.
func simulateLive(opts *SimulateOptions, model simulate.Result) error {
	if runFormat(opts.Printer.Format) {
		return usageErrorf("output %q is not available in live mode; use table, json or yaml", opts.Printer.Format)
	}
	conn, err := opts.Conn()
	if err != nil {
		return err
	}
	defer conn.Close()
	if conn.Cluster && opts.Prefix != "" {
		k := lockcore.Keys{Lock: opts.Prefix + "lock", Fence: opts.Prefix + "fence"}
		if err := k.SameSlot(); err != nil {
			return usageErrorf("prefix %q in a Redis Cluster: %v; put a hash tag in it, e.g. lockctl:sim:{mine}:", opts.Prefix, err)
		}
	}
	ctx := opts.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	live, err := simulate.RunLive(ctx, opts.Scenario, simulate.LiveOptions{Client: conn.Client, TimeScale: opts.TimeScale, Prefix: opts.Prefix})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if ke := (*simulate.KeyExistsError)(nil); errors.As(err, &ke) {
			return usageErrorf("prefix %q: %v; choose another --prefix", opts.Prefix, err)
		}
		return redisError(conn.URL, err)
	}
	res := compareLive(model, live)
	err = opts.Printer.Print(res, func(t *TableView) {
		st := t.Styles()
		t.Title(fmt.Sprintf("scenario %s: model vs live (Redis %s, time scale %s, keys under %s, deleted at the end)",
			oneLineText(model.Scenario), conn.URL, strconv.FormatFloat(live.TimeScale, 'g', -1, 64), oneLineText(live.Prefix)))
		t.Line("")
		_, rows := timelineRows(simulate.Result{Events: live.Events})
		t.Table([]string{"time", "actor", "event", "ok", "note"}, cut(rows, 4, 6))
		t.Line("")
		t.Line("model verdict: %s", st.Level(model.Verdict))
		for _, v := range model.Violations {
			t.Line("  %s at %s (%s): %s", v.Code, fmtMS(v.AtMS), v.Actor, v.Message)
		}
		t.Line("live verdict:  %s", st.Level(live.Verdict))
		for _, v := range live.Violations {
			t.Line("  %s at ~%s (%s): %s", v.Code, fmtMS(v.AtMS), v.Actor, v.Message)
		}
		t.Line("%s", liveAgreement(st, res))
	})
	if err != nil {
		return err
	}
	return expectVerdict(opts.Expect, live.Verdict)
}

// compareLive puts the model's result and the live one side by side.
func compareLive(model simulate.Result, live simulate.LiveResult) SimulateLiveResult {
	return SimulateLiveResult{Model: model, Live: live, Agrees: live.Verdict == model.Verdict,
		SameCodes: slices.Equal(simulate.ViolationCodes(model.Violations), simulate.ViolationCodes(live.Violations))}
}

// liveAgreement is the last line of a live run's table: whether the model's
// and the live run's verdicts agree, then whether their violation codes do.
func liveAgreement(st *Styles, res SimulateLiveResult) string {
	const why = " (live timing is real: see the live timeline)"
	switch {
	case !res.Agrees:
		return st.Level("warning") + " the verdicts differ" + why
	case !res.SameCodes:
		return fmt.Sprintf("%s the verdicts agree, the violations differ: model: %s; live: %s%s", st.Level("warning"),
			codeList(simulate.ViolationCodes(res.Model.Violations)), codeList(simulate.ViolationCodes(res.Live.Violations)), why)
	}
	return st.Level("ok") + " the verdicts agree"
}

// codeList writes violation codes as "A, B", or "none".
func codeList(codes []string) string {
	if len(codes) == 0 {
		return "none"
	}
	return strings.Join(codes, ", ")
}

// cut keeps the first n columns of each row and the column at note.
func cut(rows [][]string, n, note int) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = append(append([]string{}, r[:n]...), r[note])
	}
	return out
}
