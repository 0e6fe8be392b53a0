package wire

import (
	"errors"
	"io"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"

	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
)

// errFallback says the hand-written reader did not accept the body; the reference decoder reads it
// instead and returns its own message or its own error.
var errFallback = errors.New("wire: body left to the reference decoder")

// maxDepth is the deepest nesting of objects and arrays read by hand. The reference path accepts up
// to 10000 (encoding/json's scanner limit and protojson's recursion limit); a claim payload is flat,
// so anything deeper goes to the reference decoder, which applies those limits itself.
const maxDepth = 64

// isHotRequest says whether v is a request message read by hand; a nil one is base's to refuse.
func isHotRequest(v any) bool {
	switch m := v.(type) {
	case *scoringv1.ScoreRequest:
		return m != nil
	case *scoringv1.ScoreBatchRequest:
		return m != nil
	}
	return false
}

// decodeRequest reads the first JSON value of src into v, a *scoringv1.ScoreRequest or
// *scoringv1.ScoreBatchRequest, as runtime.JSONPb's decoder does: json.Decoder reads the first value
// (io.EOF when src holds only white space) and protojson.UnmarshalOptions{DiscardUnknown: true} reads
// that value into the message. Whatever follows the value is left unread; end is where it starts.
//
// Only bodies that both encoding/json and protojson accept are read here, so anything this reader
// turns down (errFallback) can be handed to the reference decoder, whose answer is then the answer:
//   - strict RFC 8259 JSON, strings valid UTF-8, \u escapes of unpaired surrogates refused (protojson
//     refuses them; encoding/json would not);
//   - a field matches by its proto name or its JSON name (model_version or modelVersion), a known field
//     twice (under either name) is refused, an unknown field is skipped, however often it repeats,
//     unless its name is in brackets (an extension name to protojson);
//   - null for a known field leaves it unset, but still counts as its one occurrence;
//   - a Struct refuses a key twice; a number in it is strconv.ParseFloat of its text, as in protojson,
//     and a number out of float64 range is refused;
//   - nesting deeper than maxDepth is refused.
func decodeRequest(src string, v any) (end int, err error) {
	stack := memberStacks.Get().(*[]member)
	p := parser{s: src, members: (*stack)[:0]}
	defer func() {
		// The stack is scratch, empty again at the end; clearing it drops its references to this body's
		// strings and values before another request takes it.
		if cap(p.members) <= maxPooledMembers {
			clear(p.members[:cap(p.members)])
			*stack = p.members[:0]
			memberStacks.Put(stack)
		}
	}()
	p.space()
	if p.i == len(p.s) {
		return p.i, io.EOF
	}
	var ok bool
	switch m := v.(type) {
	case *scoringv1.ScoreRequest:
		m.Reset()
		ok = p.scoreRequest(m)
	case *scoringv1.ScoreBatchRequest:
		m.Reset()
		ok = p.scoreBatchRequest(m)
	}
	if !ok {
		return 0, errFallback
	}
	return p.i, nil
}

type parser struct {
	s     string
	i     int
	depth int
	// members is a stack of the Struct members read so far, nested Structs above their parents.
	members []member
	values  slab[structpb.Value]
	strs    slab[structpb.Value_StringValue]
	nums    slab[structpb.Value_NumberValue]
}

// memberStacks keeps parsers' member stacks for reuse: grown member by member, a single claim's
// stack was five allocations and about 0.7 KB of each request's garbage. maxPooledMembers bounds what
// one unusual body can pin for the life of the process.
var memberStacks = sync.Pool{New: func() any {
	s := make([]member, 0, 32)
	return &s
}}

const maxPooledMembers = 1024

// member is one name and value of a Struct being read.
type member struct {
	name  string
	value *structpb.Value
}

// slab hands out pointers to zero values allocated a chunk at a time. A claim payload is a dozen
// strings and numbers, each a Value and its kind; allocated one by one they made BenchmarkDecodeBatch100
// about 3000 allocations instead of about 850, and twice as slow. Chunks start at a single payload's
// size and double, so that a single request does not pay for a batch. A chunk lives as long as any
// value in it, which is about as long as the request.
type slab[T any] struct {
	free []T
	size int
}

func (s *slab[T]) next() *T {
	if len(s.free) == 0 {
		s.size = min(max(2*s.size, 16), 512)
		s.free = make([]T, s.size)
	}
	v := &s.free[0]
	s.free = s.free[1:]
	return v
}

func (p *parser) scoreRequest(m *scoringv1.ScoreRequest) bool {
	var seen fieldSet
	return p.object(func(name string) bool {
		switch name {
		case "workflow":
			return seen.add(1) && p.stringField(&m.Workflow)
		case "payload":
			return seen.add(2) && p.structField(&m.Payload)
		case "options":
			return seen.add(3) && p.optionsField(&m.Options)
		}
		return p.unknown(name)
	})
}

