package audittest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// A small auditor, written for these tests from the catalog's one-line meanings and the spec: not
// the engine (package audit owns that), but enough to show that every fixture is what it claims,
// a correct server passing every check and each defect failing exactly its own.

// client sends raw MCP traffic to one fixture.
type client struct {
	t     testing.TB
	url   string
	hc    *http.Client
	token string

	mu         sync.Mutex
	nextID     int
	schemaErrs map[string][]string // per protocol revision: messages that broke its schema
}

func newClient(t testing.TB, ca *CA, url, token string) *client {
	return &client{t: t, url: url, hc: ca.Client(), token: token, schemaErrs: map[string][]string{}}
}

// reply is one HTTP answer, with the JSON-RPC response it carried, if any.
type reply struct {
	status int
	header http.Header
	body   []byte
	msg    map[string]any
}

func (r reply) result() map[string]any { m, _ := r.msg["result"].(map[string]any); return m }
func (r reply) errorCode() int {
	e, ok := r.msg["error"].(map[string]any)
	if !ok {
		return 0
	}
	c, _ := e["code"].(float64)
	return int(c)
}

func (r reply) String() string {
	return fmt.Sprintf("HTTP %d %s %.300s", r.status, r.header.Get("Content-Type"), r.body)
}

func (c *client) id() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	return c.nextID
}

// send posts (or GETs, DELETEs) body with the usual MCP headers plus hdr ("" deletes a header).
func (c *client) send(method, body string, hdr map[string]string) reply {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, c.url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		c.t.Fatalf("%s %s: read: %v", method, c.url, err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: b}
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "application/json":
		_ = json.Unmarshal(b, &r.msg)
	case "text/event-stream":
		r.msg = lastEvent(b)
	}
	return r
}

// lastEvent is the last JSON-RPC response in an event stream.
func lastEvent(b []byte) map[string]any {
	var out map[string]any
	var data strings.Builder
	flush := func() {
		var m map[string]any
		if json.Unmarshal([]byte(data.String()), &m) == nil && (m["result"] != nil || m["error"] != nil) {
			out = m
		}
		data.Reset()
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	flush()
	return out
}

// request sends a JSON-RPC request and validates the answer against revision's schema.
func (c *client) request(revision, method string, params any, hdr map[string]string) reply {
	c.t.Helper()
	body := map[string]any{"jsonrpc": "2.0", "id": c.id(), "method": method}
	if params != nil {
		body["params"] = params
	}
	r := c.send(http.MethodPost, string(mustJSON(body)), hdr)
	c.validate(revision, method, r)
	return r
}

func (c *client) notify(method string, hdr map[string]string) reply {
	c.t.Helper()
	return c.send(http.MethodPost, `{"jsonrpc":"2.0","method":"`+method+`"}`, hdr)
}

// resultDefs name the result definition of each method, in both schemas.
var resultDefs = map[string]string{
	"initialize": "InitializeResult", "server/discover": "DiscoverResult", "ping": "Result",
	"tools/list": "ListToolsResult", "tools/call": "CallToolResult", "prompts/list": "ListPromptsResult",
	"resources/list": "ListResourcesResult", "resources/templates/list": "ListResourceTemplatesResult",
}

// validate checks a JSON-RPC answer against revision's schema: the envelope, and the result's
// definition when the method has one.
func (c *client) validate(revision, method string, r reply) {
	if r.msg == nil {
		return
	}
	var errs []string
	if r.msg["error"] != nil {
		if err := validateSchema(revision, "JSONRPCErrorResponse", r.msg); err != nil {
			errs = append(errs, method+" error: "+err.Error())
		}
	} else {
		if err := validateSchema(revision, "JSONRPCResultResponse", r.msg); err != nil {
			errs = append(errs, method+": "+err.Error())
		}
		if def, ok := resultDefs[method]; ok {
			if err := validateSchema(revision, def, r.msg["result"]); err != nil {
				errs = append(errs, method+" result: "+err.Error())
			}
		}
	}
	c.mu.Lock()
	c.schemaErrs[revision] = append(c.schemaErrs[revision], errs...)
	c.mu.Unlock()
}

var (
	schemaMu    sync.Mutex
	schemaCache = map[string]*jsonschema.Resolved{}
)

// validateSchema validates v against definition def of revision's published schema.
func validateSchema(revision, def string, v any) error {
	schemaMu.Lock()
	key := revision + "#" + def
	res, ok := schemaCache[key]
	if !ok {
		b, err := readSchema(revision)
		if err != nil {
			schemaMu.Unlock()
			return err
		}
		var root map[string]any
		if err := json.Unmarshal(b, &root); err != nil {
			schemaMu.Unlock()
			return err
		}
		root["$ref"] = "#/$defs/" + def
		var s jsonschema.Schema
		if err := json.Unmarshal(mustJSON(root), &s); err != nil {
			schemaMu.Unlock()
			return err
		}
		if res, err = s.Resolve(nil); err != nil {
			schemaMu.Unlock()
			return err
		}
		schemaCache[key] = res
	}
	schemaMu.Unlock()
	// Round-trip through JSON so that v holds only the types the validator knows.
	var inst any
	_ = json.Unmarshal(mustJSON(v), &inst)
	return res.Validate(inst)
}

// readSchema reads revision's published schema: the copy embedded by package mcpschema, else the
// shared one of the workspace.
func readSchema(revision string) ([]byte, error) {
	var errs []error
	for _, dir := range []string{"../mcpschema/schemas", "/work/shared/mcp-schema"} {
		b, err := os.ReadFile(dir + "/" + revision + ".schema.json")
		if err == nil {
			return b, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no %s schema to validate against: %w", revision, errors.Join(errs...))
}

// session2025 opens a 2025-11-25 session (initialize, notifications/initialized).
func (c *client) session2025() (string, reply) {
	c.t.Helper()
	init := c.request(version2025, "initialize", initParams(version2025), nil)
	sid := init.header.Get(headerSession)
	if init.status == http.StatusOK && init.result() != nil {
		c.notify("notifications/initialized", sessionHeaders(sid))
	}
	return sid, init
}

func initParams(version string) map[string]any {
	return map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "audittest-client", "version": "0.0.1"},
	}
}

func sessionHeaders(sid string) map[string]string {
	return map[string]string{headerSession: sid, headerProtocol: version2025}
}

// request2026 sends a stateless request with _meta and the standard headers for version; hdr
// overrides headers.
func (c *client) request2026(method, version string, params map[string]any, hdr map[string]string) reply {
	c.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		metaProtocolVersion:                  version,
		metaClientCapabilities:               map[string]any{},
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "audittest-client", "version": "0.0.1"},
	}
	h := map[string]string{headerProtocol: version, headerMethod: method}
	if name, ok := params["name"].(string); ok {
		h[headerName] = name
	}
	for k, v := range hdr {
		h[k] = v
	}
	return c.request(version2026, method, params, h)
}

