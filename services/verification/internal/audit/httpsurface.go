package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/probe"
)

// Well-known locations the surface checks read.
const (
	// wellKnownPRM is the RFC 9728 §3.1 protected resource metadata suffix.
	wellKnownPRM = "/.well-known/oauth-protected-resource"
	// wellKnownAS is the RFC 8414 §3.1 authorization server metadata suffix.
	wellKnownAS = "/.well-known/oauth-authorization-server"
	// wellKnownOIDC is OpenID Connect Discovery 1.0 §4's configuration suffix.
	wellKnownOIDC = "/.well-known/openid-configuration"
)

// serverCardPaths are where a server card may be published, the draft's first location first and
// then the newer proposals; the first 200 ends the search.
var serverCardPaths = []string{"/.well-known/mcp/server-card.json", "/.well-known/mcp-server-card.json", "/.well-known/mcp.json"}

// surfaceRun is the HTTP surface of one audit in progress: OAuth metadata and the server card.
type surfaceRun struct {
	r *run
	// origin is the endpoint's scheme://host[:port] as given, the base of its well-known URLs.
	origin string
	// path is the endpoint's path without its trailing slash ("" for the root).
	path string
}

// httpSurface checks what a client finds around the MCP endpoint, outside any protocol revision:
// whether the endpoint is protected and names RFC 9728 metadata (oauth-protected-resource), the
// authorization server's RFC 8414 metadata (oauth-authorization-server) and the server card
// (server-card). It runs beside the two eras and sends from 2 requests (an unprotected server with
// nothing published: the unauthenticated initialize, then the well-known URLs) to about 8. Nothing
// here carries the caller's headers: they are the caller's credentials for the endpoint, and the
// metadata is public by design (and may live on another host).
func (r *run) httpSurface(ctx context.Context) {
	u, err := url.Parse(r.endpoint)
	if err != nil {
		return
	}
	h := &surfaceRun{r: r, origin: u.Scheme + "://" + u.Host, path: strings.TrimSuffix(u.EscapedPath(), "/")}
	// An error is the probe's (budget, deadline): the checks not reached are skipped with the
	// engine's reason.
	issuer, err := h.protectedResource(ctx)
	if err != nil {
		return
	}
	if issuer != "" {
		if err := h.authorizationServer(ctx, issuer); err != nil {
			return
		}
	}
	_ = h.serverCard(ctx)
}

// get fetches a metadata document without the caller's headers.
func (h *surfaceRun) get(ctx context.Context, raw string) (*probe.Response, error) {
	return h.r.client.Do(ctx, probe.Request{
		Method: http.MethodGet, URL: raw, NoExtra: true,
		Header: http.Header{"Accept": {"application/json"}},
	})
}

// guard applies the target rules to a URL the server names on another origin than the endpoint's
// (the endpoint itself passed them when the audit started). refused is the target rules' refusal;
// err is the context's.
func (h *surfaceRun) guard(ctx context.Context, raw string) (refused, err error) {
	if o, oerr := urlOrigin(raw); oerr == nil {
		if self, _ := urlOrigin(h.origin); o == self {
			return nil, nil
		}
	}
	if _, err := h.r.engine.CheckTarget(ctx, raw); err != nil {
		if t, ok := safehttp.AsTargetError(err); ok {
			return t, nil
		}
		return nil, err
	}
	return nil, nil
}