func (p *parser) scoreBatchRequest(m *scoringv1.ScoreBatchRequest) bool {
	var seen fieldSet
	return p.object(func(name string) bool {
		if name != "items" {
			return p.unknown(name)
		}
		if !seen.add(1) {
			return false
		}
		if p.null() {
			return true
		}
		m.Items = []*scoringv1.BatchItem{}
		return p.array(func() bool {
			item := &scoringv1.BatchItem{}
			m.Items = append(m.Items, item)
			return p.batchItem(item)
		})
	})
}

func (p *parser) batchItem(m *scoringv1.BatchItem) bool {
	var seen fieldSet
	return p.object(func(name string) bool {
		switch name {
		case "id":
			return seen.add(1) && p.stringField(&m.Id)
		case "workflow":
			return seen.add(2) && p.stringField(&m.Workflow)
		case "payload":
			return seen.add(3) && p.structField(&m.Payload)
		case "options":
			return seen.add(4) && p.optionsField(&m.Options)
		}
		return p.unknown(name)
	})
}

func (p *parser) optionsField(dst **scoringv1.ScoreOptions) bool {
	if p.null() {
		return true
	}
	m := &scoringv1.ScoreOptions{}
	*dst = m
	var seen fieldSet
	return p.object(func(name string) bool {
		switch name {
		case "model_version", "modelVersion":
			return seen.add(1) && p.stringField(&m.ModelVersion)
		case "allow_fallback", "allowFallback":
			if !seen.add(2) {
				return false
			}
			if p.null() {
				return true
			}
			b, ok := p.boolean()
			if ok {
				m.AllowFallback = &b
			}
			return ok
		case "operating_point", "operatingPoint":
			return seen.add(3) && p.stringField(&m.OperatingPoint)
		case "distribution_profile", "distributionProfile":
			return seen.add(4) && p.stringField(&m.DistributionProfile)
		}
		return p.unknown(name)
	})
}

// fieldSet holds the field numbers of one message seen so far; protojson refuses a field twice.
type fieldSet uint32

func (s *fieldSet) add(num uint) bool {
	if *s&(1<<num) != 0 {
		return false
	}
	*s |= 1 << num
	return true
}

func (p *parser) stringField(dst *string) bool {
	if p.null() {
		return true
	}
	s, ok := p.str()
	*dst = s
	return ok
}

func (p *parser) structField(dst **structpb.Struct) bool {
	if p.null() {
		return true
	}
	fields, ok := p.structFields()
	*dst = &structpb.Struct{Fields: fields}
	return ok
}

// structFields reads a Struct's members onto p.members first and builds the map once their number is
// known: growing the map member by member (a claim payload has about a dozen) was a third of the
// batch decoding time in a CPU profile.
func (p *parser) structFields() (map[string]*structpb.Value, bool) {
	base := len(p.members)
	defer func() { p.members = p.members[:base] }()
	ok := p.object(func(name string) bool {
		v, ok := p.value()
		p.members = append(p.members, member{name, v})
		return ok
	})
	if !ok {
		return nil, false
	}
	fields := make(map[string]*structpb.Value, len(p.members)-base)
	for _, m := range p.members[base:] {
		if _, dup := fields[m.name]; dup {
			return nil, false
		}
		fields[m.name] = m.value
	}
	return fields, true
}

// value reads a google.protobuf.Value as protojson does: null, bool, number, string, object, array.
func (p *parser) value() (*structpb.Value, bool) {
	if p.i == len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		s, ok := p.str()
		k := p.strs.next()
		k.StringValue = s
		v := p.values.next()
		v.Kind = k
		return v, ok
	case c == '{':
		fields, ok := p.structFields()
		return &structpb.Value{Kind: &structpb.Value_StructValue{StructValue: &structpb.Struct{Fields: fields}}}, ok
	case c == '[':
		list := &structpb.ListValue{}
		ok := p.array(func() bool {
			v, ok := p.value()
			list.Values = append(list.Values, v)
			return ok
		})
		return &structpb.Value{Kind: &structpb.Value_ListValue{ListValue: list}}, ok
	case c == 't' || c == 'f':
		b, ok := p.boolean()
		return &structpb.Value{Kind: &structpb.Value_BoolValue{BoolValue: b}}, ok
	case c == 'n':
		return &structpb.Value{Kind: &structpb.Value_NullValue{}}, p.null()
	case c == '-' || ('0' <= c && c <= '9'):
		text, ok := p.number()
		if !ok {
			return nil, false
		}
		f, err := strconv.ParseFloat(text, 64)
		k := p.nums.next()
		k.NumberValue = f
		v := p.values.next()
		v.Kind = k
		return v, err == nil
	}
	return nil, false
}

// unknown skips the value of a field the message does not have. protojson reads a name in brackets
// as an extension's and refuses one naming a registered extension ("[google.api.http]" is one, from
// the http annotations), so such a member goes to the reference decoder.
func (p *parser) unknown(name string) bool {
	if len(name) >= 2 && name[0] == '[' && name[len(name)-1] == ']' {
		return false
	}
	return p.skip()
}

