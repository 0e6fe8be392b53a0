package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/mcpschema"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// Keys of params._meta and result._meta in the 2026-07-28 revision (RequestMetaObject and
// ResultMetaObject of its schema).
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

const (
	// statelessClientName names the audit in _meta's clientInfo, as the User-Agent does.
	statelessClientName = "trustlayer-audit"
	// statelessBogusVersion is a protocol version no server supports: old enough never to be used.
	statelessBogusVersion = "1999-01-01"
	// statelessMaxPages caps the tools/list pages followed: enough for a few hundred tools, few
	// enough that a server handing out endless cursors cannot spend the audit's request budget.
	statelessMaxPages = 5
)

// statelessLater are the checks of the era after server-discover: when the server does not speak the
// revision, each is recorded SKIPPED with the precise reason rather than the engine's generic one.
var statelessLater = []string{"stateless-tools-list", "unsupported-version", "header-mismatch", "stateless-message-schema"}

// statelessResultDefs name the schema definition of a successful answer to each method the era sends
// (the whole JSON-RPC response, so that jsonrpc and id are checked with the result).
var statelessResultDefs = map[string]string{
	"server/discover": "DiscoverResultResponse",
	"tools/list":      "ListToolsResultResponse",
	"prompts/list":    "ListPromptsResultResponse",
	"resources/list":  "ListResourcesResultResponse",
}

// statelessRun is the 2026-07-28 era of one audit in progress.
type statelessRun struct {
	r   *run
	out eraOutcome
	// caps are the capabilities server/discover declared.
	caps map[string]json.RawMessage
	// valid counts the messages that validated against the 2026-07-28 schema; invalid says which did
	// not, and why.
	valid   int
	invalid []string
}

// stateless probes the 2026-07-28 era: server/discover, then tools/list (and the other lists the
// server declares) without a session, an unknown protocol version, a contradicting Mcp-Method header,
// and the schema of every message seen. There is no handshake and no session: every request carries
// its protocol version and client capabilities in params._meta, the same version in
// MCP-Protocol-Version, and its method in Mcp-Method. It sends 4 requests to a server that declares
// tools on one page, one more per further page (4 at most) and per prompts or resources declared,
// and 1 to a server that does not speak the revision.
func (r *run) stateless(ctx context.Context) eraOutcome {
	s := &statelessRun{r: r, out: eraOutcome{result: EraResult{Era: EraStateless}}}
	start := time.Now()
	ok, err := s.discover(ctx)
	if err != nil || !ok {
		return s.out
	}
	for _, step := range []func(context.Context) error{s.listTools, s.otherLists, s.unsupportedVersion, s.headerMismatch} {
		// An error is the probe's (budget, deadline): the checks not reached are skipped with the
		// engine's reason, and what was found so far stands.
		if err := step(ctx); err != nil {
			return s.out
		}
	}
	s.recordSchema(start)
	return s.out
}

