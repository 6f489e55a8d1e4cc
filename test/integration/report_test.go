// `otelprof report` in a real browser: headless Debian chromium loads the
// HTML the CLI wrote from real recordings of report_abc (alpha, beta and
// gamma_fn in the ratio the workload is given, on thread abc-main, and
// side_spin on thread abc-side) and the test reads the rendered page
// (--dump-dom after the page's script ran). The page keeps its view state
// in the URL's fragment (search, thread, ...), which is how the test sets
// them: the same code path as the page's own controls.
package integration

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// chromiumPath fails the test when the browser is missing: `make
// test-integration` and `make test-report` install it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not installed (make test-report installs it: apt-get install -y chromium): %v", err)
	}
	return p
}

func chromiumArgs(t *testing.T) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir(),
		"--virtual-time-budget=5000"}
}

// renderedPage is the DOM of page#fragment after its script ran.
func renderedPage(t *testing.T, page, fragment string) string {
	t.Helper()
	args := append(chromiumArgs(t), "--dump-dom", "file://"+page+"#"+fragment)
	cmd := exec.Command(chromiumPath(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := runWithTimeout(cmd, 90*time.Second); err != nil {
		t.Fatalf("chromium --dump-dom %s#%s: %v\n%s", page, fragment, err, errb.String())
	}
	dom := out.String()
	if !strings.Contains(dom, `data-rendered="1"`) {
		t.Fatalf("the page's script did not finish (no data-rendered on body) for #%s\n%.2000s", fragment, dom)
	}
	// The rendered elements only, not the scripts' text.
	if i := strings.Index(dom, "<script"); i >= 0 {
		dom = dom[:i]
	}
	return dom
}

func screenshot(t *testing.T, page, fragment, png string) {
	t.Helper()
	args := append(chromiumArgs(t), "--window-size=1400,1000", "--screenshot="+png, "file://"+page+"#"+fragment)
	cmd := exec.Command(chromiumPath(t), args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	b, err := os.ReadFile(png)
	if err != nil || len(b) < 1000 || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %d bytes, %v", png, len(b), err)
	}
	t.Logf("screenshot: %s", png)
}

func runWithTimeout(cmd *exec.Cmd, d time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		return <-done
	}
}

var (
	tagRe  = regexp.MustCompile(`<(div|tr|span)\b[^>]*>`)
	attrRe = regexp.MustCompile(`([a-z-]+)="([^"]*)"`)
)

type element map[string]string

// elements are the opening tags of the DOM with an attribute matching.
func elements(dom, has string) []element {
	var out []element
	for _, tag := range tagRe.FindAllString(dom, -1) {
		if !strings.Contains(tag, has) {
			continue
		}
		e := element{}
		for _, m := range attrRe.FindAllStringSubmatch(tag, -1) {
			e[m[1]] = m[2]
		}
		out = append(out, e)
	}
	return out
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

// widths sums the rendered width (% of the flamegraph) of the frames of
// each function; frames carry their style's width.
func widths(t *testing.T, dom string) map[string]float64 {
	t.Helper()
	w := map[string]float64{}
	re := regexp.MustCompile(`width:([0-9.]+)%`)
	for _, e := range elements(dom, `class="fr`) {
		m := re.FindStringSubmatch(e["style"])
		if m == nil {
			t.Fatalf("frame without a width: %v", e)
		}
		if !strings.Contains(e["class"], "anc") {
			w[e["data-name"]] += num(t, m[1])
		}
	}
	return w
}

func summaryTotal(t *testing.T, dom string) float64 {
	t.Helper()
	for _, e := range elements(dom, `id="summary"`) {
		return num(t, e["data-total"])
	}
	t.Fatalf("no summary in the page")
	return 0
}

// recordABC records report_abc running ratio with -F/-p/-o (perf's
// spellings); with seconds 0 it stops the recording with SIGTERM after
// stopAfter, as a user's Ctrl-C would. --report writes the page too.
func recordABC(t *testing.T, ratio string, seconds int, stopAfter time.Duration) (otlp, html string, pid int) {
	t.Helper()
	dir := t.TempDir()
	otlp, html = filepath.Join(dir, "abc.otlp"), filepath.Join(dir, "abc.html")
	wl := startWorkload(t, "report_abc", "30", ratio)
	pid = wl.Process.Pid
	args := []string{"-F", "999", "-p", strconv.Itoa(pid), "-o", otlp, "--report", html}
	if seconds > 0 {
		args = append(args, "-d", strconv.Itoa(seconds))
	}
	code, stderr := runRecord(t, func(cmd *exec.Cmd, line string) {
		if seconds == 0 && strings.Contains(line, "until Ctrl-C or SIGTERM") {
			time.AfterFunc(stopAfter, func() { _ = cmd.Process.Signal(syscall.SIGTERM) })
		}
	}, args...)
	if code != 0 {
		t.Fatalf("otelprof record %v: exit %d\n%s", args, code, stderr)
	}
	for _, p := range []string{otlp, html} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Fatalf("record did not write %s: %v\n%s", p, err, stderr)
		}
	}
	return otlp, html, pid
}

