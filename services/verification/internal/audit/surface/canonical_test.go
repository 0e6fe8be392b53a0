package surface

import (
	"bytes"
	"testing"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "keys sorted", in: `{"b":1,"a":2}`, want: `{"a":2,"b":1}`},
		{name: "nested keys sorted", in: `{"z":{"y":1,"x":[{"d":1,"c":2}]}}`, want: `{"z":{"x":[{"c":2,"d":1}],"y":1}}`},
		{name: "whitespace dropped", in: " {\n\t\"a\" : [ 1 , 2 ]\n} ", want: `{"a":[1,2]}`},
		{name: "numbers as ECMAScript", in: `[1.0,1e2,0.50,-0,1E30]`, want: `[1,100,0.5,0,1e+30]`},
		{name: "string escapes minimal", in: `"\u0041\u00e9\/"`, want: `"Aé/"`},
		{name: "control characters escaped", in: `"\u001f\n"`, want: `"\u001f\n"`},
		{name: "keys by UTF-16 code units", in: `{"\ud83d\ude00":1,"\ufb01":2}`, want: "{\"\U0001F600\":1,\"\uFB01\":2}"},
		{name: "scalars", in: `true`, want: `true`},
		{name: "duplicate keys refused", in: `{"a":1,"a":2}`, wantErr: true},
		{name: "not JSON", in: `{"a":`, wantErr: true},
		{name: "trailing garbage", in: `{} x`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonical([]byte(tt.in))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Canonical(%s) = %s, want an error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Canonical(%s): %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Errorf("Canonical(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestJSONHash(t *testing.T) {
	for _, in := range []string{"", "null", " null\n"} {
		if h := jsonHash([]byte(in)); h != "" {
			t.Errorf("jsonHash(%q) = %q, want empty: absent values hash to nothing", in, h)
		}
	}
	if jsonHash([]byte(`{"a":1,"b":[1,2]}`)) != jsonHash([]byte(`{ "b":[1.0,2], "a":1 }`)) {
		t.Error("reordered keys or respelled numbers changed the hash")
	}
	dup := []byte(`{"a":1,"a":2}`)
	if h := jsonHash(dup); h == "" || h != jsonHash(dup) {
		t.Errorf("a document JCS refuses must still hash stably, got %q", h)
	}
	if jsonHash([]byte(`{"a":1,"a":2}`)) == jsonHash([]byte(`{"a":2,"a":1}`)) {
		t.Error("two different non-canonical documents hashed alike")
	}
}

func TestTextHash(t *testing.T) {
	if textHash("") != "" || textHash(" \n") != "" {
		t.Error("an empty description must hash to the empty string")
	}
	if textHash("Reads a file.\n") != textHash("Reads a file.") {
		t.Error("trailing whitespace must not change the hash")
	}
	for _, other := range []string{" Reads a file.", "Reads a\u200b file.", "Reads a file!", "Re\u0301ads a file."} {
		if textHash(other) == textHash("Reads a file.") {
			t.Errorf("%q hashed like the original", other)
		}
	}
}

func FuzzCanonical(f *testing.F) {
	for _, seed := range []string{
		`{"b":1,"a":2}`,
		`{"type":"object","properties":{"path":{"type":"string","maxLength":256}},"required":["path"]}`,
		`[1.0,1e2,0.50,-0,1E30,5e-324,1.7976931348623157e308]`,
		`"\u0000\u001f\ud83d\ude00\u2028"`,
		`{"\ud83d\ude00":1,"\ufb01":2,"":null}`,
		`[[[[[[[[[[]]]]]]]]]]`,
		`{"a":1,"a":2}`,
		`{"a":`,
		`1e400`,
		"\xff",
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c1, err := Canonical(in)
		if err != nil {
			return
		}
		c2, err := Canonical(in)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("canonicalising %q twice gave %q and %q (%v)", in, c1, c2, err)
		}
		cc, err := Canonical(c1)
		if err != nil {
			t.Fatalf("canonical form %q of %q is refused: %v", c1, in, err)
		}
		if !bytes.Equal(cc, c1) {
			t.Fatalf("canonical of canonical differs: %q -> %q -> %q", in, c1, cc)
		}
		_ = jsonHash(in)
	})
}
