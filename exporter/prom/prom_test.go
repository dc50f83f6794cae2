package prom_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/exporter"
	"github.com/lockctl/lockctl/exporter/prom"
	"github.com/lockctl/lockctl/inspect"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/lockctl/lockctl/lockcore"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// start runs an exporter over the test's keys until the test ends and
// returns its HTTP server.
func start(t *testing.T, keys ...string) *httptest.Server {
	t.Helper()
	c := redistest.Shared(t).Client(t)
	exp := prom.New(exporter.Options{Pattern: redistest.Key(t, "*"), Keys: keys, Interval: 200 * time.Millisecond,
		RenewBound: time.Hour, Reader: &inspect.Reader{Light: true}, Client: c})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- exp.Run(ctx, nil) }()
	srv := httptest.NewServer(exp.Handler())
	t.Cleanup(func() {
		srv.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run after cancel: %v, want nil", err)
		}
	})
	return srv
}

func get(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %s", u, resp.Status, b)
	}
	return string(b)
}

// scrapeUntil scrapes /metrics until it has every line of want.
func scrapeUntil(t *testing.T, srv *httptest.Server, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		body := get(t, srv.URL+"/metrics")
		missing := ""
		for _, w := range want {
			if !strings.Contains(body, w+"\n") {
				missing = w
				break
			}
		}
		if missing == "" {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in /metrics after 30s:\n%s", missing, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMetrics checks the metrics of locks with a finding, a takeover and
// the per-key series of a --key.
func TestMetrics(t *testing.T) {
	t.Parallel()
	c := redistest.Shared(t).Client(t)
	ctx := context.Background()
	k := func(s string) string { return redistest.Key(t, s) }
	c.Set(ctx, k("a"), "owner-1", time.Minute)
	c.Set(ctx, k("b"), "owner-2", 0) // NO_TTL and NOT_A_LOCK
	srv := start(t, k("a"))
	p := fmt.Sprintf("pattern=%q", redistest.Key(t, "*"))
	scrapeUntil(t, srv,
		"lockctl_up 1",
		`lockctl_findings{code="NO_TTL",`+p+`,severity="error"} 1`,
		`lockctl_locks{layout="unknown",`+p+`} 2`,
		`lockctl_lock_ttl_seconds_count{`+p+`} 1`,
		`lockctl_lock_ttl_seconds_bucket{`+p+`,le="60"} 1`,
		`lockctl_lock_ttl_seconds_bucket{`+p+`,le="30"} 0`,
		`lockctl_lock_held_seconds_bucket{`+p+`,le="3600"} 2`,
		`lockctl_key_exists{key="`+k("a")+`"} 1`,
	)
	c.Set(ctx, k("a"), "owner-3", time.Minute)
	c.Del(ctx, k("b"))
	body := scrapeUntil(t, srv,
		`lockctl_events_total{event="takeover",`+p+`} 1`,
		`lockctl_events_total{event="released",`+p+`} 1`,
		`lockctl_locks{layout="unknown",`+p+`} 1`,
	)
	if strings.Contains(body, "\nlockctl_findings{code=\"NO_TTL\"") {
		t.Errorf("NO_TTL still exported after its key went:\n%s", body)
	}
	if got := get(t, srv.URL+"/healthz"); got != "ok\n" {
		t.Errorf("/healthz = %q, want ok", got)
	}
}

// requireTool finds a Prometheus binary; without it the test fails, since
// a skip would hide a CI that lost it (.ci/run installs it).
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: apt-get install prometheus (.ci/run installs it): %v", name, err)
	}
	return p
}

// TestRulesPromtool runs promtool's rule tests (docs/monitoring/lockctl-rules.test.yml)
// on the rules --print-rules prints, and checks the copy in docs/ is theirs.
func TestRulesPromtool(t *testing.T) {
	t.Parallel()
	promtool := requireTool(t, "promtool")
	rules := exporter.Rules(lockcore.DefaultRenewBound)
	docs := filepath.Join("..", "..", "docs", "monitoring")
	if b, err := os.ReadFile(filepath.Join(docs, "lockctl-rules.yml")); err != nil || string(b) != rules {
		t.Errorf("docs/monitoring/lockctl-rules.yml is not what --print-rules prints (err %v); run: go run . exporter --print-rules > docs/monitoring/lockctl-rules.yml", err)
	}
	dir := t.TempDir()
	test, err := os.ReadFile(filepath.Join(docs, "lockctl-rules.test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"lockctl-rules.yml": rules, "lockctl-rules.test.yml": string(test)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "lockctl-rules.yml"}, {"test", "rules", "lockctl-rules.test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// A renewal bound of 2h moves the held alert's bucket with it.
	if r := exporter.Rules(2 * time.Hour); !strings.Contains(r, `le="7200"`) || !strings.Contains(r, "the 2h renewal bound") {
		t.Errorf("rules for a 2h bound lack le=\"7200\":\n%s", r)
	}
}

// TestPrometheusScrapes runs a real Prometheus server that scrapes the
// exporter and asks its HTTP API for lockctl_locks.
func TestPrometheusScrapes(t *testing.T) {
	t.Parallel()
	prom := requireTool(t, "prometheus")
	c := redistest.Shared(t).Client(t)
	c.Set(context.Background(), redistest.Key(t, "a"), "owner-1", time.Minute)
	srv := start(t)
	target := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	cfg := fmt.Sprintf("global: {scrape_interval: 1s}\nscrape_configs:\n  - job_name: lockctl\n    static_configs: [{targets: [%q]}]\n", target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(prom, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	q := "http://" + addr + "/api/v1/query?query=" + url.QueryEscape(fmt.Sprintf(`lockctl_locks{job="lockctl",pattern=%q}`, redistest.Key(t, "*")))
	deadline := time.Now().Add(90 * time.Second)
	for {
		if v, ok := queryValue(q); ok && v == "1" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus at %s had no lockctl_locks = 1 after 90s; its log:\n%s", addr, logs.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// queryValue is the first sample's value of an instant query, if any.
func queryValue(u string) (string, bool) {
	resp, err := http.Get(u)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&r) != nil || len(r.Data.Result) == 0 || len(r.Data.Result[0].Value) != 2 {
		return "", false
	}
	s, ok := r.Data.Result[0].Value[1].(string)
	return s, ok
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestDashboardMetrics checks that every lockctl_* metric the Grafana
// dashboard and the rules query is one the exporter serves.
func TestDashboardMetrics(t *testing.T) {
	t.Parallel()
	redistest.Shared(t).Client(t).Set(context.Background(), redistest.Key(t, "a"), "owner-1", 0) // a finding
	body := scrapeUntil(t, start(t), "lockctl_up 1")
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "monitoring", "lockctl-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("lockctl-dashboard.json: %v", err)
	}
	exprs := []string{exporter.Rules(lockcore.DefaultRenewBound)}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	name := regexp.MustCompile(`lockctl_[a-z_]+`)
	for _, e := range exprs {
		for _, m := range name.FindAllString(e, -1) {
			family := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_count"), "_sum")
			if !strings.Contains(body, "# TYPE "+family+" ") {
				t.Errorf("%s is queried but not served", m)
			}
		}
	}
}
