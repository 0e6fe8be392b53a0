// Package gateway builds the grpc-gateway ServeMux every service serves its JSON API through, so that
// all three render errors, success codes and JSON the same way (README "How to add a route").
package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/textproto"
	"regexp"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/trustlayer/trustlayer/pkg/apierror"
)

// httpCodeKey is the response-header metadata key a handler sets (through SetHTTPStatus) to answer with
// a documented success code other than 200. It never reaches the client.
const httpCodeKey = "x-http-code"

// SetHTTPStatus makes the gateway answer the current call with code (201, 202 or 204) instead of 200.
// gRPC callers never see it: it is stripped from the response.
func SetHTTPStatus(ctx context.Context, code int) error {
	return grpc.SetHeader(ctx, metadata.Pairs(httpCodeKey, strconv.Itoa(code)))
}

// ValidationStyle says how request-decoding failures (a malformed JSON body, a query or path parameter
// of the wrong type) are rendered; each service's spec fixes its own.
type ValidationStyle int

const (
	// DetailString renders {"detail": "<message>"} with status 422 (the scoring service's shape).
	DetailString ValidationStyle = iota
	// FastAPI renders a FastAPI HTTPValidationError with status 422:
	// {"detail": [{"loc": [...], "msg": "...", "type": "..."}]}.
	FastAPI
)

type options struct {
	logger   *slog.Logger
	style    ValidationStyle
	incoming map[string]string // canonical header name -> metadata key
	outgoing map[string]bool
	codec    func(runtime.Marshaler) runtime.Marshaler
	mws      []runtime.Middleware
	onError  func(context.Context, http.Header)
}

// Option configures NewServeMux.
type Option func(*options)

// WithLogger sets where internal errors are logged (their causes never reach clients).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithValidationStyle selects how request-decoding failures are rendered.
func WithValidationStyle(s ValidationStyle) Option { return func(o *options) { o.style = s } }

// WithIncomingHeaders forwards these request headers to gRPC metadata under their lower-case names
// (for example "X-Admin-Token" arrives as metadata "x-admin-token"). Only these are forwarded, with
// Authorization ("authorization") and the x-forwarded-for and x-forwarded-host the gateway derives
// from the request.
func WithIncomingHeaders(names ...string) Option {
	return func(o *options) {
		for _, n := range names {
			o.incoming[textproto.CanonicalMIMEHeaderKey(n)] = strings.ToLower(n)
		}
	}
}

// WithCodec wraps the JSON marshaler: a service may encode and decode its hot messages by hand and
// hand every other message to the shared one, which wrap receives.
func WithCodec(wrap func(runtime.Marshaler) runtime.Marshaler) Option {
	return func(o *options) { o.codec = wrap }
}

// WithMiddleware runs mw around every route's handler, after the route is matched
// (runtime.HTTPPattern names it).
func WithMiddleware(mw runtime.Middleware) Option {
	return func(o *options) { o.mws = append(o.mws, mw) }
}

// WithErrorHeaders lets a service add headers to every error answer of the gateway, after those its
// handler set: a header it promises on every answer of a route, when the call failed before the
// handler could set it (a body the gateway could not decode). runtime.RPCMethod(ctx) names the call.
func WithErrorHeaders(add func(ctx context.Context, h http.Header)) Option {
	return func(o *options) { o.onError = add }
}

// WithOutgoingHeaders turns these response-header metadata keys into HTTP response headers of the same
// name (for example "x-request-id"); every other metadata key stays internal.
func WithOutgoingHeaders(names ...string) Option {
	return func(o *options) {
		for _, n := range names {
			o.outgoing[strings.ToLower(n)] = true
		}
	}
}

// How the gateway reads and writes JSON bodies: proto field names, every field written, and unknown
// fields ignored, as the FastAPI services these specs describe do. Code that answers with the
// gateway's bytes by other means (an MCP tool result) uses the same options.
var (
	MarshalOptions   = protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true}
	UnmarshalOptions = protojson.UnmarshalOptions{DiscardUnknown: true}
)

// NewServeMux returns a gateway mux with proto-name JSON, the shared error rendering, documented
// success codes and 404/405 bodies for unknown routes and methods.
func NewServeMux(opts ...Option) *runtime.ServeMux {
	o := &options{logger: slog.Default(), incoming: map[string]string{}, outgoing: map[string]bool{}}
	for _, opt := range opts {
		opt(o)
	}
	var codec runtime.Marshaler = compactJSON{&runtime.JSONPb{
		MarshalOptions: MarshalOptions, UnmarshalOptions: UnmarshalOptions,
	}}
	if o.codec != nil {
		codec = o.codec(codec)
	}
	marshaler := &runtime.HTTPBodyMarshaler{Marshaler: codec}
	return runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, marshaler),
		runtime.WithErrorHandler(o.handleError),
		runtime.WithRoutingErrorHandler(handleRoutingError),
		runtime.WithForwardResponseOption(forwardHTTPStatus),
		runtime.WithIncomingHeaderMatcher(o.matchIncoming),
		runtime.WithOutgoingHeaderMatcher(o.matchOutgoing),
		// Trailers are gRPC plumbing; HTTP clients of these APIs never read them.
		runtime.WithOutgoingTrailerMatcher(func(string) (string, bool) { return "", false }),
		runtime.WithMiddlewares(o.mws...),
	)
}

// compactJSON removes the whitespace protojson inserts at random (on purpose, so that nobody relies on
// its byte output): the same answer must be the same bytes on every call and every build.
type compactJSON struct{ *runtime.JSONPb }