// skip reads past one value of an unknown field; protojson validates it token by token (strings
// included) without building anything, and so does skip.
func (p *parser) skip() bool {
	if p.i == len(p.s) {
		return false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		_, ok := p.str()
		return ok
	case c == '{':
		return p.object(func(string) bool { return p.skip() })
	case c == '[':
		return p.array(p.skip)
	case c == 't' || c == 'f':
		_, ok := p.boolean()
		return ok
	case c == 'n':
		return p.null()
	case c == '-' || ('0' <= c && c <= '9'):
		_, ok := p.number()
		return ok
	}
	return false
}

// object reads an object, calling member with the parser at each member's value.
func (p *parser) object(member func(name string) bool) bool {
	if !p.open('{') {
		return false
	}
	if p.close('}') {
		return true
	}
	for {
		name, ok := p.str()
		if !ok {
			return false
		}
		p.space()
		if !p.consume(':') {
			return false
		}
		p.space()
		if !member(name) {
			return false
		}
		p.space()
		if p.close('}') {
			return true
		}
		if !p.consume(',') {
			return false
		}
		p.space()
	}
}

// array reads an array, calling elem with the parser at each element.
func (p *parser) array(elem func() bool) bool {
	if !p.open('[') {
		return false
	}
	if p.close(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		p.space()
		if p.close(']') {
			return true
		}
		if !p.consume(',') {
			return false
		}
		p.space()
	}
}

func (p *parser) open(c byte) bool {
	if !p.consume(c) {
		return false
	}
	p.depth++
	p.space()
	return p.depth <= maxDepth
}

func (p *parser) close(c byte) bool {
	if !p.consume(c) {
		return false
	}
	p.depth--
	return true
}

func (p *parser) consume(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// space skips JSON white space (RFC 8259 section 2: space, tab, line feed, carriage return).
func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) literal(lit string) bool {
	if len(p.s)-p.i >= len(lit) && p.s[p.i:p.i+len(lit)] == lit {
		p.i += len(lit)
		return true
	}
	return false
}

// null consumes a null if one is next.
func (p *parser) null() bool { return p.literal("null") }

func (p *parser) boolean() (value, ok bool) {
	if p.literal("true") {
		return true, true
	}
	return false, p.literal("false")
}

// number reads the text of an RFC 8259 number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() (string, bool) {
	start := p.i
	p.consume('-')
	switch {
	case p.consume('0'):
	case p.i < len(p.s) && '1' <= p.s[p.i] && p.s[p.i] <= '9':
		p.digits()
	default:
		return "", false
	}
	if p.consume('.') && p.digits() == 0 {
		return "", false
	}
	if p.consume('e') || p.consume('E') {
		if !p.consume('+') {
			p.consume('-')
		}
		if p.digits() == 0 {
			return "", false
		}
	}
	return p.s[start:p.i], true
}

func (p *parser) digits() int {
	start := p.i
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}

// str reads a string. Without escapes it is a substring of the body and costs no allocation.
func (p *parser) str() (string, bool) {
	if !p.consume('"') {
		return "", false
	}
	start := p.i
	ascii := true
	for ; p.i < len(p.s); p.i++ {
		switch c := p.s[p.i]; {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			return s, ascii || utf8.ValidString(s)
		case c == '\\':
			return p.escaped(start)
		case c < ' ':
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// escaped finishes a string that has escapes, p.i being at the first backslash. Each run of raw bytes
// between escapes must be valid UTF-8 by itself, since escapes only ever produce whole characters.
func (p *parser) escaped(start int) (string, bool) {
	out := make([]byte, 0, p.i-start+16)
	raw := start
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			if !utf8.ValidString(p.s[raw:p.i]) {
				return "", false
			}
			out = append(out, p.s[raw:p.i]...)
			p.i++
			return string(out), true
		case c < ' ':
			return "", false
		case c != '\\':
			p.i++
			continue
		}
		if !utf8.ValidString(p.s[raw:p.i]) {
			return "", false
		}
		out = append(out, p.s[raw:p.i]...)
		if p.i+1 == len(p.s) {
			return "", false
		}
		switch e := p.s[p.i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := p.hex4(p.i + 2)
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				// Only a high surrogate followed by an escaped low one is a character.
				lo, ok := p.hex4(p.i + 8)
				if !ok || p.s[p.i+6] != '\\' || p.s[p.i+7] != 'u' {
					return "", false
				}
				if r = utf16.DecodeRune(r, lo); r == utf8.RuneError {
					return "", false
				}
				p.i += 6
			}
			out = utf8.AppendRune(out, r)
			p.i += 4
		default:
			return "", false
		}
		p.i += 2
		raw = p.i
	}
	return "", false
}

// hex4 reads the four hex digits of a \u escape starting at i.
func (p *parser) hex4(i int) (rune, bool) {
	if i+4 > len(p.s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(p.s[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
