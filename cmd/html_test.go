package cmd_test

import (
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/golden"
)

// The page of `-o html` for a run with a violation: its stable parts as a
// golden file (a simulation is deterministic: nothing to mask), and no
// request to anywhere in its markup.
func TestSimulateHTMLGolden(t *testing.T) {
	t.Parallel()
	out, stderr, code := execute(t, "simulate", "stale-writer", "--fencing=false", "-o", "html")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden.Assert(t, []byte(out), ".html")
	assertNoRemoteRefs(t, out)
}

// Every string of a run is the user's (a scenario file's name and notes, a
// worker's command, a key): the page escapes it, in text and in attributes.
func TestSimulateHTMLEscapes(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "hostile.yaml")
	scenario := `name: "<script>alert(1)</script> & \"q\""
policy: {lease: 30s}
guards: {fencing: false}
events:
  - {at: 0s, actor: A, do: acquire}
  - {at: 1s, actor: A, do: pause, for: 37s, note: "</title><img src=http://example.invalid/x onerror=alert(2)>"}
  - {at: 31s, actor: B, do: acquire}
  - {at: 33s, actor: B, do: write}
  - {at: 38s, actor: A, do: write}
`
	if err := os.WriteFile(file, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := execute(t, "simulate", "--file", file, "-o", "html")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, raw := range []string{"<script", "<img"} {
		if strings.Contains(out, raw) {
			t.Errorf("the page has %q unescaped", raw)
		}
	}
	for _, tag := range htmlTag.FindAllString(out, -1) {
		if strings.Contains(tag, "onerror") {
			t.Errorf("a tag has the scenario's handler: %s", tag)
		}
	}
	if !strings.Contains(out, "<title>scenario &lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;q&#34;: unsafe</title>") {
		t.Errorf("the title does not name the escaped scenario and its verdict:\n%s", out[:min(len(out), 800)])
	}
	assertNoRemoteRefs(t, out)
}

// remoteRef is a reference that would make a browser fetch: a src, href,
// action, srcset, poster or data attribute, a CSS url() or @import, to any
// scheme but a fragment or data:.
var remoteRef = regexp.MustCompile(`(?i)(\b(src|href|action|srcset|poster|data|formaction|background)\s*=\s*["']?\s*|url\(\s*["']?\s*|@import\s+["']?)([a-z][a-z0-9+.-]*:|//)`)

// htmlTag is a start tag with its attributes; srcdoc the attribute holding
// an embedded page.
var (
	htmlTag = regexp.MustCompile(`<[a-zA-Z][^>]*>`)
	srcdoc  = regexp.MustCompile(`srcdoc="([^"]*)"`)
)

// assertNoRemoteRefs fails on a reference out of page in its tags and its
// style element, and in those of the pages it embeds (srcdoc, escaped once).
func assertNoRemoteRefs(t *testing.T, page string) {
	t.Helper()
	pages := []string{page}
	for _, m := range srcdoc.FindAllStringSubmatch(page, -1) {
		pages = append(pages, html.UnescapeString(m[1]))
	}
	for _, p := range pages {
		markup := htmlTag.FindAllString(p, -1)
		if i, j := strings.Index(p, "<style>"), strings.Index(p, "</style>"); i >= 0 && j > i {
			markup = append(markup, p[i:j])
		}
		for _, text := range markup {
			for _, m := range remoteRef.FindAllString(text, -1) {
				if !strings.HasSuffix(strings.ToLower(m), "data:") {
					t.Errorf("the page refers out of itself: %q", m)
				}
			}
		}
	}
}

// TestHTMLReportInChromium opens `-o html` pages of a simulation and of a
// trial with violations in Debian's headless chromium, name resolution
// off: the DOM after the scripts ran shows the verdict, the violation
// codes and the holders; the console shows no Content-Security-Policy
// refusal (nothing tried to load) and no script error; the net log shows
// no request made for the page (chromium's own background requests, made
// for no document, are not the page's).
func TestHTMLReportInChromium(t *testing.T) {
	t.Parallel()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: apt-get install chromium (.ci/run installs it)")
	}
	lostUpdate, err := filepath.Abs("../testdata/trial/lostupdate.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"simulate", []string{"simulate", "stale-writer", "--fencing=false", "-o", "html"},
			[]string{"scenario stale-writer", "STALE_WRITE_ACCEPTED", ">A</text>", ">B</text>", "the store accepted A's write with fence 33"}},
		{"trial", []string{"trial", "--duration", "12s", "--fault-duration", "1800ms", "--nemesis", "pause", "--seed", "1", "-o", "html", "--", lostUpdate},
			[]string{"trial of " + lostUpdate, "NOT_LINEARIZABLE", ">w1</text>", ">w2</text>", ">w3</text>", "the smallest failing part", `<iframe title="Porcupine visualization"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			code, out, stderr := run(t, c.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			assertNoRemoteRefs(t, out)
			dir := t.TempDir()
			page := filepath.Join(dir, "report.html")
			if err := os.WriteFile(page, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			dom, console, requests := openInChromium(t, chromium, dir, page)
			if !strings.Contains(dom, `id="verdict">unsafe</span>`) {
				t.Errorf("the rendered page shows no unsafe verdict:\n%s", dom)
			}
			for _, w := range c.want {
				if !strings.Contains(dom, html.EscapeString(w)) && !strings.Contains(dom, w) {
					t.Errorf("the rendered page lacks %q", w)
				}
			}
			for _, l := range console {
				if strings.Contains(l, "Content Security Policy") || strings.Contains(l, "Uncaught") {
					t.Errorf("console: %s", l)
				}
			}
			for _, r := range requests {
				t.Errorf("the page made a request: %s", r)
			}
		})
	}
}

// openInChromium loads page in headless chromium with every host name
// unresolvable and every request proxied to a closed port, and returns the DOM once the page has loaded, the console
// lines chromium logged, and the URLs of the requests made on a
// document's behalf (its net log's URL_REQUEST_START_JOB events with an
// initiator: chromium's own have "not an origin").
func openInChromium(t *testing.T, chromium, dir, page string) (string, []string, []string) {
	t.Helper()
	netLog := filepath.Join(dir, "netlog.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
		// No name resolves, and an address literal goes to a closed loopback port.
		"--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--enable-logging=stderr", "--v=0", "--log-net-log="+netLog, "--dump-dom", "file://"+page)
	var stderr strings.Builder
	c.Stderr = &stderr
	dom, err := c.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", chromium, err, stderr.String())
	}
	var console []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, ":CONSOLE") {
			console = append(console, l)
		}
	}
	raw, err := os.ReadFile(netLog)
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Constants struct {
			LogEventTypes map[string]int `json:"logEventTypes"`
		} `json:"constants"`
		Events []struct {
			Type   int `json:"type"`
			Params struct {
				URL       string `json:"url"`
				Initiator string `json:"initiator"`
			} `json:"params"`
		} `json:"events"`
	}
	if err := json.Unmarshal(raw, &log); err != nil {
		t.Fatalf("net log %s: %v", netLog, err)
	}
	start, ok := log.Constants.LogEventTypes["URL_REQUEST_START_JOB"]
	if !ok {
		t.Fatal("the net log names no URL_REQUEST_START_JOB event type")
	}
	var requests []string
	for _, e := range log.Events {
		if e.Type == start && e.Params.URL != "" && e.Params.Initiator != "not an origin" && !strings.HasPrefix(e.Params.URL, "file:") {
			requests = append(requests, e.Params.URL+" (initiator "+e.Params.Initiator+")")
		}
	}
	return string(dom), console, requests
}
