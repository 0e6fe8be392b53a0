package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// Page limits: tools/list is followed far enough to judge its cursors (a server may have dozens of
// tools on pages of ten); the other lists only feed the surface, so two pages tell enough and keep
// the budget for the checks.
const (
	statefulToolPages  = 5
	statefulOtherPages = 2
)

// statefulPages is what paging through one list method found.
type statefulPages struct {
	items []json.RawMessage
	pages int
	// loop: a cursor came back, or a page repeated the one before; more: the page limit was
	// reached with a cursor left.
	loop, more bool
	// failed says why the list failed, "" when it did not; code is the JSON-RPC error that failed
	// it, 0 for none. invalid is the first schema error of a page that still decoded: the items
	// are kept, so that the finer checks say what is wrong with them, and message-schema fails.
	failed, invalid string
	code            int
}

// paginate lists method (its items under key, each page a def) for at most limit pages.
func (s *statefulRun) paginate(ctx context.Context, method, def, key string, limit int) (statefulPages, error) {
	var l statefulPages
	var cursor string
	var prev []byte
	cursors := map[string]bool{}
	for {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		x, err := s.r.call(ctx, method, params, s.header())
		if err != nil {
			return l, err
		}
		l.pages++
		where := method
		if l.pages > 1 {
			where = fmt.Sprintf("%s (page %d)", method, l.pages)
		}
		verr := s.validate(where, x, def)
		switch {
		case x.reply == nil:
			l.failed = where + ": " + seen(x.resp)
			return l, nil
		case x.reply.Error != nil:
			l.code = x.reply.Error.Code
			l.failed = fmt.Sprintf("%s answers JSON-RPC error %d (%s)", where, l.code, trim(x.reply.Error.Message, 100))
			return l, nil
		}
		if verr != nil && l.invalid == "" {
			l.invalid = where + " does not validate: " + verr.Error()
		}
		var page map[string]json.RawMessage
		var items []json.RawMessage
		var next *string
		if json.Unmarshal(x.reply.Result, &page) != nil || json.Unmarshal(page[key], &items) != nil || page[key] == nil {
			l.failed = fmt.Sprintf("%s: the result holds no %s array", where, key)
			return l, nil
		}
		if raw, ok := page["nextCursor"]; ok && json.Unmarshal(raw, &next) != nil {
			l.failed = where + ": nextCursor is not a string"
			return l, nil
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, page[key])
		if l.pages > 1 && len(items) > 0 && bytes.Equal(compact.Bytes(), prev) {
			l.loop = true
			return l, nil
		}
		prev = compact.Bytes()
		l.items = append(l.items, items...)
		if next == nil || *next == "" {
			return l, nil
		}
		if cursors[*next] || *next == cursor {
			l.loop = true
			return l, nil
		}
		if l.pages >= limit {
			l.more = true
			return l, nil
		}
		cursors[*next], cursor = true, *next
	}
}

// tools lists the tools and judges the listing, its names, its schemas and its cursors.
func (s *statefulRun) tools(ctx context.Context) error {
	ids := []string{"tools-list", "tool-name-format", "tools-list-pagination", "json-schema-2020-12"}
	start := time.Now()
	if !s.declares("tools") {
		for _, id := range ids {
			s.r.record(id, Skipped, start, "the server declares no tools capability")
		}
		// Nothing to list is a listing: the surface is empty, not unknown.
		s.out.listing = &surface.Listing{}
		return nil
	}
	l, err := s.paginate(ctx, "tools/list", "ListToolsResult", "tools", statefulToolPages)
	if err != nil {
		return err
	}
	switch {
	case l.failed != "" && l.pages == 1:
		s.r.record("tools-list", Failure, start, "%s", l.failed)
		s.r.record("tools-list-pagination", Skipped, start, "the first page of tools/list failed")
	case l.failed != "":
		s.r.record("tools-list", Failure, start, "%s", l.failed)
		s.r.record("tools-list-pagination", Failure, start, "%s", l.failed)
	case l.loop:
		s.r.record("tools-list-pagination", Failure, start, "cursor loop: page %d repeats a cursor or the page before it", l.pages)
	case l.more:
		s.r.record("tools-list-pagination", Warning, start, "stopped after %d pages with a cursor left", l.pages)
	case l.pages == 1:
		s.r.record("tools-list-pagination", Success, start, "one page")
	default:
		s.r.record("tools-list-pagination", Success, start, "%d pages; the cursors advanced and ended", l.pages)
	}
	if l.failed != "" {
		s.r.record("tool-name-format", Skipped, start, "tools/list failed")
		s.r.record("json-schema-2020-12", Skipped, start, "tools/list failed")
		return nil
	}
	s.r.record("tools-list", Success, start, "%s on %s%s", statefulCount(len(l.items), "tool"), statefulCount(l.pages, "page"), l.schemaNote())
	tools := make([]surface.Tool, 0, len(l.items))
	var undecodable int
	for _, raw := range l.items {
		var t surface.Tool
		if json.Unmarshal(raw, &t) != nil {
			undecodable++
			continue
		}
		tools = append(tools, t)
	}
	s.toolNames(tools, undecodable, start)
	s.toolSchemas(tools, start)
	s.out.listing = &surface.Listing{Tools: tools}
	return nil
}

