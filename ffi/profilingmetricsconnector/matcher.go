// SPDX-License-Identifier: Apache-2.0

package profilingmetricsconnector // import "github.com/libotelprofiler/libotelprofiler/ffi/profilingmetricsconnector"

import (
	"fmt"
	"regexp"
	"regexp/syntax"
)

// Bounds on what a configuration may ask of the matcher: Go's regexp is
// RE2 (time linear in the input, no backtracking), and these bound the
// program size, so the cost per location is bounded too. A payload's
// distinct functions are matched once each (payload.match keeps the
// result), not once per sample.
const (
	maxPatternLen   = 1024 // bytes of one regular expression
	maxProgramInsts = 4096 // instructions of its compiled program
	maxMatchInput   = 4096 // bytes of a name matched (longer ones: the prefix)
)

// compilePattern compiles an RE2 expression within the bounds above.
func compilePattern(what, expr string) (*regexp.Regexp, error) {
	if len(expr) > maxPatternLen {
		return nil, fmt.Errorf("%s: pattern of %d bytes, at most %d", what, len(expr), maxPatternLen)
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(prog.Inst) > maxProgramInsts {
		return nil, fmt.Errorf("%s: pattern compiles to %d instructions, at most %d (simplify it or split it)", what, len(prog.Inst), maxProgramInsts)
	}
	return regexp.Compile(expr)
}

func matchBounded(re *regexp.Regexp, s string) bool {
	if len(s) > maxMatchInput {
		s = s[:maxMatchInput]
	}
	return re.MatchString(s)
}

// matcher selects frames: every set field must match. A nil regexp or an
// empty frameTypes matches anything.
type matcher struct {
	function   *regexp.Regexp  // any of the location's function names (inlined lines included)
	file       *regexp.Regexp  // any of its functions' file names (CPython's module path)
	shlib      *regexp.Regexp  // the mapping's library name (shlib_name)
	frameTypes map[string]bool // profile.frame.type
}

func (m *matcher) matches(l *locInfo) bool {
	if len(m.frameTypes) > 0 && !m.frameTypes[l.typ] {
		return false
	}
	if m.shlib != nil && (l.shlib == "" || !matchBounded(m.shlib, l.shlib)) {
		return false
	}
	if m.function != nil && !anyMatch(m.function, l.fns) {
		return false
	}
	if m.file != nil && !anyMatch(m.file, l.files) {
		return false
	}
	return m.function != nil || m.file != nil || m.shlib != nil
}

func anyMatch(re *regexp.Regexp, ss []string) bool {
	for _, s := range ss {
		if s != "" && matchBounded(re, s) {
			return true
		}
	}
	return false
}
