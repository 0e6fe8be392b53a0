package api

// MethodAccess names who may call a gRPC method, for the API description (internal/web/ops):
// "public", "admin" (X-Admin-Token), "workspace" (a control-plane session) or "bearer" (an API key
// or legacy JWT). It reads methodAccess, so the description cannot disagree with the interceptor.
func MethodAccess(fullMethod string) string {
	switch methodAccess[fullMethod] {
	case public:
		return "public"
	case admin:
		return "admin"
	case workspace:
		return "workspace"
	case bearer:
		return "bearer"
	}
	return "unknown"
}