// toolNames records tool-name-format.
func (s *statefulRun) toolNames(tools []surface.Tool, undecodable int, start time.Time) {
	var bad []string
	if undecodable > 0 {
		bad = append(bad, fmt.Sprintf("%d entries are not tool objects with a string name", undecodable))
	}
	names := map[string]int{}
	var dups []string
	for _, t := range tools {
		if !statefulToolName(t.Name) {
			bad = append(bad, fmt.Sprintf("%q", trim(t.Name, 60)))
		}
		if names[t.Name]++; names[t.Name] == 2 {
			dups = append(dups, fmt.Sprintf("%q", trim(t.Name, 60)))
		}
	}
	switch {
	case len(bad) > 0:
		s.r.record("tool-name-format", Failure, start, "tool names that are not 1-128 characters of A-Z a-z 0-9 _ - . (%d): %s",
			len(bad), strings.Join(bad[:min(3, len(bad))], ", "))
	case len(dups) > 0:
		s.r.record("tool-name-format", Warning, start, "tool names are not unique: %s", strings.Join(dups[:min(3, len(dups))], ", "))
	case len(tools) == 0:
		s.r.record("tool-name-format", Info, start, "the server lists no tools")
	default:
		s.r.record("tool-name-format", Success, start, "%s valid", statefulCount(len(tools), "tool name"))
	}
}

// statefulToolName reports whether name follows the spec's tool name rules.
func statefulToolName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}

// toolSchemas records json-schema-2020-12.
func (s *statefulRun) toolSchemas(tools []surface.Tool, start time.Time) {
	var fails, warns []string
	for _, t := range tools {
		for _, f := range []struct {
			field    string
			raw      json.RawMessage
			required bool
		}{{"inputSchema", t.InputSchema, true}, {"outputSchema", t.OutputSchema, false}} {
			problem, warn := statefulSchemaProblem(f.raw, f.required)
			switch {
			case problem == "":
			case warn:
				warns = append(warns, fmt.Sprintf("%q %s %s", trim(t.Name, 60), f.field, problem))
			default:
				fails = append(fails, fmt.Sprintf("%q %s %s", trim(t.Name, 60), f.field, problem))
			}
		}
	}
	switch {
	case len(fails) > 0:
		s.r.record("json-schema-2020-12", Failure, start, "schemas that are not JSON Schema objects (%d): %s", len(fails), strings.Join(fails[:min(3, len(fails))], "; "))
	case len(warns) > 0:
		s.r.record("json-schema-2020-12", Warning, start, "schemas naming another draft than 2020-12 (%d): %s", len(warns), strings.Join(warns[:min(3, len(warns))], "; "))
	case len(tools) == 0:
		s.r.record("json-schema-2020-12", Info, start, "the server lists no tools")
	default:
		s.r.record("json-schema-2020-12", Success, start, "the schemas of %s are JSON Schema 2020-12 objects", statefulCount(len(tools), "tool"))
	}
}

// statefulSchemaProblem says what is wrong with a tool schema ("" when nothing); warn marks a
// schema that is usable but names another draft than the spec's default, 2020-12.
func statefulSchemaProblem(raw json.RawMessage, required bool) (problem string, warn bool) {
	if len(raw) == 0 || string(raw) == "null" {
		if required {
			return "is missing", false
		}
		return "", false
	}
	var schema map[string]json.RawMessage
	if json.Unmarshal(raw, &schema) != nil {
		return "is not an object", false
	}
	var typ string
	if json.Unmarshal(schema["type"], &typ) != nil || typ != "object" {
		return `has no "type": "object"`, false
	}
	if d, ok := schema["$schema"]; ok {
		var dialect string
		if json.Unmarshal(d, &dialect) != nil {
			return "has a $schema that is not a string", false
		}
		norm := strings.TrimPrefix(strings.TrimSuffix(dialect, "#"), "http://")
		norm = strings.TrimPrefix(norm, "https://")
		if norm != "json-schema.org/draft/2020-12/schema" {
			return fmt.Sprintf("names $schema %q", trim(dialect, 80)), true
		}
	}
	return "", false
}

