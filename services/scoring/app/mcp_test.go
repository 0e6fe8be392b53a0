package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	webmcp "github.com/trustlayer/trustlayer/services/scoring/internal/web/mcp"
)

// headerTransport adds headers to every request of the MCP client, as an agent host configured with a
// key does.
type headerTransport struct{ header map[string]string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// agent connects the SDK's client to the service's /mcp over Streamable HTTP, sending header.
func (s *stack) agent(header map[string]string) *sdk.ClientSession {
	s.t.Helper()
	client := sdk.NewClient(&sdk.Implementation{Name: "scoring-test-agent", Version: "1.0.0"}, nil)
	transport := &sdk.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: &http.Client{Transport: headerTransport{header}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		s.t.Fatalf("connect to /mcp: %v", err)
	}
	s.t.Cleanup(func() { _ = session.Close() })
	return session
}

func scoreArgs(payload map[string]any) map[string]any {
	return map[string]any{"workflow": "healthcare.denial", "payload": payload}
}

func callScore(t *testing.T, session *sdk.ClientSession, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	res, err := session.CallTool(context.Background(), &sdk.CallToolParams{Name: "score_workflow", Arguments: args})
	if err != nil {
		t.Fatalf("tools/call score_workflow: %v", err)
	}
	return res
}

// structured is a tool result's structuredContent as a JSON object.
func structured(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structuredContent %s is not an object", b)
	}
	return m
}

func TestMCPDiscoveryIsPublic(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	session := s.agent(nil)
	ctx := context.Background()

	if got := session.InitializeResult().ServerInfo.Name; got != "trustlayer-scoring" {
		t.Errorf("server name: got %q, want trustlayer-scoring", got)
	}
	tools, err := session.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "score_workflow" {
		t.Fatalf("tools/list: got %v %v, want score_workflow", tools, err)
	}
	// The input schema carries each workflow's payload schema from internal/claim.
	schema, _ := json.Marshal(tools.Tools[0].InputSchema)
	for _, want := range []string{`"healthcare.prior_auth"`, `"icd10_code"`, `"units"`, `"required":["workflow","payload"]`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("input schema lacks %s: %s", want, schema)
		}
	}
	prompts, err := session.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) != 2 {
		t.Fatalf("prompts/list: got %v %v, want 2 prompts", prompts, err)
	}
	got, err := session.GetPrompt(ctx, &sdk.GetPromptParams{Name: "triage_denial_risk",
		Arguments: map[string]string{"claim": `{"cpt_code":"99214"}`, "operating_point": "high_recall"}})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("prompts/get: %v %v", got, err)
	}
	if text := got.Messages[0].Content.(*sdk.TextContent).Text; !strings.Contains(text, `"operating_point": "high_recall"`) || !strings.Contains(text, "99214") {
		t.Errorf("prompt text does not carry its arguments: %s", text)
	}
	if _, err := session.GetPrompt(ctx, &sdk.GetPromptParams{Name: "triage_denial_risk", Arguments: map[string]string{"claim": "x", "operating_point": "loud"}}); err == nil {
		t.Errorf("prompts/get with an unknown operating point: got no error")
	}
	done, err := session.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "triage_denial_risk"},
		Argument: sdk.CompleteParamsArgument{Name: "operating_point", Value: "high_"}})
	if err != nil || strings.Join(done.Completion.Values, ",") != "high_recall,high_precision" {
		t.Errorf("completion of operating_point: got %v %v", done, err)
	}
}

