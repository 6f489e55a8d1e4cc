// include_env_vars: listed environment variables of each process on its
// resource, read once from /proc/PID/environ, hostile ones refused.
package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startWorkloadEnv is startWorkload with extra environment variables.
func startWorkloadEnv(t *testing.T, env []string, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(filepath.Join(buildDir(t), "workloads", name), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	return cmd
}

// Two busy workloads started with known variables: the first's listed
// variable is on its resource as process.environment_variable.NAME, its
// hostile values (an escape sequence, 300 bytes) are dropped and counted;
// the second's environ is over 64 KiB and refused whole (counted), though
// it holds the same variable. Unlisted variables never appear.
func TestIncludeEnvVars(t *testing.T) {
	requireRoot(t)
	known := []string{"OTELPROF_T_DEPLOY=canary-7", "OTELPROF_T_CTRL=\x1b[31mred",
		"OTELPROF_T_LONG=" + strings.Repeat("x", 300), "OTELPROF_T_UNLISTED=secret"}
	a := startWorkloadEnv(t, known, "callgraph_fp", "20")
	b := startWorkloadEnv(t, []string{"OTELPROF_T_DEPLOY=huge", "OTELPROF_T_PAD=" + strings.Repeat("p", 70*1024)},
		"callgraph_fp", "20")
	time.Sleep(200 * time.Millisecond)
	dir := t.TempDir()
	s := startSoak(t, "--frequency", "49", "--duration", "4", "--poll-ms", "1000", "--out-dir", dir,
		"--env-vars", "OTELPROF_T_DEPLOY,OTELPROF_T_CTRL,OTELPROF_T_LONG,OTELPROF_T_ABSENT")
	ev := soakEvents(t, s, 60*time.Second)
	final := ev["final"]

	attrs := map[int]map[string]string{} // pid -> process.environment_variable.*
	seen := map[int]bool{}
	for _, f := range mustGlob(t, filepath.Join(dir, "poll-*.otlp")) {
		d := readProfilesData(t, f)
		if err := checkConformance(d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i := 0; i < d.ResourceProfiles().Len(); i++ {
			res := d.ResourceProfiles().At(i).Resource().Attributes()
			v, ok := res.Get("process.pid")
			if !ok {
				continue
			}
			pid := int(v.Int())
			seen[pid] = true
			for k, val := range res.AsRaw() {
				if strings.HasPrefix(k, "process.environment_variable.") {
					if attrs[pid] == nil {
						attrs[pid] = map[string]string{}
					}
					attrs[pid][k] = val.(string)
				}
			}
		}
	}
	pa, pb := a.Process.Pid, b.Process.Pid
	if !seen[pa] || !seen[pb] {
		t.Fatalf("workloads not sampled (a %v, b %v)", seen[pa], seen[pb])
	}
	want := map[string]string{"process.environment_variable.OTELPROF_T_DEPLOY": "canary-7"}
	if len(attrs[pa]) != 1 || attrs[pa]["process.environment_variable.OTELPROF_T_DEPLOY"] != "canary-7" {
		t.Errorf("workload a: %v, want %v", attrs[pa], want)
	}
	if len(attrs[pb]) != 0 {
		t.Errorf("workload b (environ over 64 KiB): %v, want none", attrs[pb])
	}
	for pid, m := range attrs {
		if pid != pa && pid != pb {
			for k := range m {
				if strings.HasPrefix(k, "process.environment_variable.OTELPROF_T_") {
					t.Errorf("pid %d has %s", pid, k)
				}
			}
		}
	}
	t.Logf("env_reads_refused %v, env_values_dropped %v", final.num("env_reads_refused"), final.num("env_values_dropped"))
	if final.num("env_values_dropped") != 2 {
		t.Errorf("env_values_dropped = %v, want 2 (escape sequence, 300 bytes)", final.num("env_values_dropped"))
	}
	// Other processes on the host may have huge environments too.
	if final.num("env_reads_refused") < 1 {
		t.Errorf("env_reads_refused = %v, want >= 1 (workload b)", final.num("env_reads_refused"))
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) == 0 {
		t.Fatalf("nothing matches %s: %v", pattern, err)
	}
	return m
}