// otherLists lists prompts, resources and resource templates where declared.
func (s *statefulRun) otherLists(ctx context.Context) error {
	start := time.Now()
	if !s.declares("prompts") {
		s.r.record("prompts-list", Skipped, start, "the server declares no prompts capability")
	} else {
		l, err := s.paginate(ctx, "prompts/list", "ListPromptsResult", "prompts", statefulOtherPages)
		if err != nil {
			return err
		}
		s.recordList("prompts-list", "prompt", l, false, start)
		if s.out.listing != nil && l.failed == "" {
			s.out.listing.Prompts = statefulDecode[surface.Prompt](l.items)
		}
	}
	start = time.Now()
	if !s.declares("resources") {
		s.r.record("resources-list", Skipped, start, "the server declares no resources capability")
		s.r.record("resources-templates-list", Skipped, start, "the server declares no resources capability")
		return nil
	}
	l, err := s.paginate(ctx, "resources/list", "ListResourcesResult", "resources", statefulOtherPages)
	if err != nil {
		return err
	}
	s.recordList("resources-list", "resource", l, false, start)
	if s.out.listing != nil && l.failed == "" {
		s.out.listing.Resources = statefulDecode[surface.Resource](l.items)
	}
	start = time.Now()
	l, err = s.paginate(ctx, "resources/templates/list", "ListResourceTemplatesResult", "resourceTemplates", statefulOtherPages)
	if err != nil {
		return err
	}
	s.recordList("resources-templates-list", "resource template", l, true, start)
	if s.out.listing != nil && l.failed == "" {
		s.out.listing.Templates = statefulDecode[surface.ResourceTemplate](l.items)
	}
	return nil
}

// recordList records a list check of prompts or resources. optional marks a method the capability
// does not require (resource templates), whose -32601 is a warning only.
func (s *statefulRun) recordList(id, noun string, l statefulPages, optional bool, start time.Time) {
	switch {
	case optional && l.pages == 1 && l.code == codeMethodNotFound:
		s.r.record(id, Warning, start, "%s; templates are optional, but a server declaring resources should answer an empty list", l.failed)
	case l.failed != "":
		s.r.record(id, Failure, start, "%s", l.failed)
	case l.loop:
		s.r.record(id, Warning, start, "%s; cursor loop: page %d repeats a cursor or the page before it%s", statefulCount(len(l.items), noun), l.pages, l.schemaNote())
	case l.more:
		s.r.record(id, Success, start, "%s on the first %d pages (the audit reads no further)%s", statefulCount(len(l.items), noun), l.pages, l.schemaNote())
	default:
		s.r.record(id, Success, start, "%s on %s%s", statefulCount(len(l.items), noun), statefulCount(l.pages, "page"), l.schemaNote())
	}
}

// schemaNote points a list that a client can use, but that breaks the schema, to message-schema:
// one defect fails one check, and a list check judges whether the list can be used.
func (l statefulPages) schemaNote() string {
	if l.invalid == "" {
		return ""
	}
	return "; the result breaks the schema (see message-schema)"
}

// statefulDecode decodes the items that decode as T and drops the others: the surface lists what a
// client could use.
func statefulDecode[T any](items []json.RawMessage) []T {
	out := make([]T, 0, len(items))
	for _, raw := range items {
		var v T
		if json.Unmarshal(raw, &v) == nil {
			out = append(out, v)
		}
	}
	return out
}

// undeclared calls the list method of every capability the server does not declare: a server that
// answers one anyway misleads clients that trust its capabilities.
func (s *statefulRun) undeclared(ctx context.Context) error {
	start := time.Now()
	status := Success
	var notes []string
	for _, c := range []struct{ capability, method, def string }{
		{"tools", "tools/list", "ListToolsResult"},
		{"prompts", "prompts/list", "ListPromptsResult"},
		{"resources", "resources/list", "ListResourcesResult"},
	} {
		if s.declares(c.capability) {
			continue
		}
		x, err := s.r.call(ctx, c.method, nil, s.header())
		if err != nil {
			return err
		}
		s.validate(c.method+" (undeclared)", x, c.def)
		e := statefulError(x)
		switch {
		case x.ok():
			status = statefulWorse(status, Warning)
			notes = append(notes, c.method+" answers a result")
		case e != nil && e.Code == codeMethodNotFound:
			notes = append(notes, c.method+" answers -32601")
		case e != nil:
			notes = append(notes, fmt.Sprintf("%s answers JSON-RPC error %d", c.method, e.Code))
		default:
			status = statefulWorse(status, Failure)
			notes = append(notes, c.method+" answers no JSON-RPC error: "+seen(x.resp))
		}
	}
	if len(notes) == 0 {
		s.r.record("undeclared-capability", Skipped, start, "the server declares tools, prompts and resources")
		return nil
	}
	why := ""
	if status == Warning {
		why = ": the server answers methods of capabilities it does not declare"
	}
	s.r.record("undeclared-capability", status, start, "%s%s", strings.Join(notes, "; "), why)
	return nil
}

// statefulCount is "1 tool", "2 tools".
func statefulCount(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// statefulWorse returns the graver of two statuses.
func statefulWorse(a, b Status) Status {
	rank := map[Status]int{Skipped: 0, Info: 1, Success: 2, Warning: 3, Failure: 4}
	if rank[b] > rank[a] {
		return b
	}
	return a
}
