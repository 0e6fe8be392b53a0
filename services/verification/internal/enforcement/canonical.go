package enforcement

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// Canonical is v's RFC 8785 (JCS) JSON and its SHA-256 in hex.
//
// Documents of only strings, booleans, small integers, arrays and objects are canonicalized here;
// any other goes through the general transform (surface.Canonical), and the tests check both agree.
// Snapshot contents, megabytes large, skip even this: Content.CanonicalJSON writes them directly.
func Canonical(v any) ([]byte, string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, "", err
	}
	c, err := canonicalize(raw)
	if errors.Is(err, errNotSimple) {
		c, err = surface.Canonical(raw)
	}
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(c)
	return c, hex.EncodeToString(sum[:]), nil
}

// errNotSimple: the document has a number other than a small integer.
var errNotSimple = errors.New("not a document of strings, booleans and small integers")

// canonicalize writes the RFC 8785 form of raw, a document whose numbers are integers of at most 15
// digits (exact in a float64, so ECMAScript writes them as they are).
func canonicalize(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON document")
	}
	out := make([]byte, 0, len(raw))
	return appendCanonical(out, v)
}

func appendCanonical(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case json.Number:
		s := string(x)
		digits := s
		if len(digits) > 0 && digits[0] == '-' {
			digits = digits[1:]
		}
		if len(digits) == 0 || len(digits) > 15 || (len(digits) > 1 && digits[0] == '0') {
			return nil, errNotSimple
		}
		for i := 0; i < len(digits); i++ {
			if digits[i] < '0' || digits[i] > '9' {
				return nil, errNotSimple
			}
		}
		if digits == "0" {
			return append(b, '0'), nil // -0 is 0
		}
		return append(b, s...), nil
	case string:
		return appendString(b, x), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendString(b, k), ':')
			var err error
			if b, err = appendCanonical(b, x[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, errNotSimple
}

// appendString writes s as ECMAScript's JSON.stringify does (RFC 8785 section 3.2.2.2): only '"',
// '\\' and control characters are escaped, the short forms where there are some.
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// compareUTF16 orders object member names by their UTF-16 code units (RFC 8785 section 3.2.3).
func compareUTF16(a, b string) int {
	if isASCII(a) && isASCII(b) {
		return bytesCompare(a, b)
	}
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func bytesCompare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// CanonicalJSON is c's RFC 8785 JSON and its SHA-256 in hex, written member by member: the same
// bytes as Canonical(c) (TestContentCanonicalJSON), without encoding and decoding a document of
// megabytes in between.
func (c Content) CanonicalJSON() ([]byte, string) {
	// About 500 bytes a server and 400 a tool (measured on BenchmarkCompileAndHash's registry), so
	// that the buffer is not copied as it grows.
	size := 64
	for _, s := range c.Servers {
		size += 512
		for _, r := range s.Remotes {
			size += 256 + 400*len(r.Tools)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, `{"format":`...)
	b = appendText(b, c.Format)
	b = append(b, `,"pinned":`...)
	b = strconv.AppendBool(b, c.Pinned)
	b = append(b, `,"rules_sha256":`...)
	b = appendText(b, c.RulesSHA256)
	b = append(b, `,"servers":[`...)
	for i, s := range c.Servers {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.appendCanonical(b)
	}
	b = append(b, "]}"...)
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

// appendCanonical writes s's members in RFC 8785 order (their names sorted).
func (s ServerDecision) appendCanonical(b []byte) []byte {
	b = append(b, `{"change_risk":`...)
	b = appendText(b, s.ChangeRisk)
	b = append(b, `,"decision":`...)
	b = appendText(b, s.Decision)
	b = append(b, `,"packages":[`...)
	for i, p := range s.Packages {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"decision":`...)
		b = appendText(b, p.Decision)
		b = append(b, `,"identifier":`...)
		b = appendText(b, p.Identifier)
		b = append(b, `,"registry_type":`...)
		b = appendText(b, p.RegistryType)
		b = append(b, `,"rule":`...)
		b = appendText(b, p.Rule)
		b = append(b, `,"transport":`...)
		b = appendText(b, p.Transport)
		b = append(b, `,"version":`...)
		b = appendText(b, p.Version)
		b = append(b, '}')
	}
	b = append(b, `],"registry_sha256":`...)
	b = appendText(b, s.RegistrySHA256)
	b = append(b, `,"remotes":[`...)
	for i, r := range s.Remotes {
		if i > 0 {
			b = append(b, ',')
		}
		b = r.appendCanonical(b)
	}
	b = append(b, `],"rule":`...)
	b = appendText(b, s.Rule)
	b = append(b, `,"server":`...)
	b = appendText(b, s.Server)
	b = append(b, `,"status":`...)
	b = appendText(b, s.Status)
	b = append(b, `,"version":`...)
	b = appendText(b, s.Version)
	return append(b, '}')
}

func (r RemoteDecision) appendCanonical(b []byte) []byte {
	b = append(b, `{"audit_verdict":`...)
	b = appendText(b, r.AuditVerdict)
	b = append(b, `,"decision":`...)
	b = appendText(b, r.Decision)
	b = append(b, `,"host":`...)
	b = appendText(b, r.Host)
	if r.ReadinessScore != nil {
		b = append(b, `,"readiness_score":`...)
		b = strconv.AppendInt(b, int64(*r.ReadinessScore), 10)
	}
	b = append(b, `,"rule":`...)
	b = appendText(b, r.Rule)
	b = append(b, `,"tools":[`...)
	for i, t := range r.Tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"annotations_sha256":`...)
		b = appendText(b, t.AnnotationsSHA256)
		b = append(b, `,"decision":`...)
		b = appendText(b, t.Decision)
		b = append(b, `,"description_sha256":`...)
		b = appendText(b, t.DescriptionSHA256)
		b = append(b, `,"input_schema_sha256":`...)
		b = appendText(b, t.InputSchemaSHA256)
		b = append(b, `,"name":`...)
		b = appendText(b, t.Name)
		b = append(b, `,"output_schema_sha256":`...)
		b = appendText(b, t.OutputSchemaSHA256)
		b = append(b, `,"rule":`...)
		b = appendText(b, t.Rule)
		b = append(b, '}')
	}
	b = append(b, `],"tools_listed":`...)
	b = strconv.AppendBool(b, r.ToolsListed)
	b = append(b, `,"type":`...)
	b = appendText(b, r.Type)
	b = append(b, `,"url":`...)
	b = appendText(b, r.URL)
	return append(b, '}')
}

// appendText is appendString for a Go string that may hold invalid UTF-8, which encoding/json (and
// so Canonical) writes as U+FFFD.
func appendText(b []byte, s string) []byte {
	if utf8.ValidString(s) {
		return appendString(b, s)
	}
	var valid strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			valid.WriteRune(utf8.RuneError) // one per invalid byte, as encoding/json does
		} else {
			valid.WriteString(s[i : i+size])
		}
		i += size
	}
	return appendString(b, valid.String())
}
