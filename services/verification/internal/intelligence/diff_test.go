package intelligence

import (
	"encoding/json"
	"fmt"
	"testing"
)

// baseServer is the server.json every case starts from.
func baseServer() map[string]any {
	return map[string]any{
		"name": "io.example/weather", "version": "1.0.0", "title": "Weather", "description": "Forecasts",
		"websiteUrl": "https://example.com",
		"repository": map[string]any{"url": "https://github.com/example/weather", "source": "github", "id": "101"},
		"packages": []any{map[string]any{
			"registryType": "npm", "registryBaseUrl": "https://registry.npmjs.org", "identifier": "@example/weather",
			"version": "1.0.0", "fileSha256": "aa", "runtimeHint": "npx", "transport": map[string]any{"type": "stdio"},
			"environmentVariables": []any{map[string]any{"name": "API_KEY", "isRequired": true, "isSecret": true}},
		}},
		"remotes": []any{map[string]any{"type": "streamable-http", "url": "https://mcp.example.com/weather",
			"headers": []any{map[string]any{"name": "X-Trace", "isRequired": false}}}},
	}
}

func snapshotOf(t *testing.T, status string, edit func(m map[string]any)) Snapshot {
	t.Helper()
	m := baseServer()
	if edit != nil {
		edit(m)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeServer(raw)
	if err != nil {
		t.Fatal(err)
	}
	return Snapshot{Server: s, Status: status}
}

func pkg0(m map[string]any) map[string]any    { return m["packages"].([]any)[0].(map[string]any) }
func remote0(m map[string]any) map[string]any { return m["remotes"].([]any)[0].(map[string]any) }

type want struct {
	field string
	typ   ChangeType
	risk  Risk
}

func TestDiffClassifiesEachRuleOfTheTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		fromStatus string
		toStatus   string
		edit       func(m map[string]any)
		want       []want
	}{
		{"identical content", "", "", nil, nil},
		{"remote moved to another host", "", "", func(m map[string]any) { remote0(m)["url"] = "https://evil.example.net/weather" },
			[]want{{"remotes[0].url", RemoteHostChanged, RiskHigh}}},
		{"remote path changed on the same host", "", "", func(m map[string]any) { remote0(m)["url"] = "https://mcp.example.com/v2" },
			[]want{{"remotes[0].url", RemoteURLChanged, RiskHigh}}},
		{"remote transport changed", "", "", func(m map[string]any) { remote0(m)["type"] = "sse" },
			[]want{{"remotes[0].type", TransportChanged, RiskHigh}}},
		{"remote added", "", "", func(m map[string]any) {
			m["remotes"] = append(m["remotes"].([]any), map[string]any{"type": "sse", "url": "https://other.example.org/sse"})
		}, []want{{"remotes[1]", RemoteAdded, RiskHigh}}},
		{"remote removed", "", "", func(m map[string]any) { m["remotes"] = []any{} },
			[]want{{"remotes[0]", RemoteRemoved, RiskLow}}},
		{"new required header on a remote", "", "", func(m map[string]any) {
			remote0(m)["headers"] = append(remote0(m)["headers"].([]any), map[string]any{"name": "X-Tenant", "isRequired": true})
		}, []want{{"remotes[0].headers.X-Tenant", RequiredInputAdded, RiskHigh}}},
		{"new secret header on a remote", "", "", func(m map[string]any) {
			remote0(m)["headers"] = append(remote0(m)["headers"].([]any), map[string]any{"name": "Authorization", "isSecret": true, "isRequired": true})
		}, []want{{"remotes[0].headers.Authorization", SecretAdded, RiskHigh}}},
		{"header name changes case only", "", "", func(m map[string]any) {
			remote0(m)["headers"] = []any{map[string]any{"name": "x-trace", "isRequired": false}}
		}, nil},
		{"repository url changed", "", "", func(m map[string]any) {
			m["repository"].(map[string]any)["url"] = "https://github.com/someone-else/weather"
		}, []want{{"repository.url", RepositoryURLChanged, RiskHigh}}},
		{"repository recreated (resurrection)", "", "", func(m map[string]any) { m["repository"].(map[string]any)["id"] = "202" },
			[]want{{"repository.id", RepositoryIDChanged, RiskHigh}}},
		{"repository id dropped", "", "", func(m map[string]any) { delete(m["repository"].(map[string]any), "id") },
			[]want{{"repository.id", RepositoryIDRemoved, RiskHigh}}},
		{"repository no longer declared", "", "", func(m map[string]any) { delete(m, "repository") },
			[]want{{"repository.url", RepositoryRemoved, RiskMedium}, {"repository.id", RepositoryIDRemoved, RiskHigh}}},
		{"repository subfolder changed", "", "", func(m map[string]any) { m["repository"].(map[string]any)["subfolder"] = "src/other" },
			[]want{{"repository.subfolder", RepositorySubfolderChanged, RiskMedium}}},
		{"package identifier changed", "", "", func(m map[string]any) { pkg0(m)["identifier"] = "@evil/weather" },
			[]want{{"packages[0].identifier", PackageIdentifierChanged, RiskHigh}}},
		{"package registry type changed", "", "", func(m map[string]any) { pkg0(m)["registryType"] = "pypi" },
			[]want{{"packages[0].registryType", PackageRegistryChanged, RiskHigh}}},
		{"package registry URL changed", "", "", func(m map[string]any) { pkg0(m)["registryBaseUrl"] = "https://npm.evil.example" },
			[]want{{"packages[0].registryBaseUrl", PackageRegistryChanged, RiskHigh}}},
		{"package hash changed under the same version", "", "", func(m map[string]any) { pkg0(m)["fileSha256"] = "bb" },
			[]want{{"packages[0].fileSha256", PackageHashChanged, RiskHigh}}},
		{"package hash changed with a new release", "", "", func(m map[string]any) {
			pkg0(m)["fileSha256"], pkg0(m)["version"] = "bb", "1.1.0"
		}, []want{{"packages[0].version", PackageVersionChanged, RiskLow}, {"packages[0].fileSha256", PackageReleaseChanged, RiskMedium}}},
		{"package hash dropped", "", "", func(m map[string]any) { delete(pkg0(m), "fileSha256") },
			[]want{{"packages[0].fileSha256", PackageHashRemoved, RiskHigh}}},
		{"package transport changed", "", "", func(m map[string]any) {
			pkg0(m)["transport"] = map[string]any{"type": "streamable-http", "url": "http://localhost:3000/mcp"}
		}, []want{{"packages[0].transport.type", TransportChanged, RiskHigh}, {"packages[0].transport.url", TransportChanged, RiskHigh}}},
		{"package runtime and arguments changed", "", "", func(m map[string]any) {
			pkg0(m)["runtimeHint"] = "docker"
			pkg0(m)["packageArguments"] = []any{map[string]any{"type": "named", "name": "--unsafe"}}
		}, []want{{"packages[0].runtimeHint", PackageRuntimeChanged, RiskMedium}, {"packages[0].packageArguments", PackageArgumentsChanged, RiskMedium}}},
		{"package added", "", "", func(m map[string]any) {
			m["packages"] = append(m["packages"].([]any), map[string]any{"registryType": "pypi", "identifier": "weather-mcp", "transport": map[string]any{"type": "stdio"}})
		}, []want{{"packages[1]", PackageAdded, RiskHigh}}},
		{"package removed", "", "", func(m map[string]any) { m["packages"] = []any{} },
			[]want{{"packages[0]", PackageRemoved, RiskLow}}},
		{"new secret environment variable", "", "", func(m map[string]any) {
			pkg0(m)["environmentVariables"] = append(pkg0(m)["environmentVariables"].([]any), map[string]any{"name": "DB_PASSWORD", "isSecret": true})
		}, []want{{"packages[0].environmentVariables.DB_PASSWORD", SecretAdded, RiskHigh}}},
		{"new required environment variable", "", "", func(m map[string]any) {
			pkg0(m)["environmentVariables"] = append(pkg0(m)["environmentVariables"].([]any), map[string]any{"name": "REGION", "isRequired": true})
		}, []want{{"packages[0].environmentVariables.REGION", RequiredInputAdded, RiskHigh}}},
		{"new optional environment variable", "", "", func(m map[string]any) {
			pkg0(m)["environmentVariables"] = append(pkg0(m)["environmentVariables"].([]any), map[string]any{"name": "LOG_LEVEL"})
		}, []want{{"packages[0].environmentVariables.LOG_LEVEL", InputAdded, RiskLow}}},
		{"environment variable removed", "", "", func(m map[string]any) { pkg0(m)["environmentVariables"] = []any{} },
			[]want{{"packages[0].environmentVariables.API_KEY", InputRemoved, RiskLow}}},
		{"optional header becomes required", "", "", func(m map[string]any) {
			remote0(m)["headers"] = []any{map[string]any{"name": "X-Trace", "isRequired": true}}
		}, []want{{"remotes[0].headers.X-Trace", RequiredInputAdded, RiskHigh}}},
		{"environment variable default changed", "", "", func(m map[string]any) {
			pkg0(m)["environmentVariables"] = []any{map[string]any{"name": "API_KEY", "isRequired": true, "isSecret": true, "default": "x"}}
		}, []want{{"packages[0].environmentVariables.API_KEY", InputChanged, RiskMedium}}},
		{"deprecated", "active", "deprecated", nil, []want{{"status", StatusDeprecated, RiskHigh}}},
		{"deleted", "deprecated", "deleted", nil, []want{{"status", StatusDeleted, RiskHigh}}},
		{"reactivated", "deleted", "active", nil, []want{{"status", StatusReactivated, RiskMedium}}},
		{"version bump", "", "", func(m map[string]any) { m["version"] = "1.1.0" }, []want{{"version", VersionBump, RiskLow}}},
		{"version downgrade", "", "", func(m map[string]any) { m["version"] = "0.9.0" }, []want{{"version", VersionDowngrade, RiskMedium}}},
		{"description edited", "", "", func(m map[string]any) { m["description"] = "Better forecasts" },
			[]want{{"description", DescriptionChanged, RiskLow}}},
		{"title edited", "", "", func(m map[string]any) { m["title"] = "Weather Pro" }, []want{{"title", TitleChanged, RiskLow}}},
		{"website changed", "", "", func(m map[string]any) { m["websiteUrl"] = "https://example.org" },
			[]want{{"websiteUrl", WebsiteChanged, RiskLow}}},
		{"icons added", "", "", func(m map[string]any) { m["icons"] = []any{map[string]any{"src": "https://example.com/i.png"}} },
			[]want{{"icons", MetadataChanged, RiskLow}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			from := snapshotOf(t, orActive(tt.fromStatus), nil)
			to := snapshotOf(t, orActive(tt.toStatus), tt.edit)
			got := Diff(from, to)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d changes %s, want %v", len(got), describe(got), tt.want)
			}
			for i, w := range tt.want {
				if g := got[i]; g.Field != w.field || g.Type != w.typ || g.Risk != w.risk {
					t.Errorf("change %d: got {%s %s %s}, want {%s %s %s}", i, g.Field, g.Type, g.Risk, w.field, w.typ, w.risk)
				}
				if got[i].Summary == "" {
					t.Errorf("change %d has no summary", i)
				}
			}
		})
	}
}

