// SPDX-License-Identifier: Apache-2.0

// Package profilingreceiver is an OpenTelemetry Collector receiver for the
// profiles signal backed by libotelprofiler (loaded through purego, no cgo).
package profilingreceiver // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingreceiver"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/xreceiver"
)

// Type is the component type, the same as the reference receiver's so that
// existing configurations (`receivers: profiling: {}`) work unchanged.
var Type = component.MustNewType("profiling")

// ScopeName is the instrumentation scope of the receiver's own telemetry.
const ScopeName = "github.com/libotelprofiler/libotelprofiler/ffi/profilingreceiver"

// NewFactory returns the receiver factory.
func NewFactory() xreceiver.Factory {
	return xreceiver.NewFactory(
		Type,
		func() component.Config { return createDefaultConfig() },
		xreceiver.WithProfiles(createProfiles, component.StabilityLevelAlpha),
	)
}

func createProfiles(_ context.Context, set receiver.Settings, cfg component.Config, next xconsumer.Profiles) (xreceiver.Profiles, error) {
	return newReceiver(set, cfg.(*Config), next)
}
