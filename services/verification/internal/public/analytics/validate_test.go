package analytics

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		what  string
		event Event
		// field and typ of the one problem wanted; "" when the event is valid.
		field, typ string
	}{
		{"valid", Event{Name: "claim_started", Page: "/claim/start/com.example/weather", Properties: map[string]any{"source": "badge", "step": 2.0, "ok": true}}, "", ""},
		{"no properties", Event{Name: "page_viewed", Page: "/"}, "", ""},
		{"version is not an address", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"v": "1.2.3"}}, "", ""},
		{"short number", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"n": 123456.0}}, "", ""},
		{"unknown name", Event{Name: "purchase", Page: "/"}, "name", "enum"},
		{"no page", Event{Name: "page_viewed"}, "page", "missing"},
		{"absolute URL", Event{Name: "page_viewed", Page: "https://example.com/claim"}, "page", "value_error"},
		{"fragment", Event{Name: "page_viewed", Page: "/claim#me"}, "page", "value_error"},
		{"email in path", Event{Name: "page_viewed", Page: "/u/alice@example.com"}, "page", "value_error"},
		{"escaped email in path", Event{Name: "page_viewed", Page: "/u/alice%40example.com"}, "page", "personal_data"},
		{"phone in path", Event{Name: "page_viewed", Page: "/u/4155550100"}, "page", "personal_data"},
		{"email", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"ref": "bob.smith@example.co.uk"}}, "properties.ref", "personal_data"},
		{"phone with spaces", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"ref": "call 020 7946 0018"}}, "properties.ref", "personal_data"},
		{"international phone", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"ref": "+44-20-7946-0018"}}, "properties.ref", "personal_data"},
		{"card", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"ref": "4111 1111 1111 1111"}}, "properties.ref", "personal_data"},
		{"IPv4", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"ref": "10.1.2.3"}}, "properties.ref", "personal_data"},
		{"IPv6", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"ref": "2001:db8::1"}}, "properties.ref", "personal_data"},
		{"token", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"ref": strings.Repeat("aZ09", 9)}}, "properties.ref", "personal_data"},
		{"long number", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"n": 4155550100.0}}, "properties.n", "personal_data"},
		{"personal key", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"phone": "x"}}, "properties.phone", "personal_data"},
		{"bad key", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"Bad-Key": "x"}}, "properties", "value_error"},
		{"null", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"x": nil}}, "properties.x", "value_error"},
		{"list", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"x": []any{"a"}}}, "properties.x", "value_error"},
		{"control character", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"x": "a\x00b"}}, "properties.x", "value_error"},
		{"too long", Event{Name: "page_viewed", Page: "/", Properties: map[string]any{"x": strings.Repeat("é", MaxString+1)}}, "properties.x", "string_too_long"},
	} {
		err := Validate(c.event)
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: got %v, want valid", c.what, err)
			}
			continue
		}
		var v *fault.ValidationError
		if !errors.As(err, &v) || len(v.Problems) == 0 || v.Problems[0].Field != c.field || v.Problems[0].Type != c.typ {
			t.Errorf("%s: got %+v, want a problem at %s of type %s", c.what, err, c.field, c.typ)
		}
	}
	many := map[string]any{}
	for i := range MaxProperties + 1 {
		many["k"+strings.Repeat("x", i)] = "v"
	}
	if err := Validate(Event{Name: "page_viewed", Page: "/", Properties: many}); err == nil {
		t.Errorf("%d properties: valid, want refused", len(many))
	}
}

// FuzzValidate feeds Validate arbitrary JSON properties and pages: it never panics, and what it
// accepts is bounded and holds no email address.
func FuzzValidate(f *testing.F) {
	f.Add("/claim", `{"source":"badge","n":3,"ok":true}`)
	f.Add("/claim?x=1", `{"email":"a@b.co"}`)
	f.Add("/", `{"note":"+1 (415) 555-0100"}`)
	f.Add("/x", `{"a":{"b":[1,2]}}`)
	f.Fuzz(func(t *testing.T, page, props string) {
		var p map[string]any
		if json.Unmarshal([]byte(props), &p) != nil {
			p = nil
		}
		e := Event{Name: "page_viewed", Page: page, Properties: p}
		if Validate(e) != nil {
			return
		}
		b, _ := json.Marshal(p)
		if len(b) > MaxPropertyBytes || len(p) > MaxProperties || len(page) > MaxPage {
			t.Fatalf("accepted an event past the bounds: page %d bytes, %d properties, %d bytes", len(page), len(p), len(b))
		}
		if emailPattern.Match(b) || emailPattern.MatchString(page) || emailPattern.MatchString(unescaped(page)) {
			t.Fatalf("accepted an email address: %s %s", page, b)
		}
	})
}
