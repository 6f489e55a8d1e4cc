// SPDX-License-Identifier: Apache-2.0

// Package collectortest runs the collector that `make collector` builds
// from collector-config/manifest.yaml (ocb) with the shipped configs and a
// fake libotelprofiler, and builds a second collector from a user-style
// manifest that names only the receiver module. Tests only.
package collectortest
