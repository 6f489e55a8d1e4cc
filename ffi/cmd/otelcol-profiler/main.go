// SPDX-License-Identifier: Apache-2.0

// Command otelcol-profiler is an OpenTelemetry Collector distribution built
// around libotelprofiler: the profiling receiver, OTLP in and out, the
// file/debug exporters, the processors a node agent needs and a
// profiles-to-metrics connector.
//
// Differences from a stock collector:
//   - the service.profilesSupport feature gate is on by default (profiles
//     pipelines need it); --feature-gates=-service.profilesSupport turns it off;
//   - without --config, the embedded copy of collector-config/local.yaml is
//     used (URI "embedded:local.yaml"; see `components` for the rest).
package main

import (
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/httpprovider"
	"go.opentelemetry.io/collector/confmap/provider/httpsprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/featuregate"
	"go.opentelemetry.io/collector/otelcol"
)

// Version is set with -ldflags "-X main.Version=...".
var Version = "0.1.0-dev"

const profilesGate = "service.profilesSupport"

func main() {
	if err := featuregate.GlobalRegistry().Set(profilesGate, true); err != nil {
		fmt.Fprintf(os.Stderr, "otelcol-profiler: enabling %s: %v\n", profilesGate, err)
		os.Exit(1)
	}
	cmd := otelcol.NewCommand(settings())
	cmd.SetArgs(withDefaultConfig(os.Args[1:]))
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}

// settings returns the collector settings; the config URIs come from the
// command line (or withDefaultConfig).
func settings() otelcol.CollectorSettings {
	return otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol-profiler",
			Description: "OpenTelemetry Collector with the libotelprofiler eBPF profiling receiver",
			Version:     Version,
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					fileprovider.NewFactory(),
					envprovider.NewFactory(),
					yamlprovider.NewFactory(),
					httpprovider.NewFactory(),
					httpsprovider.NewFactory(),
					newEmbeddedProviderFactory(),
				},
				DefaultScheme: "env",
			},
		},
	}
}

// withDefaultConfig appends --config=embedded:local.yaml when the collector
// is run (no subcommand, or `validate`) without any --config flag.
func withDefaultConfig(args []string) []string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if a == "--config" || a == "-config" || strings.HasPrefix(a, "--config=") || strings.HasPrefix(a, "-config=") {
			return args
		}
		if a == "-h" || a == "--help" || a == "-v" || a == "--version" {
			return args
		}
		if !strings.HasPrefix(a, "-") {
			// The first positional argument is a subcommand; only
			// validate takes a config. Flag values ("--feature-gates x")
			// are skipped by checking the previous argument.
			if i > 0 && !strings.Contains(args[i-1], "=") && strings.HasPrefix(args[i-1], "-") {
				continue
			}
			if a != "validate" {
				return args
			}
		}
	}
	out := append([]string{}, args...)
	return append(out, "--config="+embeddedScheme+":"+embeddedName)
}