func TestMCPToolCallWithoutKeyIsTold(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"score_workflow","arguments":{"workflow":"healthcare.denial","payload":{}}}}`
	post := func(body string, header map[string]string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", s.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	wantChallenge := `Bearer resource_metadata="http://127.0.0.1:8082/.well-known/oauth-protected-resource"`
	for name, header := range map[string]map[string]string{
		"no credential":     nil,
		"unknown key":       bearer("trial_" + strings.Repeat("a", 43)),
		"unknown agent key": {"X-Service-Api-Key": "sk_nope"},
	} {
		resp, body := post(call, header)
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != wantChallenge {
			t.Errorf("%s: got %d %q (%s), want 401 with %s", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body, wantChallenge)
		}
		// The refusal's body is the service's error shape, like every REST error.
		var refusal map[string]any
		if err := json.Unmarshal([]byte(body), &refusal); err != nil || len(refusal) != 1 || refusal["detail"] == "" ||
			strings.Contains(refusal["detail"].(string), "\n") || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: body %q (%s), want {\"detail\": ...} as JSON", name, body, resp.Header.Get("Content-Type"))
		}
		// And the same words as POST /v1/score's refusal of the same credential.
		rest := s.Do("POST", "/v1/score", map[string]any{"workflow": "healthcare.denial", "payload": denialClaim()}, header)
		if rest.Status != 401 || strings.TrimSpace(string(rest.Body)) != body {
			t.Errorf("%s: /mcp answered %s, POST /v1/score %d %s; want the same 401 body", name, body, rest.Status, rest.Body)
		}
	}
	// A body over the SDK's limit is refused before the SDK reads it, with the service's error body.
	if resp, body := post(`{"pad":"`+strings.Repeat("x", 4<<20)+`"}`, nil); resp.StatusCode != http.StatusRequestEntityTooLarge ||
		resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, `"detail"`) {
		t.Errorf("oversized body: got %d %q %.200s, want 413 with a JSON detail", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	// A body that cannot be read (a malformed chunk) gets a 400 with the service's error body.
	raw, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_, _ = io.WriteString(raw, "POST /mcp HTTP/1.1\r\nHost: scoring\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(raw), nil); err != nil {
		t.Errorf("unreadable body: %v", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var refusal map[string]any
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" ||
			json.Unmarshal(b, &refusal) != nil || refusal["detail"] == nil {
			t.Errorf("unreadable body: got %d %q %s, want 400 with a JSON detail", resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
	// In a batch too.
	if resp, _ := post("["+call+"]", nil); resp.StatusCode != 401 {
		t.Errorf("batch holding a tools/call: got %d, want 401", resp.StatusCode)
	}
	// The methods that need no key are not challenged, even with a wrong key.
	if tools, err := s.agent(bearer("wrong")).ListTools(context.Background(), nil); err != nil || len(tools.Tools) != 1 {
		t.Errorf("tools/list with a wrong key: got %v %v", tools, err)
	}

	// The SDK's client sees the refusal as an error of the call; its session stays usable.
	session := s.agent(nil)
	if _, err := session.CallTool(context.Background(), &sdk.CallToolParams{Name: "score_workflow", Arguments: scoreArgs(denialClaim())}); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("SDK client call without a key: got %v, want a 401 error", err)
	}

	// The metadata names the service as its own authorization server (RFC 9728), at both paths.
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		r := s.Do("GET", path, nil, nil)
		m := r.Object(t)
		servers, _ := m["authorization_servers"].([]any)
		if r.Status != 200 || m["resource"] != "http://127.0.0.1:8082/mcp" || len(servers) != 1 || servers[0] != "http://127.0.0.1:8082" {
			t.Errorf("GET %s: %d %s", path, r.Status, r.Body)
		}
	}
	r := s.Do("GET", "/.well-known/mcp/server-card.json", nil, nil)
	card := r.Object(t)
	remotes, _ := card["remotes"].([]any)
	tools, _ := card["tools"].([]any)
	authn, _ := card["authentication"].(map[string]any)
	if r.Status != 200 || card["name"] == nil || card["version"] == nil || card["description"] == nil || len(remotes) != 1 ||
		len(tools) != 1 || authn["protected_resource_metadata"] != "http://127.0.0.1:8082/.well-known/oauth-protected-resource" {
		t.Errorf("server card: %d %s", r.Status, r.Body)
	}
}

func TestMCPScoreEqualsRESTAndIsMetered(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	key := s.paidKey()
	claim := denialClaim()

	rest := s.Do("POST", "/v1/score", scoreArgs(claim), bearer(key))
	if rest.Status != 200 {
		t.Fatalf("POST /v1/score: %d %s", rest.Status, rest.Body)
	}
	want := rest.Object(t)
	delete(want, "scored_at")

	for name, header := range map[string]map[string]string{
		"Authorization: Bearer": bearer(key),
		"x-service-api-key":     {"X-Service-Api-Key": key},
	} {
		res := callScore(t, s.agent(header), scoreArgs(claim))
		if res.IsError {
			t.Fatalf("%s: tool error %v", name, res.Content)
		}
		got := structured(t, res)
		if _, ok := got["scored_at"].(string); !ok {
			t.Errorf("%s: no scored_at in %v", name, got)
		}
		delete(got, "scored_at")
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if string(gb) != string(wb) {
			t.Errorf("%s: tool result differs from POST /v1/score\n got %s\nwant %s", name, gb, wb)
		}
		if id, _ := res.Meta["request_id"].(string); len(id) != 36 {
			t.Errorf("%s: _meta.request_id %v, want the x-request-id", name, res.Meta)
		}
		text := res.Content[0].(*sdk.TextContent).Text
		if !strings.Contains(text, `"model_version"`) {
			t.Errorf("%s: text content %s, want the score response", name, text)
		}
	}
	// Both tool calls are billable scoring calls of the key, beside the REST one.
	eventually(t, "3 billable calls", func() bool {
		return s.Do("GET", "/v1/usage", nil, bearer(key)).Object(t)["billable_calls"] == 3.0
	})
	if n := strings.Count(s.Logs.String(), `"msg":"scoring decision"`); n != 3 {
		t.Errorf("decision log lines: got %d, want 3", n)
	}

	// A validation failure is a tool error with every field and rule, and is not billed.
	res := callScore(t, s.agent(bearer(key)), scoreArgs(with(claim, "place_of_service", "office")))
	body := structured(t, res)
	if !res.IsError || body["status"] != 422.0 || body["errors"] == nil || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "place_of_service") {
		t.Errorf("invalid payload: isError %v, %v", res.IsError, body)
	}
	res = callScore(t, s.agent(bearer(key)), map[string]any{"workflow": "healthcare.denial", "payload": "not an object"})
	if !res.IsError || structured(t, res)["status"] != 422.0 {
		t.Errorf("payload of the wrong type: isError %v, %v", res.IsError, res.StructuredContent)
	}
	if u := s.Do("GET", "/v1/usage", nil, bearer(key)).Object(t); u["billable_calls"] != 3.0 {
		t.Errorf("usage after refused calls: %v, want 3 billable calls", u["billable_calls"])
	}
}

func TestMCPLimitsAreTheKeys(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)

	// A trial key at its monthly quota: the tool error carries the 402's detail and upgrade_url.
	key := s.trialKey()
	var keyID string
	if err := s.Pool.QueryRow(context.Background(), `SELECT id FROM api_keys WHERE prefix = $1`, key[:len("trial_")+8]).Scan(&keyID); err != nil {
		t.Fatal(err)
	}
	month := time.Now().UTC().Format("2006-01")
	if _, err := s.Pool.Exec(context.Background(), `INSERT INTO usage_counters (key_id, period, calls, updated_at) VALUES ($1, $2, 1000, now())`, keyID, month); err != nil {
		t.Fatal(err)
	}
	res := callScore(t, s.agent(bearer(key)), scoreArgs(denialClaim()))
	body := structured(t, res)
	upgrade, _ := body["upgrade_url"].(string)
	if !res.IsError || body["status"] != 402.0 || !strings.HasSuffix(upgrade, "/v1/billing/checkout-session") ||
		!strings.Contains(res.Content[0].(*sdk.TextContent).Text, upgrade) {
		t.Fatalf("call past the trial quota: isError %v, %v", res.IsError, body)
	}

	// A fresh trial key's burst of 5 at 1 call/s: calls in a row pass until the bucket is empty, then
	// the next is throttled like a REST call. Tokens refill while the calls run (slowly, on a loaded
	// machine), so the bound counts the seconds they took.
	session := s.agent(bearer(s.trialKey()))
	start := time.Now()
	allowed, throttled := 0, false
	for range 20 {
		res := callScore(t, session, scoreArgs(denialClaim()))
		if res.IsError {
			if b := structured(t, res); b["status"] != 429.0 || b["detail"] == nil {
				t.Fatalf("throttled call: %v", b)
			}
			throttled = true
			break
		}
		allowed++
	}
	elapsed := time.Since(start)
	if !throttled {
		t.Fatalf("20 calls of a trial key in %s: none throttled", elapsed)
	}
	if most := 5 + int(elapsed/time.Second); allowed < 5 || allowed > most {
		t.Errorf("trial key: %d calls passed before the first 429 in %s, want 5..%d (burst 5, 1/s)", allowed, elapsed, most)
	}
}

// local connects the SDK's client to the stdio package's server over in-memory transports.
func (s *stack) local(l *webmcp.Local) *sdk.ClientSession {
	s.t.Helper()
	serverSide, clientSide := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = l.NewServer("test").Run(ctx, serverSide); close(done) }()
	session, err := sdk.NewClient(&sdk.Implementation{Name: "scoring-test-host", Version: "1.0.0"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = session.Close(); cancel(); <-done })
	return session
}

func (s *stack) trialKeyCount() int {
	s.t.Helper()
	var n int
	if err := s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM api_keys WHERE kind = 'trial'`).Scan(&n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

func TestLocalPackageKeepsItsTrialKey(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	keyFile := filepath.Join(t.TempDir(), "trustlayer", "scoring-mcp.json")

	// First run, no SCORING_API_KEY: listing needs no key, the first call obtains a trial key.
	first := s.local(&webmcp.Local{BaseURL: s.URL, KeyFile: keyFile})
	if tools, err := first.ListTools(context.Background(), nil); err != nil || len(tools.Tools) != 1 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	if n := s.trialKeyCount(); n != 0 {
		t.Fatalf("trial keys before any call: %d, want 0", n)
	}
	if res := callScore(t, first, scoreArgs(denialClaim())); res.IsError {
		t.Fatalf("first run: tool error %v", res.Content)
	}
	info, err := os.Stat(keyFile)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", info, err)
	}
	b, _ := os.ReadFile(keyFile)
	var kept struct{ Keys map[string]string }
	if err := json.Unmarshal(b, &kept); err != nil || !strings.HasPrefix(kept.Keys[s.URL], "trial_") {
		t.Fatalf("key file %s, want the trial key under %s", b, s.URL)
	}
	trial := kept.Keys[s.URL]

	// A later run reuses the kept key: no new trial key, and its usage grows.
	second := s.local(&webmcp.Local{BaseURL: s.URL, KeyFile: keyFile})
	if res := callScore(t, second, scoreArgs(denialClaim())); res.IsError {
		t.Fatalf("second run: tool error %v", res.Content)
	}
	if n := s.trialKeyCount(); n != 1 {
		t.Errorf("trial keys after two runs: %d, want 1", n)
	}
	eventually(t, "2 calls on the trial key", func() bool {
		return s.Do("GET", "/v1/usage", nil, bearer(trial)).Object(t)["billable_calls"] == 2.0
	})

	// SCORING_API_KEY wins over the kept key.
	paid := s.paidKey()
	third := s.local(&webmcp.Local{BaseURL: s.URL, APIKey: paid, KeyFile: keyFile})
	res := callScore(t, third, scoreArgs(denialClaim()))
	if res.IsError {
		t.Fatalf("with SCORING_API_KEY: tool error %v", res.Content)
	}
	eventually(t, "1 call on the paid key", func() bool {
		return s.Do("GET", "/v1/usage", nil, bearer(paid)).Object(t)["billable_calls"] == 1.0
	})
	if u := s.Do("GET", "/v1/usage", nil, bearer(trial)).Object(t); u["billable_calls"] != 2.0 || s.trialKeyCount() != 1 {
		t.Errorf("the kept trial key was used with SCORING_API_KEY set: %v", u)
	}
	// The service's refusals reach the agent as tool errors, as from the hosted endpoint.
	res = callScore(t, third, scoreArgs(with(denialClaim(), "cpt_code", "nope")))
	if b := structured(t, res); !res.IsError || b["status"] != 422.0 || b["errors"] == nil {
		t.Errorf("invalid payload through the local package: %v %v", res.IsError, b)
	}
}
