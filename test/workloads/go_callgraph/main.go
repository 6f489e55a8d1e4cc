// SPDX-License-Identifier: Apache-2.0

// The known call graph of callgraph.c, in Go: work in the ratio 3:2:1
//
//	main.main -> main.runLoop -> main.pathHeavy -> main.leafHeavy     (50%)
//	main.main -> main.runLoop -> main.pathMedium -> main.leafMedium   (33.3%)
//	main.main -> main.runLoop -> main.leafLight                       (16.7%)
//
// Each leaf's loop is in mix, which the compiler inlines into it (the
// inline tree names it). Usage: go_callgraph SECONDS
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

var sink uint64

// mix is small enough to be inlined into every leaf.
func mix(x uint64, n int) uint64 { // MARK:mix_begin
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
} // MARK:mix_end

//go:noinline
func leafHeavy(x uint64) uint64 { return mix(x, 3*20000) } // MARK:heavy

//go:noinline
func leafMedium(x uint64) uint64 { return mix(x, 2*20000) } // MARK:medium

//go:noinline
func leafLight(x uint64) uint64 { return mix(x, 1*20000) } // MARK:light

//go:noinline
func pathHeavy(x uint64) uint64 { return leafHeavy(x) ^ 1 }

//go:noinline
func pathMedium(x uint64) uint64 { return leafMedium(x) ^ 1 }

//go:noinline
func runLoop(seconds float64) uint64 {
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	x, rounds := uint64(1), uint64(0)
	// The clock is read every 16 rounds: its cost, counted in runLoop,
	// stays out of the 3:2:1 ratio.
	for rounds%16 != 0 || time.Now().Before(end) {
		x = pathHeavy(x)
		x = pathMedium(x)
		x = leafLight(x)
		rounds++
	}
	return rounds
}

func main() {
	seconds := 5.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = v
		}
	}
	rounds := runLoop(seconds)
	fmt.Println("rounds", rounds, "sink", sink)
}
