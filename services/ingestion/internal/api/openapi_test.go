package api

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestDocumentDescribesAccessAndAnswers(t *testing.T) {
	t.Parallel()
	raw, err := Document()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Info  map[string]any                       `json:"info"`
		Paths map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Info["version"] != InterfaceVersion {
		t.Errorf("info.version: got %v, want %s", doc.Info["version"], InterfaceVersion)
	}
	for _, tc := range []struct {
		method, path string
		admin        bool
		statuses     []string
	}{
		{"post", "/v1/sources", true, []string{"201", "401", "422"}},
		{"get", "/v1/sources", true, []string{"200", "401", "422"}},
		{"get", "/v1/sources/{id}", true, []string{"200", "401", "404"}},
		{"get", "/v1/sources/{id}/status", true, []string{"200", "401", "404"}},
		{"post", "/v1/sources/{id}/discovery-runs", true, []string{"201", "401", "404", "409"}},
		{"get", "/v1/change-events", true, []string{"200", "401", "422"}},
		{"get", "/v1/policies/{id}", true, []string{"200", "401", "404"}},
		{"get", "/v1/build", false, []string{"200"}},
		{"get", "/healthz", false, []string{"200"}},
		{"get", "/readyz", false, []string{"200", "503"}},
		{"get", "/openapi.json", false, []string{"200"}},
	} {
		op := doc.Paths[tc.path][tc.method]
		if op == nil {
			t.Errorf("%s %s: not documented", tc.method, tc.path)
			continue
		}
		var statuses []string
		for status := range op["responses"].(map[string]any) {
			statuses = append(statuses, status)
		}
		slices.Sort(statuses)
		if !slices.Equal(statuses, tc.statuses) {
			t.Errorf("%s %s: statuses %v, want %v", tc.method, tc.path, statuses, tc.statuses)
		}
		security, _ := json.Marshal(op["security"])
		want := `[]`
		if tc.admin {
			want = `[{"adminToken":[]}]`
		}
		if string(security) != want {
			t.Errorf("%s %s: security %s, want %s", tc.method, tc.path, security, want)
		}
	}
}
