// SPDX-License-Identifier: Apache-2.0

package collectortest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/fakelib"
	"github.com/libotelprofiler/libotelprofiler/ffi/internal/testprofiles"
)

// elasticReadme is the connector's copy of the configurations in Elastic's
// README, verbatim.
func elasticReadme(name string) string {
	p, err := filepath.Abs(filepath.Join("..", "profilingmetricsconnector", "testdata", name))
	if err != nil {
		panic(err)
	}
	return p
}

// TestElasticReadmeMinimalValidates: the README's minimal configuration
// (receiver profiling, connector, otlphttp exporter) validates unchanged.
func TestElasticReadmeMinimalValidates(t *testing.T) {
	if out, err := validate(t, "--config", elasticReadme("elastic-readme-minimal.yaml")); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestElasticReadmeAggregationsRun: the built collector runs the README's
// full connector configuration unchanged (its 30 s window is flushed at
// shutdown), around a pipeline of the fake library serving a known JVM
// workload; the aggregations give the expected series, exactly: per
// payload the connector saw (as many as the file exporter wrote),
// payments 8 and authentication 3, at the profile's time.
func TestElasticReadmeAggregationsRun(t *testing.T) {
	lib, dir := fakelib.Build(t)
	const t0 = 1_700_000_000_000_000_000
	fakelib.WritePayload(t, dir, testprofiles.JavaPayments(t0), 10)
	work := t.TempDir()
	pipeline := filepath.Join(work, "pipeline.yaml")
	if err := os.WriteFile(pipeline, []byte(`
receivers:
  profiling:
    reporter_interval: 100ms
exporters:
  file/profiles:
    path: ./profiles.jsonl
  file/metrics:
    path: ./metrics.jsonl
service:
  pipelines:
    profiles:
      receivers: [profiling]
      exporters: [file/profiles, profilingmetrics]
    metrics:
      receivers: [profilingmetrics]
      exporters: [file/metrics]
  telemetry:
    metrics:
      level: none
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := start(t, work, []string{"OTELPROF_LIBRARY=" + lib},
		"file:"+elasticReadme("elastic-readme-full.yaml"), "file:"+pipeline)
	profiles := filepath.Join(work, "profiles.jsonl")
	r.waitFor(t, "three payloads", func() bool { return len(profilesIn(t, profiles)) >= 3 })
	if n := len(metricNames(t, filepath.Join(work, "metrics.jsonl"))); n != 0 {
		t.Fatalf("metrics before the README's 30 s window ended: %d names", n)
	}
	r.stop(t)
	if t.Failed() {
		return
	}
	payloads := int64(len(profilesIn(t, profiles)))
	u := &pmetric.JSONUnmarshaler{}
	mds, err := readJSONLines(filepath.Join(work, "metrics.jsonl"), u.UnmarshalMetrics)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					switch m.Name() {
					case "samples.custom_aggregation":
						for _, dp := range m.Gauge().DataPoints().All() {
							label, _ := dp.Attributes().Get("frame_type")
							tu, _ := dp.Attributes().Get("profile.type_unit")
							got[label.Str()+"/"+tu.Str()] += dp.IntValue()
							if dp.Timestamp() != t0+1e9 || dp.StartTimestamp() != t0 {
								t.Errorf("point at %d..%d, want the profile's %d..%d", dp.StartTimestamp(), dp.Timestamp(), uint64(t0), uint64(t0+1e9))
							}
						}
					case "samples.frame_type", "samples.classification":
						t.Errorf("%s emitted: the README disables it", m.Name())
					case "samples.jvm.count":
						got["jvm"] += m.Sum().DataPoints().At(0).IntValue()
					}
				}
			}
		}
	}
	t.Logf("%d payloads; %v", payloads, got)
	want := map[string]int64{"payments/samples_count": 8 * payloads, "authentication/samples_count": 3 * payloads, "jvm": 7 * payloads}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
}

// TestConnectorConfigErrors: a wrong aggregation stops the collector at
// start with an error that names the key.
func TestConnectorConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ agg, want string }{
		"bad regex":   {`{match: "^(x", label: x}`, "aggregations[0].match: error parsing regexp"},
		"no label":    {`{match: "^x"}`, "aggregations[0]: label must be set"},
		"bad type":    {`{match: "^x", label: x, frame_types: [java]}`, `aggregations[0].frame_types: unknown frame type "java"`},
		"huge regexp": {`{match: "(abcdefgh){1,900}", label: x}`, "at most 4096"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yaml")
		cfg := "receivers: {profiling: {}}\nconnectors: {profilingmetrics: {aggregations: [" + tc.agg + "]}}\nexporters: {debug: {}}\n" +
			"service: {pipelines: {profiles: {receivers: [profiling], exporters: [profilingmetrics]}, metrics: {receivers: [profilingmetrics], exporters: [debug]}}}\n"
		if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := validate(t, "--config", p)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: err %v, want %q in:\n%s", name, err, tc.want, out)
		}
	}
}