// getStream opens GET on the endpoint and reports the status and content type, without reading
// the (endless) body.
func (c *client) getStream(sid string) (int, string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(headerSession, sid)
	req.Header.Set(headerProtocol, version2025)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("GET stream: %v", err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, mediaType(resp.Header.Get("Content-Type"))
}

// Statuses, as the catalog's report names them.
const (
	pass = "SUCCESS"
	fail = "FAILURE"
	warn = "WARNING"
	skip = "SKIPPED"
)

// audit runs every catalog check against the fixture behind c and returns status and detail per
// check id.
func audit(c *client) (map[string]string, map[string]string) {
	st, why := map[string]string{}, map[string]string{}
	set := func(id string, ok bool, r any) {
		st[id] = pass
		if !ok {
			st[id] = fail
			why[id] = fmt.Sprint(r)
		}
	}
	skipAll := func(ids ...string) {
		for _, id := range ids {
			st[id] = skip
		}
	}

	// 2025-11-25.
	sid, init := c.session2025()
	res := init.result()
	era2025 := init.status == http.StatusOK && res != nil
	if !era2025 {
		skipAll("server-initialize", "version-negotiation", "notification-accepted", "session-id-format",
			"session-missing-400", "session-unknown-404", "session-delete", "get-stream", "tools-list",
			"tool-name-format", "tools-list-pagination", "json-schema-2020-12", "prompts-list", "resources-list",
			"resources-templates-list", "undeclared-capability", "ping", "unknown-method", "malformed-json",
			"batch-refused", "unknown-tool-error", "origin-rejected", "message-schema")
	} else {
		info, _ := res["serverInfo"].(map[string]any)
		set("server-initialize", res["protocolVersion"] == version2025 && info != nil && info["name"] != "" && info["version"] != nil, init)

		v := c.request(version2025, "initialize", initParams("1999-01-01"), nil)
		pv, _ := v.result()["protocolVersion"].(string)
		set("version-negotiation", v.errorCode() != 0 || slices.Contains(versions2025, pv), v)

		n := c.notify("notifications/initialized", sessionHeaders(sid))
		set("notification-accepted", n.status == http.StatusAccepted && len(n.body) == 0, n)

		set("session-id-format", sid == "" || regexp.MustCompile(`^[\x21-\x7e]+$`).MatchString(sid), sid)

		h := sessionHeaders(sid)
		missing := c.request(version2025, "tools/list", nil, map[string]string{headerSession: "", headerProtocol: version2025})
		if sid == "" {
			st["session-missing-400"] = skip
		} else {
			set("session-missing-400", missing.status == http.StatusBadRequest, missing)
		}
		unknown := c.request(version2025, "tools/list", nil, sessionHeaders("audittest-unknown-session-0000"))
		if sid == "" {
			st["session-unknown-404"] = skip
		} else {
			set("session-unknown-404", unknown.status == http.StatusNotFound, unknown)
		}

		status, ct := c.getStream(sid)
		set("get-stream", status == http.StatusMethodNotAllowed || status == http.StatusOK && ct == "text/event-stream", status)

		// tools/list, following cursors.
		var tools []any
		cursors := map[string]bool{}
		var params any
		looped := false
		var tl reply
		for range 10 {
			tl = c.request(version2025, "tools/list", params, h)
			page, ok := tl.result()["tools"].([]any)
			if !ok {
				break
			}
			tools = append(tools, page...)
			next, _ := tl.result()["nextCursor"].(string)
			if next == "" {
				break
			}
			if cursors[next] {
				looped = true
				break
			}
			cursors[next] = true
			params = map[string]any{"cursor": next}
		}
		set("tools-list", tl.status == http.StatusOK && tl.result()["tools"] != nil, tl)
		set("tools-list-pagination", !looped, "a cursor came back")
		nameOK, schemaOK := true, true
		var badName, badSchema any
		for _, x := range tools {
			tool, _ := x.(map[string]any)
			name, _ := tool["name"].(string)
			if !regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`).MatchString(name) {
				nameOK, badName = false, name
			}
			for _, k := range []string{"inputSchema", "outputSchema"} {
				s, present := tool[k]
				if !present && k == "outputSchema" {
					continue
				}
				obj, ok := s.(map[string]any)
				if !ok || obj["type"] != "object" {
					schemaOK, badSchema = false, tool
				}
			}
		}
		set("tool-name-format", nameOK, badName)
		set("json-schema-2020-12", schemaOK, badSchema)

		caps, _ := res["capabilities"].(map[string]any)
		declared := func(k string) bool { _, ok := caps[k]; return ok }
		listCheck := func(id, capability, method, key string) {
			if !declared(capability) {
				st[id] = skip
				return
			}
			r := c.request(version2025, method, nil, h)
			_, ok := r.result()[key].([]any)
			set(id, r.status == http.StatusOK && ok, r)
		}
		listCheck("prompts-list", "prompts", "prompts/list", "prompts")
		listCheck("resources-list", "resources", "resources/list", "resources")
		listCheck("resources-templates-list", "resources", "resources/templates/list", "resourceTemplates")

		// Undeclared capabilities: answering anyway is a warning (see Defects).
		st["undeclared-capability"] = skip
		for capability, method := range map[string]string{"prompts": "prompts/list", "resources": "resources/list", "completions": "completion/complete", "logging": "logging/setLevel"} {
			if declared(capability) {
				continue
			}
			r := c.request(version2025, method, nil, h)
			if st["undeclared-capability"] == skip {
				st["undeclared-capability"] = pass
			}
			if r.errorCode() != codeMethodNotFound {
				st["undeclared-capability"], why["undeclared-capability"] = warn, method+": "+r.String()
			}
		}

		p := c.request(version2025, "ping", nil, h)
		set("ping", p.status == http.StatusOK && p.result() != nil && len(p.result()) == 0, p)

		um := c.send(http.MethodPost, `{"jsonrpc":"2.0","id":"probe-7","method":"audittest/no-such-method"}`, h)
		c.validate(version2025, "audittest/no-such-method", um)
		set("unknown-method", um.errorCode() == codeMethodNotFound && um.msg["id"] == "probe-7", um)

		mj := c.send(http.MethodPost, `{"jsonrpc":"2.0","id":8,"method":"ping"`, h)
		set("malformed-json", mj.status < 500 && mj.errorCode() == codeParseError, mj)

		b := c.send(http.MethodPost, `[{"jsonrpc":"2.0","id":9,"method":"ping"},{"jsonrpc":"2.0","id":10,"method":"ping"}]`, h)
		set("batch-refused", b.status >= 400 && b.status < 500 || b.msg != nil && b.msg["error"] != nil, b)

		ut := c.request(version2025, "tools/call", map[string]any{"name": "audittest_no_such_tool", "arguments": map[string]any{}}, h)
		isErr, _ := ut.result()["isError"].(bool)
		set("unknown-tool-error", ut.status < 500 && (ut.errorCode() != 0 || isErr), ut)

		o := c.request(version2025, "ping", nil, map[string]string{headerSession: sid, headerProtocol: version2025, "Origin": "https://evil.example"})
		set("origin-rejected", o.status == http.StatusForbidden, o)

		// DELETE last: it ends the session the other checks used.
		d := c.send(http.MethodDelete, "", h)
		switch {
		case sid == "":
			st["session-delete"] = skip
		case d.status == http.StatusMethodNotAllowed:
			st["session-delete"] = pass
		default:
			after := c.request(version2025, "ping", nil, h)
			set("session-delete", d.status/100 == 2 && after.status == http.StatusNotFound, fmt.Sprintf("DELETE %s; then %s", d, after))
		}
	}

	// 2026-07-28.
	disc := c.request2026("server/discover", version2026, nil, nil)
	versions, _ := disc.result()["supportedVersions"].([]any)
	if disc.status != http.StatusOK || !slices.Contains(versions, any(version2026)) {
		if disc.status == http.StatusBadRequest && disc.errorCode() == codeUnsupportedVersion {
			skipAll("server-discover", "stateless-tools-list", "unsupported-version", "header-mismatch", "stateless-message-schema")
		} else {
			st["server-discover"], why["server-discover"] = fail, disc.String()
			skipAll("stateless-tools-list", "unsupported-version", "header-mismatch", "stateless-message-schema")
		}
	} else {
		st["server-discover"] = pass
		tl := c.request2026("tools/list", version2026, nil, nil)
		_, ok := tl.result()["tools"].([]any)
		set("stateless-tools-list", tl.status == http.StatusOK && ok, tl)

		uv := c.request2026("tools/list", "1999-01-01", nil, nil)
		e, _ := uv.msg["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		supported, _ := data["supported"].([]any)
		set("unsupported-version", uv.status == http.StatusBadRequest && uv.errorCode() == codeUnsupportedVersion && len(supported) > 0, uv)

		hm := c.request2026("tools/list", version2026, nil, map[string]string{headerMethod: "prompts/list"})
		set("header-mismatch", hm.status == http.StatusBadRequest && hm.errorCode() == codeHeaderMismatch, hm)
	}

	// Outside the revisions: OAuth and the server card.
	anon := &client{t: c.t, url: c.url, hc: c.hc, schemaErrs: map[string][]string{}}
	unauth := anon.send(http.MethodPost, string(mustJSON(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "initialize", "params": initParams(version2025)})), nil)
	if unauth.status != http.StatusUnauthorized {
		skipAll("oauth-protected-resource", "oauth-authorization-server")
	} else {
		prmURL := regexp.MustCompile(`resource_metadata="([^"]+)"`).FindStringSubmatch(unauth.header.Get("WWW-Authenticate"))
		var prm map[string]any
		if len(prmURL) == 2 {
			prm = getJSON(c, prmURL[1])
		}
		servers, _ := prm["authorization_servers"].([]any)
		set("oauth-protected-resource", prm != nil && prm["resource"] == c.url && len(servers) > 0, prm)
		var as map[string]any
		if len(servers) > 0 {
			issuer, _ := servers[0].(string)
			as = getJSON(c, issuer+AuthorizationServerPath)
			pkce, _ := as["code_challenge_methods_supported"].([]any)
			rts, _ := as["response_types_supported"].([]any)
			set("oauth-authorization-server", as["issuer"] == issuer && slices.Contains(pkce, any("S256")) &&
				slices.Contains(rts, any("code")) && as["authorization_endpoint"] != nil && as["token_endpoint"] != nil, as)
		} else {
			st["oauth-authorization-server"] = skip
		}
	}
	origin := strings.TrimSuffix(c.url, EndpointPath)
	cardReq, _ := http.NewRequest(http.MethodGet, origin+ServerCardPath, nil)
	if resp, err := c.hc.Do(cardReq); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var card map[string]any
		switch {
		case resp.StatusCode == http.StatusNotFound:
			st["server-card"] = skip
		default:
			err := json.Unmarshal(b, &card)
			name, _ := card["name"].(string)
			set("server-card", resp.StatusCode == http.StatusOK && err == nil && name != "", string(b))
		}
	}

	// Schemas, last: every message above was validated as it came.
	for id, revision := range map[string]string{"message-schema": version2025, "stateless-message-schema": version2026} {
		if st[id] == skip {
			continue
		}
		c.mu.Lock()
		errs := c.schemaErrs[revision]
		c.mu.Unlock()
		set(id, len(errs) == 0, errs)
	}
	return st, why
}

