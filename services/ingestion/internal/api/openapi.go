package api

import (
	"strings"

	"github.com/trustlayer/trustlayer/pkg/apidoc"
	"github.com/trustlayer/trustlayer/proto/openapi"
)

// InterfaceVersion is the release of the HTTP and gRPC interface the document describes
// (CHANGELOG.md).
const InterfaceVersion = "1.0.0"

// AdminMethods prefixes every gRPC method that needs the admin token (README "Authentication"): all of
// ingestion.v1, and so every /v1 route but the platform's GET /v1/build.
const AdminMethods = "/ingestion.v1."

// answers are the statuses each method answers besides its success and 401 (README "Routes"): the
// generator knows only the success, and documents it as 200.
var answers = map[string]map[string]string{
	"/ingestion.v1.SourceService/CreateSource":       {"201": "The registered source", "422": "Invalid fields, every one listed"},
	"/ingestion.v1.SourceService/ListSources":        {"422": "A limit outside 1..100 or a malformed cursor"},
	"/ingestion.v1.SourceService/GetSource":          {"404": "No such source"},
	"/ingestion.v1.SourceService/GetSourceStatus":    {"404": "No such source"},
	"/ingestion.v1.SourceService/CreateDiscoveryRun": {"201": "The finished run", "404": "No such source", "409": "A run of the source is in progress, or its terms review is not approved"},
	"/ingestion.v1.LedgerService/ListChangeEvents":   {"422": "An unknown status, a limit outside 1..100 or a malformed cursor"},
	"/ingestion.v1.LedgerService/GetPolicy":          {"404": "No such policy"},
}

// plainRoutes documents the routes no proto describes: the probes and this document.
var plainRoutes = apidoc.ProbeRoutes("ingestion")

// Document builds the OpenAPI 2.0 document served at GET /openapi.json: the generated documents of
// ingestion.v1 and of the platform's build service, the plain routes, the admin token on every
// ingestion.v1 operation, and each operation's documented answers.
func Document() ([]byte, error) {
	return apidoc.Build(apidoc.Spec{
		Title:   "Payer-policy ingestion service",
		Version: InterfaceVersion,
		Description: "Registry of payer-policy sources, SSRF-safe fetching, an immutable content-addressed archive, " +
			"fact extraction with verified evidence and an immutable change-event ledger (README.md). Internal: every " +
			`/v1 route but /v1/build needs X-Admin-Token. Every error body is {"detail": ...}.`,
		Files:   openapi.Files,
		Sources: []string{"ingestion/v1/*.swagger.json", "platform/v1/build.swagger.json"},
		SecurityDefinitions: map[string]any{
			"adminToken": map[string]any{"type": "apiKey", "in": "header", "name": "X-Admin-Token",
				"description": "The deployment's admin token (INGESTION_ADMIN_TOKEN)"},
		},
		Security: []any{},
		Plain:    plainRoutes,
		Extend:   extend,
	})
}

func extend(op map[string]any, o apidoc.Operation) {
	if !strings.HasPrefix(o.GRPCMethod, AdminMethods) {
		op["security"] = []any{}
		return
	}
	op["security"] = []any{map[string]any{"adminToken": []any{}}}
	responses, _ := op["responses"].(map[string]any)
	for status, description := range answers[o.GRPCMethod] {
		if status >= "400" {
			apidoc.AddResponse(op, status, description)
			continue
		}
		// A created resource answers 201 with the body the generator documents as 200's.
		if created, ok := responses["200"].(map[string]any); ok {
			delete(responses, "200")
			created["description"] = description
			responses[status] = created
		}
	}
	apidoc.AddResponse(op, "401", "Missing or wrong X-Admin-Token")
}
