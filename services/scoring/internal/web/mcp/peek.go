package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/trustlayer/trustlayer/pkg/gateway"
)

// keyedTools are the tools a call of needs a credential for. Every other method (initialize, the
// lists, prompts/get, ping, completion) is public, as the README says of initialize, tools/list and
// prompts/list; a call of a tool the server does not have is answered by the SDK.
var keyedTools = map[string]bool{ToolName: true}

// NeedsCredential reports whether a POST body to /mcp holds a call that needs a credential: a
// tools/call of a keyed tool, alone or in a JSON-RPC batch. A body it cannot read needs none: the SDK
// answers it with a JSON-RPC error, and the tool refuses a call that reached it without a credential
// all the same.
func NeedsCredential(body []byte) bool {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(body, &batch) != nil {
			return false
		}
		for _, m := range batch {
			if callsKeyedTool(m) {
				return true
			}
		}
		return false
	}
	return callsKeyedTool(body)
}

func callsKeyedTool(raw []byte) bool {
	msg, err := jsonrpc.DecodeMessage(raw)
	if err != nil {
		return false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" {
		return false
	}
	var params sdk.CallToolParamsRaw
	if json.Unmarshal(req.Params, &params) != nil {
		return false
	}
	return keyedTools[params.Name]
}

// readBodyOrRefuse is readBody that answers a body it cannot read (413 over MaxBodyBytes, 400
// otherwise) and reports whether the caller may go on.
func readBodyOrRefuse(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := readBody(w, r)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		gateway.WriteJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"detail": "Request body too large"})
		return nil, false
	case err != nil:
		gateway.WriteJSON(w, http.StatusBadRequest, map[string]any{"detail": "Request body could not be read"})
		return nil, false
	}
	return body, true
}

// readBody reads a request body of at most MaxBodyBytes and puts it back for the next handler.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}