// protectedResource sends initialize without the caller's headers to learn whether the endpoint is
// protected, and checks the protected resource metadata: the one the 401 names, or, when the
// endpoint is not protected or names none, the one at the RFC 9728 well-known URL. It returns the
// first authorization server the metadata names ("" when none), and records
// oauth-authorization-server SKIPPED when there is none to check.
func (h *surfaceRun) protectedResource(ctx context.Context) (string, error) {
	start := time.Now()
	resp, err := h.initialize(ctx)
	if err != nil {
		return "", err
	}
	noAS := func() { h.r.record("oauth-authorization-server", Skipped, start, "no authorization server is named") }
	if resp.Err != nil {
		h.r.record("oauth-protected-resource", Skipped, start, "the endpoint did not answer an initialize without credentials: %s", resp.Err)
		noAS()
		return "", nil
	}
	if resp.Status != http.StatusUnauthorized {
		return h.unprotected(ctx, start, resp.Status)
	}

	// A 401: the challenge should name the metadata (RFC 9728 §5.1).
	values := resp.Header.Values("WWW-Authenticate")
	challenges, perr := parseWWWAuthenticate(values)
	bearer, hasBearer := bearerChallenge(challenges)
	metadata := bearer.Params["resource_metadata"]
	var problem string
	switch {
	case len(values) == 0:
		problem = "the 401 carries no WWW-Authenticate header, which RFC 9110 §15.5.2 requires"
	case !hasBearer && perr != nil:
		problem = fmt.Sprintf("the 401's WWW-Authenticate cannot be parsed (%v): %q", perr, strings.Join(values, ", "))
	case !hasBearer:
		problem = fmt.Sprintf("the 401's WWW-Authenticate has no Bearer challenge: %q", strings.Join(values, ", "))
	case metadata == "":
		problem = fmt.Sprintf("the 401's Bearer challenge names no resource_metadata: %q", strings.Join(values, ", "))
	}
	if problem == "" {
		issuer, err := h.namedMetadata(ctx, start, metadata)
		if issuer == "" && err == nil {
			noAS()
		}
		return issuer, err
	}

	// No metadata named: 2025-06-18 required the challenge to name it; 2025-11-25 lets a server
	// publish it at the well-known URL instead (one of the two MUST be there).
	found, at, err := h.wellKnownMetadata(ctx)
	if err != nil {
		return "", err
	}
	if found == nil {
		h.r.record("oauth-protected-resource", Failure, start, "%s, and no protected resource metadata is published at %s: the endpoint is protected but tells clients nowhere where to authorize (MCP requires the resource_metadata parameter or the RFC 9728 well-known URL)", problem, at)
		noAS()
		return "", nil
	}
	status, details, issuer := checkPRM(found.Body, h.r.endpoint)
	if status == Failure {
		details = problem + "; the metadata at the well-known URL " + at + " is not usable: " + details
	} else {
		status = Warning
		if len(values) == 0 {
			// A 401 without a challenge breaks HTTP itself, whatever the metadata says.
			status = Failure
		}
		details = problem + "; the metadata is published at the well-known URL " + at + ", which 2025-11-25 clients find but clients of 2025-06-18 do not: " + details
	}
	h.r.record("oauth-protected-resource", status, start, "%s", details)
	if issuer == "" {
		noAS()
	}
	return issuer, nil
}

