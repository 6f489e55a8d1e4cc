package integration

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

func otelprofCmd(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(filepath.Join(buildDir(t), "otelprof"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("otelprof %v: %v\n%s", args, err, out)
	}
	return out
}

// pprofFlat runs `go tool pprof -top` on a pprof file and returns each
// function's flat and cumulative percentage of the samples.
func pprofFlat(t *testing.T, path string) (flat, cum map[string]float64, out []byte) {
	t.Helper()
	cmd := exec.Command("go", "tool", "pprof", "-top", "-symbolize=none", "-sample_index=samples", "-nodecount=200", path)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	flat, cum = map[string]float64{}, map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// flat flat% sum% cum cum% name...
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasSuffix(f[1], "%") || !strings.HasSuffix(f[4], "%") {
			continue
		}
		fl, err1 := strconv.ParseFloat(strings.TrimSuffix(f[1], "%"), 64)
		cu, err2 := strconv.ParseFloat(strings.TrimSuffix(f[4], "%"), 64)
		if err1 != nil || err2 != nil {
			continue
		}
		name := strings.Join(f[5:], " ")
		flat[name] += fl
		cum[name] = math.Max(cum[name], cu)
	}
	return flat, cum, out
}

// A recording of a workload with a known 3:2:1 call graph, converted to
// pprof, shows its functions in `go tool pprof -top` with those shares, and
// carries the pid and tid labels; folded stacks give the same shares.
func TestConvertPprofAndFoldedShares(t *testing.T) {
	requireRoot(t)
	wl := startWorkload(t, "callgraph_fp", "12")
	time.Sleep(300 * time.Millisecond)
	rec := record(t, 5, 199, "--pid", itoa(wl.Process.Pid))
	dir := t.TempDir()

	// The recording's own leaf shares (decoded by pdata) are what the
	// conversion must keep exactly; the workload's 3:2:1 work ratio is
	// the truth they must match within sampling noise (4 sigma, at least
	// 5 points: a loaded machine gives few samples).
	d := decodeFile(t, rec.Path)
	p := d.ByPID(wl.Process.Pid)
	if p == nil || len(p.Samples) < 100 {
		t.Fatalf("too few samples of the workload\n%s", rec.Stderr)
	}
	n := float64(len(p.Samples))
	recShare := map[string]float64{}
	for _, s := range p.Samples {
		if len(s.Frames) > 0 {
			recShare[s.Frames[0].Function] += 100 / n
		}
	}
	truth := map[string]float64{"leaf_heavy": 50, "leaf_medium": 33.3, "leaf_light": 16.7}
	tol := func(want float64) float64 {
		return math.Max(5, 4*100*math.Sqrt(want/100*(1-want/100)/n))
	}

	pb := filepath.Join(dir, "profile.pb")
	otelprofCmd(t, "convert", rec.Path, "--format", "pprof", "--output", pb)
	flat, cum, out := pprofFlat(t, pb)
	for fn, want := range truth {
		if math.Abs(flat[fn]-recShare[fn]) > 0.5 {
			t.Errorf("pprof: %s flat %.2f%%, the recording has %.2f%%\n%s", fn, flat[fn], recShare[fn], out)
		}
		if math.Abs(flat[fn]-want) > tol(want) {
			t.Errorf("pprof: %s flat %.1f%%, want %.1f%% +- %.1f\n%s", fn, flat[fn], want, tol(want), out)
		}
		t.Logf("pprof: %s flat %.1f%% (recording %.1f%%, want %.1f%% +- %.1f)", fn, flat[fn], recShare[fn], want, tol(want))
	}
	if cum["main"] < 95 {
		t.Errorf("pprof: main cum %.1f%%, want >= 95%%\n%s", cum["main"], out)
	}
	tags, err := exec.Command("go", "tool", "pprof", "-tags", "-symbolize=none", pb).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -tags: %v\n%s", err, tags)
	}
	for _, want := range []string{"pid", strconv.Itoa(wl.Process.Pid), "tid", "thread_name", "callgraph_fp"} {
		if !bytes.Contains(tags, []byte(want)) {
			t.Errorf("pprof labels lack %q:\n%s", want, tags)
		}
	}

	folded := otelprofCmd(t, "convert", rec.Path, "--format", "folded")
	leaf := map[string]float64{}
	var total float64
	for _, line := range strings.Split(strings.TrimSpace(string(folded)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("folded line %q", line)
		}
		frames := strings.Split(line[:i], ";")
		if frames[0] != "callgraph_fp" {
			t.Errorf("folded stack does not start with the process: %q", line)
		}
		leaf[frames[len(frames)-1]] += n
		total += n
	}
	for fn := range truth {
		if got := 100 * leaf[fn] / total; math.Abs(got-recShare[fn]) > 0.5 {
			t.Errorf("folded: %s %.2f%%, the recording has %.2f%%", fn, got, recShare[fn])
		}
	}
}

