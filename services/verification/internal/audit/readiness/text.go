package readiness

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// text is one piece of model-facing text and where it was found.
type text struct {
	// tool is the label of the tool it belongs to, "" for prompts, resources and the server.
	tool string
	// where names the text for a reader: "description", "inputSchema /properties/q/description",
	// `prompt "review" description`, "server instructions".
	where string
	s     string
}

// texts gathers every text a client may put in front of the model: names, titles and
// descriptions of tools, prompts and resources, the server's own text, and every string of the
// tools' schemas and annotations (clients pass schemas to the model whole, so a "default" or an
// enum value is as much an instruction channel as a description).
func texts(in Input) []text {
	var out []text
	add := func(tool, where, s string) {
		if s != "" {
			// where holds schema keys, which are server text too.
			out = append(out, text{tool: tool, where: label(where), s: s})
		}
	}
	for _, t := range in.Listing.Tools {
		l := label(t.Name)
		add(l, "name", t.Name)
		add(l, "title", t.Title)
		add(l, "description", t.Description)
		for _, part := range []struct {
			where string
			raw   []byte
		}{{"annotations", t.Annotations}, {"inputSchema", t.InputSchema}, {"outputSchema", t.OutputSchema}} {
			strs(decodeAny(part.raw), "", func(path, s string) { add(l, part.where+" "+path, s) })
		}
	}
	for _, p := range in.Listing.Prompts {
		item := "prompt " + quote(p.Name, 60) + " "
		add("", item+"name", p.Name)
		add("", item+"title", p.Title)
		add("", item+"description", p.Description)
		strs(decodeAny(p.Arguments), "", func(path, s string) { add("", item+"arguments "+path, s) })
	}
	for _, r := range in.Listing.Resources {
		item := "resource " + quote(r.URI, 80) + " "
		add("", item+"name", r.Name)
		add("", item+"title", r.Title)
		add("", item+"description", r.Description)
	}
	for _, r := range in.Listing.Templates {
		item := "resource template " + quote(r.URITemplate, 80) + " "
		add("", item+"name", r.Name)
		add("", item+"title", r.Title)
		add("", item+"description", r.Description)
	}
	add("", "server title", in.Server.Title)
	add("", "server description", in.Server.Description)
	add("", "server instructions", in.Server.Instructions)
	return out
}

// maxWalkDepth bounds the walk through a server's JSON.
const maxWalkDepth = 64

// strs calls f with every string in v, object keys included, and its JSON pointer (keys are
// reported at the pointer of their member, marked "(key)").
func strs(v any, path string, f func(path, s string)) {
	var walk func(v any, path string, depth int)
	walk = func(v any, path string, depth int) {
		if depth > maxWalkDepth {
			return
		}
		switch v := v.(type) {
		case string:
			f(pathOrRoot(path), v)
		case []any:
			for i, e := range v {
				walk(e, path+"/"+strconv.Itoa(i), depth+1)
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				p := path + "/" + escapePointer(k)
				f(p+" (key)", k)
				walk(v[k], p, depth+1)
			}
		}
	}
	walk(v, path, 0)
}

func pathOrRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func decodeAny(raw []byte) any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return v
}

// perText runs check over every text and caps the evidence per tool ("" gathering the rest).
func perText(in Input, check func(s string) []string) []Evidence {
	byTool := map[string][]string{}
	var order []string
	for _, t := range texts(in) {
		for _, d := range check(t.s) {
			if _, ok := byTool[t.tool]; !ok {
				order = append(order, t.tool)
			}
			byTool[t.tool] = append(byTool[t.tool], t.where+": "+d)
		}
	}
	var out []Evidence
	for _, tool := range order {
		out = append(out, capped(tool, byTool[tool])...)
	}
	return out
}
