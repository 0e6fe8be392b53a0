package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trustlayer/trustlayer/pkg/gateway"
)

// httpHandler wraps the mux: telemetry outermost (so the log line can carry the trace id and the
// span covers everything), panic recovery closest to the handlers.
func (s *Server) httpHandler() http.Handler {
	return s.observe.handler(recoverHTTP(s.log, s.limitBody(s.mux)))
}

func recoverHTTP(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p) // net/http's own signal to drop the connection
			}
			log.ErrorContext(r.Context(), "panic in HTTP handler", "path", r.URL.Path, "panic", fmt.Sprint(p))
			gateway.WriteJSON(w, http.StatusInternalServerError, map[string]any{"detail": "Internal Server Error"})
		}()
		next.ServeHTTP(w, r)
	})
}

// logUnary logs calls made over gRPC. It is only on the gRPC server's chain: the gateway calls the
// handlers in process, past it, and the HTTP access log has those calls with the status the client
// saw.
func logUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	logger := logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		log.Log(ctx, slog.Level(lvl), msg, fields...)
	})
	return logging.UnaryServerInterceptor(logger, logging.WithLogOnEvents(logging.FinishCall))
}

// mapErrorsUnary is the one place where a handler's error becomes what a caller sees: errors that
// already carry a gRPC status (including apierror.Error) pass unchanged; a cancelled caller gets
// Canceled; anything else is logged and becomes a bare Internal, so no internal cause leaks.
func mapErrorsUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if err == nil {
			return resp, nil
		}
		var withStatus interface{ GRPCStatus() *status.Status }
		switch {
		case errors.As(err, &withStatus):
			return resp, err
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			return nil, status.Error(codes.Canceled, "request cancelled")
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
			return nil, status.Error(codes.DeadlineExceeded, "deadline exceeded")
		}
		log.ErrorContext(ctx, "handler failed", "method", info.FullMethod, "error", err)
		return nil, status.Error(codes.Internal, "internal error")
	}
}