// The flamegraph's widths, the thread filter's totals, the search and the
// diff's signs, read from the page chromium rendered.
func TestReportInBrowser(t *testing.T) {
	requireRoot(t)
	chromiumPath(t)
	bin := buildDir(t)
	baseOTLP, baseHTML, pid := recordABC(t, "6:3:1", 5, 0)
	// The new side without a duration: SIGTERM ends it, the file and the
	// report are still written.
	newOTLP, _, _ := recordABC(t, "1:3:6", 0, 5*time.Second)

	// Known truth from the collector's own decoder: samples per thread.
	dec := decodeFile(t, baseOTLP)
	p := dec.ByPID(pid)
	if p == nil {
		t.Fatalf("no samples of report_abc (pid %d)", pid)
	}
	byThread := map[string]float64{}
	for _, s := range p.Samples {
		byThread[s.ThreadName]++
	}
	all := float64(dec.TotalSamples())
	main, side := byThread["abc-main"], byThread["abc-side"]
	t.Logf("samples: %v of %v (abc-main %v, abc-side %v)", len(p.Samples), all, main, side)
	if main < 400 || side < 100 {
		t.Fatalf("too few samples to judge 3 points (abc-main %v, abc-side %v): the workload did not run", main, side)
	}

	// Unfiltered: every sample; alpha is 60% of abc-main's share.
	dom := renderedPage(t, baseHTML, "")
	if got := summaryTotal(t, dom); got != all {
		t.Errorf("page total %v, the file has %v samples", got, all)
	}
	w := widths(t, dom)
	if want := 60 * main / all; math.Abs(w["alpha"]-want) > 3 {
		t.Errorf("unfiltered alpha width %.2f%%, want %.2f%% (60%% of abc-main's %.0f of %.0f samples)", w["alpha"], want, main, all)
	}

	// Filtered on abc-main: its samples only, alpha/beta/gamma 60/30/10.
	dom = renderedPage(t, baseHTML, "thread=abc-main")
	if got := summaryTotal(t, dom); got != main {
		t.Errorf("thread=abc-main: page total %v, the file has %v samples of abc-main", got, main)
	}
	w = widths(t, dom)
	for name, want := range map[string]float64{"alpha": 60, "beta": 30, "gamma_fn": 10} {
		if math.Abs(w[name]-want) > 3 {
			t.Errorf("thread=abc-main: %s width %.2f%%, want %.0f%% +- 3", name, w[name], want)
		}
	}
	if w["side_spin"] != 0 {
		t.Errorf("thread=abc-main still shows side_spin (%.2f%%)", w["side_spin"])
	}
	dom = renderedPage(t, baseHTML, "thread=abc-side")
	if got := summaryTotal(t, dom); got != side {
		t.Errorf("thread=abc-side: page total %v, want %v", got, side)
	}

	// Time range (seconds from the first sample's, inclusive) and frame
	// type (a frame of that type on the stack), against pdata's samples.
	first := uint64(math.MaxUint64)
	for _, pr := range dec.Processes {
		for _, s := range pr.Samples {
			if s.TimeNs/1e9 < first {
				first = s.TimeNs / 1e9
			}
		}
	}
	var early, inKernel float64
	for _, pr := range dec.Processes {
		for _, s := range pr.Samples {
			if s.TimeNs/1e9-first <= 1 {
				early++
			}
			for _, f := range s.Frames {
				if f.Type == "kernel" {
					inKernel++
					break
				}
			}
		}
	}
	if early == 0 || early == all {
		t.Fatalf("the first two seconds hold %v of %v samples: nothing to filter", early, all)
	}
	if got := summaryTotal(t, renderedPage(t, baseHTML, "from=0&to=1")); got != early {
		t.Errorf("from=0&to=1: page total %v, want %v", got, early)
	}
	if got := summaryTotal(t, renderedPage(t, baseHTML, "ftype=kernel")); got != inKernel {
		t.Errorf("ftype=kernel: page total %v, want %v samples with a kernel frame", got, inKernel)
	}

	// Search: alpha's frames highlighted, no other; the sum is alpha's share.
	dom = renderedPage(t, baseHTML, "thread=abc-main&search=alpha")
	hits := 0
	for _, e := range elements(dom, `class="fr`) {
		hit := strings.Contains(" "+e["class"]+" ", " hit ")
		if hit != (e["data-name"] == "alpha") {
			t.Errorf("search=alpha: frame %q highlighted=%v", e["data-name"], hit)
		}
		if hit {
			hits++
		}
	}
	if hits == 0 {
		t.Errorf("search=alpha highlighted nothing")
	}
	for _, e := range elements(dom, `id="search-result"`) {
		if got := num(t, e["data-share"]); math.Abs(got-60) > 3 || math.Abs(got-widths(t, dom)["alpha"]) > 0.05 {
			t.Errorf("search=alpha sums %.2f%%, want alpha's width (60 +- 3)", got)
		}
	}

	// The diff 6:3:1 -> 1:3:6: alpha lost, gamma gained, beta about even.
	diffHTML := filepath.Join(t.TempDir(), "diff.html")
	if out, err := exec.Command(filepath.Join(bin, "otelprof"), "report", "--diff", baseOTLP, newOTLP, "-o", diffHTML).CombinedOutput(); err != nil {
		t.Fatalf("otelprof report --diff: %v\n%s", err, out)
	}
	dom = renderedPage(t, diffHTML, "thread=abc-main")
	rows := map[string]float64{}
	for _, e := range elements(dom, `data-fn=`) {
		rows[e["data-fn"]] = num(t, e["data-delta"])
	}
	frames := map[string]float64{}
	for _, e := range elements(dom, `class="fr`) {
		frames[e["data-name"]] += num(t, e["data-delta"])
	}
	t.Logf("diff: top rows %v; frames alpha %.1f gamma_fn %.1f", rows, frames["alpha"], frames["gamma_fn"])
	if rows["alpha"] > -30 || frames["alpha"] > -30 {
		t.Errorf("diff: alpha changed by %.2f (table) / %.2f (flamegraph) points, want about -50", rows["alpha"], frames["alpha"])
	}
	if rows["gamma_fn"] < 30 || frames["gamma_fn"] < 30 {
		t.Errorf("diff: gamma_fn changed by %.2f / %.2f points, want about +50", rows["gamma_fn"], frames["gamma_fn"])
	}
	if math.Abs(rows["beta"]) > 6 {
		t.Errorf("diff: beta changed by %.2f points, want about 0", rows["beta"])
	}

	// The Collector file exporter's JSON lines give the same page.
	jsonl := filepath.Join(t.TempDir(), "abc.jsonl")
	if out, err := exec.Command(filepath.Join(bin, "otelprof"), "convert", baseOTLP, "-f", "otlp-json", "-o", jsonl).CombinedOutput(); err != nil {
		t.Fatalf("convert: %v\n%s", err, out)
	}
	jsonHTML := filepath.Join(t.TempDir(), "json.html")
	if out, err := exec.Command(filepath.Join(bin, "otelprof"), "report", jsonl, "-o", jsonHTML).CombinedOutput(); err != nil {
		t.Fatalf("report of JSON lines: %v\n%s", err, out)
	}
	if got := summaryTotal(t, renderedPage(t, jsonHTML, "thread=abc-main")); got != main {
		t.Errorf("report of the JSON lines: abc-main total %v, want %v", got, main)
	}

	// Artifacts for CI: what a user sees.
	screenshot(t, baseHTML, "search=alpha", filepath.Join(bin, "report-screenshot.png"))
	screenshot(t, diffHTML, "thread=abc-main", filepath.Join(bin, "report-diff-screenshot.png"))
}

