package readiness

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// destructiveWords are the verbs that announce destruction, in their base, third-person and -ing
// forms. Past forms are left out on purpose: "deleted", "removed", "cancelled" mostly describe
// state ("include deleted items", "list cancelled orders"), not what the tool does.
var destructiveWords = forms(
	"delete", "remove", "drop", "destroy", "purge", "wipe", "erase", "truncate", "terminate",
	"revoke", "overwrite", "reset", "kill", "cancel",
)

// destructiveAbbrevs only occur in names: rm_file, del_key, unlinkPath.
var destructiveAbbrevs = set("rm", "rmdir", "del", "unlink")

// negations before a destructive word in a description ("never deletes", "without removing")
// turn it into a promise rather than a warning.
var negations = set("not", "never", "no", "without", "cannot", "can't", "won't", "doesn't", "don't", "nor")

func forms(verbs ...string) map[string]bool {
	doubled := map[string]string{"drop": "dropping", "reset": "resetting", "cancel": "cancelling"}
	m := map[string]bool{}
	for _, v := range verbs {
		m[v], m[v+"s"] = true, true
		if d, ok := doubled[v]; ok {
			m[d] = true
		}
		m[strings.TrimSuffix(v, "e")+"ing"] = true
	}
	return m
}

// nameSegments splits a tool name on _ - . / spaces and camelCase boundaries, lower-cased:
// "deleteHTTPRoute_v2" gives delete, http, route, v2.
func nameSegments(name string) []string {
	var segs []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			segs = append(segs, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case r == '_' || r == '-' || r == '.' || r == '/' || r == ':' || unicode.IsSpace(r):
			flush()
			continue
		case unicode.IsUpper(r) && i > 0:
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return segs
}

// destructiveCue names the word that suggests t destroys something; "" when none does.
func destructiveCue(t surface.Tool) string {
	for _, seg := range nameSegments(t.Name) {
		if destructiveWords[seg] || destructiveAbbrevs[seg] {
			return fmt.Sprintf("name segment %q", seg)
		}
	}
	words := wordsOf(t.Description)
	for i, w := range words {
		if !destructiveWords[w] {
			continue
		}
		negated := false
		for j := max(0, i-3); j < i; j++ {
			negated = negated || negations[strings.ReplaceAll(words[j], "’", "'")]
		}
		if !negated {
			return fmt.Sprintf("description word %q", w)
		}
	}
	return ""
}

func checkDestructiveWithoutHint(in Input) []Evidence {
	return forTools(in, func(t surface.Tool) []string {
		cue := destructiveCue(t)
		if cue == "" {
			return nil
		}
		h := toolHints(t)
		switch {
		case h.readOnlySet && h.readOnly:
			return []string{cue + " suggests it destroys data, yet readOnlyHint is true"}
		case !h.destructiveSet:
			return []string{cue + " suggests it destroys data, yet destructiveHint is not set"}
		case !h.destructive:
			return []string{cue + " suggests it destroys data, yet destructiveHint is false"}
		}
		return nil
	})
}

// readPrefixes are the verbs that open the name of a tool that only reads.
var readPrefixes = set("get", "list", "search", "read", "fetch", "describe", "find", "query", "lookup")

func checkReadOnlyWithoutHint(in Input) []Evidence {
	return forTools(in, func(t surface.Tool) []string {
		segs := nameSegments(t.Name)
		if len(segs) == 0 || !readPrefixes[segs[0]] || toolHints(t).readOnlySet {
			return nil
		}
		return []string{fmt.Sprintf("name starts with %q, yet readOnlyHint is absent", segs[0])}
	})
}

func checkAnnotationContradiction(in Input) []Evidence {
	return forTools(in, func(t surface.Tool) []string {
		h := toolHints(t)
		if h.readOnly && h.destructive {
			return []string{"readOnlyHint and destructiveHint are both true"}
		}
		return nil
	})
}

// commonTools are tool names of widely installed servers (the reference filesystem, fetch, git
// and memory servers, shell and terminal servers, Playwright and Puppeteer, editor tools built
// into clients). A server offering one of them may be picked instead of, or be mistaken for, the
// tool the user meant.
var commonTools = []string{
	"read_file", "read_text_file", "read_multiple_files", "write_file", "edit_file", "create_directory",
	"list_directory", "directory_tree", "move_file", "search_files", "get_file_info",
	"bash", "shell", "sh", "terminal", "exec", "execute", "run_command", "execute_command",
	"run_terminal_cmd", "run_shell_command",
	"fetch", "search", "web_search", "brave_web_search",
	"browser_navigate", "browser_click", "browser_type", "browser_snapshot", "browser_take_screenshot",
	"puppeteer_navigate", "puppeteer_click",
	"str_replace_editor", "str_replace_based_edit_tool", "text_editor",
	"git_status", "git_diff", "git_commit",
	"create_entities", "read_graph",
}

var commonByNorm = func() map[string]string {
	m := map[string]string{}
	for _, n := range commonTools {
		m[normName(n)] = n
	}
	return m
}()

// normName folds the differences models and users do not notice: case and separators.
func normName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == '.' {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
}

func checkToolNameOverlap(in Input) []Evidence {
	var out []Evidence
	first := map[string]string{}
	for _, t := range in.Listing.Tools {
		n := normName(t.Name)
		if prev, ok := first[n]; ok {
			out = append(out, Evidence{Tool: label(t.Name), Detail: fmt.Sprintf("name collides with %s once case and separators are ignored", quote(prev, 80))})
		} else {
			first[n] = t.Name
		}
		if common, ok := commonByNorm[n]; ok {
			out = append(out, Evidence{Tool: label(t.Name), Detail: fmt.Sprintf("name shadows the common tool %q of popular MCP servers", common)})
		}
	}
	return out
}

func checkTooManyTools(in Input) []Evidence {
	if n := len(in.Listing.Tools); n > MaxTools {
		return []Evidence{{Detail: fmt.Sprintf("%d tools listed (more than %d)", n, MaxTools)}}
	}
	return nil
}

func checkNoTools(in Input) []Evidence {
	if in.Listed && len(in.Listing.Tools) == 0 {
		return []Evidence{{Detail: "tools/list answered with no tools"}}
	}
	return nil
}

func checkSurfaceUnavailable(in Input) []Evidence {
	if !in.Listed {
		return []Evidence{{Detail: "the audit could not list the server's tools"}}
	}
	return nil
}