// OTLP/JSON: convert writes what the collector's pdata reads, and `top`
// reads the file exporter's JSON (here made by pdata's own marshaler) with
// the same result as the protobuf file.
func TestConvertOTLPJSONAndTopReadsJSON(t *testing.T) {
	requireRoot(t)
	wl := startWorkload(t, "callgraph_fp", "8")
	time.Sleep(300 * time.Millisecond)
	rec := record(t, 2, 99, "--pid", itoa(wl.Process.Pid))
	raw, err := os.ReadFile(rec.Path)
	if err != nil {
		t.Fatal(err)
	}
	var pu pprofile.ProtoUnmarshaler
	want, err := pu.UnmarshalProfiles(raw)
	if err != nil {
		t.Fatal(err)
	}

	js := otelprofCmd(t, "convert", rec.Path, "--format", "otlp-json")
	var ju pprofile.JSONUnmarshaler
	got, err := ju.UnmarshalProfiles(bytes.TrimSpace(js))
	if err != nil {
		t.Fatalf("pdata cannot read convert's OTLP/JSON: %v", err)
	}
	if got.SampleCount() != want.SampleCount() || got.SampleCount() == 0 {
		t.Errorf("OTLP/JSON has %d samples, the recording %d", got.SampleCount(), want.SampleCount())
	}

	var jm pprofile.JSONMarshaler
	line, err := jm.MarshalProfiles(want)
	if err != nil {
		t.Fatal(err)
	}
	jsonl := filepath.Join(t.TempDir(), "profiles.jsonl")
	// Two lines, as the file exporter appends one request per export.
	if err := os.WriteFile(jsonl, append(append(line, '\n'), append(line, '\n')...), 0o600); err != nil {
		t.Fatal(err)
	}
	fromProto := otelprofCmd(t, "top", rec.Path, "--limit", "5")
	fromJSON := otelprofCmd(t, "top", jsonl, "--limit", "5")
	firstLine := func(b []byte) string { return strings.SplitN(string(b), "\n", 2)[0] }
	n, _ := strconv.Atoi(strings.Fields(firstLine(fromProto))[0])
	n2, _ := strconv.Atoi(strings.Fields(firstLine(fromJSON))[0])
	if n == 0 || n2 != 2*n {
		t.Errorf("top: %d samples from protobuf, %d from two JSON copies (want twice)\n%s\n%s", n, n2, fromProto, fromJSON)
	}
	if !bytes.Contains(fromJSON, []byte("leaf_heavy")) {
		t.Errorf("top on JSON lacks leaf_heavy:\n%s", fromJSON)
	}
	// --pid reads process.pid in its key_strindex form too.
	if out := otelprofCmd(t, "top", jsonl, "--pid", itoa(wl.Process.Pid)); !bytes.Contains(out, []byte("leaf_heavy")) {
		t.Errorf("top --pid on JSON lacks leaf_heavy:\n%s", out)
	}
}

// Samples taken while a thread served a trace keep it in pprof: the
// trace_id and span_id labels carry the recording's links.
func TestConvertPprofTraceLabels(t *testing.T) {
	requireRoot(t)
	w := startWaiting(t, ctxLinkedTLSDESC, 4)
	rec := record(t, 2, 99, "--pid", itoa(w.pid))
	raw, err := os.ReadFile(rec.Path)
	if err != nil {
		t.Fatal(err)
	}
	var pu pprofile.ProtoUnmarshaler
	pd, err := pu.UnmarshalProfiles(raw)
	if err != nil {
		t.Fatal(err)
	}
	traces := map[string]bool{}
	links := pd.Dictionary().LinkTable()
	for i := 1; i < links.Len(); i++ {
		traces[links.At(i).TraceID().String()] = true
	}
	if len(traces) == 0 {
		t.Fatalf("the recording has no trace links\n%s", rec.Stderr)
	}
	pb := filepath.Join(t.TempDir(), "profile.pb")
	otelprofCmd(t, "convert", rec.Path, "--format", "pprof", "--output", pb)
	tags, err := exec.Command("go", "tool", "pprof", "-tags", "-symbolize=none", pb).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -tags: %v\n%s", err, tags)
	}
	found := 0
	for tr := range traces {
		if bytes.Contains(tags, []byte(tr)) {
			found++
		}
	}
	if found == 0 || !bytes.Contains(tags, []byte("span_id")) {
		t.Errorf("none of the recording's %d trace ids is a pprof trace_id label:\n%s", len(traces), tags)
	}
	t.Logf("%d of %d trace ids labelled", found, len(traces))
}
