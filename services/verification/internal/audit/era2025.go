package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// statefulRevisions are the protocol revisions of the stateful era: a server may negotiate an older
// one than the audit asks for, and the audit can still talk to it, but a version outside this list
// is one no client can speak.
var statefulRevisions = []string{"2024-11-05", "2025-03-26", "2025-06-18", EraStateful}

// The audit's client name, and the version a fresh handshake asks for to see how the server
// negotiates: old enough that no server supports it.
const (
	statefulClientName   = "trustlayer-audit"
	statefulBogusVersion = "1999-01-01"
)

// statefulRun is the 2025-11-25 era of one audit in progress.
type statefulRun struct {
	r    *run
	mode mode
	out  eraOutcome
	// session is the Mcp-Session-Id the handshake issued ("" when the server keeps no session);
	// version is the protocol version it negotiated.
	session, version string
	caps             map[string]json.RawMessage
	schema           statefulSchemaLog
}

// stateful probes the 2025-11-25 era: the initialize handshake, then, in a full audit, every check
// of the era in an order where no probe disturbs a later one (the session ends last); in a
// readiness audit, the listing, the error contract and the latency samples.
func (r *run) stateful(ctx context.Context, m mode) eraOutcome {
	s := &statefulRun{r: r, mode: m, out: eraOutcome{result: EraResult{Era: EraStateful}}}
	if !s.initialize(ctx) {
		return s.out
	}
	steps := []func(context.Context) error{
		s.notifyInitialized, s.sessionFormat, s.tools, s.otherLists, s.undeclared, s.ping,
		s.unknownMethod, s.malformedJSON, s.batch, s.unknownTool, s.foreignOrigin, s.getStream,
		s.sessionRequired, s.versionNegotiation, s.sessionDelete,
	}
	if m == readinessAudit {
		steps = []func(context.Context) error{s.notifyInitialized, s.tools, s.otherLists, s.unknownTool, s.sampleLatency}
	}
	for _, step := range steps {
		// An error is the probe's (budget, deadline): the checks not reached are skipped with the
		// engine's reason, and what was found so far stands.
		if err := step(ctx); err != nil {
			break
		}
	}
	s.recordSchema()
	return s.out
}

// header is the header of every request in the session: its id and the negotiated version.
func (s *statefulRun) header() http.Header {
	h := http.Header{}
	if s.session != "" {
		h.Set(headerSession, s.session)
	}
	h.Set(headerProtocolVersion, s.version)
	return h
}

// declares reports whether the server declared capability name at initialize.
func (s *statefulRun) declares(name string) bool {
	v, ok := s.caps[name]
	return ok && string(v) != "null"
}

// initializeParams are the params of an initialize request asking for version.
func initializeParams(version string) map[string]any {
	return map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": statefulClientName, "version": "1"},
	}
}

// skipRest marks every check of the era that has no result yet as skipped for reason: when the
// handshake fails, the engine's generic reason ("no era could be used") would be wrong if the other
// era works.
func (s *statefulRun) skipRest(reason string) {
	now := time.Now()
	for _, def := range Catalog {
		if def.Era == EraStateful {
			s.r.record(def.ID, Skipped, now, "%s", reason)
		}
	}
}

// initialize runs the handshake and says whether the era can be probed further.
func (s *statefulRun) initialize(ctx context.Context) bool {
	start := time.Now()
	x, err := s.r.call(ctx, "initialize", initializeParams(EraStateful), nil)
	if err != nil {
		s.out.result.Status, s.out.result.Details = EraBroken, "initialize was not sent: "+err.Error()
		if errors.Is(err, errDeadline) {
			// The target stalled past the audit's deadline: a finding, as a request timeout is.
			s.out.result.Details = "initialize got no answer before " + errDeadline.Error()
			s.r.record("server-initialize", Failure, start, "%s", s.out.result.Details)
		}
		return false
	}
	resp := x.resp
	s.out.headers = resp.Header.Clone()
	fail := func(status, format string, args ...any) bool {
		msg := fmt.Sprintf(format, args...)
		s.out.result.Status, s.out.result.Details = status, s.r.client.Redact(trim(msg, maxDetails))
		check := Failure
		if status == EraNotSupported {
			check = Info
		}
		s.r.record("server-initialize", check, start, "%s", msg)
		s.skipRest("not run: initialize failed")
		return false
	}
	switch {
	case resp.Err != nil:
		return fail(EraBroken, "initialize got no answer: %s", resp.Err)
	case resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden:
		// A protected server without the caller's credentials: not a conformance finding (the OAuth
		// checks judge the 401 itself), and nothing else of the era can be probed.
		msg := fmt.Sprintf("the server requires authorization (HTTP %d); pass the server's credentials in headers", resp.Status)
		s.out.result.Status, s.out.result.Details = EraNotSupported, msg
		s.r.record("server-initialize", Skipped, start, "%s", msg)
		s.skipRest("not run: " + msg)
		return false
	case resp.Status >= 500:
		return fail(EraBroken, "initialize: %s", seen(resp))
	case !x.ok() && statefulError(x) != nil:
		s.validate("initialize", x, "")
		code := statefulError(x).Code
		if resp.Status == http.StatusBadRequest || code == codeUnsupportedVersion || code == codeMethodNotFound {
			return fail(EraNotSupported, "initialize is refused (HTTP %d, JSON-RPC error %d): the server does not speak the 2025-11-25 era", resp.Status, code)
		}
		return fail(EraBroken, "initialize answers JSON-RPC error %d, neither a handshake nor a refusal: %s", code, seen(resp))
	case !x.ok():
		return fail(EraBroken, "initialize got no JSON-RPC answer: %s", seen(resp))
	}
	return s.handshake(x, start)
}