// initialize sends a 2025-11-25 initialize without the caller's headers, and ends the session it
// may open.
func (h *surfaceRun) initialize(ctx context.Context) (*probe.Response, error) {
	id := h.r.id()
	body, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": json.Number(id), "method": "initialize",
		"params": map[string]any{
			"protocolVersion": EraStateful, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": statelessClientName, "version": "1"},
		},
	})
	if err != nil {
		return nil, err
	}
	resp, err := h.r.client.Do(ctx, probe.Request{Method: http.MethodPost, URL: h.r.endpoint, Header: rpcHeader(), Body: body, NoExtra: true, UntilReply: id})
	if err != nil {
		return nil, err
	}
	if sid := resp.Header.Get(headerSession); sid != "" && resp.Status/100 == 2 {
		version := EraStateful
		if x := parseExchange(resp, id); x.ok() {
			var res struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(x.reply.Result, &res) == nil && res.ProtocolVersion != "" && validToken(res.ProtocolVersion) {
				version = res.ProtocolVersion
			}
		}
		// The session is the audit's own: end it rather than leave it to expire.
		if _, err := h.r.client.Do(ctx, probe.Request{
			Method: http.MethodDelete, URL: h.r.endpoint, NoExtra: true,
			Header: http.Header{headerSession: {sid}, headerProtocolVersion: {version}},
		}); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// unprotected handles an endpoint that answered initialize without credentials with status: it may
// still publish protected resource metadata.
func (h *surfaceRun) unprotected(ctx context.Context, start time.Time, status int) (string, error) {
	found, at, err := h.wellKnownMetadata(ctx)
	if err != nil {
		return "", err
	}
	if found == nil {
		h.r.record("oauth-protected-resource", Info, start, "the endpoint is not protected: initialize without credentials answered HTTP %d, not 401, and no protected resource metadata is published at %s", status, at)
		h.r.record("oauth-authorization-server", Skipped, start, "no authorization server is named")
		return "", nil
	}
	st, details, issuer := checkPRM(found.Body, h.r.endpoint)
	if st == Success {
		details = fmt.Sprintf("published at %s although the endpoint did not ask for authorization (initialize without credentials answered HTTP %d): %s", at, status, details)
	} else {
		details = fmt.Sprintf("the metadata at %s (the endpoint answered initialize without credentials with HTTP %d): %s", at, status, details)
	}
	h.r.record("oauth-protected-resource", st, start, "%s", details)
	if issuer == "" {
		h.r.record("oauth-authorization-server", Skipped, start, "no authorization server is named")
	}
	return issuer, nil
}

// namedMetadata fetches and checks the metadata a 401 named.
func (h *surfaceRun) namedMetadata(ctx context.Context, start time.Time, metadata string) (string, error) {
	if _, err := normalizeURL(metadata); err != nil || !strings.HasPrefix(strings.ToLower(metadata), "https://") {
		h.r.record("oauth-protected-resource", Failure, start, "the 401 names resource_metadata %q, which is not an https URL", trim(metadata, 200))
		h.r.record("oauth-authorization-server", Skipped, start, "the protected resource metadata could not be read")
		return "", nil
	}
	refused, err := h.guard(ctx, metadata)
	if err != nil {
		return "", err
	}
	if refused != nil {
		h.r.record("oauth-protected-resource", Warning, start, "the 401 names resource_metadata %s, which the audit's target rules refuse (%v); it was not fetched", metadata, refused)
		h.r.record("oauth-authorization-server", Skipped, start, "the protected resource metadata could not be read")
		return "", nil
	}
	resp, err := h.get(ctx, metadata)
	if err != nil {
		return "", err
	}
	if resp.Err != nil || resp.Status != http.StatusOK {
		h.r.record("oauth-protected-resource", Failure, start, "the 401 names resource_metadata %s, which answered %s", metadata, seen(resp))
		h.r.record("oauth-authorization-server", Skipped, start, "the protected resource metadata could not be read")
		return "", nil
	}
	status, details, issuer := checkPRM(resp.Body, h.r.endpoint)
	h.r.record("oauth-protected-resource", status, start, "metadata at %s (named by the 401): %s", metadata, details)
	return issuer, nil
}

// wellKnownMetadata tries the RFC 9728 §3.1 well-known URLs of the endpoint: the suffix inserted
// before the endpoint's path, then at the root, as MCP clients do. It returns the first 200 and
// its URL, or nil and the URLs tried with what they answered.
func (h *surfaceRun) wellKnownMetadata(ctx context.Context) (*probe.Response, string, error) {
	urls := []string{h.origin + wellKnownPRM + h.path}
	if h.path != "" {
		urls = append(urls, h.origin+wellKnownPRM)
	}
	var tried []string
	for _, u := range urls {
		resp, err := h.get(ctx, u)
		if err != nil {
			return nil, "", err
		}
		if resp.Err == nil && resp.Status == http.StatusOK && !surfaceHTMLPage(resp) {
			return resp, u, nil
		}
		tried = append(tried, u+" ("+surfaceBrief(resp)+")")
	}
	return nil, strings.Join(tried, ", "), nil
}

// protectedResourceMetadata is the part of an RFC 9728 document the check reads.
type protectedResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
}

// checkPRM checks an RFC 9728 document against the endpoint it protects: a JSON object whose
// resource is the endpoint and that names at least one authorization server. It returns the first
// authorization server when the document names one.
func checkPRM(body []byte, endpoint string) (Status, string, string) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return Failure, "the document is not a JSON object: " + surfaceSnippet(body), ""
	}
	var m protectedResourceMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return Failure, "the document does not have the RFC 9728 shape (" + statelessJSONError(err) + ")", ""
	}
	var problems []string
	if m.Resource == "" {
		problems = append(problems, "it has no resource, which RFC 9728 §2 requires")
	}
	issuer := ""
	if len(m.AuthorizationServers) == 0 || m.AuthorizationServers[0] == "" {
		problems = append(problems, "it names no authorization_servers, which MCP requires")
	} else {
		issuer = m.AuthorizationServers[0]
	}
	if m.Resource != "" {
		switch resourceMatch(m.Resource, endpoint) {
		case resourceDiffers:
			problems = append(problems, fmt.Sprintf("its resource %q is not the audited URL %q (RFC 9728 §3.3: clients must refuse it)", trim(m.Resource, 200), endpoint))
		case resourcePrefix:
			if len(problems) == 0 {
				return Warning, fmt.Sprintf("its resource %q is a prefix of the audited URL %q, not the URL itself; RFC 9728 §3.3 asks for the URL, and clients that compare strictly refuse it; authorization servers: %s", m.Resource, endpoint, strings.Join(m.AuthorizationServers, ", ")), issuer
			}
		}
	}
	if len(problems) > 0 {
		return Failure, strings.Join(problems, "; "), issuer
	}
	return Success, fmt.Sprintf("resource %s; authorization servers: %s", m.Resource, strings.Join(m.AuthorizationServers, ", ")), issuer
}

