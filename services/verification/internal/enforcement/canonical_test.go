package enforcement

import (
	"bytes"
	"errors"
	"testing"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

var canonicalSeeds = []string{
	`{"b":1,"a":[true,false,null,"x"],"c":{"z":-0,"y":-12,"x":""}}`,
	`{"\u00e9":1,"e":2,"\ud83d\ude00":3,"\ufb01":4}`,
	`["<&>","\u2028\u2029","\u0000\u001f\b\f\n\r\t","\"\\/"]`,
	`{"servers":[{"server":"a/b","readiness_score":90,"tools":[]}]}`,
	`123456789012345`,
}

func TestCanonicalizeAgreesWithJCS(t *testing.T) {
	for _, in := range canonicalSeeds {
		got, err := canonicalize([]byte(in))
		if err != nil {
			t.Fatalf("canonicalize(%s): %v", in, err)
		}
		want, err := surface.Canonical([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("canonicalize(%s) = %s, JCS says %s", in, got, want)
		}
	}
	for _, in := range []string{`1.5`, `1e3`, `1234567890123456`, `[0.1]`} {
		if _, err := canonicalize([]byte(in)); !errors.Is(err, errNotSimple) {
			t.Errorf("canonicalize(%s): got %v, want errNotSimple (the general transform's case)", in, err)
		}
	}
	if raw, _, err := Canonical(map[string]any{"f": 1.5}); err != nil || string(raw) != `{"f":1.5}` {
		t.Errorf("Canonical with a fraction = %s %v, want the general transform's {\"f\":1.5}", raw, err)
	}
}

// FuzzCanonicalize checks the fast canonical form against the general RFC 8785 transform.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range canonicalSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := canonicalize(in)
		if err != nil {
			return
		}
		want, err := surface.Canonical(in)
		if err != nil {
			return // JCS refuses what the decoder forgives (duplicate names, invalid UTF-8)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("canonicalize(%q) = %q, JCS says %q", in, got, want)
		}
	})
}

// TestContentCanonicalJSON checks the member-by-member writer against the general path, on
// decisions of every kind and on strings that need escaping or are not UTF-8.
func TestContentCanonicalJSON(t *testing.T) {
	servers, audits := sampleServers()
	servers = append(servers, ServerInput{Key: "odd/\"name\"\u2028\x01\xff\xfe", Version: "<1>&", Status: "active",
		Remotes: []RemoteInput{{Type: "sse", URL: "https://h\u00e9.example/\\x"}}})
	contents := []Content{Compile(must(t, Rules{DefaultAction: Allow, PinTools: true}), "x", servers, audits), {Format: ContentFormat, Servers: []ServerDecision{}}}
	big, bigAudits := benchRegistry(200)
	contents = append(contents, Compile(must(t, benchRules), "y", big, bigAudits))
	for _, c := range contents {
		want, wantSum, err := Canonical(c)
		if err != nil {
			t.Fatal(err)
		}
		got, sum := c.CanonicalJSON()
		if !bytes.Equal(got, want) || sum != wantSum {
			t.Fatalf("CanonicalJSON = %s\nwant %s", got, want)
		}
	}
}
