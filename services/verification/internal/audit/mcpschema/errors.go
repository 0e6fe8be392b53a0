package mcpschema

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// ErrInvalid matches (errors.Is) every *InvalidError.
var ErrInvalid = errors.New("mcpschema: message does not match the schema")

// Limits on an InvalidError's text: it ends up in a report's details, where a full validation
// tree (hundreds of lines for a bad tools/list) would bury the point.
const (
	maxCauses   = 3
	maxErrorLen = 300
)

// InvalidError is a message that does not match its definition.
type InvalidError struct {
	Definition string
	// Causes are the most specific failures, at most three, each "at <JSON pointer>: <problem>".
	Causes []string
	// More counts the failures left out of Causes.
	More int
}

// Error reads like "InitializeResult: at /serverInfo: missing property 'version'".
func (e *InvalidError) Error() string {
	s := e.Definition + ": " + strings.Join(e.Causes, "; ")
	if e.More > 0 {
		s += fmt.Sprintf(" (and %d more)", e.More)
	}
	if len(s) > maxErrorLen {
		cut := maxErrorLen - len("…")
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

var printer = message.NewPrinter(language.English)

func invalid(definition string, ve *jsonschema.ValidationError) *InvalidError {
	var causes []string
	seen := map[string]bool{}
	for _, leaf := range leaves(ve) {
		c := "at " + pointer(leaf.InstanceLocation) + ": " + leaf.ErrorKind.LocalizedString(printer)
		if !seen[c] {
			seen[c] = true
			causes = append(causes, c)
		}
	}
	if len(causes) == 0 {
		causes = []string{"at " + pointer(ve.InstanceLocation) + ": " + ve.ErrorKind.LocalizedString(printer)}
	}
	e := &InvalidError{Definition: definition, Causes: causes}
	if len(causes) > maxCauses {
		e.Causes, e.More = causes[:maxCauses], len(causes)-maxCauses
	}
	return e
}

// leaves returns the failures at the bottom of the tree, deepest instance location first: the
// deepest failure is the most specific one. Where an anyOf or oneOf matched no branch, only the
// branch that got deepest into the instance is followed, because the others failed for reasons
// (a wrong "type" discriminator, typically) that say nothing about what the sender meant.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	var out []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, e)
			return
		}
		switch e.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			if best := bestBranch(e.Causes); best != nil {
				walk(best)
				return
			}
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(e)
	slices.SortStableFunc(out, func(a, b *jsonschema.ValidationError) int {
		return len(b.InstanceLocation) - len(a.InstanceLocation)
	})
	return out
}

// bestBranch picks, among failed branches, the one whose failures lie deepest, ties going to the
// branch with fewer failures (the nearer miss).
func bestBranch(branches []*jsonschema.ValidationError) *jsonschema.ValidationError {
	var best *jsonschema.ValidationError
	bestDepth, bestCount := -1, 0
	for _, b := range branches {
		depth, count := 0, 0
		for _, l := range leavesAll(b) {
			count++
			depth = max(depth, len(l.InstanceLocation))
		}
		if depth > bestDepth || (depth == bestDepth && count < bestCount) {
			best, bestDepth, bestCount = b, depth, count
		}
	}
	return best
}

func leavesAll(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leavesAll(c)...)
	}
	return out
}

// pointer is the RFC 6901 JSON pointer of an instance location; the whole message is "/" so
// that every cause reads "at <something>".
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return "/"
	}
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		sb.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return sb.String()
}