// How a metadata document's resource relates to the audited URL.
const (
	resourceSame = iota
	resourcePrefix
	resourceDiffers
)

// resourceMatch compares resource with endpoint, normalised: the same resource, a path prefix of it
// on the same origin (what the MCP SDKs accept), or another.
func resourceMatch(resource, endpoint string) int {
	a, err1 := normalizeURL(resource)
	b, err2 := normalizeURL(endpoint)
	switch {
	case err1 != nil || err2 != nil:
		return resourceDiffers
	case a == b:
		return resourceSame
	case !strings.Contains(a, "?") && strings.HasPrefix(b, a+"/"):
		return resourcePrefix
	}
	return resourceDiffers
}

// authorizationServerMetadata is the part of an RFC 8414 document the check reads.
type authorizationServerMetadata struct {
	Issuer                 string   `json:"issuer"`
	AuthorizationEndpoint  string   `json:"authorization_endpoint"`
	TokenEndpoint          string   `json:"token_endpoint"`
	ResponseTypesSupported []string `json:"response_types_supported"`
	CodeChallengeMethods   []string `json:"code_challenge_methods_supported"`
}

// authorizationServer fetches the metadata of the authorization server issuer: RFC 8414 with the
// well-known suffix inserted before the issuer's path, then OpenID Connect Discovery, in the order
// the MCP authorization spec gives clients.
func (h *surfaceRun) authorizationServer(ctx context.Context, issuer string) error {
	start := time.Now()
	u, err := url.Parse(issuer)
	if err != nil || !strings.EqualFold(u.Scheme, "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		// RFC 8414 §2: an https URL with no query or fragment.
		h.r.record("oauth-authorization-server", Failure, start, "the authorization server %q is not an https URL without query or fragment (RFC 8414 §2)", trim(issuer, 200))
		return nil
	}
	refused, err := h.guard(ctx, issuer)
	if err != nil {
		return err
	}
	if refused != nil {
		h.r.record("oauth-authorization-server", Warning, start, "the authorization server %s is refused by the audit's target rules (%v); its metadata was not fetched", issuer, refused)
		return nil
	}
	origin, path := u.Scheme+"://"+u.Host, strings.TrimSuffix(u.EscapedPath(), "/")
	urls := []string{origin + wellKnownAS + path}
	if path != "" {
		urls = append(urls, origin+wellKnownOIDC+path, origin+path+wellKnownOIDC)
	} else {
		urls = append(urls, origin+wellKnownOIDC)
	}
	var tried []string
	for _, at := range urls {
		resp, err := h.get(ctx, at)
		if err != nil {
			return err
		}
		if resp.Err != nil || resp.Status != http.StatusOK || surfaceHTMLPage(resp) {
			tried = append(tried, at+" ("+surfaceBrief(resp)+")")
			continue
		}
		status, details := checkASMetadata(resp.Body, issuer)
		h.r.record("oauth-authorization-server", status, start, "metadata at %s: %s", at, details)
		return nil
	}
	h.r.record("oauth-authorization-server", Failure, start, "no metadata for the authorization server %s: %s", issuer, strings.Join(tried, ", "))
	return nil
}

