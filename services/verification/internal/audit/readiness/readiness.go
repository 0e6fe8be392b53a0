// Package readiness grades an MCP server's fitness for production from what an audit observed.
package readiness

import (
	"net/http"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// Input is what the audit observed (to be completed).
type Input struct {
	Listing           surface.Listing
	Listed            bool
	ProtocolVersion   string
	InitializeLatency []time.Duration
	ToolsListLatency  []time.Duration
	UnknownTool       ErrorContract
	TLS               TLSInfo
	Headers           http.Header
	Now               time.Time
}

// ErrorContract is how the server answered tools/call of a tool that does not exist.
type ErrorContract struct {
	Probed       bool
	HTTPStatus   int
	JSONRPCError bool
	ToolError    bool
	Detail       string
}

// TLSInfo is the target's TLS connection.
type TLSInfo struct {
	Version      uint16
	CertNotAfter time.Time
}

// Result is the grade (to be completed).
type Result struct {
	Score           int  `json:"score"`
	ProductionReady bool `json:"production_ready"`
}

// Evaluate grades in.
func Evaluate(in Input) Result { return Result{} }
