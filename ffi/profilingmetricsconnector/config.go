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

// Aggregation is a custom aggregation rule of Elastic's connector; accepted
// in the schema so that its configurations parse, rejected when used.
type Aggregation struct {
	Match string `mapstructure:"match"`
	Label string `mapstructure:"label"`
}

// Config mirrors the configuration keys of Elastic's profilingmetrics
// connector (flush_interval, metrics, aggregations).
type Config struct {
	// FlushInterval is the window over which delta counts are summed before
	// they are sent; 0 sends the counts of each received batch at once.
	FlushInterval time.Duration `mapstructure:"flush_interval"`
	// Metrics enables or disables individual metrics by name.
	Metrics map[string]MetricConfig `mapstructure:"metrics"`
	// Aggregations (custom regex aggregations) are not implemented.
	Aggregations []Aggregation `mapstructure:"aggregations"`
}

func createDefaultConfig() *Config {
	return &Config{FlushInterval: 30 * time.Second}
}

// notImplemented are metric names of the original connector this one does
// not produce; enabling them is an error rather than a silent no-op.
var notImplemented = map[string]string{
	"samples.frame_type":         "per-frame-type frame counts",
	"samples.classification":     "Go package / JVM class classification",
	"samples.custom_aggregation": "custom aggregations",
}

// Validate implements confmap.Validator.
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
		if _, ok := metricByName[n]; ok {
			continue
		}
		if what, ok := notImplemented[n]; ok {
			if c.Metrics[n].Enabled {
				errs = append(errs, fmt.Errorf("metrics::%s: %s are not implemented by this connector", n, what))
			}
			continue
		}
		errs = append(errs, fmt.Errorf("metrics::%s: unknown metric (known: %s)", n, strings.Join(knownMetricNames(), ", ")))
	}
	if len(c.Aggregations) > 0 {
		errs = append(errs, errors.New("aggregations: custom aggregations are not implemented by this connector"))
	}
	return errors.Join(errs...)
}

func (c *Config) enabled(name string) bool {
	if m, ok := c.Metrics[name]; ok {
		return m.Enabled
	}
	return true // every implemented metric is on by default
}
