package meter

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseRequestID(t *testing.T) {
	const id = "0195f3c4-7a1b-7c2d-8e3f-4a5b6c7d8e9f"
	for _, c := range []struct {
		in   string
		item int32
		ok   bool
	}{
		{id, -1, true},
		{id + ".0", 0, true},
		{id + ".99", 99, true},
		{id + ".2147483647", 2147483647, true},
		{strings.ToUpper(id), 0, false}, // PostgreSQL would accept it, but it would not read back the same
		{"{" + id + "}", 0, false},
		{"urn:uuid:" + id, 0, false},
		{strings.ReplaceAll(id, "-", ""), 0, false},
		{id + ".", 0, false},
		{id + ".01", 0, false},
		{id + ".-1", 0, false},
		{id + ".+1", 0, false},
		{id + ".1x", 0, false},
		{id + ".2147483648", 0, false},
		{id + "-1", 0, false},
		{id + " ", 0, false},
		{"req-1", 0, false},
		{"", 0, false},
	} {
		id, ok := parseRequestID(c.in)
		if ok != c.ok || (ok && id.item != c.item) {
			t.Errorf("parseRequestID(%q) = item %d, %v; want %d, %v", c.in, id.item, ok, c.item, c.ok)
		}
	}
}

// FuzzParseRequestID: feedback passes a caller's request_id to PendingRecord, so the parser meets
// arbitrary text. Whatever it accepts must format back to exactly that text, or a record would be
// stored, or looked up, under another id than the response carried.
func FuzzParseRequestID(f *testing.F) {
	for _, s := range []string{"0195f3c4-7a1b-7c2d-8e3f-4a5b6c7d8e9f", "0195f3c4-7a1b-7c2d-8e3f-4a5b6c7d8e9f.12", "0195F3C4-7a1b-7c2d-8e3f-4a5b6c7d8e9f", "req-1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := parseRequestID(s)
		if !ok {
			return
		}
		r := Record{id: id}
		if got := r.RequestID(); got != s {
			t.Fatalf("parseRequestID(%q) formats back as %q", s, got)
		}
	})
}

// TestRecordHoldsNoPointer: the point of Record is that the collector never scans a buffer of them.
func TestRecordHoldsNoPointer(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[Record](), reflect.TypeFor[recordKey]()} {
		if path, ok := pointerIn(typ, typ.Name()); ok {
			t.Errorf("%s holds a pointer at %s", typ, path)
		}
	}
}

// pointerIn reports the path of a field that holds a pointer, if typ has one.
func pointerIn(typ reflect.Type, path string) (string, bool) {
	switch typ.Kind() {
	case reflect.Struct:
		for i := range typ.NumField() {
			if p, ok := pointerIn(typ.Field(i).Type, path+"."+typ.Field(i).Name); ok {
				return p, true
			}
		}
		return "", false
	case reflect.Array:
		return pointerIn(typ.Elem(), path+"[]")
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return "", false
	}
	return path + " (" + typ.Kind().String() + ")", true
}

func TestLabelTableIsBounded(t *testing.T) {
	tab := newLabelTable()
	for i := range maxLabels {
		l, err := tab.intern("v" + strconv.Itoa(i))
		if err != nil || int(l) != i {
			t.Fatalf("intern #%d: %d, %v", i, l, err)
		}
	}
	if l, err := tab.intern("v7"); err != nil || l != 7 {
		t.Errorf("intern of a known value in a full table: %d, %v; want 7", l, err)
	}
	if _, err := tab.intern("one too many"); err != errTooManyLabels {
		t.Errorf("intern beyond maxLabels: %v, want errTooManyLabels", err)
	}
}