// statelessParams are the params of a request of the era asking for version, with extra members.
func statelessParams(version string, extra map[string]any) map[string]any {
	p := map[string]any{"_meta": map[string]any{
		metaProtocolVersion:    version,
		metaClientCapabilities: map[string]any{},
		metaClientInfo:         map[string]any{"name": statelessClientName, "version": "1"},
	}}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// statelessHeader is the header of a request of the era: its method and protocol version. No
// session id: the revision has none.
func statelessHeader(method, version string) http.Header {
	return http.Header{headerMethod: {method}, headerProtocolVersion: {version}}
}

// call sends method with the era's params and headers for version.
func (s *statelessRun) call(ctx context.Context, method, version string, extra map[string]any) (*exchange, error) {
	return s.r.call(ctx, method, statelessParams(version, extra), statelessHeader(method, version))
}

// declares reports whether server/discover declared capability name.
func (s *statelessRun) declares(name string) bool {
	v, ok := s.caps[name]
	return ok && string(v) != "null"
}

// skipLater records every later check of the era SKIPPED with reason.
func (s *statelessRun) skipLater(start time.Time, reason string) {
	for _, id := range statelessLater {
		s.r.record(id, Skipped, start, "%s", reason)
	}
}

// statelessDiscover is the part of a DiscoverResult the audit reads.
type statelessDiscover struct {
	SupportedVersions []string                   `json:"supportedVersions"`
	Capabilities      map[string]json.RawMessage `json:"capabilities"`
	Instructions      string                     `json:"instructions"`
	Meta              struct {
		ServerInfo *struct {
			Name    string `json:"name"`
			Title   string `json:"title"`
			Version string `json:"version"`
		} `json:"io.modelcontextprotocol/serverInfo"`
	} `json:"_meta"`
}

// discover sends server/discover and decides whether the server speaks the revision. It reports
// whether the era's other checks can run.
func (s *statelessRun) discover(ctx context.Context) (bool, error) {
	start := time.Now()
	x, err := s.call(ctx, "server/discover", EraStateless, nil)
	if err != nil {
		s.out.result.Status = EraBroken
		s.out.result.Details = "not finished: " + err.Error()
		if errors.Is(err, errDeadline) {
			// The target stalled past the audit's deadline: a finding, as a request timeout is.
			s.out.result.Details = "server/discover got no answer before " + errDeadline.Error()
			s.r.record("server-discover", Failure, start, "%s", s.out.result.Details)
		}
		return false, err
	}
	s.out.headers = x.resp.Header
	status, why := statelessRefusal(x)
	switch status {
	case EraNotSupported:
		s.notSupported(start, Info, "the server does not speak 2026-07-28: "+why, "the server does not support 2026-07-28")
		return false, nil
	case statelessUnauthorized:
		msg := "the endpoint requires authorization (HTTP " + fmt.Sprint(x.resp.Status) + ") and answered server/discover without saying whether it speaks 2026-07-28; audit it with the caller's Authorization header to probe this revision"
		s.notSupported(start, Skipped, msg, "not run: the endpoint requires authorization")
		return false, nil
	case EraBroken:
		s.broken(start, "server/discover did not answer a DiscoverResult: "+why)
		return false, nil
	}

	// A result: it must be a DiscoverResult, and list this revision.
	var d statelessDiscover
	if missing := statelessMissing(x.reply.Result, "cacheScope", "capabilities", "resultType", "supportedVersions", "ttlMs"); len(missing) > 0 {
		s.broken(start, fmt.Sprintf("the result of server/discover lacks %s, which a DiscoverResult requires: %s", strings.Join(missing, ", "), seen(x.resp)))
		return false, nil
	}
	if err := json.Unmarshal(x.reply.Result, &d); err != nil {
		s.broken(start, "the result of server/discover is not a DiscoverResult ("+statelessJSONError(err)+"): "+seen(x.resp))
		return false, nil
	}
	if err := s.validateExchange("server/discover", x, ""); err != nil {
		s.broken(start, "the result of server/discover does not validate against the 2026-07-28 DiscoverResult: "+err.Error())
		return false, nil
	}
	if !slices.Contains(d.SupportedVersions, EraStateless) {
		s.notSupported(start, Info, fmt.Sprintf("the server does not speak 2026-07-28: server/discover lists only %s", statelessList(d.SupportedVersions)), "the server does not support 2026-07-28")
		return false, nil
	}

	s.caps = d.Capabilities
	info := &ServerInfo{Capabilities: slices.Sorted(maps.Keys(d.Capabilities)), Instructions: d.Instructions != ""}
	if si := d.Meta.ServerInfo; si != nil {
		info.Name, info.Title, info.Version = si.Name, si.Title, si.Version
	}
	s.out.server, s.out.instructions = info, d.Instructions
	s.out.protocolVersion = EraStateless
	s.out.result.Status = EraSupported
	s.out.result.ProtocolVersion = EraStateless
	s.out.result.Details = "server/discover lists " + statelessList(d.SupportedVersions)
	details := fmt.Sprintf("server/discover lists %s; capabilities: %s", statelessList(d.SupportedVersions), statelessList(info.Capabilities))
	if info.Name != "" {
		details += fmt.Sprintf("; server %s %s", info.Name, info.Version)
	}
	s.r.record("server-discover", Success, start, "%s", details)
	return true, nil
}

// statelessUnauthorized marks an answer that asks for credentials: no verdict on the revision.
const statelessUnauthorized = "unauthorized"

// statelessRefusal classifies the answer to server/discover when it is not a result: EraNotSupported
// for a clean refusal, statelessUnauthorized for 401 or 403, EraBroken for anything else that is
// not a result, and "" for a result. why says what was seen.
func statelessRefusal(x *exchange) (status, why string) {
	resp := x.resp
	switch {
	case resp.Err != nil:
		return EraBroken, "no answer: " + resp.Err.Error()
	case resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden:
		return statelessUnauthorized, seen(resp)
	case resp.Status >= 500:
		return EraBroken, seen(resp)
	case x.ok():
		if resp.Status/100 != 2 {
			return EraBroken, "a result with HTTP status " + fmt.Sprint(resp.Status) + ": " + seen(resp)
		}
		return "", ""
	}
	code := x.errCode()
	switch {
	// A server of an older revision either does not know the method (-32601), refuses the version
	// (-32022) or the request (-32600), or, with sessions, refuses a request without one (400, and
	// 404 or 405 from a server that routes only its own methods).
	case code == codeMethodNotFound || code == codeUnsupportedVersion || code == codeInvalidRequest:
		return EraNotSupported, fmt.Sprintf("it answered server/discover with %d %q (HTTP %d)", code, x.reply.Error.Message, resp.Status)
	case resp.Status == http.StatusBadRequest || resp.Status == http.StatusNotFound || resp.Status == http.StatusMethodNotAllowed:
		return EraNotSupported, "it refused server/discover: " + seen(resp)
	case x.reply != nil:
		return EraBroken, fmt.Sprintf("error %d %q, which is neither a result nor a refusal of the revision: %s", code, x.reply.Error.Message, seen(resp))
	case x.notInJSON:
		return EraBroken, "the answer is not JSON: " + seen(resp)
	}
	return EraBroken, "no JSON-RPC response to the request: " + seen(resp)
}

// notSupported ends the era for a server that does not speak it: server-discover is recorded with
// status and details, the other checks SKIPPED with reason.
func (s *statelessRun) notSupported(start time.Time, status Status, details, reason string) {
	s.out.result.Status = EraNotSupported
	s.out.result.Details = s.r.client.Redact(trim(details, maxDetails))
	s.r.record("server-discover", status, start, "%s", details)
	s.skipLater(start, reason)
}

// broken ends the era for a server whose server/discover is neither a DiscoverResult nor a refusal.
func (s *statelessRun) broken(start time.Time, details string) {
	s.out.result.Status = EraBroken
	s.out.result.Details = s.r.client.Redact(trim(details, maxDetails))
	s.r.record("server-discover", Failure, start, "%s", details)
	s.skipLater(start, "not run: server/discover did not answer a valid DiscoverResult")
}

// listTools lists the tools without a session, following nextCursor for up to statelessMaxPages
// pages.
func (s *statelessRun) listTools(ctx context.Context) error {
	start := time.Now()
	listing := &surface.Listing{}
	if !s.declares("tools") {
		s.r.record("stateless-tools-list", Skipped, start, "the server does not declare the tools capability")
		// The server offers no tools, which is a surface too.
		s.out.listing = listing
		return nil
	}
	cursor, pages, note := "", 0, ""
	cursors := map[string]bool{}
	for {
		var extra map[string]any
		if cursor != "" {
			extra = map[string]any{"cursor": cursor}
		}
		x, err := s.call(ctx, "tools/list", EraStateless, extra)
		if err != nil {
			return err
		}
		pages++
		if !x.ok() {
			s.r.record("stateless-tools-list", Failure, start, "%s", statelessListFailure("tools/list", pages, x))
			s.validateExchange("tools/list", x, "")
			return nil
		}
		if missing := statelessMissing(x.reply.Result, "resultType", "tools"); len(missing) > 0 {
			s.validateExchange("tools/list", x, "")
			s.r.record("stateless-tools-list", Failure, start, "page %d of tools/list lacks %s, which a 2026-07-28 ListToolsResult requires: %s", pages, strings.Join(missing, ", "), seen(x.resp))
			return nil
		}
		if err := s.validateExchange("tools/list", x, ""); err != nil {
			s.r.record("stateless-tools-list", Failure, start, "page %d of tools/list is not a valid 2026-07-28 ListToolsResult: %s", pages, err)
			return nil
		}
		var page struct {
			Tools      []surface.Tool `json:"tools"`
			NextCursor string         `json:"nextCursor"`
		}
		if err := json.Unmarshal(x.reply.Result, &page); err != nil {
			s.r.record("stateless-tools-list", Failure, start, "page %d of tools/list cannot be read as a ListToolsResult (%s): %s", pages, statelessJSONError(err), seen(x.resp))
			return nil
		}
		listing.Tools = append(listing.Tools, page.Tools...)
		cursor = page.NextCursor
		if cursor == "" {
			break
		}
		if cursors[cursor] {
			note = fmt.Sprintf("; stopped at a nextCursor already followed (%q)", trim(cursor, 40))
			break
		}
		cursors[cursor] = true
		if pages >= statelessMaxPages {
			note = fmt.Sprintf("; stopped after %d pages, the listing may be incomplete", pages)
			break
		}
	}
	s.out.listing = listing
	s.r.record("stateless-tools-list", Success, start, "%d tools in %d page(s), without a session%s", len(listing.Tools), pages, note)
	return nil
}

// statelessListFailure says why a list request of the era got no result.
func statelessListFailure(method string, page int, x *exchange) string {
	what := fmt.Sprintf("%s (page %d) without a session got no result: %s", method, page, seen(x.resp))
	if x.reply != nil && x.reply.Error != nil {
		what = fmt.Sprintf("%s (page %d) without a session answered error %d %q (HTTP %d)", method, page, x.reply.Error.Code, x.reply.Error.Message, x.resp.Status)
	}
	if x.resp.Err == nil && (x.resp.Status == http.StatusBadRequest || x.resp.Status == http.StatusNotFound ||
		strings.Contains(strings.ToLower(string(x.resp.Body)), "session")) {
		what += "; the server seems to ask for a session, which 2026-07-28 does not have"
	}
	return what
}

// otherLists reads one page of prompts/list and resources/list when the server declares them, into
// the era's listing when tools/list gave one. They are judged only through the schema check: the
// era's catalog has no check of its own for them.
func (s *statelessRun) otherLists(ctx context.Context) error {
	for _, method := range []string{"prompts/list", "resources/list"} {
		capability, _, _ := strings.Cut(method, "/")
		if !s.declares(capability) {
			continue
		}
		x, err := s.call(ctx, method, EraStateless, nil)
		if err != nil {
			return err
		}
		if !x.ok() {
			s.invalidf("%s: the server declares %s but %s", method, capability, statelessListFailure(method, 1, x))
			s.validateOthers(method, x)
			continue
		}
		if s.validateExchange(method, x, "") != nil {
			continue
		}
		var page struct {
			Prompts   []surface.Prompt   `json:"prompts"`
			Resources []surface.Resource `json:"resources"`
		}
		if err := json.Unmarshal(x.reply.Result, &page); err != nil {
			s.invalidf("%s: the result cannot be read (%s)", method, statelessJSONError(err))
			continue
		}
		if s.out.listing != nil {
			s.out.listing.Prompts = append(s.out.listing.Prompts, page.Prompts...)
			s.out.listing.Resources = append(s.out.listing.Resources, page.Resources...)
		}
	}
	return nil
}

// versionProbe picks the method that tests version checking: a list the server declares,
// since server/discover exists to tell versions apart and a server may answer it whatever _meta says.
func (s *statelessRun) versionProbe() string {
	for _, method := range []string{"tools/list", "prompts/list", "resources/list"} {
		if capability, _, _ := strings.Cut(method, "/"); s.declares(capability) {
			return method
		}
	}
	return "server/discover"
}

// unsupportedVersion sends a request for a protocol version no server supports: the revision
// requires HTTP 400 with UnsupportedProtocolVersionError (-32022) listing the supported versions.
func (s *statelessRun) unsupportedVersion(ctx context.Context) error {
	start := time.Now()
	method := s.versionProbe()
	x, err := s.call(ctx, method, statelessBogusVersion, nil)
	if err != nil {
		return err
	}
	sent := fmt.Sprintf("%s for protocol version %s", method, statelessBogusVersion)
	schemaErr := s.validateExchange(method, x, "UnsupportedProtocolVersionError")
	switch {
	case x.resp.Err != nil:
		s.r.record("unsupported-version", Failure, start, "%s: no answer: %s", sent, x.resp.Err)
	case x.ok():
		s.r.record("unsupported-version", Failure, start, "%s was accepted (HTTP %d with a result); the server must answer 400 with -32022 and its supported versions", sent, x.resp.Status)
	case x.resp.Status >= 500:
		s.r.record("unsupported-version", Failure, start, "%s: %s", sent, seen(x.resp))
	case x.errCode() == codeUnsupportedVersion:
		var data struct {
			Supported []string `json:"supported"`
		}
		if x.reply.Error.Data != nil {
			_ = json.Unmarshal(x.reply.Error.Data, &data)
		}
		switch {
		case len(data.Supported) == 0:
			s.r.record("unsupported-version", Failure, start, "%s answered -32022 (HTTP %d) without the supported versions in data.supported: %s", sent, x.resp.Status, seen(x.resp))
		case schemaErr != nil:
			s.r.record("unsupported-version", Failure, start, "%s answered -32022 (HTTP %d) that is not a valid UnsupportedProtocolVersionError: %s", sent, x.resp.Status, schemaErr)
		case x.resp.Status != http.StatusBadRequest:
			s.r.record("unsupported-version", Warning, start, "%s answered -32022 listing %s, but with HTTP %d; the transport requires 400", sent, statelessList(data.Supported), x.resp.Status)
		default:
			s.r.record("unsupported-version", Success, start, "%s answered HTTP 400 with -32022, supported: %s", sent, statelessList(data.Supported))
		}
	case x.reply != nil:
		s.r.record("unsupported-version", Failure, start, "%s answered error %d %q (HTTP %d) instead of -32022 with the supported versions", sent, x.errCode(), x.reply.Error.Message, x.resp.Status)
	default:
		s.r.record("unsupported-version", Failure, start, "%s got no JSON-RPC error -32022: %s", sent, seen(x.resp))
	}
	return nil
}

// headerMismatch sends tools/list whose Mcp-Method header says prompts/list: the revision requires
// HTTP 400 with HeaderMismatchError (-32020), since an intermediary routes on the header.
func (s *statelessRun) headerMismatch(ctx context.Context) error {
	start := time.Now()
	h := statelessHeader("prompts/list", EraStateless)
	x, err := s.r.call(ctx, "tools/list", statelessParams(EraStateless, nil), h)
	if err != nil {
		return err
	}
	const sent = "tools/list with the header Mcp-Method: prompts/list"
	schemaErr := s.validateExchange("tools/list", x, "HeaderMismatchError")
	status := x.resp.Status
	switch {
	case x.resp.Err != nil:
		s.r.record("header-mismatch", Failure, start, "%s: no answer: %s", sent, x.resp.Err)
	case x.ok():
		s.r.record("header-mismatch", Failure, start, "%s was accepted (HTTP %d with a result); the server must refuse it with 400 and -32020", sent, status)
	case status >= 500:
		s.r.record("header-mismatch", Failure, start, "%s: %s", sent, seen(x.resp))
	case x.errCode() == codeHeaderMismatch && status == http.StatusBadRequest:
		if schemaErr != nil {
			s.r.record("header-mismatch", Failure, start, "%s answered -32020 that is not a valid HeaderMismatchError: %s", sent, schemaErr)
			break
		}
		s.r.record("header-mismatch", Success, start, "%s answered HTTP 400 with -32020", sent)
	case x.errCode() == codeHeaderMismatch:
		s.r.record("header-mismatch", Warning, start, "%s answered -32020, but with HTTP %d; the transport requires 400", sent, status)
	case status >= 400 && x.reply != nil:
		s.r.record("header-mismatch", Warning, start, "%s was refused with HTTP %d and error %d %q; the revision requires 400 with -32020", sent, status, x.errCode(), x.reply.Error.Message)
	case status >= 400:
		s.r.record("header-mismatch", Warning, start, "%s was refused without a JSON-RPC error; the revision requires 400 with -32020: %s", sent, seen(x.resp))
	case x.reply != nil:
		s.r.record("header-mismatch", Failure, start, "%s answered error %d %q with HTTP %d: the mismatch went unnoticed; the revision requires 400 with -32020", sent, x.errCode(), x.reply.Error.Message, status)
	default:
		s.r.record("header-mismatch", Failure, start, "%s got no JSON-RPC response: %s", sent, seen(x.resp))
	}
	return nil
}

// validateExchange validates every message of x against the 2026-07-28 schema: the reply to a
// method as its result's response definition, or as errDef (JSONRPCErrorResponse when empty) for
// an error, and the other messages as what they are. It returns the reply's error.
func (s *statelessRun) validateExchange(method string, x *exchange, errDef string) error {
	s.validateOthers(method, x)
	if x.reply == nil {
		return nil
	}
	def := statelessResultDefs[method]
	if x.reply.Error != nil {
		def = errDef
		if def == "" || x.reply.Error.Code != statelessErrorCode(errDef) {
			def = "JSONRPCErrorResponse"
		}
	}
	return s.validate(method, def, x.reply.raw)
}

// validateOthers validates the messages of x that are not the reply: notifications, as the
// revision lets a server send while it answers.
func (s *statelessRun) validateOthers(method string, x *exchange) {
	for i := range x.messages {
		m := &x.messages[i]
		if m == x.reply {
			continue
		}
		def := "JSONRPCMessage"
		if m.Method != "" && m.ID == nil {
			def = "JSONRPCNotification"
		}
		_ = s.validate(method+" (another message of the answer)", def, m.raw)
	}
}

// statelessErrorCode is the code of the error definition def.
func statelessErrorCode(def string) int {
	switch def {
	case "UnsupportedProtocolVersionError":
		return codeUnsupportedVersion
	case "HeaderMismatchError":
		return codeHeaderMismatch
	}
	return 0
}

// validate checks one message against definition and counts the outcome for the schema check.
func (s *statelessRun) validate(what, definition string, raw []byte) error {
	if definition == "" {
		return nil
	}
	err := s.r.engine.schemas.Validate(EraStateless, definition, raw)
	if errors.Is(err, mcpschema.ErrUnknownDefinition) {
		// A gap in the audit's own schema set is never the server's fault (a test keeps the
		// definitions this file names in the set).
		return nil
	}
	if err != nil {
		s.invalidf("%s: %v", what, err)
		return err
	}
	s.valid++
	return nil
}

// invalidf notes a message that does not conform to the revision's schema.
func (s *statelessRun) invalidf(format string, args ...any) {
	s.invalid = append(s.invalid, fmt.Sprintf(format, args...))
}

// recordSchema records stateless-message-schema from every validation of the era.
func (s *statelessRun) recordSchema(start time.Time) {
	if len(s.invalid) == 0 {
		s.r.record("stateless-message-schema", Success, start, "%d messages valid against the 2026-07-28 schema", s.valid)
		return
	}
	first := s.invalid[:min(3, len(s.invalid))]
	s.r.record("stateless-message-schema", Failure, start, "%d of %d messages do not conform to the 2026-07-28 schema: %s",
		len(s.invalid), len(s.invalid)+s.valid, strings.Join(first, "; "))
}

// statelessMissing returns the members of required that the JSON object result lacks (all of them
// when it is not an object). The schema says the same; this holds when no schema is loaded.
func statelessMissing(result json.RawMessage, required ...string) []string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(result, &obj) != nil {
		return required
	}
	var missing []string
	for _, k := range required {
		if v, ok := obj[k]; !ok || string(v) == "null" {
			missing = append(missing, k)
		}
	}
	return missing
}

// statelessJSONError describes a decoding error without echoing the answer.
func statelessJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s is a JSON %s", te.Field, te.Value)
	}
	return "malformed JSON"
}

// statelessList renders a list for details.
func statelessList(items []string) string {
	if len(items) == 0 {
		return "nothing"
	}
	return strings.Join(items, ", ")
}
