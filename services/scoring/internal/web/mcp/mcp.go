// Package mcp is the scoring service's agent endpoint (README "MCP agent endpoint"): the tool
// score_workflow and the prompts over MCP, built with the official Go SDK. The hosted endpoint serves
// Streamable HTTP at /mcp with its server card and OAuth protected-resource metadata (RFC 9728); the
// local stdio command (cmd/scoring-mcp) serves the same tool and prompts, scoring over the HTTP API.
//
// initialize, tools/list, prompts/list and the other discovery methods are public; a tools/call of
// score_workflow needs a key (Authorization: Bearer, or x-service-api-key). The endpoint peeks at the
// JSON-RPC method before the SDK handler so that a call without a valid credential is an HTTP 401 whose
// WWW-Authenticate names the protected-resource metadata: that is how an MCP client learns where to
// authenticate (MCP authorization, 2025-06-18).
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/api"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
)

// Paths the hosted endpoint serves.
const (
	EndpointPath         = "/mcp"
	ServerCardPath       = "/.well-known/mcp/server-card.json"
	ResourceMetadataPath = "/.well-known/oauth-protected-resource"
)

// Authenticator verifies a bearer token of the endpoint: keys.Service (API keys, legacy JWTs), or the
// OAuth server's, which also accepts its access tokens. Unknown, expired and revoked tokens are
// keys.ErrUnauthenticated.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (keys.Key, error)
}

// Config is what the hosted endpoint needs.
type Config struct {
	// PublicURL is the service's external base URL: the resource, and its own authorization server.
	PublicURL string
	// Version is the server version announced at initialize and in the server card.
	Version string
	Auth    Authenticator
	// Conn reaches ScoringService in process (serve.Server.InProcess), through the interceptors that
	// authenticate, so a tool call takes the limit, meter and decision-log path of POST /v1/score.
	Conn grpc.ClientConnInterface
	Log  *slog.Logger
}

// Handler serves the hosted endpoint and its documents.
type Handler struct {
	cfg         Config
	metadataURL string
	endpoint    http.Handler
	card        []byte
	resource    *oauthex.ProtectedResourceMetadata
}

// SessionTimeout closes a session idle this long. Sessions are cheap (no state of the service's own)
// but created by anonymous initialize calls, so they must not pile up.
const SessionTimeout = 30 * time.Minute

// New builds the hosted endpoint. It keeps MCP sessions (Mcp-Session-Id, the standalone GET stream)
// as the Streamable HTTP transport describes, in the replica that created them: behind several
// replicas, /mcp needs session affinity (README "MCP agent endpoint"). A session on another replica
// is unknown (404), and a client then starts a new session, as the transport requires. Answers are
// JSON rather than SSE streams: the tool sends no notification or request before its result.
func New(cfg Config) (*Handler, error) {
	base := strings.TrimRight(cfg.PublicURL, "/")
	h := &Handler{cfg: cfg, metadataURL: base + ResourceMetadataPath}
	scoring := scoringv1.NewScoringServiceClient(cfg.Conn)
	server := NewServer(cfg.Version, h.inProcessScorer(scoring))
	streamable := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server },
		&sdk.StreamableHTTPOptions{JSONResponse: true, SessionTimeout: SessionTimeout, Logger: cfg.Log, MaxRequestBodyBytes: MaxBodyBytes})
	h.endpoint = h.guard(h.transportRules(streamable))
	h.resource = &oauthex.ProtectedResourceMetadata{
		Resource:               base + EndpointPath,
		AuthorizationServers:   []string{base},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Claim scoring agent endpoint",
		ResourceDocumentation:  base + ServerCardPath,
	}
	card, err := json.Marshal(serverCard(base, cfg.Version, h.metadataURL))
	if err != nil {
		return nil, err
	}
	h.card = card
	return h, nil
}

// Register adds the endpoint's routes with handle (serve.Server.Handle).
func (h *Handler) Register(handle func(pattern string, handler http.Handler)) {
	handle(EndpointPath, h.endpoint)
	handle("GET "+ServerCardPath, http.HandlerFunc(h.serveCard))
	metadata := auth.ProtectedResourceMetadataHandler(h.resource)
	handle(ResourceMetadataPath, metadata)
	// RFC 9728 section 3.1: a client derives the metadata URL of the resource <base>/mcp by inserting
	// the well-known segment before its path, so the path-suffixed form is served too.
	handle(ResourceMetadataPath+EndpointPath, metadata)
}

func (h *Handler) serveCard(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*") // public discovery document, like the metadata
	_, _ = w.Write(h.card)
}

// MaxBodyBytes bounds a request to /mcp, as the SDK's default does; the guard reads the body first.
const MaxBodyBytes = sdk.DefaultMaxRequestBodyBytes

// tokenKey is where verify leaves the verified token in auth.TokenInfo.Extra, for the tool call's
// metadata.
const tokenKey = "bearer_token"

