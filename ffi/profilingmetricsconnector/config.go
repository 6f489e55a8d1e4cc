// SPDX-License-Identifier: Apache-2.0

package profilingmetricsconnector // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingmetricsconnector"

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// MetricConfig toggles one metric.
type MetricConfig struct {
	Enabled bool `mapstructure:"enabled"`
}

// Aggregation is a user-defined metric (samples.custom_aggregation with
// frame_type = Label): the weight of the samples with at least one frame
// that matches. Match and Label are Elastic's keys and meaning (Match an
// RE2 expression on function names); FrameTypes and Shlib narrow or
// replace the function match (this connector's).
type Aggregation struct {
	Match string `mapstructure:"match"`
	Label string `mapstructure:"label"`
	// FrameTypes limits the frames considered to these profile.frame.type
	// values (empty: all).
	FrameTypes []string `mapstructure:"frame_types"`
	// Shlib is an RE2 expression on the frame's library name (shlib_name:
	// libz for libz.so.1); native frames without symbols still have it.
	Shlib string `mapstructure:"shlib"`
}

// Config mirrors the configuration keys of Elastic's profilingmetrics
// connector (flush_interval, metrics, aggregations).
type Config struct {
	// FlushInterval is the window over which delta counts are summed before
	// they are sent; 0 sends the counts of each received batch at once.
	FlushInterval time.Duration `mapstructure:"flush_interval"`
	// Metrics enables or disables individual metrics by name.
	Metrics map[string]MetricConfig `mapstructure:"metrics"`
	// Aggregations are user-defined metrics (at most maxAggregations).
	Aggregations []Aggregation `mapstructure:"aggregations"`
}

const (
	maxAggregations = 64 // one bit each in a location's match set
	maxLabelLen     = 256
)

func createDefaultConfig() *Config {
	return &Config{FlushInterval: 30 * time.Second}
}

// Validate implements confmap.Validator: every error a configuration can
// have is reported here, at start, naming the key.
func (c *Config) Validate() error {
	var errs []error
	if c.FlushInterval < 0 {
		errs = append(errs, fmt.Errorf("flush_interval must not be negative, got %s", c.FlushInterval))
	}
	names := make([]string, 0, len(c.Metrics))
	for n := range c.Metrics {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := metricByName[n]; !ok {
			errs = append(errs, fmt.Errorf("metrics::%s: unknown metric (known: %s)", n, strings.Join(knownMetricNames(), ", ")))
		}
	}
	if _, err := compile(c); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c *Config) enabled(def metricDef) bool {
	if m, ok := c.Metrics[def.name]; ok {
		return m.Enabled
	}
	return def.enabled
}

// compiledAgg is one aggregation ready to match.
type compiledAgg struct {
	m        matcher
	labelIdx int // index in compiled.labels
}

// compiled is a configuration ready to run.
type compiled struct {
	aggs   []compiledAgg
	labels []string

	frameTypes, classification, custom, runtime bool
}

func compile(c *Config) (*compiled, error) {
	out := &compiled{
		frameTypes:     c.enabled(metricFrameType),
		classification: c.enabled(metricClassification),
		custom:         c.enabled(metricCustom),
		runtime:        c.enabled(metricRuntime) || c.enabled(metricOffCPURuntime),
	}
	if len(c.Aggregations) > maxAggregations {
		return nil, fmt.Errorf("aggregations: %d entries, at most %d", len(c.Aggregations), maxAggregations)
	}
	var errs []error
	labelIdx := map[string]int{}
	for i, a := range c.Aggregations {
		id := fmt.Sprintf("aggregations[%d]", i)
		if a.Label == "" {
			errs = append(errs, fmt.Errorf("%s: label must be set", id))
		} else if len(a.Label) > maxLabelLen {
			errs = append(errs, fmt.Errorf("%s: label of %d bytes, at most %d", id, len(a.Label), maxLabelLen))
		}
		if a.Match == "" && a.Shlib == "" {
			errs = append(errs, fmt.Errorf("%s (label %q): match (a regular expression on function names) or shlib must be set", id, a.Label))
		}
		var m matcher
		var err error
		if a.Match != "" {
			if m.function, err = compilePattern(id+".match", a.Match); err != nil {
				errs = append(errs, err)
			}
		}
		if a.Shlib != "" {
			if m.shlib, err = compilePattern(id+".shlib", a.Shlib); err != nil {
				errs = append(errs, err)
			}
		}
		for _, t := range a.FrameTypes {
			if _, ok := frameTypeMetric[t]; !ok {
				errs = append(errs, fmt.Errorf("%s.frame_types: unknown frame type %q (known: %s)", id, t, strings.Join(knownFrameTypes(), ", ")))
				continue
			}
			if m.frameTypes == nil {
				m.frameTypes = map[string]bool{}
			}
			m.frameTypes[t] = true
		}
		li, ok := labelIdx[a.Label]
		if !ok {
			li = len(out.labels)
			labelIdx[a.Label] = li
			out.labels = append(out.labels, a.Label)
		}
		out.aggs = append(out.aggs, compiledAgg{m: m, labelIdx: li})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func knownFrameTypes() []string {
	out := make([]string, 0, len(frameTypeMetric))
	for t := range frameTypeMetric {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
