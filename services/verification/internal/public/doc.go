// Package public groups the use cases of the verification service's public routes, which need no
// credential (docs/public.md): coverage (GET /v1/coverage-summary), analytics (POST
// /api/analytics/events), claim (the claim pages and POST /claim/intent, /claim/start) and
// throttle, the per-client bounds of the public POST routes.
package public
