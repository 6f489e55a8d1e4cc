// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	_ "embed"
	"fmt"

	"go.opentelemetry.io/collector/confmap"
)

// localYAML is a copy of collector-config/local.yaml (go:embed cannot reach
// outside the module); TestEmbeddedConfigInSync keeps the two identical.
//
//go:embed local.yaml
var localYAML []byte

const (
	embeddedScheme = "embedded"
	embeddedName   = "local.yaml"
)

type embeddedProvider struct{}

func newEmbeddedProviderFactory() confmap.ProviderFactory {
	return confmap.NewProviderFactory(func(confmap.ProviderSettings) confmap.Provider { return embeddedProvider{} })
}

func (embeddedProvider) Retrieve(_ context.Context, uri string, _ confmap.WatcherFunc) (*confmap.Retrieved, error) {
	if uri != embeddedScheme+":"+embeddedName {
		return nil, fmt.Errorf("unknown embedded config %q (only %s:%s exists)", uri, embeddedScheme, embeddedName)
	}
	return confmap.NewRetrievedFromYAML(localYAML)
}

func (embeddedProvider) Scheme() string { return embeddedScheme }

func (embeddedProvider) Shutdown(context.Context) error { return nil }
