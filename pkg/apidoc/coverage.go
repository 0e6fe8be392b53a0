package apidoc

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/serve"
)

// Compare matches a document against the routes a server answers (serve.Server.Routes) both ways.
// undocumented lists the served routes the document lacks, unserved the documented operations no
// route answers, each as "METHOD /path" ("* /path" for a handler registered without a method, which
// any documented method of its path covers). Path parameters match whatever their names: the
// generator renames payer_id to payerId, and net/http writes {path...} where the gateway writes
// {path=**}.
func Compare(doc []byte, routes []serve.Route) (undocumented, unserved []string, err error) {
	var parsed struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &parsed); err != nil {
		return nil, nil, fmt.Errorf("apidoc: the document: %w", err)
	}
	documented := map[string][]string{} // normalized path -> upper-case methods
	for p, ops := range parsed.Paths {
		for method := range ops {
			documented[normalize(p)] = append(documented[normalize(p)], strings.ToUpper(method))
		}
	}
	served := map[string][]string{} // normalized path -> methods, "" for any
	for _, r := range routes {
		p := normalize(r.Path)
		served[p] = append(served[p], r.Method)
		methods := documented[p]
		if r.Method == "" && len(methods) == 0 {
			undocumented = append(undocumented, "* "+r.Path)
		}
		if r.Method != "" && !slices.Contains(methods, r.Method) {
			undocumented = append(undocumented, r.Method+" "+r.Path)
		}
	}
	for p, ops := range parsed.Paths {
		methods := served[normalize(p)]
		for method := range ops {
			if !slices.Contains(methods, "") && !slices.Contains(methods, strings.ToUpper(method)) {
				unserved = append(unserved, strings.ToUpper(method)+" "+p)
			}
		}
	}
	slices.Sort(undocumented)
	slices.Sort(unserved)
	return undocumented, unserved, nil
}

// CheckRoutes fails t for every route Compare finds on one side only: a route added without
// documentation, or documentation left behind by a removed route.
func CheckRoutes(t testing.TB, doc []byte, routes []serve.Route) {
	t.Helper()
	undocumented, unserved, err := Compare(doc, routes)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range undocumented {
		t.Errorf("%s is served but not documented: describe it in its proto, or as a plain route of the document", r)
	}
	for _, r := range unserved {
		t.Errorf("%s is documented but not served", r)
	}
}

// normalize makes a gateway template, a net/http pattern and a documented path comparable: every
// {parameter} becomes {}.
func normalize(p string) string { return pathParam.ReplaceAllString(p, "{}") }