// Every subcommand answers -h/--help and `otelprof help CMD` with its
// options and an example; bad input to report is refused clearly.
func TestCLIHelp(t *testing.T) {
	bin := filepath.Join(buildDir(t), "otelprof")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"record", "--help"}, []string{"-F, --frequency", "-p, --pid", "-o, --output", "-a, --all-cpus", "--report", "example"}},
		{[]string{"record", "-h"}, []string{"until Ctrl-C or SIGTERM"}},
		{[]string{"help", "record"}, []string{"-F, --frequency"}},
		{[]string{"report", "-h"}, []string{"--diff", "--watts-per-core", "--pue", "--co2-kg-per-kwh", "--cost-per-core-hour", "example"}},
		{[]string{"help", "report"}, []string{"--diff"}},
		{[]string{"top", "--help"}, []string{"--limit", "example"}},
		{[]string{"convert", "-h"}, []string{"--format", "example"}},
		{[]string{"--help"}, []string{"record", "report", "top", "convert"}},
		{[]string{"help"}, []string{"report"}},
	} {
		out, err := exec.Command(bin, c.args...).CombinedOutput()
		if err != nil {
			t.Errorf("%v: %v\n%s", c.args, err, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%v: no %q in\n%s", c.args, w, out)
			}
		}
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"help", "bogus"}, "unknown command"},
		{[]string{"report", "-o", "/tmp/x.html"}, "needs a FILE"},
		{[]string{"report", "a.otlp"}, "-o FILE.html"},
		{[]string{"report", "--diff", "a.otlp", "-o", "/tmp/x.html"}, "exactly two FILEs"},
		{[]string{"report", "a.otlp", "-o", "/tmp/x.html", "--pue", "-1"}, "invalid value for --pue"},
	} {
		out, err := exec.Command(bin, c.args...).CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), c.msg) {
			t.Errorf("%v: %v %q; want exit 2 with %q", c.args, err, out, c.msg)
		}
	}
}

