package audit

import (
	"context"
	"net/http"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/readiness"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// mode says how much of an era a run probes.
type mode int

const (
	// fullAudit runs every check of the catalog.
	fullAudit mode = iota
	// readinessAudit lists the surface, probes the error contract and samples latency; it records
	// no conformance checks beyond those it needs.
	readinessAudit
)

// latencySamples is how many times a readiness audit times initialize and tools/list: enough for a
// p95 that is not one slow request, few enough to stay a light load on the target.
const latencySamples = 5

// eraOutcome is what probing one era found.
type eraOutcome struct {
	result EraResult
	server *ServerInfo
	// instructions is the server's instructions text, which reaches the model as tool descriptions do.
	instructions string
	// listing is the surface the era's list methods returned; nil when it could not list tools.
	listing *surface.Listing
	// protocolVersion is the version the era negotiated.
	protocolVersion string
	// headers are the HTTP headers of the era's handshake answer.
	headers http.Header
	// unknownTool is how tools/call of a tool that does not exist was answered (stateful era).
	unknownTool readiness.ErrorContract
	// initLatency and listLatency time the handshake and tools/list (readiness audits).
	initLatency, listLatency []time.Duration
}

// Readiness audits t's endpoint for production readiness: the readiness rules over its surface,
// error contract, latency and TLS.
func (e *Engine) Readiness(ctx context.Context, t Target) (report *ReadinessReport, err error) {
	defer guard(&err)
	started := e.now()
	r, actx, cancel, err := e.start(ctx, t)
	if err != nil {
		return nil, err
	}
	defer cancel()

	var stateful, stateless eraOutcome
	done := make(chan struct{})
	go func() {
		defer close(done)
		stateless = r.stateless(actx)
	}()
	stateful = r.stateful(actx, readinessAudit)
	<-done
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}

	in := readiness.Input{
		ProtocolVersion:   stateful.protocolVersion,
		InitializeLatency: stateful.initLatency,
		ToolsListLatency:  stateful.listLatency,
		UnknownTool:       stateful.unknownTool,
		Headers:           stateful.headers,
		Now:               e.now(),
	}
	source := stateful
	if source.listing == nil {
		source = stateless
		in.ProtocolVersion = stateless.protocolVersion
		in.Headers = stateless.headers
	}
	if source.listing != nil {
		in.Listing, in.Listed = *source.listing, true
	}
	if source.server != nil {
		in.Server = readiness.ServerText{Title: source.server.Title, Instructions: source.instructions}
	}
	if state := r.client.TLS(); state != nil {
		in.TLS.Version = state.Version
		if len(state.PeerCertificates) > 0 {
			in.TLS.CertNotAfter = state.PeerCertificates[0].NotAfter
		}
	}
	report = &ReadinessReport{
		URL: r.endpoint, StartedAt: started.UTC(), DurationMS: e.now().Sub(started).Milliseconds(),
		Eras: []EraResult{stateful.result, stateless.result}, Result: readiness.Evaluate(in),
		Traffic: traffic(r.client.Stats()),
	}
	var listing *surface.Listing
	report.Server, report.Surface, listing = pick(stateful, stateless)
	err = scrub(r.client, report)
	report.Listing = redactListing(r.client, listing)
	return report, err
}