// getJSON fetches a JSON document without credentials.
func getJSON(c *client, url string) map[string]any {
	resp, err := c.hc.Get(url)
	if err != nil {
		c.t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if resp.StatusCode == http.StatusOK {
		_ = json.NewDecoder(resp.Body).Decode(&m)
	}
	return m
}

// readiness restates the readiness rules the fixtures aim at, over the tools a 2025 (or, failing
// that, 2026) listing returned and what the endpoint answered: the ids the engine's rules use.
func readiness(c *client) []string {
	c.t.Helper()
	var tools []any
	var hdr http.Header
	unknownTool := 0
	sid, init := c.session2025()
	if init.status == http.StatusOK {
		hdr = init.header
		var params any
		for range 10 {
			r := c.request(version2025, "tools/list", params, sessionHeaders(sid))
			page, _ := r.result()["tools"].([]any)
			tools = append(tools, page...)
			next, _ := r.result()["nextCursor"].(string)
			if next == "" {
				break
			}
			params = map[string]any{"cursor": next}
		}
		unknownTool = c.request(version2025, "tools/call", map[string]any{"name": "audittest_no_such_tool", "arguments": map[string]any{}}, sessionHeaders(sid)).status
	} else {
		d := c.request2026("tools/list", version2026, nil, nil)
		hdr = d.header
		tools, _ = d.result()["tools"].([]any)
		unknownTool = c.request2026("tools/call", version2026, map[string]any{"name": "audittest_no_such_tool", "arguments": map[string]any{}}, nil).status
	}
	found := map[string]bool{}
	if hdr.Get("Strict-Transport-Security") == "" {
		found["http-hygiene"] = true
	}
	if unknownTool >= 500 {
		found["error-contract"] = true
	}
	if len(tools) > 40 {
		found["too-many-tools"] = true
	}
	hidden := regexp.MustCompile(`[\x{200b}-\x{200f}\x{2060}\x{feff}]|(?i)<important>`)
	imperative := regexp.MustCompile(`(?i)\b(you must|always|never|ignore|do not|don't)\b|^(use|call|run|read|send)\b`)
	for _, x := range tools {
		t, _ := x.(map[string]any)
		name, _ := t["name"].(string)
		desc, _ := t["description"].(string)
		ann, _ := t["annotations"].(map[string]any)
		if hidden.MatchString(desc) {
			found["description-hidden-instructions"] = true
		} else if imperative.MatchString(desc) {
			found["description-imperative-instructions"] = true
		}
		if len(desc) < 20 || len(strings.Fields(desc)) < 4 {
			found["description-vague"] = true
		}
		if ann["readOnlyHint"] == true && ann["destructiveHint"] == true {
			found["annotation-contradiction"] = true
		}
		if regexp.MustCompile(`^(delete|remove|drop|destroy|purge)_`).MatchString(name) && ann["destructiveHint"] != true {
			found["destructive-without-hint"] = true
		}
		if regexp.MustCompile(`^(get|list)_`).MatchString(name) && ann["readOnlyHint"] != true {
			found["read-only-without-hint"] = true
		}
		if t["outputSchema"] == nil {
			found["output-schema-missing"] = true
		}
		in, _ := t["inputSchema"].(map[string]any)
		props, _ := in["properties"].(map[string]any)
		if in["additionalProperties"] != false {
			found["input-schema-open"] = true
		}
		if _, ok := in["required"].([]any); !ok {
			found["input-schema-required-missing"] = true
		}
		for _, p := range props {
			pm, _ := p.(map[string]any)
			switch pm["type"] {
			case nil:
				found["input-schema-untyped"] = true
			case "string":
				if pm["maxLength"] == nil && pm["enum"] == nil && pm["pattern"] == nil {
					found["input-schema-unbounded"] = true
				}
			case "integer", "number":
				if pm["minimum"] == nil || pm["maximum"] == nil {
					found["input-schema-unbounded"] = true
				}
			}
		}
	}
	out := make([]string, 0, len(found))
	for k := range found {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
