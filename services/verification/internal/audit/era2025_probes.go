package audit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"
)

// ping checks that ping answers an empty result.
func (s *statefulRun) ping(ctx context.Context) error {
	start := time.Now()
	x, err := s.r.call(ctx, "ping", nil, s.header())
	if err != nil {
		return err
	}
	verr := s.validate("ping", x, "EmptyResult")
	switch e := statefulError(x); {
	case e != nil:
		s.r.record("ping", Failure, start, "ping answers JSON-RPC error %d (%s)", e.Code, trim(e.Message, 100))
	case !x.ok():
		s.r.record("ping", Failure, start, "ping got no JSON-RPC answer: %s", seen(x.resp))
	case !bytes.HasPrefix(bytes.TrimSpace(x.reply.Result), []byte("{")):
		s.r.record("ping", Failure, start, "ping answers a result that is not an object: %s", trim(string(x.reply.Result), 80))
	case verr != nil:
		s.r.record("ping", Failure, start, "ping's result does not validate: %s", verr)
	default:
		s.r.record("ping", Success, start, "ping answers an empty result")
	}
	return nil
}

// unknownMethod checks that a method no server has answers -32601 with the request's id.
func (s *statefulRun) unknownMethod(ctx context.Context) error {
	start := time.Now()
	x, err := s.r.call(ctx, "trustlayer/audit-unknown-method", nil, s.header())
	if err != nil {
		return err
	}
	s.validate("unknown method", x, "")
	switch {
	case x.errCode() == codeMethodNotFound:
		s.r.record("unknown-method", Success, start, "an unknown method answers -32601 with the request's id")
	case x.reply != nil && x.reply.Error != nil:
		s.r.record("unknown-method", Failure, start, "an unknown method answers JSON-RPC error %d, not -32601 (%s)", x.reply.Error.Code, trim(x.reply.Error.Message, 100))
	case x.reply != nil:
		s.r.record("unknown-method", Failure, start, "an unknown method answers a result")
	default:
		// The reply is matched by id, so an error with another id (or null) is only among the messages.
		for i := range x.messages {
			if m := &x.messages[i]; m.Error != nil {
				s.r.record("unknown-method", Failure, start, "the error does not echo the request id (error %d with id %s)", m.Error.Code, trim(statefulIDText(m.ID), 40))
				return nil
			}
		}
		s.r.record("unknown-method", Failure, start, "an unknown method got no JSON-RPC answer: %s", seen(x.resp))
	}
	return nil
}

// statefulIDText shows a message's id, "missing" when it has none.
func statefulIDText(id json.RawMessage) string {
	if len(id) == 0 {
		return "missing"
	}
	return string(id)
}

// malformedJSON checks that a body that is not JSON answers a parse error.
func (s *statefulRun) malformedJSON(ctx context.Context) error {
	start := time.Now()
	x, err := s.r.post(ctx, []byte(`{"jsonrpc": "2.0", "id": 1, "method": `), s.header(), "")
	if err != nil {
		return err
	}
	if m := statefulAnswer(x); m != nil {
		s.validateMessage("parse error", m, "", true)
	}
	resp := x.resp
	switch {
	case resp.Err != nil || resp.Status >= 500:
		s.r.record("malformed-json", Failure, start, "truncated JSON: %s", seen(resp))
	case x.errCode() == codeParseError:
		s.r.record("malformed-json", Success, start, "truncated JSON answers -32700 (HTTP %d)", resp.Status)
	case x.reply != nil && x.reply.Error != nil:
		s.r.record("malformed-json", Warning, start, "truncated JSON answers JSON-RPC error %d, not -32700 (HTTP %d)", x.reply.Error.Code, resp.Status)
	case x.reply != nil:
		s.r.record("malformed-json", Failure, start, "truncated JSON answers a result")
	case resp.Status == 400:
		s.r.record("malformed-json", Warning, start, "truncated JSON is refused with HTTP 400 but no JSON-RPC error: %s", seen(resp))
	default:
		s.r.record("malformed-json", Failure, start, "truncated JSON answers no parse error: %s", seen(resp))
	}
	return nil
}

// batch checks that a JSON-RPC batch is refused: the 2025-06-18 revision removed them.
func (s *statefulRun) batch(ctx context.Context) error {
	start := time.Now()
	id := s.r.id()
	x, err := s.r.post(ctx, []byte(`[{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}]`), s.header(), id)
	if err != nil {
		return err
	}
	var refused, answered bool
	for i := range x.messages {
		m := &x.messages[i]
		switch {
		case m.Error != nil:
			s.validateMessage("batch", m, "", true)
			refused = true
		case m.Result != nil:
			answered = true
		}
	}
	resp := x.resp
	switch {
	case resp.Err != nil || resp.Status >= 500:
		s.r.record("batch-refused", Failure, start, "a batch of one ping: %s", seen(resp))
	case resp.Status >= 400:
		s.r.record("batch-refused", Success, start, "a batch is refused with HTTP %d", resp.Status)
	case refused:
		s.r.record("batch-refused", Success, start, "a batch is refused with a JSON-RPC error")
	case answered:
		s.r.record("batch-refused", Failure, start, "a batch is processed: the server answers results to it")
	default:
		s.r.record("batch-refused", Failure, start, "a batch is neither refused nor answered: %s", seen(resp))
	}
	return nil
}

// unknownTool calls a tool that cannot exist: a client must be able to tell a missing tool (a
// JSON-RPC error or a tool error) from a broken server (an HTTP 5xx). Nothing runs on the server,
// whatever it does with the call, since no tool has that name.
func (s *statefulRun) unknownTool(ctx context.Context) error {
	start := time.Now()
	if !s.declares("tools") {
		s.r.record("unknown-tool-error", Skipped, start, "the server declares no tools capability")
		return nil
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name := "trustlayer_audit_no_such_tool_" + hex.EncodeToString(suffix)
	x, err := s.r.call(ctx, "tools/call", map[string]any{"name": name, "arguments": map[string]any{}}, s.header())
	if err != nil {
		return err
	}
	s.validate("tools/call of an unknown tool", x, "CallToolResult")
	resp, e := x.resp, statefulError(x)
	c := &s.out.unknownTool
	c.Probed, c.HTTPStatus, c.NonJSON = true, resp.Status, resp.Err == nil && len(x.messages) == 0 && x.notInJSON
	c.Detail = s.r.client.Redact(trim(seen(resp), 300))
	var res struct {
		IsError bool `json:"isError"`
	}
	switch {
	case resp.Err != nil || resp.Status >= 500:
		s.r.record("unknown-tool-error", Failure, start, "tools/call of an unknown tool: %s", seen(resp))
	case !x.ok() && e != nil:
		c.JSONRPCError = true
		s.r.record("unknown-tool-error", Success, start, "tools/call of an unknown tool answers JSON-RPC error %d (HTTP %d)", e.Code, resp.Status)
	case x.ok() && json.Unmarshal(x.reply.Result, &res) == nil && res.IsError:
		c.ToolError = true
		s.r.record("unknown-tool-error", Success, start, "tools/call of an unknown tool answers a tool error (isError)")
	case x.ok():
		s.r.record("unknown-tool-error", Failure, start, "tools/call of an unknown tool answers a successful result")
	default:
		s.r.record("unknown-tool-error", Failure, start, "tools/call of an unknown tool got no JSON-RPC answer: %s", seen(resp))
	}
	return nil
}
