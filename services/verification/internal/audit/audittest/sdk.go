package audittest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Correct is a correct 2025-11-25 server written with the official Go SDK (v1.8.0): three good
// tools, nothing else, served by the SDK's stateful StreamableHTTPHandler (sessions, the GET
// stream, DELETE) behind front, which adds what the SDK leaves to its user (see front). It also
// publishes a valid server card. It must pass every conformance check and score 100 with no
// readiness finding.
func Correct() http.Handler { return sdkHandler(false) }

// Full is Correct with prompts (with arguments), a resource and a resource template as well.
func Full() http.Handler { return sdkHandler(true) }

// sdkHandler builds one SDK server, shared by every session (the SDK allows it), behind sdkFront
// and site. Correct answers requests with the SDK's default text/event-stream answers and Full with
// application/json ones, so that an auditor's tests meet both shapes of a correct answer; Full also
// pages its tools two at a time, so that a correct server exercises the cursors.
func sdkHandler(full bool) http.Handler {
	srv := newSDKServer(full)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		JSONResponse: full,
	})
	return site{endpoint: newSDKFront(h, sdkMethods(full)), card: cardValid}
}

// newSDKServer is the SDK server with the good surface.
func newSDKServer(full bool) *mcp.Server {
	// Capabilities set explicitly: the SDK would otherwise declare logging, which the fixture
	// does not serve as a feature, and listChanged, which it never sends.
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	if full {
		caps.Prompts = &mcp.PromptCapabilities{}
		caps.Resources = &mcp.ResourceCapabilities{}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: ServerName, Title: ServerTitle, Version: ServerVersion}, &mcp.ServerOptions{
		Instructions: Instructions,
		Capabilities: caps,
		// The stateful handler cannot serve 2026-07-28 (the SDK serves it only statelessly), so
		// the server advertises the handshake-era versions only: a 2026 request is answered
		// -32022 listing them, which an auditor reads as a clean "not supported".
		SupportedProtocolVersions: versions2025,
		PageSize:                  pageSize(full),
	})
	for _, t := range goodTools() {
		s.AddTool(sdkTool(t), sdkToolHandler(t))
	}
	if full {
		p := goodPrompt()
		mp := &mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description}
		for _, a := range p.Arguments {
			mp.Arguments = append(mp.Arguments, &mcp.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
		s.AddPrompt(mp, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			city := req.Params.Arguments["city"]
			return &mcp.GetPromptResult{
				Description: p.Description,
				Messages: []*mcp.PromptMessage{{
					Role:    "user",
					Content: &mcp.TextContent{Text: fmt.Sprintf("Summarize the weather forecast for %s in two sentences.", city)},
				}},
			}, nil
		})
		s.AddResource(&mcp.Resource{
			URI: resourceURI, Name: "station_index", Title: "Station index",
			Description: "The index of every weather station the server knows, as a JSON document.",
			MIMEType:    "application/json",
		}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: resourceText}}}, nil
		})
		s.AddResourceTemplate(&mcp.ResourceTemplate{
			URITemplate: resourceTemplate, Name: "station", Title: "Station",
			Description: "The details of one weather station, chosen by its station id.",
			MIMEType:    "application/json",
		}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: `{"id":"LPPT"}`}}}, nil
		})
	}
	return s
}

func pageSize(full bool) int {
	if full {
		return 2
	}
	return 0 // the SDK's default, 1000
}

// sdkTool converts a fixture tool to the SDK's type; the schemas stay maps, so the SDK lists them
// exactly as written.
func sdkTool(t tool) *mcp.Tool {
	a := t.Annotations
	destructive, _ := a["destructiveHint"].(bool)
	openWorld, _ := a["openWorldHint"].(bool)
	readOnly, _ := a["readOnlyHint"].(bool)
	idempotent, _ := a["idempotentHint"].(bool)
	title, _ := a["title"].(string)
	return &mcp.Tool{
		Name:         t.Name,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  t.InputSchema,
		OutputSchema: t.OutputSchema,
		Annotations: &mcp.ToolAnnotations{
			Title:           title,
			ReadOnlyHint:    readOnly,
			DestructiveHint: &destructive,
			IdempotentHint:  idempotent,
			OpenWorldHint:   &openWorld,
		},
	}
}

// sdkToolHandler answers a call with the tool's fabricated structured result.
func sdkToolHandler(t tool) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				res := &mcp.CallToolResult{}
				res.SetError(fmt.Errorf("arguments are not a JSON object: %w", err))
				return res, nil
			}
		}
		out := t.call(args)
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: string(mustJSON(out))}},
			StructuredContent: out,
		}, nil
	}
}

// sdkMethods are the request methods the SDK server serves; front answers any other with -32601
// (see front).
func sdkMethods(full bool) map[string]bool {
	m := map[string]bool{
		"initialize": true, "ping": true, "tools/list": true, "tools/call": true, "server/discover": true,
	}
	if full {
		for _, k := range []string{"prompts/list", "prompts/get", "resources/list", "resources/read", "resources/templates/list"} {
			m[k] = true
		}
	}
	return m
}
