// Command scoring-mcp is the claim-scoring service's local MCP package: a stdio MCP server with the
// hosted endpoint's tool (score_workflow) and prompts, scoring through the service's HTTP API.
//
// Configure it in an agent host as a stdio server:
//
//	{"command": "scoring-mcp", "env": {"SCORING_URL": "https://scoring.example.com", "SCORING_API_KEY": "sk_..."}}
//
// SCORING_API_KEY is optional: without it, the first scoring call obtains a trial key
// (POST /v1/keys/trial) and keeps it in <user config dir>/trustlayer/scoring-mcp.json (mode 0600),
// by service URL, for later runs.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trustlayer/trustlayer/pkg/buildinfo"
	webmcp "github.com/trustlayer/trustlayer/services/scoring/internal/web/mcp"
)

// defaultURL is the service `make run` starts.
const defaultURL = "http://127.0.0.1:8082"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, &sdk.StdioTransport{}, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "scoring-mcp:", err)
		os.Exit(1)
	}
}

// run serves MCP on transport until the client disconnects or ctx ends. Nothing but MCP messages may
// go to stdout: diagnostics go to stderr.
func run(ctx context.Context, getenv func(string) string, transport sdk.Transport, stderr io.Writer) error {
	base := getenv("SCORING_URL")
	if base == "" {
		base = defaultURL
	}
	keyFile, err := webmcp.KeyFilePath()
	if err != nil && getenv("SCORING_API_KEY") == "" {
		return fmt.Errorf("no SCORING_API_KEY and no user config directory to keep a trial key in: %w", err)
	}
	local := &webmcp.Local{BaseURL: base, APIKey: getenv("SCORING_API_KEY"), KeyFile: keyFile,
		Client: &http.Client{Timeout: 30 * time.Second}}
	fmt.Fprintf(stderr, "scoring-mcp: scoring with %s\n", base)
	return local.NewServer(buildinfo.Get("scoring-mcp").Version).Run(ctx, transport)
}
