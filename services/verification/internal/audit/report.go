package audit

import (
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/readiness"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// Status is the outcome of one check, with the official conformance suite's names.
type Status string

const (
	Success Status = "SUCCESS"
	Failure Status = "FAILURE"
	Warning Status = "WARNING"
	Skipped Status = "SKIPPED"
	Info    Status = "INFO"
)

// Verdicts of a report: fail when any check failed, warn when one warned, pass otherwise.
const (
	VerdictPass = "pass"
	VerdictWarn = "warn"
	VerdictFail = "fail"
)

// Era support as a report states it.
const (
	EraSupported    = "supported"
	EraNotSupported = "not_supported"
	EraBroken       = "broken"
)

// Check is the result of one catalog entry.
type Check struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Status        Status `json:"status"`
	Era           string `json:"era,omitempty"`
	SpecReference string `json:"spec_reference"`
	// Details says what was sent and seen, trimmed, with secrets redacted.
	Details    string `json:"details"`
	DurationMS int64  `json:"duration_ms"`
}

// EraResult says whether the server speaks one protocol revision.
type EraResult struct {
	Era string `json:"era"`
	// Status is EraSupported, EraNotSupported (a clean refusal) or EraBroken (an answer that is
	// neither a valid handshake nor a valid refusal, a 5xx, or no answer).
	Status string `json:"status"`
	// ProtocolVersion is the version the server negotiated or advertised, when supported.
	ProtocolVersion string `json:"protocol_version,omitempty"`
	Details         string `json:"details,omitempty"`
}

// ServerInfo is what the server says about itself at initialize or server/discover.
type ServerInfo struct {
	Name         string   `json:"name,omitempty"`
	Title        string   `json:"title,omitempty"`
	Version      string   `json:"version,omitempty"`
	Capabilities []string `json:"capabilities"`
	Instructions bool     `json:"has_instructions"`
}

// Counts counts checks per status.
type Counts struct {
	Success int `json:"success"`
	Failure int `json:"failure"`
	Warning int `json:"warning"`
	Skipped int `json:"skipped"`
	Info    int `json:"info"`
}

// Traffic is what an audit sent to the target, against its limits.
type Traffic struct {
	Requests      int   `json:"requests"`
	MaxRequests   int   `json:"max_requests"`
	BytesReceived int64 `json:"bytes_received"`
	// Truncated counts responses cut at the per-response byte cap.
	Truncated int `json:"truncated_responses"`
}

// Report is the result of a conformance audit (Engine.Conformance).
type Report struct {
	URL        string      `json:"url"`
	StartedAt  time.Time   `json:"started_at"`
	DurationMS int64       `json:"duration_ms"`
	Verdict    string      `json:"verdict"`
	Counts     Counts      `json:"counts"`
	Eras       []EraResult `json:"eras"`
	Server     *ServerInfo `json:"server,omitempty"`
	Checks     []Check     `json:"checks"`
	// Surface is the tool (prompt, resource) surface with its hashes; nil when no era could list it.
	Surface *surface.Surface `json:"surface,omitempty"`
	Traffic Traffic          `json:"traffic"`
	// Listing is what Surface hashes, schemas and descriptions themselves (redacted as the report
	// is), for a later audit to compare with (surface.CompareListings, watch runs); never part of
	// the report's JSON. Nil when Surface is.
	Listing *surface.Listing `json:"-"`
}

// ReadinessReport is the result of a readiness audit (Engine.Readiness).
type ReadinessReport struct {
	URL        string      `json:"url"`
	StartedAt  time.Time   `json:"started_at"`
	DurationMS int64       `json:"duration_ms"`
	Eras       []EraResult `json:"eras"`
	Server     *ServerInfo `json:"server,omitempty"`
	readiness.Result
	Surface *surface.Surface `json:"surface,omitempty"`
	Traffic Traffic          `json:"traffic"`
	// Listing is as Report's: never part of the JSON.
	Listing *surface.Listing `json:"-"`
}

// count tallies checks and derives the verdict.
func count(checks []Check) (Counts, string) {
	var c Counts
	for _, ch := range checks {
		switch ch.Status {
		case Success:
			c.Success++
		case Failure:
			c.Failure++
		case Warning:
			c.Warning++
		case Skipped:
			c.Skipped++
		case Info:
			c.Info++
		}
	}
	switch {
	case c.Failure > 0:
		return c, VerdictFail
	case c.Warning > 0:
		return c, VerdictWarn
	}
	return c, VerdictPass
}
