package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/probe"
)

// statefulUnknownSession is a session id no server issued.
const statefulUnknownSession = "trustlayer-audit-unknown-session"

// notifyInitialized ends the handshake; the answer to a notification carries nothing, so anything
// but an empty 202 is a transport that treats notifications as requests.
func (s *statefulRun) notifyInitialized(ctx context.Context) error {
	start := time.Now()
	x, err := s.r.notify(ctx, "notifications/initialized", nil, s.header())
	if err != nil {
		return err
	}
	resp := x.resp
	empty := resp.Err == nil && len(bytes.TrimSpace(resp.Body)) == 0
	switch {
	case empty && resp.Status == http.StatusAccepted:
		s.r.record("notification-accepted", Success, start, "notifications/initialized answers 202 Accepted without a body")
	case empty && (resp.Status == http.StatusOK || resp.Status == http.StatusNoContent):
		s.r.record("notification-accepted", Warning, start, "notifications/initialized answers HTTP %d, not 202 Accepted", resp.Status)
	default:
		s.r.record("notification-accepted", Failure, start, "notifications/initialized: %s", seen(resp))
	}
	return nil
}

// sessionFormat checks the session id the handshake issued, and skips the session checks when
// there is none (a server may keep no session).
func (s *statefulRun) sessionFormat(ctx context.Context) error {
	start := time.Now()
	if s.session == "" {
		if _, issued := s.out.headers[headerSession]; issued {
			s.r.record("session-id-format", Failure, start, "Mcp-Session-Id is empty")
		} else {
			s.r.record("session-id-format", Info, start, "the server keeps no session (initialize issued no Mcp-Session-Id)")
		}
		for _, id := range []string{"session-missing-400", "session-unknown-404", "session-delete"} {
			s.r.record(id, Skipped, start, "the server issued no session id")
		}
		return nil
	}
	// The id is a credential of the session: details say what is wrong with it, never what it is.
	for i, c := range []byte(s.session) {
		if c < 0x21 || c > 0x7e {
			s.r.record("session-id-format", Failure, start, "Mcp-Session-Id (%d bytes) holds byte 0x%02x at offset %d, outside visible ASCII", len(s.session), c, i)
			return nil
		}
	}
	s.r.record("session-id-format", Success, start, "Mcp-Session-Id holds %d bytes of visible ASCII", len(s.session))
	return nil
}

// endSession sends DELETE for a session the audit opened, so that no probe leaves a session behind.
func (s *statefulRun) endSession(ctx context.Context, id, version string) (*probe.Response, error) {
	h := http.Header{}
	h.Set(headerSession, id)
	if version != "" {
		h.Set(headerProtocolVersion, version)
	}
	return s.r.client.Do(ctx, probe.Request{Method: http.MethodDelete, URL: s.r.endpoint, Header: h})
}

// freshInitialize sends another initialize asking for version, outside the audit's session, and
// ends the session it opens.
func (s *statefulRun) freshInitialize(ctx context.Context, what, version string, hdr http.Header) (*exchange, error) {
	x, err := s.r.call(ctx, "initialize", initializeParams(version), hdr)
	if err != nil {
		return nil, err
	}
	s.validate(what, x, "InitializeResult")
	if id := x.resp.Header.Get(headerSession); id != "" && x.ok() {
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(x.reply.Result, &res)
		if _, err := s.endSession(ctx, id, res.ProtocolVersion); err != nil {
			return x, err
		}
	}
	return x, nil
}

// foreignOrigin checks the DNS rebinding defence: a browser page of another site must not reach
// the server through the user's network.
func (s *statefulRun) foreignOrigin(ctx context.Context) error {
	start := time.Now()
	x, err := s.freshInitialize(ctx, "initialize from a foreign Origin", EraStateful, http.Header{"Origin": {"https://evil.example"}})
	if x == nil {
		return err
	}
	resp := x.resp
	switch {
	case resp.Err != nil || resp.Status >= 500:
		s.r.record("origin-rejected", Failure, start, "initialize with Origin: https://evil.example: %s", seen(resp))
	case resp.Status == http.StatusForbidden:
		s.r.record("origin-rejected", Success, start, "initialize with Origin: https://evil.example is refused with 403")
	case x.ok():
		s.r.record("origin-rejected", Failure, start, "the server accepts a request from a foreign Origin (https://evil.example)")
	default:
		s.r.record("origin-rejected", Warning, start, "initialize with Origin: https://evil.example is refused, but not with 403: %s", seen(resp))
	}
	return err
}

