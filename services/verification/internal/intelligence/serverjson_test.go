package intelligence

import "testing"

func TestDecodeServerRefusesWhatTheSyncCannotUse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
	}{
		{"not JSON", `{"name":`},
		{"not an object", `["io.example/a"]`},
		{"null", `null`},
		{"name without namespace", `{"name":"weather","version":"1.0.0"}`},
		{"name with two slashes", `{"name":"io.example/a/b","version":"1.0.0"}`},
		{"name with spaces", `{"name":"io.example/a b","version":"1.0.0"}`},
		{"no version", `{"name":"io.example/a"}`},
		{"packages not a list", `{"name":"io.example/a","version":"1","packages":{"identifier":"x"}}`},
		{"package without identifier", `{"name":"io.example/a","version":"1","packages":[{"registryType":"npm"}]}`},
		{"remote without url", `{"name":"io.example/a","version":"1","remotes":[{"type":"sse"}]}`},
		{"title of the wrong type", `{"name":"io.example/a","version":"1","title":5}`},
	}
	for _, tt := range tests {
		if _, err := DecodeServer([]byte(tt.raw)); err == nil {
			t.Errorf("%s: got no error, want one", tt.name)
		}
	}
}

func TestContentHashIgnoresKeyOrderAndSpacing(t *testing.T) {
	t.Parallel()
	a, err := DecodeServer([]byte(`{"name":"io.example/a","version":"1.0.0","description":"d","_meta":{"x":1.50}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeServer([]byte(`{ "_meta": {"x": 1.50}, "description": "d", "version": "1.0.0", "name": "io.example/a" }`))
	if err != nil {
		t.Fatal(err)
	}
	if ContentHash(a, LifecycleActive) != ContentHash(b, LifecycleActive) {
		t.Errorf("got different hashes for the same content:\n%s\n%s", a.JSON, b.JSON)
	}
	if ContentHash(a, LifecycleActive) == ContentHash(a, LifecycleDeprecated) {
		t.Error("got the same hash for two statuses")
	}
	if a.Key != (ServerKey{Namespace: "io.example", Name: "a"}) {
		t.Errorf("got key %+v, want io.example / a", a.Key)
	}
}