// The context filter on a file whose samples carry known thread-context
// attributes and trace links (written here as the Collector's OTLP/JSON):
// "filter on the hashing algorithm" (the articles' SHA-256 vs SHA3-256)
// and one trace.
func TestReportContextFilter(t *testing.T) {
	chromiumPath(t)
	bin := buildDir(t)
	const t0 = 1_700_000_000_000_000_000
	ts := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strconv.FormatInt(t0+int64(i)*10_000_000, 10)
		}
		return out
	}
	attr := func(key int, v string) map[string]any {
		return map[string]any{"keyStrindex": key, "value": map[string]any{"stringValue": v}}
	}
	doc := map[string]any{
		"resourceProfiles": []any{map[string]any{
			"resource": map[string]any{"attributes": []any{
				map[string]any{"key": "process.pid", "value": map[string]any{"intValue": "7"}},
				map[string]any{"key": "service.name", "value": map[string]any{"stringValue": "hasher"}},
			}},
			"scopeProfiles": []any{map[string]any{"profiles": []any{map[string]any{
				"timeUnixNano": strconv.FormatInt(t0, 10), "durationNano": "10000000000", "period": "10000000",
				"samples": []any{
					map[string]any{"stackIndex": 1, "attributeIndices": []int{1, 3}, "timestampsUnixNano": ts(70)},
					map[string]any{"stackIndex": 2, "attributeIndices": []int{2, 3}, "timestampsUnixNano": ts(30)},
					map[string]any{"stackIndex": 2, "attributeIndices": []int{2, 3}, "linkIndex": 1, "timestampsUnixNano": ts(12)},
				},
			}}}},
		}},
		"dictionary": map[string]any{
			"stringTable":    []string{"", "main", "sha256_block", "sha3_keccak", "hash.algorithm", "thread.name", "profile.frame.type"},
			"attributeTable": []any{map[string]any{}, attr(4, "sha256"), attr(4, "sha3-256"), attr(5, "hasher-1"), attr(6, "native")},
			"functionTable":  []any{map[string]any{}, map[string]any{"nameStrindex": 1}, map[string]any{"nameStrindex": 2}, map[string]any{"nameStrindex": 3}},
			"locationTable": []any{map[string]any{},
				map[string]any{"lines": []any{map[string]any{"functionIndex": 1}}, "attributeIndices": []int{4}},
				map[string]any{"lines": []any{map[string]any{"functionIndex": 2}}, "attributeIndices": []int{4}},
				map[string]any{"lines": []any{map[string]any{"functionIndex": 3}}, "attributeIndices": []int{4}}},
			"stackTable": []any{map[string]any{}, map[string]any{"locationIndices": []int{2, 1}}, map[string]any{"locationIndices": []int{3, 1}}},
			"linkTable": []any{map[string]any{}, map[string]any{
				"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7"}},
		},
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in, page := filepath.Join(dir, "ctx.jsonl"), filepath.Join(dir, "ctx.html")
	if err := os.WriteFile(in, append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(bin, "otelprof"), "report", in, "-o", page).CombinedOutput(); err != nil {
		t.Fatalf("otelprof report: %v\n%s", err, out)
	}
	for _, c := range []struct {
		fragment string
		total    float64
		shown    string // the one leaf function left, "" for both
	}{
		{"", 112, ""},
		{"ctx=hash.algorithm%3Dsha256", 70, "sha256_block"},
		{"ctx=hash.algorithm%3Dsha3-256", 42, "sha3_keccak"},
		{"ctx=4bf92f3577b34da6a3ce929d0e0e4736", 12, "sha3_keccak"},
		{"ctx=span_id%3D00f067aa0ba902b7", 12, "sha3_keccak"},
		{"res.service.name=hasher&ctx=sha3", 42, "sha3_keccak"},
	} {
		dom := renderedPage(t, page, c.fragment)
		if got := summaryTotal(t, dom); got != c.total {
			t.Errorf("#%s: page total %v, want %v", c.fragment, got, c.total)
		}
		w := widths(t, dom)
		if c.shown != "" {
			for _, leaf := range []string{"sha256_block", "sha3_keccak"} {
				if want := map[bool]float64{true: 100, false: 0}[leaf == c.shown]; math.Abs(w[leaf]-want) > 0.01 {
					t.Errorf("#%s: %s width %.2f%%, want %.0f%%", c.fragment, leaf, w[leaf], want)
				}
			}
		} else if math.Abs(w["sha256_block"]-62.5) > 0.01 {
			t.Errorf("unfiltered: sha256_block width %.2f%%, want 62.5%% (70 of 112)", w["sha256_block"])
		}
	}
}