// getStream checks how GET, the server-to-client stream, is answered. The answer is closed after
// its headers: a stream may stay open for ever.
func (s *statefulRun) getStream(ctx context.Context) error {
	start := time.Now()
	h := s.header()
	h.Set("Accept", "text/event-stream")
	resp, err := s.r.client.Do(ctx, probe.Request{Method: http.MethodGet, URL: s.r.endpoint, Header: h, HeadersOnly: true})
	if err != nil {
		return err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.Err != nil || resp.Status >= 500:
		s.r.record("get-stream", Failure, start, "GET with Accept: text/event-stream: %s", seen(resp))
	case resp.Status == http.StatusMethodNotAllowed:
		s.r.record("get-stream", Success, start, "GET is answered 405: the server offers no stream of its own")
	case resp.Status == http.StatusOK && mt == "text/event-stream":
		s.r.record("get-stream", Success, start, "GET opens a text/event-stream")
	case resp.Status == http.StatusOK:
		s.r.record("get-stream", Failure, start, "GET is answered 200 with %q, not text/event-stream", trim(mt, 60))
	default:
		s.r.record("get-stream", Warning, start, "GET is answered HTTP %d, neither 405 nor a stream", resp.Status)
	}
	return nil
}

// sessionRequired checks that a session server refuses requests without its session, or with one
// it never issued.
func (s *statefulRun) sessionRequired(ctx context.Context) error {
	if s.session == "" {
		return nil
	}
	start := time.Now()
	h := s.header()
	h.Del(headerSession)
	x, err := s.r.call(ctx, "ping", nil, h)
	if err != nil {
		return err
	}
	s.validate("ping without a session", x, "EmptyResult")
	switch resp := x.resp; {
	case resp.Err == nil && resp.Status == http.StatusBadRequest:
		s.r.record("session-missing-400", Success, start, "ping without Mcp-Session-Id is refused with 400")
	case x.ok():
		s.r.record("session-missing-400", Failure, start, "ping without Mcp-Session-Id is answered: the session id is not required")
	case resp.Err == nil && resp.Status < 500 && (resp.Status >= 400 || statefulAnswer(x) != nil):
		s.r.record("session-missing-400", Warning, start, "ping without Mcp-Session-Id is refused, but not with 400: %s", seen(resp))
	default:
		s.r.record("session-missing-400", Failure, start, "ping without Mcp-Session-Id: %s", seen(resp))
	}

	start = time.Now()
	h.Set(headerSession, statefulUnknownSession)
	x, err = s.r.call(ctx, "ping", nil, h)
	if err != nil {
		return err
	}
	s.validate("ping with an unknown session", x, "EmptyResult")
	switch resp := x.resp; {
	case resp.Err == nil && resp.Status == http.StatusNotFound:
		s.r.record("session-unknown-404", Success, start, "ping with an unknown Mcp-Session-Id is answered 404")
	case x.ok():
		s.r.record("session-unknown-404", Failure, start, "ping with an unknown Mcp-Session-Id is answered: the server does not check its sessions")
	case resp.Err == nil && resp.Status < 500 && (resp.Status >= 400 || statefulAnswer(x) != nil):
		s.r.record("session-unknown-404", Warning, start, "ping with an unknown Mcp-Session-Id is refused, but not with 404 (a client would not start a new session): %s", seen(resp))
	default:
		s.r.record("session-unknown-404", Failure, start, "ping with an unknown Mcp-Session-Id: %s", seen(resp))
	}
	return nil
}

// statefulVersionLike matches a protocol revision, to find a supported-versions list in an error.
var statefulVersionLike = regexp.MustCompile(`"\d{4}-\d{2}-\d{2}"`)

