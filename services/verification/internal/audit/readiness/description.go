package readiness

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

func checkDescriptionMissing(in Input) []Evidence {
	return forTools(in, func(t surface.Tool) []string {
		if strings.TrimSpace(t.Description) == "" {
			return []string{"description is empty"}
		}
		return nil
	})
}

// genericWords are words that say nothing about what a tool does. A description made of them
// only ("This tool does stuff.", "A helper utility") is vague however long it is.
var genericWords = set(
	"a", "an", "the", "this", "that", "these", "it", "its", "is", "are", "be", "can", "will",
	"does", "do", "doing", "stuff", "things", "thing", "something", "anything", "everything",
	"tool", "tools", "helper", "helpers", "helps", "help", "utility", "utilities", "util", "utils",
	"function", "functions", "method", "methods", "misc", "miscellaneous", "various", "generic",
	"general", "some", "handle", "handles", "handler", "perform", "performs", "action", "actions",
	"operation", "operations", "for", "with", "of", "and", "or", "to", "my", "our", "your",
	"todo", "tbd", "fixme", "description", "placeholder", "test", "testing", "n", "na", "none",
	"useful", "simple", "basic", "just", "which", "used", "use", "run", "runs", "call", "calls",
	"you", "me", "us", "we", "here", "goes", "new", "sample", "example", "demo",
)

func checkDescriptionVague(in Input) []Evidence {
	return forTools(in, func(t surface.Tool) []string {
		d := strings.TrimSpace(t.Description)
		if d == "" {
			return nil // description-missing reports it
		}
		n, words := utf8.RuneCountInString(d), wordsOf(d)
		switch {
		case n < VagueMinChars:
			return []string{fmt.Sprintf("description %s is %d characters long (fewer than %d)", quote(d, 80), n, VagueMinChars)}
		case len(words) < VagueMinWords:
			return []string{fmt.Sprintf("description %s has %d words (fewer than %d)", quote(d, 80), len(words), VagueMinWords)}
		case generic(words):
			return []string{fmt.Sprintf("description %s says nothing specific", quote(d, 80))}
		}
		return nil
	})
}

func generic(words []string) bool {
	for _, w := range words {
		if !genericWords[w] {
			return false
		}
	}
	return true
}

// wordsOf splits text into lower-case words: runs of letters and digits, with inner apostrophes
// kept so "doesn't" stays one word.
func wordsOf(s string) []string {
	fields := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’'
	})
	words := fields[:0]
	for _, f := range fields {
		if f = strings.Trim(f, "'’"); f != "" {
			words = append(words, f)
		}
	}
	return words
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