func orActive(s string) string {
	if s == "" {
		return LifecycleActive
	}
	return s
}

func describe(changes []FieldChange) string {
	s := "["
	for _, c := range changes {
		s += fmt.Sprintf("{%s %s %s} ", c.Field, c.Type, c.Risk)
	}
	return s + "]"
}

func TestDiffKeepsOldAndNewValues(t *testing.T) {
	t.Parallel()
	from := snapshotOf(t, LifecycleActive, nil)
	to := snapshotOf(t, LifecycleActive, func(m map[string]any) { remote0(m)["url"] = "https://evil.example.net/weather" })
	got := Diff(from, to)
	if len(got) != 1 || got[0].Old != "https://mcp.example.com/weather" || got[0].New != "https://evil.example.net/weather" {
		t.Fatalf("got %+v, want the old and new remote URL", got)
	}
}

func TestRulesTableIsConsistent(t *testing.T) {
	t.Parallel()
	seen := map[ChangeType]bool{}
	for _, r := range Rules {
		if seen[r.Type] {
			t.Errorf("change type %s listed twice", r.Type)
		}
		seen[r.Type] = true
		if r.Risk.rank() == 0 || r.When == "" {
			t.Errorf("rule %s: got risk %q and when %q, want a risk level and a description", r.Type, r.Risk, r.When)
		}
		if RiskOf(r.Type) != r.Risk {
			t.Errorf("rule %s is not found by its type", r.Type)
		}
	}
	if RiskOf("made_up") != "" {
		t.Error("an unknown change type has a risk")
	}
}

func TestHighestRisk(t *testing.T) {
	t.Parallel()
	if got := HighestRisk(nil); got != "" {
		t.Errorf("no changes: got %q, want empty", got)
	}
	got := HighestRisk([]FieldChange{{Risk: RiskLow}, {Risk: RiskHigh}, {Risk: RiskMedium}})
	if got != RiskHigh {
		t.Errorf("got %q, want high", got)
	}
}
