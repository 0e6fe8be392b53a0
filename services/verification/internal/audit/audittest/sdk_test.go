package audittest

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBareSDK pins what SDK v1.8.0's StreamableHTTPHandler does on its own, which site and
// sdkFront correct for Correct and Full: when an upgrade changes one of these, the matching
// correction can go.
func TestBareSDK(t *testing.T) {
	srv := newSDKServer(false)
	bare := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	s := serve(t, bare)
	c := newClient(t, fixtureCA, s.URL, "")
	sid, init := c.session2025()
	if init.status != http.StatusOK {
		t.Fatalf("initialize: %s", init)
	}
	// Mcp-Session-Id values are crypto/rand.Text: 26 characters of base32, visible ASCII.
	if !regexp.MustCompile(`^[A-Z2-7]{26}$`).MatchString(sid) {
		t.Errorf("session id %q", sid)
	}
	h := sessionHeaders(sid)

	// No Origin validation by default: a foreign Origin is served.
	evil := map[string]string{headerSession: sid, headerProtocol: version2025, "Origin": "https://evil.example"}
	if r := c.request(version2025, "ping", nil, evil); r.status != http.StatusOK {
		t.Errorf("foreign Origin: %s", r)
	}
	// Its DNS-rebinding guard looks at Host only: a loopback connection naming another host is 403.
	req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Host = "evil.example"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := c.hc.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: %v, %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// Without Mcp-Session-Id after the handshake: a fresh MCP connection, 200 and error code 0.
	if r := c.request(version2025, "tools/list", nil, map[string]string{headerProtocol: version2025}); r.status != http.StatusOK || r.msg["error"] == nil || r.errorCode() != 0 {
		t.Errorf("no Mcp-Session-Id: %s", r)
	}
	// Unknown method and malformed JSON: 400 text/plain, no JSON-RPC error.
	if r := c.request(version2025, "no/such", nil, h); r.status != http.StatusBadRequest || r.msg != nil {
		t.Errorf("unknown method: %s", r)
	}
	if r := c.send(http.MethodPost, "{oops", h); r.status != http.StatusBadRequest || r.msg != nil {
		t.Errorf("malformed JSON: %s", r)
	}
	// An undeclared capability's list method is served.
	if r := c.request(version2025, "prompts/list", nil, h); r.status != http.StatusOK || r.result()["prompts"] == nil {
		t.Errorf("undeclared prompts/list: %s", r)
	}
	// What it gets right: an unknown Mcp-Session-Id 404, the 2026 revision refused with -32022, DELETE.
	if r := c.request(version2025, "ping", nil, sessionHeaders("nope")); r.status != http.StatusNotFound {
		t.Errorf("unknown Mcp-Session-Id: %s", r)
	}
	if r := c.request2026("server/discover", version2026, nil, nil); r.status != http.StatusBadRequest || r.errorCode() != codeUnsupportedVersion {
		t.Errorf("2026 discover: %s", r)
	}
	if r := c.send(http.MethodDelete, "", h); r.status != http.StatusNoContent {
		t.Errorf("DELETE: %s", r)
	}
	if r := c.request(version2025, "ping", nil, h); r.status != http.StatusNotFound {
		t.Errorf("after DELETE: %s", r)
	}

	// The Origin check the SDK suggests (http.CrossOriginProtection around the handler) refuses
	// a foreign Origin with 403 on POST, but lets GET (a "safe" method, the event stream) through;
	// site checks every method.
	s2 := serve(t, http.NewCrossOriginProtection().Handler(bare))
	c2 := newClient(t, fixtureCA, s2.URL, "")
	sid2, _ := c2.session2025()
	evil[headerSession] = sid2
	if r := c2.request(version2025, "ping", nil, evil); r.status != http.StatusForbidden {
		t.Errorf("CrossOriginProtection, foreign Origin POST: %s", r)
	}
}
