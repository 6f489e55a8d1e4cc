// SPDX-License-Identifier: Apache-2.0

package profilingreceiver // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingreceiver"

import (
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"

	"github.com/libotelprofiler/libotelprofiler/ffi/internal/otelprof"
)

// RateController changes the sampling rate of a running profiling
// receiver, without reloading anything and without losing samples
// (otelprof_set_frequency). Samples keep the rate they were taken at: a
// window that spans a change carries one Profile per rate, each with its
// period.
type RateController interface {
	// SetSamplesPerSecond sets the rate per CPU, 1..max_samples_per_second.
	SetSamplesPerSecond(hz int) error
	// SamplesPerSecond is the rate now.
	SamplesPerSecond() int
}

var (
	controllersMu sync.Mutex
	controllers   = map[component.ID]*profilingReceiver{}
)

// Controller returns the rate controller of the started receiver with this
// ID (e.g. component.MustNewID("profiling")), for other components of the
// same collector; false when no such receiver is running.
func Controller(id component.ID) (RateController, bool) {
	controllersMu.Lock()
	defer controllersMu.Unlock()
	r, ok := controllers[id]
	return r, ok
}

func (r *profilingReceiver) registerController() {
	controllersMu.Lock()
	controllers[r.set.ID] = r
	controllersMu.Unlock()
}

func (r *profilingReceiver) unregisterController() {
	controllersMu.Lock()
	if controllers[r.set.ID] == r {
		delete(controllers, r.set.ID)
	}
	controllersMu.Unlock()
}

// errNotRunning: the receiver is not started, or shut down.
var errNotRunning = errors.New("profiling receiver is not running")

// SetSamplesPerSecond implements RateController.
func (r *profilingReceiver) SetSamplesPerSecond(hz int) error {
	if hz < 1 || hz > otelprof.MaxFrequency {
		return fmt.Errorf("samples per second must be between 1 and %d, got %d", otelprof.MaxFrequency, hz)
	}
	r.handleMu.RLock()
	defer r.handleMu.RUnlock()
	if r.prof == nil || r.closed {
		return errNotRunning
	}
	if err := r.prof.SetFrequency(uint32(hz)); err != nil {
		return err
	}
	r.rateMu.Lock()
	old := r.rate
	r.rate = hz
	r.rateMu.Unlock()
	r.set.Logger.Info("sampling rate changed", zap.Int("from", old), zap.Int("samples_per_second", hz))
	return nil
}

// SamplesPerSecond implements RateController.
func (r *profilingReceiver) SamplesPerSecond() int {
	r.rateMu.Lock()
	defer r.rateMu.Unlock()
	return r.rate
}
