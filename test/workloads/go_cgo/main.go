// go_cgo: a Go program whose time is in C code called through cgo, as
// shipped (externally linked, stripped). Go 1.26 leaves the function
// table's text start out, and the C start-up code comes before the Go
// text: a profiler must take the start from moduledata. The C function
// runs on the thread's g0 stack (asmcgocall moves sp there): its callers
// are on the goroutine's stack. Usage: go_cgo SECONDS
package main

/*
#include <stdint.h>

// Sums squares: noinline so that it is a frame of its own.
__attribute__((noinline)) static uint64_t spin_c(uint64_t n) {
	volatile uint64_t s = 0;
	for (uint64_t i = 0; i < n; i++)
		s += i * i;
	return s;
}

static uint64_t spin_entry(uint64_t n) { return spin_c(n) + 1; }
*/
import "C"

import (
	"os"
	"strconv"
	"time"
)

//go:noinline
func callC() uint64 { return uint64(C.spin_entry(5000000)) }

//go:noinline
func loop(end time.Time) uint64 {
	var x uint64
	for time.Now().Before(end) {
		x += callC()
	}
	return x
}

func main() {
	secs, err := strconv.Atoi(os.Args[1])
	if err != nil {
		os.Exit(2)
	}
	if loop(time.Now().Add(time.Duration(secs)*time.Second)) == 0 {
		os.Exit(1)
	}
}