// handshake judges a successful initialize answer and keeps what later probes need.
func (s *statefulRun) handshake(x *exchange, start time.Time) bool {
	var problems []string
	if resp := x.resp; resp.Status/100 != 2 {
		problems = append(problems, fmt.Sprintf("the result comes with HTTP %d", resp.Status))
	}
	verr := s.validate("initialize", x, "InitializeResult")
	if verr != nil {
		problems = append(problems, "it does not validate: "+verr.Error())
	}
	var res struct {
		ProtocolVersion *string                    `json:"protocolVersion"`
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
		ServerInfo      *struct {
			Name    string `json:"name"`
			Title   string `json:"title"`
			Version string `json:"version"`
		} `json:"serverInfo"`
		Instructions string `json:"instructions"`
	}
	if err := json.Unmarshal(x.reply.Result, &res); err != nil {
		problems = append(problems, "the result does not decode: "+err.Error())
	}
	switch {
	case res.ProtocolVersion == nil:
		problems = append(problems, "it lacks protocolVersion")
	case !slices.Contains(statefulRevisions, *res.ProtocolVersion):
		problems = append(problems, fmt.Sprintf("it negotiates %q, which is no MCP revision", trim(*res.ProtocolVersion, 40)))
	}
	// The schema names a missing member already; these catch it where the schema set cannot.
	switch {
	case verr != nil:
	case res.Capabilities == nil:
		problems = append(problems, "it lacks capabilities")
	case res.ServerInfo == nil:
		problems = append(problems, "it lacks serverInfo")
	case res.ServerInfo.Name == "" || res.ServerInfo.Version == "":
		problems = append(problems, "serverInfo lacks its name or version")
	}
	if res.ProtocolVersion == nil || !slices.Contains(statefulRevisions, *res.ProtocolVersion) {
		// A client MUST disconnect from a server whose version it cannot speak, and so does the audit.
		msg := "initialize answers no usable handshake: " + strings.Join(problems, "; ")
		s.out.result.Status, s.out.result.Details = EraBroken, s.r.client.Redact(trim(msg, maxDetails))
		s.r.record("server-initialize", Failure, start, "%s", msg)
		s.skipRest("not run: initialize negotiated no protocol version the audit can speak")
		return false
	}

	s.version, s.caps = *res.ProtocolVersion, res.Capabilities
	s.session = x.resp.Header.Get(headerSession)
	s.out.protocolVersion = s.version
	s.out.initLatency = []time.Duration{x.resp.Duration}
	info := &ServerInfo{Capabilities: []string{}, Instructions: res.Instructions != ""}
	if res.ServerInfo != nil {
		info.Name, info.Title, info.Version = res.ServerInfo.Name, res.ServerInfo.Title, res.ServerInfo.Version
	}
	for k := range res.Capabilities {
		info.Capabilities = append(info.Capabilities, k)
	}
	slices.Sort(info.Capabilities)
	s.out.server, s.out.instructions = info, res.Instructions

	if len(problems) > 0 {
		// The era is usable, so the other checks still run, but the handshake itself is not valid.
		msg := "initialize negotiated " + s.version + " with an invalid result: " + strings.Join(problems, "; ")
		s.out.result.Status, s.out.result.Details = EraBroken, s.r.client.Redact(trim(msg, maxDetails))
		s.r.record("server-initialize", Failure, start, "%s", msg)
		return true
	}
	s.out.result.Status, s.out.result.ProtocolVersion = EraSupported, s.version
	s.r.record("server-initialize", Success, start, "initialize negotiated %s; server %q %q, capabilities [%s]",
		s.version, trim(info.Name, 60), trim(info.Version, 30), strings.Join(info.Capabilities, ", "))
	return true
}
