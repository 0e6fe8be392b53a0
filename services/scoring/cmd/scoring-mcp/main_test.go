package main

import (
	"context"
	"io"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRunServesTheTool: the command serves score_workflow and the prompts over the transport it is
// given (stdio in the binary), and needs no key or service for discovery. Scoring through the HTTP
// API is tested against the real service in app/mcp_test.go.
func TestRunServesTheTool(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	serverSide, clientSide := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	env := map[string]string{"SCORING_URL": "http://127.0.0.1:1"}
	go func() { done <- run(ctx, func(k string) string { return env[k] }, serverSide, io.Discard) }()

	session, err := sdk.NewClient(&sdk.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := session.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "score_workflow" {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	// With no service at SCORING_URL, a call is a tool error that says so.
	res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "score_workflow", Arguments: map[string]any{"workflow": "healthcare.denial", "payload": map[string]any{}}})
	if err != nil || !res.IsError {
		t.Fatalf("call without a service: %v %v, want a tool error", res, err)
	}
	if text := res.Content[0].(*sdk.TextContent).Text; text != "The scoring service at http://127.0.0.1:1 cannot be reached" {
		t.Errorf("tool error text: %q", text)
	}
	_ = session.Close()
	if err := <-done; err != nil {
		t.Errorf("run after the client left: %v", err)
	}
}