// versionNegotiation asks for a version no server supports: the server must counter-offer one it
// speaks (or refuse, naming those it speaks), never pretend to speak it.
func (s *statefulRun) versionNegotiation(ctx context.Context) error {
	start := time.Now()
	x, err := s.freshInitialize(ctx, "initialize asking for "+statefulBogusVersion, statefulBogusVersion, nil)
	if x == nil {
		return err
	}
	resp := x.resp
	var res struct {
		ProtocolVersion *string `json:"protocolVersion"`
	}
	switch {
	case resp.Err != nil || resp.Status >= 500:
		s.r.record("version-negotiation", Failure, start, "initialize asking for %s: %s", statefulBogusVersion, seen(resp))
	case x.ok():
		_ = json.Unmarshal(x.reply.Result, &res)
		switch {
		case res.ProtocolVersion == nil:
			s.r.record("version-negotiation", Failure, start, "initialize asking for %s answers no protocolVersion", statefulBogusVersion)
		case *res.ProtocolVersion == statefulBogusVersion:
			s.r.record("version-negotiation", Failure, start, "the server accepts protocol version %s, which does not exist", statefulBogusVersion)
		case slices.Contains(statefulRevisions, *res.ProtocolVersion):
			s.r.record("version-negotiation", Success, start, "asked for %s, the server counter-offers %s", statefulBogusVersion, *res.ProtocolVersion)
		default:
			s.r.record("version-negotiation", Warning, start, "asked for %s, the server counter-offers %q, which is no 2025-era revision", statefulBogusVersion, trim(*res.ProtocolVersion, 40))
		}
	case statefulError(x) != nil:
		e := statefulError(x)
		others := statefulVersionLike.FindAll(e.Data, -1)
		others = slices.DeleteFunc(others, func(v []byte) bool { return string(v) == `"`+statefulBogusVersion+`"` })
		if len(others) > 0 {
			s.r.record("version-negotiation", Success, start, "asked for %s, the server refuses with error %d listing the versions it supports", statefulBogusVersion, e.Code)
		} else {
			s.r.record("version-negotiation", Warning, start, "asked for %s, the server refuses with error %d but lists no supported version in its data", statefulBogusVersion, e.Code)
		}
	default:
		s.r.record("version-negotiation", Warning, start, "initialize asking for %s is refused without a JSON-RPC error: %s", statefulBogusVersion, seen(resp))
	}
	return err
}

// sessionDelete ends the audit's session, last since every later request would be refused.
func (s *statefulRun) sessionDelete(ctx context.Context) error {
	if s.session == "" {
		return nil
	}
	start := time.Now()
	resp, err := s.endSession(ctx, s.session, s.version)
	if err != nil {
		return err
	}
	switch {
	case resp.Err != nil || resp.Status >= 500:
		s.r.record("session-delete", Failure, start, "DELETE with the session id: %s", seen(resp))
		return nil
	case resp.Status == http.StatusMethodNotAllowed:
		s.r.record("session-delete", Success, start, "DELETE is answered 405: the server does not let clients end sessions")
		return nil
	case resp.Status != http.StatusOK && resp.Status != http.StatusAccepted && resp.Status != http.StatusNoContent:
		s.r.record("session-delete", Warning, start, "DELETE with the session id is answered HTTP %d, neither an end of the session nor 405", resp.Status)
		return nil
	}
	x, err := s.r.call(ctx, "ping", nil, s.header())
	if err != nil {
		return err
	}
	s.validate("ping in an ended session", x, "EmptyResult")
	switch {
	case x.resp.Err == nil && x.resp.Status == http.StatusNotFound:
		s.r.record("session-delete", Success, start, "DELETE ends the session (HTTP %d); a ping in it is then answered 404", resp.Status)
	case x.ok():
		s.r.record("session-delete", Failure, start, "DELETE is answered HTTP %d, but a ping in the session still works", resp.Status)
	default:
		s.r.record("session-delete", Warning, start, "DELETE is answered HTTP %d; a ping in the ended session is then answered %s, not 404", resp.Status, seen(x.resp))
	}
	return nil
}

// sampleLatency times further handshakes and tools/list calls for the readiness rules (the first
// handshake is the first sample), then ends the audit's session.
func (s *statefulRun) sampleLatency(ctx context.Context) error {
	for range latencySamples - 1 {
		x, err := s.freshInitialize(ctx, "initialize (latency sample)", EraStateful, nil)
		if err != nil {
			return err
		}
		// A failed handshake times nothing worth comparing.
		if x.ok() {
			s.out.initLatency = append(s.out.initLatency, x.resp.Duration)
		}
	}
	if s.declares("tools") && s.out.listing != nil {
		for range latencySamples {
			x, err := s.r.call(ctx, "tools/list", nil, s.header())
			if err != nil {
				return err
			}
			if x.ok() {
				s.out.listLatency = append(s.out.listLatency, x.resp.Duration)
			}
		}
	}
	if s.session != "" {
		if _, err := s.endSession(ctx, s.session, s.version); err != nil {
			return err
		}
	}
	return nil
}
