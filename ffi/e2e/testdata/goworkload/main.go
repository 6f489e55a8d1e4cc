// SPDX-License-Identifier: Apache-2.0

// The Go e2e workload: encodes a tree of maps to JSON in a loop, which
// allocates enough that the garbage collector runs all the time.
// Runs until killed.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

type node struct {
	Name     string            `json:"name"`
	Tags     map[string]string `json:"tags"`
	Children []*node           `json:"children"`
}

func tree(depth int) *node {
	n := &node{Name: fmt.Sprintf("n%d", depth), Tags: map[string]string{"a": "x", "b": "y"}}
	if depth > 0 {
		for i := 0; i < 4; i++ {
			n.Children = append(n.Children, tree(depth-1))
		}
	}
	return n
}

//go:noinline
func encodeLoop() {
	var total int
	for {
		b, err := json.Marshal(tree(5))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		total += len(b)
	}
}

func main() { encodeLoop() }