// The bash completion offers each subcommand's options exactly as its
// help lists them (so neither drifts from the other).
func TestCompletionMatchesHelp(t *testing.T) {
	bin := filepath.Join(buildDir(t), "otelprof")
	script, err := filepath.Abs("../../cli/completion/otelprof.bash")
	if err != nil {
		t.Fatal(err)
	}
	longOpt := regexp.MustCompile(`(?m)(?:^|[ ,])(--[a-z0-9-]+)`)
	for _, cmd := range []string{"record", "report", "top", "convert"} {
		help, err := exec.Command(bin, cmd, "--help").Output()
		if err != nil {
			t.Fatalf("%s --help: %v", cmd, err)
		}
		want := map[string]bool{}
		for _, m := range longOpt.FindAllStringSubmatch(string(help), -1) {
			want[m[1]] = true
		}
		out, err := exec.Command("bash", "-c", `source "$1"; COMP_WORDS=(otelprof "$2" --); COMP_CWORD=2; _otelprof; printf '%s\n' "${COMPREPLY[@]}"`,
			"bash", script, cmd).Output()
		if err != nil {
			t.Fatalf("completion of %s: %v", cmd, err)
		}
		got := map[string]bool{}
		for _, o := range strings.Fields(string(out)) {
			got[o] = true
		}
		for o := range want {
			if !got[o] {
				t.Errorf("%s: help lists %s, completion does not offer it", cmd, o)
			}
		}
		for o := range got {
			if !want[o] {
				t.Errorf("%s: completion offers %s, help does not list it", cmd, o)
			}
		}
	}
}
