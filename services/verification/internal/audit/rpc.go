package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/probe"
)

// message is a JSON-RPC message as a server sent it.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
	raw     json.RawMessage
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// JSON-RPC and MCP error codes the checks expect.
const (
	codeParseError         = -32700
	codeInvalidRequest     = -32600
	codeMethodNotFound     = -32601
	codeInvalidParams      = -32602
	codeHeaderMismatch     = -32020
	codeUnsupportedVersion = -32022
)

// exchange is one request and what came back.
type exchange struct {
	resp *probe.Response
	// reply is the response to the request's id, nil when none came.
	reply *message
	// messages are all the JSON-RPC messages of the answer; notInJSON is set when a part of it was
	// not JSON at all.
	messages  []message
	notInJSON bool
}

// ok reports whether the exchange got a result.
func (x *exchange) ok() bool { return x.reply != nil && x.reply.Error == nil && x.reply.Result != nil }

// errCode is the JSON-RPC error code of the reply, 0 when it has none.
func (x *exchange) errCode() int {
	if x.reply == nil || x.reply.Error == nil {
		return 0
	}
	return x.reply.Error.Code
}

// run is one audit in progress: its client, its endpoint and the check results so far.
type run struct {
	client   *probe.Client
	endpoint string
	engine   *Engine

	mu      sync.Mutex
	nextID  int
	results map[string]Check
}

func newRun(e *Engine, client *probe.Client, endpoint string) *run {
	return &run{client: client, endpoint: endpoint, engine: e, results: map[string]Check{}}
}

// id returns a fresh request id as its JSON text.
func (r *run) id() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	return strconv.Itoa(r.nextID)
}

// Headers of the Streamable HTTP transport.
const (
	headerSession         = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
)

// rpcHeader is the header every JSON-RPC POST carries.
func rpcHeader() http.Header {
	return http.Header{
		"Content-Type": {"application/json"},
		"Accept":       {"application/json, text/event-stream"},
	}
}

// call sends the JSON-RPC request method(params) to the endpoint with hdr added, and returns the
// exchange. params nil sends no params member. Its error is the probe's (budget, deadline).
func (r *run) call(ctx context.Context, method string, params any, hdr http.Header) (*exchange, error) {
	id := r.id()
	req := map[string]any{"jsonrpc": "2.0", "id": json.Number(id), "method": method}
	if params != nil {
		req["params"] = params
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return r.post(ctx, body, hdr, id)
}

// notify sends the JSON-RPC notification method(params).
func (r *run) notify(ctx context.Context, method string, params any, hdr http.Header) (*exchange, error) {
	req := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		req["params"] = params
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return r.post(ctx, body, hdr, "")
}

// post sends body as a JSON-RPC POST and parses the answer; id is the request id the reply must
// carry ("" for a notification or a message without id).
func (r *run) post(ctx context.Context, body []byte, hdr http.Header, id string) (*exchange, error) {
	h := rpcHeader()
	for k, vs := range hdr {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	resp, err := r.client.Do(ctx, probe.Request{Method: http.MethodPost, URL: r.endpoint, Header: h, Body: body, UntilReply: id})
	if err != nil {
		return nil, err
	}
	return parseExchange(resp, id), nil
}

// parseExchange reads the JSON-RPC messages of an answer and picks the reply to id.
func parseExchange(resp *probe.Response, id string) *exchange {
	x := &exchange{resp: resp}
	if resp.Err != nil {
		return x
	}
	raws, bad := probe.Messages(resp.Header, resp.Body)
	x.notInJSON = bad
	for _, raw := range raws {
		var m message
		if json.Unmarshal(raw, &m) != nil {
			x.notInJSON = true
			continue
		}
		m.raw = raw
		x.messages = append(x.messages, m)
		if x.reply == nil && (m.Result != nil || m.Error != nil) && (id == "" || string(m.ID) == id) {
			x.reply = &x.messages[len(x.messages)-1]
		}
	}
	if x.reply != nil {
		// The slice may have grown since the pointer was taken.
		for i := range x.messages {
			if x.messages[i].Result != nil || x.messages[i].Error != nil {
				if id == "" || string(x.messages[i].ID) == id {
					x.reply = &x.messages[i]
					break
				}
			}
		}
	}
	return x
}

// record stores the result of check id, timed from start. details are formatted, redacted and
// trimmed. The first result of a check wins: a later probe cannot hide an earlier failure.
func (r *run) record(id string, status Status, start time.Time, format string, args ...any) {
	def, ok := catalogIndex(id)
	if !ok {
		panic("audit: check " + id + " is not in the catalog")
	}
	c := Check{
		ID: def.ID, Name: def.Name, Status: status, Era: def.Era, SpecReference: def.SpecReference,
		Details: r.client.Redact(trim(fmt.Sprintf(format, args...), maxDetails)), DurationMS: time.Since(start).Milliseconds(),
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, done := r.results[id]; !done {
		r.results[id] = c
	}
}

// checks returns a result for every catalog entry, in catalog order; entries no probe reached are
// SKIPPED with reason.
func (r *run) checks(reason string) []Check {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Check, 0, len(Catalog))
	for _, def := range Catalog {
		c, ok := r.results[def.ID]
		if !ok {
			c = Check{ID: def.ID, Name: def.Name, Status: Skipped, Era: def.Era, SpecReference: def.SpecReference, Details: reason}
		}
		out = append(out, c)
	}
	return out
}

// maxDetails caps a check's details: enough for what was sent and seen, not a dump of the answer.
const maxDetails = 600

// trim shortens s to at most n bytes on a rune boundary, marking the cut.
func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// seen describes an answer for details: status, content type and the start of the body.
func seen(resp *probe.Response) string {
	if resp == nil {
		return "no answer"
	}
	if resp.Err != nil {
		return resp.Err.Error()
	}
	body := bytes.TrimSpace(resp.Body)
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d", resp.Status)
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		fmt.Fprintf(&b, " (%s)", ct)
	}
	if len(body) > 0 {
		fmt.Fprintf(&b, ": %s", trim(strings.ToValidUTF8(string(body), "?"), 200))
	} else {
		b.WriteString(", empty body")
	}
	if resp.Truncated {
		b.WriteString(" [cut at the byte cap]")
	}
	return b.String()
}