// guard asks for a credential before the SDK sees a call that needs one (peek.go decides), with the
// SDK's own bearer middleware, which answers 401 with WWW-Authenticate: Bearer resource_metadata=.
// The hosted-agent header x-service-api-key is taken as a bearer token.
func (h *Handler) guard(next http.Handler) http.Handler {
	requireKey := auth.RequireBearerToken(h.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: h.metadataURL,
		// API keys do not expire (they are revoked); an OAuth access token's expiry is its verifier's.
		AllowMissingExpiration: true,
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w.(*jsonRefusal).ResponseWriter, r) // past the check, MCP traffic is untouched
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, ok := readBodyOrRefuse(w, r)
		if !ok {
			return
		}
		if !NeedsCredential(body) {
			next.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("Authorization") == "" {
			if key := strings.TrimSpace(r.Header.Get("X-Service-Api-Key")); key != "" {
				r.Header.Set("Authorization", "Bearer "+key)
			}
		}
		requireKey.ServeHTTP(&jsonRefusal{ResponseWriter: w, missing: !hasBearer(r)}, r)
	})
}

// hasBearer reports whether r carries a bearer token as the SDK's middleware reads one: the scheme
// and one token.
func hasBearer(r *http.Request) bool {
	fields := strings.Fields(r.Header.Get("Authorization"))
	return len(fields) == 2 && strings.EqualFold(fields[0], "bearer")
}

// jsonRefusal renders the SDK bearer middleware's refusals, which http.Error writes as text, as this
// service's error bodies, {"detail": "..."} (README "Errors"), worded as the REST routes word them:
// the SDK's "no bearer token" is api.ErrMissingBearer's detail, and verify words an invalid token as
// api.ErrInvalidBearer does. The WWW-Authenticate challenge the middleware sets passes unchanged.
type jsonRefusal struct {
	http.ResponseWriter
	// missing is a request without a bearer token, which the middleware refuses with 401.
	missing bool
	code    int
}

func (w *jsonRefusal) WriteHeader(code int) {
	if code >= http.StatusBadRequest {
		w.code = code
		w.Header().Set("Content-Type", "application/json")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *jsonRefusal) Write(b []byte) (int, error) {
	if w.code == 0 {
		return w.ResponseWriter.Write(b)
	}
	detail := strings.TrimSpace(string(b))
	if w.missing && w.code == http.StatusUnauthorized {
		detail = api.ErrMissingBearer.Body["detail"].(string)
	}
	body, err := json.Marshal(map[string]string{"detail": detail})
	if err != nil {
		return 0, err
	}
	if _, err := w.ResponseWriter.Write(body); err != nil {
		return 0, err
	}
	return len(b), nil
}

// verify is the SDK middleware's TokenVerifier.
func (h *Handler) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	key, err := h.cfg.Auth.Authenticate(ctx, token)
	switch {
	case errors.Is(err, keys.ErrUnauthenticated):
		return nil, errInvalidToken
	case err != nil:
		// The middleware writes the error's text into the answer: the cause stays in the log.
		h.cfg.Log.ErrorContext(ctx, "mcp: authenticating a bearer token failed", "error", err)
		return nil, errVerifyUnavailable
	}
	return &auth.TokenInfo{Scopes: key.Scopes, Extra: map[string]any{tokenKey: token, "key_prefix": key.Prefix}}, nil
}

// errInvalidToken is a token the middleware refuses with 401 (it wraps auth.ErrInvalidToken), in
// the words of the REST routes' refusal.
var errInvalidToken error = invalidToken{}

type invalidToken struct{}

func (invalidToken) Error() string        { return api.ErrInvalidBearer.Body["detail"].(string) }
func (invalidToken) Is(target error) bool { return target == auth.ErrInvalidToken }

var errVerifyUnavailable = errors.New("authentication is unavailable, try again")

// inProcessScorer scores through ScoringService in process, with the verified token as the call's
// bearer metadata: the authentication interceptor, the limiter, the meter and the decision log are
// those of POST /v1/score, so 429, 402 and usage counting are the same.
func (h *Handler) inProcessScorer(client scoringv1.ScoringServiceClient) Scorer {
	return func(ctx context.Context, req *sdk.CallToolRequest, args json.RawMessage) (Scored, error) {
		var token string
		if ti := req.Extra.TokenInfo; ti != nil {
			token, _ = ti.Extra[tokenKey].(string)
		}
		if token == "" {
			// The guard lets no call of score_workflow through without one; a caller of the handler
			// without the guard (a test, a future transport) is refused the same way.
			return Scored{}, api.ErrMissingBearer
		}
		var in scoringv1.ScoreRequest
		// As the gateway reads POST /v1/score: unknown top-level fields are ignored, the payload's are not.
		if err := gateway.UnmarshalOptions.Unmarshal(args, &in); err != nil {
			return Scored{}, apierror.Newf(http.StatusUnprocessableEntity, "Invalid arguments: %v", err)
		}
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
		var header metadata.MD
		resp, err := client.Score(ctx, &in, grpc.Header(&header))
		var requestID string
		if v := header.Get("x-request-id"); len(v) > 0 {
			requestID = v[0]
		}
		if err != nil {
			if he, ok := apierror.FromStatus(status.Convert(err)); ok {
				return Scored{RequestID: requestID}, he
			}
			return Scored{RequestID: requestID}, err
		}
		body, err := gateway.MarshalOptions.Marshal(resp.GetResult())
		if err != nil {
			return Scored{}, err
		}
		return Scored{Result: body, RequestID: requestID}, nil
	}
}
