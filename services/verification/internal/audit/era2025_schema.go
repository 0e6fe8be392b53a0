package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// statefulSchemaLog tallies the era's schema validations for the message-schema check.
type statefulSchemaLog struct {
	total   int
	invalid []string
	// has caches whether the schema set holds an optional definition.
	has map[string]bool
}

// statefulOptionalDefs are the definitions the era validates against only when the schema set holds
// them, each with a message that any reading of the spec accepts: a definition that rejects it is
// missing (or named otherwise) in the published schema, and validating against it would blame the
// server for the schema set's gap.
var statefulOptionalDefs = map[string]string{
	"JSONRPCResultResponse": `{"jsonrpc":"2.0","id":1,"result":{}}`,
	"JSONRPCErrorResponse":  `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`,
	"EmptyResult":           `{}`,
	"CallToolResult":        `{"content":[{"type":"text","text":"no such tool"}],"isError":true}`,
}

// hasDef reports whether the schema set can validate def.
func (s *statefulRun) hasDef(def string) bool {
	sample, optional := statefulOptionalDefs[def]
	if !optional {
		return true
	}
	if s.schema.has == nil {
		s.schema.has = map[string]bool{}
	}
	ok, known := s.schema.has[def]
	if !known {
		ok = s.r.engine.schemas.Validate(EraStateful, def, []byte(sample)) == nil
		s.schema.has[def] = ok
	}
	return ok
}

// validate validates the answer of x, if any, as validateMessage does. An error refused at the
// HTTP level (a 4xx) may carry id null: the transport refused the request before reading it.
func (s *statefulRun) validate(what string, x *exchange, def string) error {
	m := statefulAnswer(x)
	if m == nil {
		return nil
	}
	return s.validateMessage(what, m, def, x.resp.Status >= 400)
}

// statefulAnswer is the reply of x or, when none carries the request's id, its first error: a
// server that cannot tie an error to a request (a refused session, say) sends it with id null, and
// it is still the answer.
func statefulAnswer(x *exchange) *message {
	if x == nil {
		return nil
	}
	if x.reply != nil {
		return x.reply
	}
	for i := range x.messages {
		if x.messages[i].Error != nil {
			return &x.messages[i]
		}
	}
	return nil
}

// statefulError is the JSON-RPC error that answers x, nil when none does.
func statefulError(x *exchange) *rpcError {
	if m := statefulAnswer(x); m != nil {
		return m.Error
	}
	return nil
}

// validateMessage validates m against the 2025-11-25 schema whatever version was negotiated (the
// revisions only added to each other): its envelope, and a result against def ("" for none). It
// logs the outcome for message-schema and returns the first error. unread says that the request's
// id could not be read (bad JSON, a batch), where JSON-RPC itself answers with id null.
func (s *statefulRun) validateMessage(what string, m *message, def string, unread bool) error {
	var first error
	check := func(d string, b []byte) {
		if first != nil || !s.hasDef(d) {
			return
		}
		if err := s.r.engine.schemas.Validate(EraStateful, d, b); err != nil {
			first = err
			// The schema set's errors name their definition already; others get it here.
			if !strings.HasPrefix(err.Error(), d+":") {
				first = fmt.Errorf("%s: %w", d, err)
			}
		}
	}
	if m.Error != nil {
		raw := []byte(m.raw)
		if unread {
			raw = withoutNullID(raw)
		}
		check("JSONRPCErrorResponse", raw)
	} else {
		check("JSONRPCResultResponse", m.raw)
		if def != "" {
			check(def, m.Result)
		}
	}
	s.schema.total++
	if first != nil {
		s.schema.invalid = append(s.schema.invalid, what+": "+trim(first.Error(), 160))
	}
	return first
}

// withoutNullID drops an "id": null from an error response. JSON-RPC requires a null id when the
// request's id could not be read (a parse error), while the MCP schema only allows the id to be
// absent: there the two mean the same, and a server following JSON-RPC is not wrong. Where the id
// was readable, null is a wrong id and the schema judges it.
func withoutNullID(raw json.RawMessage) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || string(m["id"]) != "null" {
		return raw
	}
	delete(m, "id")
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

// recordSchema records message-schema from every validation of the era; an era that validated
// nothing leaves it to the skip reasons.
func (s *statefulRun) recordSchema() {
	l := s.schema
	if l.total == 0 {
		return
	}
	now := time.Now()
	if len(l.invalid) == 0 {
		s.r.record("message-schema", Success, now, "%d messages valid against the 2025-11-25 schema", l.total)
		return
	}
	first := l.invalid[:min(3, len(l.invalid))]
	s.r.record("message-schema", Failure, now, "%d of %d messages invalid against the 2025-11-25 schema: %s",
		len(l.invalid), l.total, strings.Join(first, "; "))
}
