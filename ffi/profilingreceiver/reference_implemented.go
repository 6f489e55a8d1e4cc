// SPDX-License-Identifier: Apache-2.0

package profilingreceiver // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingreceiver"

import (
	"fmt"
	"strings"
	"time"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/otelprof"
)

// The library's limits on include_env_vars (lib/process/proc_environ.h).
const (
	maxEnvVars       = 16
	maxEnvVarNameLen = 127
)

// validateImplementedReferenceKeys checks the reference keys this receiver
// implements with the reference's meaning:
//
//   - probabilistic_threshold (1..100, 100 = always on) and
//     probabilistic_interval: at the start of every interval a draw in
//     [0, 100) below the threshold turns sampling on for the interval,
//     otherwise the perf events are disabled. The reference accepts
//     intervals of 1 to 5 minutes; 1 s to 5 minutes here.
//   - include_env_vars: environment variable names, separated by commas,
//     copied onto each process's resource as
//     process.environment_variable.<name>.
func (c *Config) validateImplementedReferenceKeys() []error {
	var errs []error
	k := c.referenceKeys
	if k.ProbabilisticThreshold < 1 || k.ProbabilisticThreshold > otelprof.MaxProbabilisticThreshold {
		errs = append(errs, fmt.Errorf("probabilistic_threshold must be between 1 and %d (100: always on), got %d",
			otelprof.MaxProbabilisticThreshold, k.ProbabilisticThreshold))
	}
	minI := time.Duration(otelprof.MinProbabilisticIntervalMs) * time.Millisecond
	maxI := time.Duration(otelprof.MaxProbabilisticIntervalMs) * time.Millisecond
	if k.ProbabilisticInterval < minI || k.ProbabilisticInterval > maxI || k.ProbabilisticInterval%time.Millisecond != 0 {
		errs = append(errs, fmt.Errorf("probabilistic_interval must be between %s and %s in whole milliseconds, got %s",
			minI, maxI, k.ProbabilisticInterval))
	}
	if err := checkEnvVarNames(k.IncludeEnvVars); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// checkEnvVarNames refuses what the library would: more than 16 names,
// empty names (",,"), names of 128 bytes or more, or with '=', a NUL or
// white space.
func checkEnvVarNames(list string) error {
	if list == "" {
		return nil
	}
	names := strings.Split(list, ",")
	if len(names) > maxEnvVars {
		return fmt.Errorf("include_env_vars: at most %d names, got %d", maxEnvVars, len(names))
	}
	for _, n := range names {
		if n == "" || len(n) > maxEnvVarNameLen || strings.ContainsAny(n, "= \t\r\n\x00") {
			return fmt.Errorf("include_env_vars: %q is not an environment variable name (non-empty, under %d bytes, no '=' or white space; names are separated by commas)",
				n, maxEnvVarNameLen+1)
		}
	}
	return nil
}