func (c compactJSON) Marshal(v any) ([]byte, error) {
	b, err := c.JSONPb.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// matchIncoming forwards only the headers a service asked for. grpc-gateway's default also passes
// every standard header as grpcgateway-<name> and every Grpc-Metadata-<name> header as <name>: no
// handler reads them, and building them cost POST /v1/score 14 of its 246 allocations.
func (o *options) matchIncoming(key string) (string, bool) {
	md, ok := o.incoming[key] // annotateContext hands over canonical names
	return md, ok
}

func (o *options) matchOutgoing(key string) (string, bool) {
	if o.outgoing[strings.ToLower(key)] {
		return key, true
	}
	return "", false
}

// forwardHTTPStatus applies the success code a handler asked for with SetHTTPStatus.
func forwardHTTPStatus(ctx context.Context, w http.ResponseWriter, _ proto.Message) error {
	md, ok := runtime.ServerMetadataFromContext(ctx)
	if !ok {
		return nil
	}
	vals := md.HeaderMD.Get(httpCodeKey)
	if len(vals) == 0 {
		return nil
	}
	code, err := strconv.Atoi(vals[0])
	if err != nil {
		return err
	}
	w.WriteHeader(code)
	return nil
}

func handleRoutingError(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, _ *http.Request, httpStatus int) {
	switch httpStatus {
	case http.StatusMethodNotAllowed:
		WriteJSON(w, http.StatusMethodNotAllowed, map[string]any{"detail": "Method Not Allowed"})
	case http.StatusBadRequest:
		WriteJSON(w, http.StatusBadRequest, map[string]any{"detail": "Bad Request"})
	default:
		WriteJSON(w, http.StatusNotFound, NotFoundBody)
	}
}

// NotFoundBody is the body of every 404 for an unknown route.
var NotFoundBody = map[string]any{"detail": "Not Found"}

// TooLargeBody is the body of every 413: a request body over the server's cap (pkg/serve).
var TooLargeBody = map[string]any{"detail": "Request body too large"}

// bodyTooLarge is the text of http.MaxBytesError, which the generated decoders turn into an
// InvalidArgument status with the error's text.
const bodyTooLarge = "http: request body too large"

func (o *options) handleError(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	st, ok := status.FromError(err)
	if !ok {
		st = status.New(codes.Unknown, err.Error())
	}
	// Headers a handler set before failing (x-request-id, retry-after) belong on the error answer too.
	if md, ok := runtime.ServerMetadataFromContext(ctx); ok {
		for k, vs := range md.HeaderMD {
			if name, ok := o.matchOutgoing(k); ok {
				for _, v := range vs {
					w.Header().Add(name, v)
				}
			}
		}
	}
	if o.onError != nil {
		o.onError(ctx, w.Header())
	}
	if he, ok := apierror.FromStatus(st); ok {
		WriteJSON(w, he.Status, he.Body)
		return
	}
	code := st.Code()
	switch code {
	case codes.InvalidArgument:
		if strings.Contains(st.Message(), bodyTooLarge) {
			WriteJSON(w, http.StatusRequestEntityTooLarge, TooLargeBody)
			return
		}
		he := o.decodingError(st.Message())
		WriteJSON(w, he.Status, he.Body)
		return
	case codes.Canceled:
		if errors.Is(r.Context().Err(), context.Canceled) {
			// The client went away; nobody reads this answer, and it is not a server fault.
			w.WriteHeader(499)
			return
		}
	case codes.NotFound, codes.AlreadyExists, codes.PermissionDenied, codes.Unauthenticated,
		codes.ResourceExhausted, codes.FailedPrecondition, codes.OutOfRange, codes.Unimplemented:
		// Codes a handler chose on purpose (or grpc-go produced for a caller mistake): the message is
		// meant for the client.
		WriteJSON(w, runtime.HTTPStatusFromCode(code), map[string]any{"detail": st.Message()})
		return
	}
	httpStatus := runtime.HTTPStatusFromCode(code)
	if httpStatus < 500 {
		httpStatus = http.StatusInternalServerError
	}
	o.logger.ErrorContext(ctx, "request failed", "method", r.Method, "path", r.URL.Path, "grpc_code", code.String(), "error", st.Message())
	WriteJSON(w, httpStatus, map[string]any{"detail": http.StatusText(httpStatus)})
}

var (
	pathParamRe  = regexp.MustCompile(`parameter: ([A-Za-z0-9_.]+)`)
	queryParamRe = regexp.MustCompile(`parsing (?:field|list|map key|map value) "([A-Za-z0-9_]+)"`)
)

// decodingError renders a request the gateway could not decode into the request message: a bad path
// parameter, query parameter or JSON body.
func (o *options) decodingError(msg string) *apierror.Error {
	if o.style == DetailString {
		return apierror.New(http.StatusUnprocessableEntity, msg)
	}
	if m := pathParamRe.FindStringSubmatch(msg); m != nil {
		return apierror.Validation(apierror.Violation{Loc: []any{"path", m[1]}, Msg: "Input has the wrong type", Type: "type_error"})
	}
	if m := queryParamRe.FindStringSubmatch(msg); m != nil {
		return apierror.Validation(apierror.Violation{Loc: []any{"query", m[1]}, Msg: "Input has the wrong type", Type: "type_error"})
	}
	return apierror.Validation(apierror.Violation{Loc: []any{"body"}, Msg: "Request body is not valid: " + msg, Type: "json_invalid"})
}
