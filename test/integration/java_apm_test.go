// The Elastic APM Java agent's round trip (its universal profiling
// integration): the real agent publishes each thread's trace context and
// a datagram socket; samples must carry the agent's trace/span ids, and
// the agent must receive, over that socket, which stack traces ran in
// which transaction, and store them with the transaction. The truth is
// the workload's own log of every transaction (ids, start, end) and what
// the agent reports to an APM server (a fake one here, recording the
// intake events).
package integration

import (
	"bufio"
	"compress/gzip"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const apmAgentVersion = "1.52.0" // test/workloads/java.mk

// apmTx is one transaction as the workload logged it.
type apmTx struct {
	thread, traceID, txID, spanID string
	start, end                    uint64
}

// apmServer is a minimal APM server: it accepts the agent's intake stream
// and keeps the transactions' stack-trace ids.
type apmServer struct {
	srv     *httptest.Server
	mu      sync.Mutex
	stacks  map[string][]string // transaction id -> profiler stack-trace ids
	txs     int                 // distinct transactions
	repeats int                 // transactions the agent sent again
}

func newAPMServer(t *testing.T) *apmServer {
	s := &apmServer{stacks: map[string][]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"build_date":"2024-09-01T00:00:00Z","build_sha":"0","publish_ready":true,"version":"8.15.0"}`)
		case "/intake/v2/events":
			s.intake(t, r)
			w.WriteHeader(http.StatusAccepted)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{}`)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *apmServer) intake(t *testing.T, r *http.Request) {
	var body io.Reader = r.Body
	switch r.Header.Get("Content-Encoding") {
	case "deflate":
		z, err := zlib.NewReader(r.Body)
		if err != nil {
			t.Logf("apm server: %v", err)
			return
		}
		body = z
	case "gzip":
		z, err := gzip.NewReader(r.Body)
		if err != nil {
			t.Logf("apm server: %v", err)
			return
		}
		body = z
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Transaction *struct {
				ID   string `json:"id"`
				Otel struct {
					Attributes map[string]any `json:"attributes"`
				} `json:"otel"`
			} `json:"transaction"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Transaction == nil {
			continue
		}
		var ids []string
		if l, ok := ev.Transaction.Otel.Attributes["elastic.profiler_stack_trace_ids"].([]any); ok {
			for _, v := range l {
				if s, ok := v.(string); ok {
					ids = append(ids, strings.TrimRight(s, "="))
				}
			}
		}
		s.mu.Lock()
		s.txs++
		s.stacks[ev.Transaction.ID] = append(s.stacks[ev.Transaction.ID], ids...)
		s.mu.Unlock()
	}
}

var txLine = regexp.MustCompile(`^TX (\S+) ([0-9a-f]{32}) ([0-9a-f]{16}) ([0-9a-f]{16}) (\d+) (\d+)$`)

func parseTxs(out string) []apmTx {
	var txs []apmTx
	for _, l := range strings.Split(out, "\n") {
		m := txLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		start, _ := strconv.ParseUint(m[5], 10, 64)
		end, _ := strconv.ParseUint(m[6], 10, 64)
		txs = append(txs, apmTx{m[1], m[2], m[3], m[4], start, end})
	}
	return txs
}

// syncBuffer collects a child's output while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestJavaElasticAPM(t *testing.T) {
	requireRoot(t)
	classes := filepath.Join(buildDir(t), "workloads", "java")
	agent := filepath.Join(classes, "apm", "elastic-apm-agent-"+apmAgentVersion+".jar")
	api := filepath.Join(classes, "apm", "apm-agent-api-"+apmAgentVersion+".jar")
	requireExe(t, agent)
	requireExe(t, api)
	for _, j := range jdks {
		j := j
		t.Run(j.name, func(t *testing.T) {
			requireExe(t, j.java)
			var jvmArgs []string
			if j.name == "25" {
				// Agent 1.52.0 predates Java 25: its Byte Buddy
				// instruments the public API there only with this.
				jvmArgs = append(jvmArgs, "-Dnet.bytebuddy.experimental=true")
			}
			runElasticAPM(t, j.java, classes, agent, api, jvmArgs)
		})
	}
}

func runElasticAPM(t *testing.T, java, classes, agent, api string, jvmArgs []string) {
	srv := newAPMServer(t)
	dir := t.TempDir()
	logFile := filepath.Join(dir, "agent.log")
	const hz, seconds, workSeconds = 99, 10, 16
	args := append(jvmArgs, "-javaagent:"+agent,
		"-Delastic.apm.universal_profiling_integration_enabled=true",
		"-Delastic.apm.universal_profiling_integration_socket_dir="+filepath.Join(dir, "sock"),
		"-Delastic.apm.server_url="+srv.srv.URL,
		"-Delastic.apm.service_name=apm-fibhash",
		"-Delastic.apm.environment=test",
		"-Delastic.apm.api_request_time=1s",
		"-Delastic.apm.central_config=false",
		"-Delastic.apm.cloud_provider=none",
		"-Delastic.apm.metrics_interval=0s",
		"-Delastic.apm.log_level=debug",
		"-Delastic.apm.log_file="+logFile,
		"-cp", api+":"+classes, "ApmFibHash", itoa(workSeconds), "6")
	cmd := exec.Command(java, args...)
	var out syncBuffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	pid := cmd.Process.Pid
	tids := threadsNamed(t, pid, "fib", "hash")
	time.Sleep(1500 * time.Millisecond) // agent start-up, the JIT
	var cpu0, cpu1 map[int64]float64
	// A second recorder, as one run by hand beside the host's profiler:
	// without --apm-agents it must not answer the agent (its ids would
	// show as extras in the agent's transactions, judged below).
	by := startBystander(t, seconds+2, hz, itoa(pid))
	rec := recordWith(t, func() { cpu0 = threadCPU(pid) }, seconds, hz, "--pid", itoa(pid), "--apm-agents")
	cpu1 = threadCPU(pid)
	byStderr := by.wait(t)
	if strings.Contains(byStderr, "Elastic APM:") || !strings.Contains(byStderr, "trace context:") {
		t.Errorf("a recorder without --apm-agents answered the agent (or read no context):\n%s", byStderr)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("workload: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("workload did not finish")
	}
	agentLog, _ := os.ReadFile(logFile)
	txs := parseTxs(out.String())
	if len(txs) < 50 {
		t.Fatalf("workload logged %d transactions", len(txs))
	}
	p := decodeFile(t, rec.Path).ByPID(pid)
	if p == nil {
		t.Fatalf("no samples of pid %d\n%s", pid, rec.Stderr)
	}
	cpu := cpu1[tids["fib"]] + cpu1[tids["hash"]] - cpu0[tids["fib"]] - cpu0[tids["hash"]]
	judgeElasticAPM(t, p, txs, srv, cpu*hz, rec.Stderr, string(agentLog))
}

func judgeElasticAPM(t *testing.T, p *Process, txs []apmTx, srv *apmServer, expected float64, stderr, agentLog string) {
	t.Helper()
	// The agent's handshake: our registration message reached it.
	if !strings.Contains(agentLog, "Received profiler registration message") {
		t.Errorf("the agent logged no registration message from the profiler")
	}
	// Until the profiler has read the process (its first sample) and
	// located the agent's TLS variable, samples carry no context: judged
	// from the first linked sample, which must come within 3 s.
	var first, firstLinked uint64
	for _, s := range p.Samples {
		if first == 0 || s.TimeNs < first {
			first = s.TimeNs
		}
		if s.TraceID != "" && (firstLinked == 0 || s.TimeNs < firstLinked) {
			firstLinked = s.TimeNs
		}
	}
	if firstLinked == 0 || firstLinked > first+3e9 {
		t.Fatalf("no sample carries a trace context within 3 s of the first\n%s", stderr)
	}
	byThread := map[string][]apmTx{}
	txOfSpan := map[string]apmTx{}
	for _, tx := range txs {
		byThread[tx.thread] = append(byThread[tx.thread], tx)
		txOfSpan[tx.spanID] = tx
		txOfSpan[tx.txID] = tx // the hash thread outside its child span
	}
	// Every sample's stack-trace id, by the transaction its span is in:
	// what the agent must have stored.
	ours := map[string][]string{}
	withID := 0
	for _, s := range p.Samples {
		if id, ok := s.Attrs["elastic.profiler_stack_trace_id"].(string); ok && s.TraceID != "" {
			withID++
			if tx, ok := txOfSpan[s.SpanID]; ok {
				ours[tx.txID] = append(ours[tx.txID], id)
			}
		}
	}
	const margin = 2e6 // ns: the log's clock reads around the activation
	in, right, linked := 0, 0, 0
	var bad []string
	for _, s := range p.Samples {
		if s.TimeNs < firstLinked || (s.ThreadName != "fib" && s.ThreadName != "hash") {
			continue
		}
		var cur *apmTx
		for i := range byThread[s.ThreadName] {
			tx := &byThread[s.ThreadName][i]
			if s.TimeNs >= tx.start+margin && s.TimeNs+margin <= tx.end {
				cur = tx
				break
			}
		}
		if cur == nil {
			continue
		}
		in++
		if s.TraceID == cur.traceID && s.SpanID == cur.spanID {
			right++
		} else if len(bad) < 5 {
			bad = append(bad, s.ThreadName+": trace "+s.TraceID+" span "+s.SpanID+", want "+cur.traceID+" "+cur.spanID)
		}
	}
	for _, s := range p.Samples {
		if s.TraceID != "" {
			linked++
		}
	}
	t.Logf("%d in-transaction samples (%.0f expected from the threads' CPU time), %d with the agent's ids; %d of %d linked samples with a stack-trace id", in, expected, right, withID, linked)
	if in < 100 || float64(in) < 0.5*expected {
		t.Fatalf("only %d in-transaction samples (%.0f expected)\n%s", in, expected, stderr)
	}
	if float64(right) < 0.95*float64(in) {
		t.Errorf("%d of %d in-transaction samples carry the agent's trace/span ids, want >= 95%%; e.g. %v", right, in, bad)
	}
	if withID != linked {
		t.Errorf("%d of %d linked samples carry elastic.profiler_stack_trace_id", withID, linked)
	}
	// What the agent stored: for every transaction we sampled, the
	// stack-trace ids it reported must be ours, one per sample.
	srv.mu.Lock()
	defer srv.mu.Unlock()
	matched, total, txsWith, extra := 0, 0, 0, 0
	for txID, want := range ours {
		got := map[string]int{}
		for _, id := range srv.stacks[txID] {
			got[id]++
		}
		if len(srv.stacks[txID]) > 0 {
			txsWith++
		}
		for _, id := range want {
			total++
			if got[id] > 0 {
				got[id]--
				matched++
			}
		}
		for id, n := range got {
			if n > 0 {
				extra++
				if extra <= 5 {
					t.Errorf("transaction %s: the agent stored stack-trace id %s %d more times than we sampled it; our samples with that id: %s", txID, id, n, samplesWithID(p, id))
				}
				break
			}
		}
	}
	// Another profiler on the host (a second recorder run by hand) also
	// sends the agent its samples' ids: extras, most in none of ours.
	if extra > 5 {
		t.Errorf("... %d transactions in all with more stack-trace ids stored than we sampled", extra)
	}
	t.Logf("agent reported %d transactions; %d of our %d sampled transactions carry stack-trace ids; %d of %d sample ids stored by the agent",
		srv.txs, txsWith, len(ours), matched, total)
	if srv.txs == 0 {
		t.Fatalf("the agent reported no transactions to the APM server")
	}
	if total == 0 || float64(matched) < 0.95*float64(total) {
		t.Errorf("the agent stored %d of the %d stack-trace ids our samples carry, want >= 95%%\n%s", matched, total, stderr)
	}
	if !strings.Contains(stderr, "Elastic APM: 1 agent sockets registered with, 0 refused") {
		t.Errorf("profiler did not report one registered agent socket\n%s", stderr)
	}
}

// samplesWithID lists our samples that carry an Elastic stack-trace id:
// their thread, time, trace and span (what an extra id the agent stored
// was, if it was ours at all).
func samplesWithID(p *Process, id string) string {
	var out []string
	for _, s := range p.Samples {
		if v, _ := s.Attrs["elastic.profiler_stack_trace_id"].(string); v == id {
			out = append(out, fmt.Sprintf("%s@%d trace %s span %s", s.ThreadName, s.TimeNs, s.TraceID, s.SpanID))
		}
	}
	if len(out) > 4 {
		out = append(out[:4], fmt.Sprintf("... %d in all", len(out)))
	}
	return strings.Join(out, "; ")
}

// bystander is a second `otelprof record` running beside a test's own.
type bystander struct {
	cmd    *exec.Cmd
	stderr syncBuffer
}

func startBystander(t *testing.T, seconds, hz int, pid string) *bystander {
	t.Helper()
	b := &bystander{}
	b.cmd = exec.Command(filepath.Join(buildDir(t), "otelprof"), "record", "--duration", itoa(seconds),
		"--frequency", itoa(hz), "--pid", pid, "--output", filepath.Join(t.TempDir(), "bystander.otlp"))
	b.cmd.Stderr = &b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.cmd.Process.Kill() }) // wait reaps it
	return b
}

// wait is the bystander's stderr once it has finished.
func (b *bystander) wait(t *testing.T) string {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("bystander recorder: %v\n%s", err, b.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("bystander recorder did not finish\n%s", b.stderr.String())
	}
	return b.stderr.String()
}