// checkASMetadata checks an RFC 8414 (or OpenID Connect) document of issuer for what an MCP client
// needs: the issuer itself (RFC 8414 §3.3), both endpoints, the code flow and PKCE with S256.
func checkASMetadata(body []byte, issuer string) (Status, string) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return Failure, "the document is not a JSON object: " + surfaceSnippet(body)
	}
	var m authorizationServerMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		return Failure, "the document does not have the RFC 8414 shape (" + statelessJSONError(err) + ")"
	}
	var problems []string
	if a, err1 := normalizeURL(m.Issuer); err1 != nil || a != mustNormalize(issuer) {
		problems = append(problems, fmt.Sprintf("its issuer %q is not %q (RFC 8414 §3.3: clients must refuse it)", trim(m.Issuer, 200), issuer))
	}
	if m.AuthorizationEndpoint == "" {
		problems = append(problems, "it has no authorization_endpoint")
	}
	if m.TokenEndpoint == "" {
		problems = append(problems, "it has no token_endpoint")
	}
	if !slices.Contains(m.ResponseTypesSupported, "code") {
		problems = append(problems, fmt.Sprintf("response_types_supported (%s) lacks code", statelessList(m.ResponseTypesSupported)))
	}
	if !slices.Contains(m.CodeChallengeMethods, "S256") {
		problems = append(problems, fmt.Sprintf("code_challenge_methods_supported (%s) lacks S256: MCP requires PKCE with S256, and clients must refuse an authorization server that does not advertise it", statelessList(m.CodeChallengeMethods)))
	}
	if len(problems) > 0 {
		return Failure, strings.Join(problems, "; ")
	}
	return Success, fmt.Sprintf("issuer %s; authorization_endpoint %s; token_endpoint %s; PKCE methods: %s", m.Issuer, m.AuthorizationEndpoint, m.TokenEndpoint, strings.Join(m.CodeChallengeMethods, ", "))
}

// mustNormalize normalises a URL already known to parse, raw itself otherwise.
func mustNormalize(raw string) string {
	n, err := normalizeURL(raw)
	if err != nil {
		return raw
	}
	return n
}

// serverCard looks for the server card at each of serverCardPaths on the endpoint's origin.
func (h *surfaceRun) serverCard(ctx context.Context) error {
	start := time.Now()
	var tried []string
	for _, p := range serverCardPaths {
		at := h.origin + p
		resp, err := h.get(ctx, at)
		if err != nil {
			return err
		}
		if resp.Err != nil || resp.Status != http.StatusOK || surfaceHTMLPage(resp) {
			tried = append(tried, p+" ("+surfaceBrief(resp)+")")
			continue
		}
		status, details := checkServerCard(resp)
		h.r.record("server-card", status, start, "%s: %s", at, details)
		return nil
	}
	h.r.record("server-card", Info, start, "no server card published: %s", strings.Join(tried, ", "))
	return nil
}

// checkServerCard checks a 200 answer at a server card location: a JSON object naming the server,
// at the top (the newer drafts, like the registry's server.json) or in serverInfo (the first draft).
func checkServerCard(resp *probe.Response) (Status, string) {
	if resp.Truncated {
		return Failure, "the card is larger than the audit reads of an answer (cut at the byte cap)"
	}
	var card struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		ServerInfo *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(resp.Body, &obj); err != nil {
		return Failure, "the card is not a JSON object: " + surfaceSnippet(resp.Body)
	}
	if err := json.Unmarshal(resp.Body, &card); err != nil {
		return Failure, "the card does not have a server card's shape (" + statelessJSONError(err) + ")"
	}
	name, version := card.Name, card.Version
	if si := card.ServerInfo; si != nil {
		if name == "" {
			name = si.Name
		}
		if si.Version != "" {
			version = si.Version
		}
	}
	if strings.TrimSpace(name) == "" {
		return Failure, "the card names no server (neither name nor serverInfo.name)"
	}
	details := "name " + trim(name, 120)
	if version != "" {
		details += ", version " + trim(version, 60)
	}
	return Success, details
}

// surfaceHTMLPage reports whether a 200 answer is an HTML page rather than a document: a site that
// answers every path with its front page publishes no metadata there.
func surfaceHTMLPage(resp *probe.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/html" && !json.Valid(resp.Body)
}

// surfaceBrief says in a few words what a well-known URL answered.
func surfaceBrief(resp *probe.Response) string {
	switch {
	case resp.Err != nil:
		return resp.Err.Error()
	case resp.Status == http.StatusOK:
		return "HTTP 200 with an HTML page"
	}
	return fmt.Sprintf("HTTP %d", resp.Status)
}

// surfaceSnippet is the start of a document for details.
func surfaceSnippet(body []byte) string {
	s := strings.TrimSpace(strings.ToValidUTF8(string(body), "?"))
	if s == "" {
		return "empty"
	}
	return fmt.Sprintf("%q", trim(s, 120))
}
